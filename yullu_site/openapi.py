"""OpenAPI descriptions for the REST API. The views are plain APIViews (validate → service →
dict), so their shapes are declared here; schemathesis checks every response against them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers


class BearerAuthScheme(OpenApiAuthenticationExtension):
    target_class = "yullu_site.auth.BearerTokenAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "the token from `yullu token`"}


Error = inline_serializer("Error", {"error": serializers.CharField()})
# Every operation can answer these: bad input (e.g. NUL in a query string), bad token, too many
# bad tokens, database down.
ALWAYS = (400, 401, 429, 503)


class MemoryOut(serializers.Serializer):
    id = serializers.IntegerField()
    uuid = serializers.UUIDField()
    project_id = serializers.CharField()
    content = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    category = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    rating = serializers.IntegerField(allow_null=True)
    rating_comment = serializers.CharField(allow_blank=True)
    importance = serializers.ChoiceField(choices=["low", "normal", "high"])
    expires_at = serializers.DateTimeField(allow_null=True)
    superseded_by = serializers.IntegerField(allow_null=True, help_text="id of the memory that replaced this one")


class HitOut(MemoryOut):
    similarity = serializers.FloatField(allow_null=True, help_text="cosine similarity 0–1; null when not embedded")
    rank = serializers.IntegerField()


class RejectedOut(serializers.Serializer):
    uuid = serializers.UUIDField()
    project_id = serializers.CharField()
    content = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    category = serializers.CharField(allow_null=True)
    rating = serializers.IntegerField(allow_null=True)
    rating_comment = serializers.CharField(allow_blank=True)
    rejected_at = serializers.DateTimeField()


class ProjectOut(serializers.Serializer):
    project_id = serializers.CharField()
    memories = serializers.IntegerField()
    unrated = serializers.IntegerField()
    git_root = serializers.CharField(allow_null=True)


def obj(name: str, **fields: serializers.Field) -> serializers.Serializer:
    return inline_serializer(name, fields)


def many(name: str, key: str, item: Any) -> serializers.Serializer:
    return inline_serializer(name, {key: serializers.ListField(child=item)})


def query(name: str, kind: Any = str, description: str = "") -> OpenApiParameter:
    return OpenApiParameter(name, kind, OpenApiParameter.QUERY, required=False, description=description)


PROJECT = query("project_id", description="only this project")
LIMIT = query("limit", int, "how many (bounded; see the error for the range)")
DAYS = query("days", int, "window in days, 1–3650 (default 30)")

MemoryPage = obj(
    "MemoryPage",
    next=serializers.URLField(allow_null=True),
    previous=serializers.URLField(allow_null=True),
    results=serializers.ListField(child=MemoryOut()),
)
SearchOut = obj("SearchResults", project_id=serializers.CharField(), results=serializers.ListField(child=HitOut()))
RecallOut = obj(
    "RecallResults",
    project_id=serializers.CharField(),
    recall_id=serializers.CharField(allow_null=True),
    results=serializers.ListField(child=HitOut()),
)
SimilarOut = obj(
    "Similar", id=serializers.IntegerField(), content=serializers.CharField(), similarity=serializers.FloatField()
)
CreatedOut = obj(
    "Created",
    id=serializers.IntegerField(),
    uuid=serializers.UUIDField(),
    project_id=serializers.CharField(),
    created=serializers.BooleanField(),
    similar=serializers.ListField(child=SimilarOut, required=False),
    supersedes=serializers.IntegerField(required=False),
)
DuplicateOut = obj(
    "Duplicate",
    id=serializers.IntegerField(),
    uuid=serializers.UUIDField(),
    project_id=serializers.CharField(),
    created=serializers.BooleanField(),
    duplicate_of=serializers.IntegerField(),
    content=serializers.CharField(),
    supersedes=serializers.IntegerField(required=False),
)
DeletedOut = obj(
    "Deleted", id=serializers.IntegerField(), uuid=serializers.UUIDField(), deleted=serializers.BooleanField()
)
RatedOut = obj(
    "Rated",
    id=serializers.IntegerField(),
    uuid=serializers.UUIDField(),
    rating=serializers.IntegerField(),
    archived=serializers.BooleanField(),
)


def documented(
    ok: Any = OpenApiTypes.OBJECT,
    *,
    request: Any = None,
    status: int = 200,
    params: list[OpenApiParameter] | None = None,
    errors: tuple[int, ...] = (400,),
    summary: str = "",
    operation_id: str | None = None,
    also: dict[int, Any] | None = None,
) -> Callable[[Any], Any]:
    """extend_schema with our error contract: every listed status answers `{"error": "..."}`.
    `also`: further success statuses and their bodies."""
    responses: dict[int, Any] = {status: ok, **(also or {})}
    responses.update({code: Error for code in (*errors, *ALWAYS)})
    return extend_schema(
        request=request,
        responses=responses,
        parameters=params or [],
        summary=summary or None,
        operation_id=operation_id,
    )

"""REST API: validate → service/query → serialize. No business logic here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from access import policy as access
from yullu_core.arguments import SESSION_ID, WholeNumber, wrong_type
from yullu_core.errors import UserError
from yullu_core.rest import argument, as_given, documented, many, query, valid

from . import lifecycle
from .models import Memory, RejectedMemory
from .rest import (
    DAYS,
    LIMIT,
    WHERE,
    CreatedOut,
    DeletedOut,
    DuplicateOut,
    MemoryDetailOut,
    MemoryOut,
    MemoryPage,
    ProjectOut,
    RatedOut,
    RecallOut,
    RejectedOut,
    ScopeIn,
    SearchOut,
    UpdatedOut,
    project_param,
    rest_scope,
)
from .scope import NO_PROJECT, SCOPES, project_of, scope_for
from .search import queries, stats
from .search.context import BUDGET, CONTEXT_QUERY, DEFAULT_BUDGET, PREFER_CATEGORIES, PREFER_HELP, build_context
from .search.merged import CATEGORIES, MIN_SIMILARITY, QUERY, Recall
from .search.merged import LIMIT as RECALL_LIMIT
from .wire import SearchResults, deleted_to_wire, memory_to_wire, recall_to_wire, rejected_to_wire
from .write import create, edit, validation

QS = TypeVar("QS", bound=QuerySet[Any])


def visible_in(qs: QS, project_id: str | None) -> QS:
    """A list narrowed to what the caller may read, and to `project_id` when given (a project
    hidden from them answers like a missing one)."""
    if project_id:
        access.require(project_id, access.READ)
        return qs.filter(project_id=project_id)
    return access.only_visible(qs)


def ruled(name: str, clean: Callable[[Any], Any], *, required: bool = False, update: bool = False) -> Any:
    """A field judged by its rule in memories/write/validation.py (a bad value gets the rule's one sentence,
    as on every other path) and described to OpenAPI by the same rule. The value goes to the
    service as given: it cleans it again, and "" keeps meaning what it means there."""

    @extend_schema_field(validation.json_schema(name, update=update))
    class Ruled(serializers.Field):
        def to_internal_value(self, data: Any) -> Any:
            clean(data)  # raises UserError: answered as {"error": sentence} (yullu_core.api_errors)
            return data

        def to_representation(self, value: Any) -> Any:
            return value

    return Ruled(required=required, allow_null=not required)


# Code the memory cites (docs/contract.md §12): 'app/clock.py', 'app/clock.py:40-58', 'app/clock.py::Clock.now'.
ANCHORS = serializers.ListField(child=serializers.CharField(max_length=1400), required=False, allow_null=True)


class MemoryIn(ScopeIn):
    content = ruled("content", validation.clean_content, required=True)
    scope = as_given({"type": "string", "enum": list(SCOPES)})  # judged once, by the service (scope_for), as on MCP
    category = ruled("category", validation.clean_category)
    tags = ruled("tags", validation.clean_tags)
    supersedes = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=2**63 - 1)
    importance = ruled("importance", validation.clean_importance)
    ttl_days = ruled("ttl_days", validation.clean_ttl_days)
    session_id = argument(SESSION_ID)
    anchors = ANCHORS


class MemoryPatch(ScopeIn):
    # project_id/cwd (optional, as for MCP's update_memory): the memory must be that project's, and the
    # checkout is recorded as a write records it, so anchors pin against the caller's files.
    content = ruled("content", validation.clean_content)
    category = ruled("category", validation.clean_category)
    tags = ruled("tags", validation.clean_tags)
    importance = ruled("importance", validation.clean_importance)
    ttl_days = ruled("ttl_days", lambda days: validation.clean_ttl_days(days, zero_clears=True), update=True)
    supersede = serializers.BooleanField(required=False, default=False)
    anchors = ANCHORS


class LinkIn(ScopeIn):  # project_id/cwd (optional, as for MCP's link_memories): the memory must be that project's
    to = serializers.IntegerField(min_value=1, max_value=2**63 - 1)
    kind = as_given({"type": "string", "enum": list(lifecycle.LINK_KINDS)}, required=True)  # judged by the service
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class ResolveIn(ScopeIn):  # project_id/cwd (optional, as for MCP's resolve_conflict)
    resolution = as_given({"type": "string", "enum": list(lifecycle.RESOLUTIONS)}, required=True)  # as on MCP
    content = serializers.CharField(required=False, allow_blank=True, allow_null=True, trim_whitespace=False)


class VerdictIn(serializers.Serializer):
    # Judged by the service (lifecycle.rate_recall), as the MCP tool's are: the same sentence.
    recall_id = as_given({"type": "string", "format": "uuid"}, required=True)
    memory_id = as_given({"type": "integer", "minimum": 1}, required=True)
    useful = as_given({"type": "boolean"}, required=True)
    comment = argument(lifecycle.COMMENT, default="")


class RecallIn(ScopeIn):
    query = argument(QUERY, required=True)
    categories = argument(CATEGORIES)
    limit = argument(RECALL_LIMIT, default=5)
    min_similarity = argument(MIN_SIMILARITY, default=None)


class ContextIn(ScopeIn):
    query = argument(CONTEXT_QUERY)
    budget_tokens = argument(BUDGET, default=DEFAULT_BUDGET)
    categories = argument(CATEGORIES)
    prefer_categories = argument(PREFER_CATEGORIES, help_text=PREFER_HELP)


class RateIn(serializers.Serializer):
    rating = serializers.IntegerField()
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


def flag(request: Request, name: str) -> bool:
    """A yes/no query parameter: 1 or true, 0 or false (or absent); anything else is the sentence MCP gives."""
    value = request.query_params.get(name, "0").lower()
    if value not in ("1", "true", "0", "false", ""):
        raise UserError(wrong_type(name, "boolean"))
    return value in ("1", "true")


def _limit(request: Request, default: int = 20, most: int = 200) -> int:
    raw = request.query_params.get("limit")
    return default if raw is None else WholeNumber("limit", 1, most).clean(raw)  # list_memories' rule at 200


class MemoryCursor(CursorPagination):
    ordering = ("-updated_at", "-id")
    page_size = 20
    page_size_query_param = "limit"
    max_page_size = 200

    def decode_cursor(self, request: Request) -> Any:
        # DRF answers a mangled cursor with 404; it is bad input, so 400.
        try:
            return super().decode_cursor(request)
        except NotFound:
            raise serializers.ValidationError({"cursor": "is not a cursor this API handed out."}) from None


class MemoryList(APIView):
    @documented(
        PolymorphicProxySerializer("MemoryListOrSearch", [MemoryPage, SearchOut], resource_type_field_name=None),
        params=[
            *WHERE,
            LIMIT,
            query("q", description="semantic preview search (needs project_id or cwd; never logged)"),
            query("cursor"),
            query("all", description="1: include superseded and expired memories"),
        ],
        summary="List memories (cursor pages), or preview-search them with ?q=",
        operation_id="memories_list",
    )
    def get(self, request: Request) -> Response:
        project_id = project_param(request)
        q = request.query_params.get("q", "").strip()
        if q:
            if not project_id:
                raise UserError(f"q searches one project; {NO_PROJECT}")
            access.require(project_id, access.READ)
            found = queries.search(project_id, q, limit=_limit(request, 20, 50), log=False, min_similarity=0.0)
            return Response(SearchResults(project_id=project_id, results=found.results))
        _limit(request, 20, MemoryCursor.max_page_size)  # validates ?limit= (the paginator would ignore junk)
        # Superseded and expired memories are history: listed only with ?all=1 (or true, as every flag here).
        qs = Memory.objects.all() if flag(request, "all") else Memory.objects.current()
        qs = visible_in(qs, project_id)
        paginator = MemoryCursor()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response([memory_to_wire(m) for m in page or []])

    @documented(
        CreatedOut,
        request=MemoryIn,
        status=201,
        also={200: DuplicateOut},
        errors=(400, 404),
        summary="Store a memory (200 with duplicate_of when a near-duplicate exists)",
    )
    def post(self, request: Request) -> Response:
        data = valid(MemoryIn, request.data)
        stored = create.store_memory(
            scope_for(data.get("scope"), data.get("project_id"), data.get("cwd")),
            data["content"],
            data.get("category"),
            validation.with_session(data.get("tags"), data.get("session_id")),
            source="rest",
            supersedes=data.get("supersedes"),
            importance=data.get("importance"),
            ttl_days=data.get("ttl_days"),
            anchors=data.get("anchors"),
        )
        return Response(stored.as_dict(), status=201 if stored.created else 200)


def named(data: dict[str, Any]) -> str | None:
    """The project a body names by `project_id` or `cwd` (resolved as a read: nothing recorded), or None."""
    project_id, cwd = data.get("project_id") or None, data.get("cwd") or None
    return project_of(project_id, cwd) if project_id or cwd else None


def addressed(request: Request, pk: int) -> Memory:
    """The memory `pk`; with `?project_id=` or `?cwd=` it must be that project's (or the caller's
    personal one), as for MCP's get_memory and delete_memory."""
    project_id = project_param(request)
    return edit.get_memory_in(pk, project_id) if project_id else edit.get_memory(pk)


class MemoryDetail(APIView):
    @documented(MemoryDetailOut, params=WHERE, errors=(404,), summary="One memory, its anchors, links and history")
    def get(self, request: Request, pk: int) -> Response:
        return Response(lifecycle.memory_detail(pk, project_param(request)))  # as MCP's get_memory

    @documented(UpdatedOut, request=MemoryPatch, errors=(400, 404))
    def patch(self, request: Request, pk: int) -> Response:
        data = valid(MemoryPatch, request.data)
        where = {"project_id": data.pop("project_id", None), "cwd": data.pop("cwd", None)}
        if (where["project_id"] or "").strip() or (where["cwd"] or "").strip():
            edit.get_memory_in(pk, rest_scope(where).project_id)
        given = "anchors" in data
        return Response(edit.updated_answer(edit.update_memory(pk, **data, source="rest"), given))

    @documented(DeletedOut, params=WHERE, errors=(404,))
    def delete(self, request: Request, pk: int) -> Response:
        addressed(request, pk)
        memory = edit.delete_memory(pk, source="rest")
        return Response(deleted_to_wire(pk, memory))


class HistoryView(APIView):
    @documented(params=WHERE, errors=(404,), summary="Every recorded change to a memory (source, before, after, time)")
    def get(self, request: Request, pk: int) -> Response:
        addressed(request, pk)
        return Response({"id": pk, "history": lifecycle.history(pk), "links": lifecycle.links_of(pk)})


class LinkView(APIView):
    @documented(
        request=LinkIn,
        status=201,
        errors=(400, 404),
        also={200: OpenApiTypes.OBJECT},
        summary="Link this memory to another of its project (200: that link existed, returned as it is)",
    )
    def post(self, request: Request, pk: int) -> Response:
        data = valid(LinkIn, request.data)
        if (project_id := named(data)) is not None:
            edit.get_memory_in(pk, project_id)
        link, made = lifecycle.link_or_find(pk, data["to"], data["kind"], note=data["note"], source="rest")
        return Response(lifecycle.link_dict(link), status=201 if made else 200)  # the same link again: 200


class ConflictsView(APIView):
    @documented(params=WHERE, errors=(), summary="Open contradicts links (the conflicts queue)")
    def get(self, request: Request) -> Response:
        project_id = project_param(request)  # None: every project the caller may read
        return Response({"project_id": project_id, "conflicts": lifecycle.open_conflicts(project_id)})


class ResolveConflictView(APIView):
    @documented(request=ResolveIn, errors=(400, 404), summary="Resolve a conflict: keep one, keep both, or merge")
    def post(self, request: Request, pk: int) -> Response:
        data = valid(ResolveIn, request.data)
        if (project_id := named(data)) is not None:
            lifecycle.conflict_in(pk, project_id)
        link = lifecycle.resolve_conflict(pk, data["resolution"], merged_content=data.get("content"), source="rest")
        return Response(link)


class RecallFeedbackView(APIView):
    @documented(request=VerdictIn, errors=(400, 404), summary="Say whether a recalled memory was useful")
    def post(self, request: Request) -> Response:
        data = valid(VerdictIn, request.data)
        verdict = lifecycle.rate_recall(
            data["recall_id"], data["memory_id"], data["useful"], data["comment"], source="rest"
        )
        return Response(verdict)


class RateView(APIView):
    @documented(RatedOut, request=RateIn, errors=(400, 404), summary="Rate 1–10: 6–10 keeps, 1–5 archives")
    def post(self, request: Request, pk: int) -> Response:
        data = valid(RateIn, request.data)
        return Response(edit.rate_memory(pk, data["rating"], data["comment"], source="rest"))


class UnratedView(APIView):
    @documented(many("Unrated", "memories", MemoryOut()), params=[*WHERE, LIMIT])
    def get(self, request: Request) -> Response:
        qs = Memory.objects.filter(rating=None).order_by("-created_at", "-id")
        qs = visible_in(qs, project_param(request))
        return Response({"memories": [memory_to_wire(m) for m in qs[: _limit(request, 50)]]})


class RejectedView(APIView):
    @documented(many("Rejected", "rejected", RejectedOut()), params=[*WHERE, LIMIT])
    def get(self, request: Request) -> Response:
        qs = visible_in(
            RejectedMemory.objects.select_related("created_by").order_by("-rejected_at"), project_param(request)
        )
        rows = qs[: _limit(request, 50)]
        return Response({"rejected": [rejected_to_wire(r) for r in rows]})


class RecallView(APIView):
    @documented(RecallOut, request=RecallIn, summary="Recall memories (logged, like the MCP tool)")
    def post(self, request: Request) -> Response:
        data = valid(RecallIn, request.data)
        scope = rest_scope(data, remember=False)
        asked = Recall.judged(data["query"], data["limit"], data.get("categories"), data.get("min_similarity"))
        found = asked.run(scope.project_id)
        return Response(recall_to_wire(scope.project_id, found.recall_id, found.results))


class ContextView(APIView):
    @documented(request=ContextIn, summary="One block of memories within a token budget (no query: the primer)")
    def post(self, request: Request) -> Response:
        data = valid(ContextIn, request.data)
        project, query, budget = rest_scope(data, remember=False).project_id, data.get("query"), data["budget_tokens"]
        hints = data.get("prefer_categories")
        return Response(build_context(project, query, budget, data.get("categories"), prefer_categories=hints))


class ProjectsView(APIView):
    @documented(many("Projects", "projects", ProjectOut()), errors=())
    def get(self, request: Request) -> Response:
        return Response({"projects": stats.projects()})


def _days(request: Request) -> int:
    try:
        days = int(request.query_params.get("days", "30"))
    except ValueError:
        days = -1
    if not 1 <= days <= 3650:
        raise serializers.ValidationError({"days": "must be a whole number from 1 to 3650."})
    return days


class StatsView(APIView):
    @documented(params=[*WHERE, DAYS], errors=(404,))
    def get(self, request: Request) -> Response:
        return Response(stats.stats(project_param(request), _days(request)))


class RetrievalsView(APIView):
    @documented(params=[*WHERE, LIMIT])
    def get(self, request: Request) -> Response:
        return Response({"retrievals": stats.retrievals(project_param(request), _limit(request, 50))})


class UsageView(APIView):
    @documented(
        params=[
            query("since_hours", float),
            query("recent", description="1: include recent calls"),
            query("recent_limit", int, "how many recent calls, 1–200 (default 20), as get_usage's"),
        ]
    )
    def get(self, request: Request) -> Response:
        # Judged by the service's rules (stats.SINCE_HOURS, stats.RECENT_LIMIT), as the MCP tool's are.
        since = request.query_params.get("since_hours") or None
        recent = flag(request, "recent")
        return Response(stats.usage_summary(since, recent, request.query_params.get("recent_limit", 20)))


class UsageDailyView(APIView):
    @documented(params=[DAYS])
    def get(self, request: Request) -> Response:
        return Response({"days": stats.usage_by_day(_days(request))})

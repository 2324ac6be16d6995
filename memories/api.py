"""REST API: validate → service/query → serialize. No business logic here."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from . import queries, services, stats
from .models import Memory, RejectedMemory
from .scope import resolve
from .serializers import memory_dict


class ScopeIn(serializers.Serializer):
    project_id = serializers.CharField(required=False, allow_blank=True, max_length=500)
    cwd = serializers.CharField(required=False, allow_blank=True, max_length=4096)


class MemoryIn(ScopeIn):
    content = serializers.CharField(trim_whitespace=False, allow_blank=True)
    category = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    tags = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)


class MemoryPatch(serializers.Serializer):
    content = serializers.CharField(required=False, trim_whitespace=False, allow_blank=True)
    category = serializers.CharField(required=False, allow_blank=True)
    tags = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)


class RecallIn(ScopeIn):
    query = serializers.CharField(max_length=10000)
    categories = serializers.ListField(child=serializers.CharField(), required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=50, default=5)


class RateIn(serializers.Serializer):
    rating = serializers.IntegerField()
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


def valid(serializer_cls: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    s = serializer_cls(data=data)
    s.is_valid(raise_exception=True)
    return dict(s.validated_data)


def _limit(request: Request, default: int = 20, most: int = 200) -> int:
    s = serializers.IntegerField(min_value=1, max_value=most)
    raw = request.query_params.get("limit")
    if raw is None:
        return default
    try:
        return s.run_validation(raw)
    except serializers.ValidationError:
        raise serializers.ValidationError({"limit": f"must be a whole number from 1 to {most}."}) from None


class MemoryCursor(CursorPagination):
    ordering = ("-updated_at", "-id")
    page_size = 20
    page_size_query_param = "limit"
    max_page_size = 200


class MemoryList(APIView):
    def get(self, request: Request) -> Response:
        project_id = request.query_params.get("project_id") or None
        q = request.query_params.get("q", "").strip()
        if q:
            if not project_id:
                raise serializers.ValidationError({"project_id": "is required with q."})
            found = queries.search(project_id, q, limit=_limit(request, 20, 50), log=False, min_similarity=0.0)
            return Response({"project_id": project_id, "results": found.results})
        _limit(request, 20, MemoryCursor.max_page_size)  # validates ?limit= (the paginator would ignore junk)
        qs = Memory.objects.all()
        if project_id:
            qs = qs.filter(project_id=project_id)
        paginator = MemoryCursor()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response([memory_dict(m) for m in page or []])

    def post(self, request: Request) -> Response:
        data = valid(MemoryIn, request.data)
        scope = resolve(data.get("project_id"), data.get("cwd"))
        memory = services.create_memory(scope, data["content"], data.get("category"), data.get("tags"), source="rest")
        return Response({"id": memory.id, "uuid": str(memory.uuid), "project_id": memory.project_id}, status=201)


class MemoryDetail(APIView):
    def get(self, request: Request, pk: int) -> Response:
        return Response(memory_dict(services.get_memory(pk)))

    def patch(self, request: Request, pk: int) -> Response:
        data = valid(MemoryPatch, request.data)
        return Response(memory_dict(services.update_memory(pk, **data, source="rest")))

    def delete(self, request: Request, pk: int) -> Response:
        memory = services.delete_memory(pk, source="rest")
        return Response({"id": pk, "uuid": str(memory.uuid), "deleted": True})


class RateView(APIView):
    def post(self, request: Request, pk: int) -> Response:
        data = valid(RateIn, request.data)
        return Response(services.rate_memory(pk, data["rating"], data["comment"], source="rest"))


class UnratedView(APIView):
    def get(self, request: Request) -> Response:
        qs = Memory.objects.filter(rating=None).order_by("-created_at", "-id")
        if project_id := request.query_params.get("project_id"):
            qs = qs.filter(project_id=project_id)
        return Response({"memories": [memory_dict(m) for m in qs[: _limit(request, 50)]]})


class RejectedView(APIView):
    def get(self, request: Request) -> Response:
        qs = RejectedMemory.objects.order_by("-rejected_at")
        if project_id := request.query_params.get("project_id"):
            qs = qs.filter(project_id=project_id)
        rows = qs[: _limit(request, 50)]
        return Response(
            {
                "rejected": [
                    {
                        "uuid": str(r.uuid),
                        "project_id": r.project_id,
                        "content": r.content,
                        "tags": r.tags,
                        "category": r.category,
                        "rating": r.rating,
                        "rating_comment": r.rating_comment,
                        "rejected_at": r.rejected_at.isoformat(),
                    }
                    for r in rows
                ]
            }
        )


class RecallView(APIView):
    def post(self, request: Request) -> Response:
        data = valid(RecallIn, request.data)
        scope = resolve(data.get("project_id"), data.get("cwd"))
        found = queries.search(scope.project_id, data["query"], limit=data["limit"], categories=data.get("categories"))
        return Response({"project_id": scope.project_id, "recall_id": found.recall_id, "results": found.results})


class ProjectsView(APIView):
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
    def get(self, request: Request) -> Response:
        return Response(stats.stats(request.query_params.get("project_id") or None, _days(request)))


class RetrievalsView(APIView):
    def get(self, request: Request) -> Response:
        project_id = request.query_params.get("project_id") or None
        return Response({"retrievals": stats.retrievals(project_id, _limit(request, 50))})


class UsageView(APIView):
    def get(self, request: Request) -> Response:
        raw = request.query_params.get("since_hours")
        try:
            since = float(raw) if raw else None
        except ValueError:
            raise serializers.ValidationError({"since_hours": "must be a number."}) from None
        return Response(stats.usage_summary(since, recent=request.query_params.get("recent") == "1"))


class UsageDailyView(APIView):
    def get(self, request: Request) -> Response:
        return Response({"days": stats.usage_by_day(_days(request))})

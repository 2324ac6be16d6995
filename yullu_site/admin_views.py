"""The admin pages that span apps: the dashboard (the site's index) and the projects page show
memories, dream passes and the embedder/reasoner health together, so they live with the site
rather than in one app (memories never imports dreaming)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.template.defaultfilters import pluralize
from django.utils import timezone

from access.policy import only_visible
from dreaming.models import DreamPass
from dreaming.reasoners import reasoner_status
from memories import stats
from memories.admin_views import admin_page, daily_charts
from memories.anchors import store as anchor_store
from memories.embedders import embeds, get_embedder
from memories.models import EventKind, Memory, MemoryEvent, MemoryVector, ProjectLocation, Usage
from sync.hygiene import all_advice
from sync.models import ProjectSyncState


def dashboard_context(request: HttpRequest) -> dict[str, Any]:
    totals = stats.stats(None, 30)
    return {
        "health": health(),
        "project_rows": project_rows(),
        "dream_passes": list(only_visible(DreamPass.objects.order_by("-started_at"))[:8]),
        "yullu_stats": totals,
        "stale_count": anchor_store.stale_count(),
        **daily_charts(computed=totals),
    }


def projects_view(request: HttpRequest) -> HttpResponse:
    return admin_page(request, "admin/yullu/projects.html", "Projects", project_rows=project_rows())


def project_rows(days: int = 30) -> list[dict[str, Any]]:
    """Per project: memories, unrated, recalls in the window, dream passes and the last pass's phase."""
    since = timezone.now() - timedelta(days=days)
    rows: dict[str, dict[str, Any]] = {}

    def row(pid: str) -> dict[str, Any]:
        return rows.setdefault(
            pid,
            {"project_id": pid, "memories": 0, "unrated": 0, "recalls": 0, "passes": 0, "failed": 0, "root": ""},
        )

    for m in (
        only_visible(Memory.objects.all())
        .values("project_id")
        .annotate(n=Count("id"), u=Count("id", filter=Q(rating=None)))
    ):
        row(m["project_id"]).update(memories=m["n"], unrated=m["u"])
    recalls = only_visible(MemoryEvent.objects.filter(kind=EventKind.RECALLED, created_at__gte=since))
    for rc in recalls.values("project_id").annotate(n=Count("recall_id", distinct=True)):
        row(rc["project_id"])["recalls"] = rc["n"]
    passes = (
        only_visible(DreamPass.objects.all())
        .values("project_id")
        .annotate(n=Count("id"), f=Count("id", filter=Q(phase="failed")))
    )
    for p in passes:
        row(p["project_id"]).update(passes=p["n"], failed=p["f"])
    for pid, root in only_visible(ProjectLocation.objects.all()).values_list("project_id", "git_root"):
        row(pid)["root"] = root
    return sorted(rows.values(), key=lambda r: (-r["memories"], r["project_id"]))


def health() -> dict[str, Any]:
    """Embedder and reasoner status, with the warnings a reviewer should act on."""
    embedder = get_embedder()
    total = Memory.objects.count()
    embedded = MemoryVector.objects.filter(embedder=embedder.id).count() if embeds(embedder) else 0
    reasoner = reasoner_status()
    day = timezone.now() - timedelta(days=1)
    failures = Usage.objects.filter(ok=False, created_at__gte=day)
    warnings: list[str] = []
    if not embeds(embedder):
        warnings.append('No embedder ([embedding].provider = "none"): search is keyword-only.')
    elif embedded < total:
        missing = total - embedded
        have = "has" if missing == 1 else "have"
        warnings.append(
            f"{missing} of {total} memor{pluralize(total, 'y,ies')} {have} no vector for {embedder.id} yet (backfill)."
        )
    if n := failures.count():
        last = failures.order_by("-created_at").first()
        calls = f"{n} provider call{pluralize(n)}"
        warnings.append(f"{calls} failed in the last 24 h (last: {last.error[:160] if last else ''}).")
    warnings += all_advice(only_visible(ProjectSyncState.objects.all()))
    cost = Usage.objects.aggregate(c=Sum("cost_microcents"))["c"] or 0
    return {
        "embedder": embedder.id,
        "embedded": embedded,
        "total": total,
        "reasoner": reasoner["name"] or "MCP sampling only",
        "reasoner_warning": reasoner["warning"],
        "warnings": warnings,
        "cost_usd": cost / 10**8,
        "min_similarity": settings.YULLU["retrieval"]["min_similarity"] or "calibrated gate",
    }

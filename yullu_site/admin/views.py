"""The admin pages that span apps: the dashboard (the site's index) and the projects page show
memories, dream passes and the embedder/reasoner health together, so they live with the site
rather than in one app (memories never imports dreaming)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from access.policy import ADMIN, only_visible, sees_install_wide
from dreaming.models import DreamPass
from memories import tallies
from memories.admin_views import admin_page, daily_charts
from memories.anchors import stale as anchor_stale
from memories.models import EventKind, Memory, MemoryEvent, ProjectLocation, Usage
from memories.search import stats
from sync.models import OutboxEvent, ProjectSyncState
from yullu_site.monitoring.health import DASHBOARD, gather, sync_events, team_log


def dashboard_context(request: HttpRequest) -> dict[str, Any]:
    totals = stats.stats(None, 30)
    return {
        "health": health(),
        "project_rows": project_rows(),
        "dream_passes": list(only_visible(DreamPass.objects.order_by("-started_at"))[:8]),
        "yullu_stats": totals,
        # What the review queue shows: the projects the reviewer is an admin of. The readable projects'
        # unrated count said "2 to review" to a `write` reviewer whose queue was empty (walk 12).
        "to_review": tallies.memory_counts(role=ADMIN).unrated,
        "stale_count": anchor_stale.stale_count(),
        "held_count": held_count(),
        **daily_charts(computed=totals),
    }


def held_count() -> int:
    """Current memories held for review (they instruct the assistant). A held memory rated 6-10 in the
    review queue leaves the queue but stays held: without this count nothing would lead back to it."""
    held = Memory.objects.filter(superseded_by__isnull=True).exclude(held_reason="")
    return only_visible(held).count()


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

    for pid, (n, unrated) in tallies.memory_counts().by_project.items():  # kept by the writes
        row(pid).update(memories=n, unrated=unrated)
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


# Health parts that count the whole install (every project's memories, every provider call's error).
INSTALL_WIDE_PARTS = ("vectors", "provider calls")


def health() -> dict[str, Any]:
    """The dashboard's part of the health model (yullu_site/monitoring/health.py): its numbers, and every
    problem as a warning a reviewer should act on (the team logs: of the projects they may read)."""
    visible_logs = only_visible(ProjectSyncState.objects.all())
    visible_events = only_visible(OutboxEvent.objects.all())
    found = gather(
        DASHBOARD, {"team log": lambda: team_log(visible_logs), "sync events": lambda: sync_events(visible_events)}
    )
    vectors, reasoner = found.part("vectors"), found.part("reasoner")
    embedder = str(vectors.data.get("embedder", ""))
    if sees_install_wide():
        cost: float | None = (Usage.objects.aggregate(c=Sum("cost_microcents"))["c"] or 0) / 10**8
        embedded, total = vectors.data.get("embedded", 0), vectors.data.get("total", 0)
        parts = [p for p in found.parts if p.name != "reasoner"]
    else:
        # The install's counts and model cost belong to no project (access.policy.require_install_wide):
        # a reviewer gets the vectors of the projects they may read, no cost, no install-wide problems.
        cost = None
        embedded, total = tallies.vector_count(embedder), tallies.memory_counts().memories
        parts = [p for p in found.parts if p.name not in ("reasoner", *INSTALL_WIDE_PARTS)]
    return {
        "embedder": embedder,
        "embedded": embedded,
        "total": total,
        "reasoner": reasoner.data.get("name") or "MCP sampling only",
        "reasoner_warning": " ".join(reasoner.problems) or None,
        "warnings": [problem for p in parts for problem in p.problems],
        "cost_usd": cost,
        "min_similarity": settings.YULLU["retrieval"]["min_similarity"] or "calibrated gate",
    }

"""Custom admin pages: dashboard, review queue, retrievals, stats, usage, settings, projects, graph.
They call the write side (memories.write) and the read side (memories.search) only."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from access import policy as access
from access.people import username
from yullu_core import settings_edit
from yullu_core.config import ConfigError, load_for_project
from yullu_core.errors import UserError
from yullu_core.json_body import error_response, json_response

from . import authors, lifecycle, origins, tallies
from .anchors import stale as anchor_stale
from .models import CATEGORIES, LinkKind, Memory, MemoryAnchor, MemoryLink, RejectedMemory
from .scope import known_root
from .search import admin_queries, stats
from .write import edit

REVIEW_PAGE = 30


def admin_page(request: HttpRequest, template: str, title: str, **context: Any) -> HttpResponse:
    return TemplateResponse(request, template, {**admin.site.each_context(request), "title": title, **context})


def _projects() -> list[str]:
    return [p["project_id"] for p in stats.projects()]


def chart(labels: list[str], series: dict[str, list[float]], empty: str, kind: str = "bar") -> dict[str, Any]:
    """Data for one Chart.js chart (drawn by static/yullu/admin.js), or the sentence shown when empty."""
    has_data = any(v for values in series.values() for v in values)
    return {"kind": kind, "labels": labels, "series": series, "empty": "" if has_data else empty}


def daily_charts(project_id: str | None = None, computed: dict[str, Any] | None = None) -> dict[str, Any]:
    """The activity, recall and cost charts of the last 30 days (`computed`: `stats.stats(project_id,
    30)` when the caller has it already, so a page does not count everything twice)."""
    days = (computed or stats.stats(project_id, 30))["per_day"]
    labels = [d["day"][5:] for d in days]
    return {
        "chart_activity": chart(
            labels,
            {k: [d[k] for d in days] for k in ("created", "updated", "deleted")},
            "No memories written in the last 30 days. Each store, edit or delete will show here per day.",
        ),
        "chart_recalled": chart(
            labels,
            {"recalled": [d["recalled"] for d in days]},
            "Nothing recalled in the last 30 days. Each memory an assistant is sent counts here per day.",
        ),
        "chart_cost": _cost_chart(),
    }


def _cost_chart() -> dict[str, Any]:
    per_day: dict[str, float] = {}
    for row in stats.usage_by_day(30) if access.sees_install_wide() else []:
        per_day[row["day"]] = per_day.get(row["day"], 0) + (row["cost_microcents_usd"] or 0) / 10**8
    days = sorted(per_day)
    return chart(
        [d[5:] for d in days],
        {"USD": [round(per_day[d], 6) for d in days]},
        "No paid provider calls in the last 30 days (the local embedder is free). Remote embed and reason "
        "calls will show their cost here per day.",
    )


# --- review queue -------------------------------------------------------------------------


def _safe_next(request: HttpRequest, fallback: str = "admin:memories_review") -> str:
    target = request.POST.get("next") or reverse(fallback)
    if not url_has_allowed_host_and_scheme(target, {request.get_host()}):
        return reverse(fallback)
    return target


def _named(writer: str, kind: str, owner: str | None) -> str:
    """Who the queue names beside a memory's source: a person's or a teammate's name, and whose assistant stored
    it unless it was the install's owner's (a one-person install's every row). On a team server a teammate's
    assistant's memory said only "from assistant" (walk 23)."""
    if kind in ("teammate", "person") or (kind == "assistant" and writer != owner):
        return writer
    return ""


def review_view(request: HttpRequest) -> HttpResponse:
    """Unrated memories, newest first; 6–10 keeps, 1–5 archives (after confirmation), with undo."""
    if request.method == "POST":
        _review_post(request)
        return HttpResponseRedirect(_safe_next(request))
    qs: QuerySet[Memory] = access.only_visible(  # the review queue is a project admin's (docs/contract.md §11)
        Memory.objects.filter(rating__isnull=True).order_by("-created_at", "-id"), role=access.ADMIN
    )
    project, category, source = (request.GET.get(k, "") for k in ("project_id", "category", "source"))
    if project:
        qs = qs.filter(project_id=project)
    if category:
        qs = qs.filter(category=None if category == "none" else category)
    if source in admin_queries.SOURCES:
        qs = admin_queries.source_filter(qs, source).order_by(admin_queries.newest_first_unindexed("created_at"), "-id")
    unrated = tallies.memory_counts(project or None, role=access.ADMIN)
    if source:  # who wrote it is in the activity log, not in the tallies: counted
        total = qs.count()
    elif category:
        total = unrated.unrated_by_category.get(None if category == "none" else category, 0)
    else:
        total = unrated.unrated
    # An empty queue beside readable projects' unrated memories says why: they are their admins' to review.
    not_yours = 0 if total or category or source else tallies.memory_counts(project or None).unrated - unrated.unrated
    page = list(qs[:REVIEW_PAGE])
    ids = [m.pk for m in page]
    source_of, history = admin_queries.sources(ids), admin_queries.recall_history(ids)
    why = origins.explain(page)  # which dream pass proposed it, from which conversation, and the reason
    by = authors.writers(page)  # the row says who wrote it (memories.authors), not the history's created row
    owner = username(access.owner_id())
    rows = [
        {
            "m": m,
            "source": (kind := source_of.get(m.pk, "unknown")),  # not `source`: a walrus binds the function's name
            "by": _named(by.get(m.pk, ""), kind, owner),
            "history": history[m.pk],
            "origin": why.get(m.pk),
        }
        for m in page
    ]
    return admin_page(
        request,
        "admin/yullu/review.html",
        "Review queue",
        rows=rows,
        total=total,
        not_yours=not_yours,
        project=project,
        category=category,
        source=source,
        projects=sorted(pid for pid, (_, n) in tallies.memory_counts(role=access.ADMIN).by_project.items() if n),
        categories=CATEGORIES,
        sources=list(admin_queries.SOURCES),
        ratings=range(1, 11),
    )


def _review_post(request: HttpRequest) -> None:
    action = request.POST.get("action", "rate")
    try:
        if action == "rate":
            _rate(request, [request.POST.get("memory_id")], request.POST.get("rating"))
        elif action == "bulk":
            ids = request.POST.getlist("selected")
            if not ids:
                raise UserError("Select memories first (tick the boxes, or press x on a row).")
            _rate(request, ids, request.POST.get("rating"))
        elif action == "undo_keep":
            request.session["yullu_undo"] = {}
            memory = edit.clear_rating(request.POST.get("memory_id"))
            messages.success(request, f"Memory {memory.pk} is back in the review queue.")
        elif action == "approve":
            memory = edit.approve_held(request.POST.get("memory_id"), source="admin")
            messages.success(request, f"Memory {memory.pk} approved: assistants can retrieve it now.")
        elif action == "restore":
            request.session["yullu_undo"] = {}
            restored = [edit.restore_rejected(r, source="admin") for r in request.POST.getlist("rejected_id")]
            messages.success(request, f"Restored {len(restored)} memory(ies) to the review queue.")
        else:
            raise UserError(f"unknown action {action!r}.")
    except UserError as exc:
        messages.error(request, str(exc))


def _rate(request: HttpRequest, ids: list[Any], rating: Any) -> None:
    comment = request.POST.get("comment", "")
    outcomes = [edit.rate_memory(pk, rating, comment, source="admin") for pk in ids]
    archived = [o for o in outcomes if o["archived"]]
    kept = [o for o in outcomes if not o["archived"]]
    undo: dict[str, Any] = {}
    if archived:
        rejected = RejectedMemory.objects.filter(uuid__in=[o["uuid"] for o in archived]).values_list("pk", flat=True)
        undo = {"undo": "restore", "undo_ids": list(rejected)}
    elif kept:
        undo = {"undo": "undo_keep", "undo_ids": [kept[0]["id"]]}
    request.session["yullu_undo"] = undo
    rating_text = outcomes[0]["rating"] if outcomes else rating
    if len(outcomes) == 1:
        verb = "archived to rejected memories" if archived else "kept"
        messages.success(request, f"Memory {outcomes[0]['id']} rated {rating_text}: {verb}.")
    else:
        messages.success(request, f"Rated {len(outcomes)} memories {rating_text}: {len(archived)} archived.")


# --- retrievals, stats, usage ------------------------------------------------------------


def _page_number(request: HttpRequest) -> int:
    try:
        return max(1, int(request.GET.get("page", "1")))
    except ValueError:
        return 1


def retrievals_view(request: HttpRequest) -> HttpResponse:
    project = request.GET.get("project_id", "")
    page = _page_number(request)
    groups, more = admin_queries.retrieval_page(project or None, page)
    return admin_page(
        request,
        "admin/yullu/retrievals.html",
        "Retrievals",
        groups=groups,
        project=project,
        projects=_projects(),
        page=page,
        more=more,
        can_rate=True,
    )


def recall_verdict_view(request: HttpRequest) -> HttpResponse:
    """Useful / not useful for one memory in one recall (the lifecycle work's rate_recall)."""
    if request.method != "POST":
        return HttpResponseRedirect(reverse("admin:memories_retrievals"))
    try:
        useful = request.POST.get("useful") == "1"
        lifecycle.rate_recall(
            request.POST.get("recall_id"),
            request.POST.get("memory_id"),
            useful,
            request.POST.get("comment", ""),
            source="admin",
        )
        messages.success(
            request, f"Marked memory {request.POST.get('memory_id')} {'useful' if useful else 'not useful'}."
        )
    except UserError as exc:
        messages.error(request, str(exc))
    return HttpResponseRedirect(_safe_next(request))


def stats_view(request: HttpRequest) -> HttpResponse:
    project = request.GET.get("project_id", "")
    totals = stats.stats(project or None, 30)
    return admin_page(
        request,
        "admin/yullu/stats.html",
        "Stats",
        yullu_stats=totals,
        project=project,
        projects=_projects(),
        **daily_charts(project or None, computed=totals),
    )


def usage_view(request: HttpRequest) -> HttpResponse:
    summary = stats.usage_summary(None, recent=True, recent_limit=50)
    for bucket in summary["buckets"]:
        bucket["cost_usd"] = (bucket["cost_microcents_usd"] or 0) / 10**8
    calls: dict[str, int] = {}
    for row in stats.usage_by_day(30):
        calls[row["day"]] = calls.get(row["day"], 0) + row["calls"]
    days = sorted(calls)
    return admin_page(
        request,
        "admin/yullu/usage.html",
        "Usage",
        summary=summary,
        total_usd=summary["total_cost_microcents_usd"] / 10**8,
        chart_calls=chart(
            [d[5:] for d in days],
            {"calls": [calls[d] for d in days]},
            "No provider calls in the last 30 days. Every embed or reason call is counted here per day.",
        ),
        chart_cost=_cost_chart(),
    )


def conflicts_view(request: HttpRequest) -> HttpResponse:
    """Open `contradicts` pairs: keep one (the other is superseded), keep both (related), or merge."""
    if request.method == "POST":
        try:
            link = lifecycle.resolve_conflict(
                request.POST.get("link_id"),
                request.POST.get("resolution"),
                merged_content=request.POST.get("merged_content"),
                source="admin",
            )
            messages.success(request, f"Conflict {link['id']} resolved: {link['resolution'].replace('_', ' ')}.")
        except UserError as exc:
            messages.error(request, str(exc))
        return HttpResponseRedirect(_safe_next(request))
    project = request.GET.get("project_id", "")
    conflicts = _with_writers(lifecycle.open_conflicts(project or None))
    return admin_page(
        request,
        "admin/yullu/conflicts.html",
        "Conflicts",
        conflicts=conflicts,
        not_yours=0 if conflicts or project else _conflicts_not_yours(),
        project=project,
        projects=_projects(),
    )


def _conflicts_not_yours() -> int:
    """Open conflicts of projects the reviewer may read but not resolve (the queue is a project admin's):
    said beside an empty queue, which read "No open conflicts" to a `write` reviewer (walk 12)."""
    qs = MemoryLink.objects.filter(kind=LinkKind.CONTRADICTS, resolved_at__isnull=True)
    return access.only_visible(qs).count() - access.only_visible(qs, role=access.ADMIN).count()


def _with_writers(conflicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Who wrote each side's text, and when ("Bo Berg · 2026-11-26 21:11"): the queue showed two texts and
    "found by sync", so a reviewer could not weigh a teammate's word against another's (walk 10)."""
    memories = Memory.objects.only("uuid").in_bulk({c[f"{side}_id"] for c in conflicts for side in ("from", "to")})
    writers = lifecycle.last_writers(list(memories.values()))  # one query for the page, not three per side
    for c in conflicts:
        for side in ("from", "to"):
            memory = memories.get(c[f"{side}_id"])
            wrote = writers.get(memory.uuid) if memory else None
            c[f"{side}_by"] = f"{wrote['by'] or 'unknown'} · {str(wrote['at'])[:16].replace('T', ' ')}" if wrote else ""
    return conflicts


# --- settings ----------------------------------------------------------------------------


def settings_view(request: HttpRequest) -> HttpResponse:
    """Effective config with the layer each value comes from (keys masked); run-time keys editable."""
    if request.method == "POST":
        access.require_install_wide("the install's settings file")  # edits every project's defaults
        try:
            changed = settings_edit.save(request.POST)
            if changed:
                messages.success(request, f"Saved {', '.join(changed)} to {settings_edit.path()}.")
            else:
                messages.info(request, "Nothing changed.")
        except ConfigError as exc:
            messages.error(request, str(exc))
        return HttpResponseRedirect(reverse("admin:memories_settings"))
    project = request.GET.get("project_id", "")
    if project:
        access.require(project, access.READ)
    try:
        cfg, origin = load_for_project(project, known_root(project) if project else None, settings.YULLU)
    except ConfigError as exc:  # the project's committed config is broken: say so, show the global values
        messages.error(request, str(exc))
        cfg, origin = load_for_project("", None, settings.YULLU)
    problem = settings_edit.file_problem()
    if problem:  # the values shown are what the server read at start; the next start would stop on this
        messages.error(request, f"{problem} (the values below are what the server read when it started)")
    return admin_page(
        request,
        "admin/yullu/settings.html",
        "Settings",
        rows=settings_edit.rows(cfg, origin),
        project=project,
        projects=_projects(),
        config_file=str(settings_edit.path()),
    )


# --- graph -------------------------------------------------------------------------------


def graph_view(request: HttpRequest) -> HttpResponse:
    projects = _projects()
    project = request.GET.get("project_id") or (projects[0] if projects else "")
    return admin_page(
        request,
        "admin/yullu/graph.html",
        "Graph",
        project=project,
        projects=projects,
        threshold=request.GET.get("threshold", "0.5"),
        categories=[*CATEGORIES, "uncategorised"],
    )


def graph_data_view(request: HttpRequest) -> HttpResponse:
    try:
        threshold = min(1.0, max(0.0, float(request.GET.get("threshold", "0.5"))))
    except ValueError:
        return error_response("threshold must be a number from 0 to 1.", 400)
    data = admin_queries.graph(request.GET.get("project_id", ""), threshold=threshold)
    change = reverse("admin:memories_memory_change", args=[0])
    for node in data["nodes"]:
        node["url"] = change.replace("/0/", f"/{node['id']}/")
    return json_response(data)


# --- stale queue (code anchors, docs/contract.md §12) ------------------------------------------------


def stale_view(request: HttpRequest) -> HttpResponse:
    """Memories whose cited code changed or is gone, with the diff since the pinned commit: keep
    (re-pin to HEAD), edit, supersede with a corrected text, or reject."""
    if request.method == "POST":
        _stale_post(request)
        return HttpResponseRedirect(_safe_next(request, "admin:memories_stale"))
    project = request.GET.get("project_id", "")
    rows = anchor_stale.stale_rows(project or None, limit=REVIEW_PAGE)
    return admin_page(
        request,
        "admin/yullu/stale.html",
        "Stale memories",
        rows=rows,
        total=anchor_stale.stale_count(project or None),
        project=project,
        projects=anchor_stale.anchored_projects(),
    )


def _stale_post(request: HttpRequest) -> None:
    action, memory_id = request.POST.get("action", ""), request.POST.get("memory_id")
    try:
        if action == "keep":
            before = MemoryAnchor.objects.filter(memory_id=edit.get_memory(memory_id).pk).count()
            memory = edit.repin_memory(memory_id, source="admin")
            gone = before - MemoryAnchor.objects.filter(memory=memory).count()  # re-pin drops code that is gone
            dropped = f" {gone} whose code is gone {'was' if gone == 1 else 'were'} dropped;" if gone else ""
            messages.success(request, f"Memory {memory.pk} kept:{dropped} its anchors are pinned to HEAD again.")
        elif action == "supersede":
            new = edit.update_memory(memory_id, content=request.POST.get("content", ""), supersede=True, source="admin")
            messages.success(request, f"Memory {memory_id} superseded by memory {new.pk}.")
        elif action == "reject":
            edit.rate_memory(memory_id, 3, request.POST.get("comment", "") or "stale: cited code changed")
            messages.success(request, f"Memory {memory_id} rejected (archived; restorable from Rejected).")
        else:
            raise UserError(f"unknown action {action!r}.")
    except UserError as exc:
        messages.error(request, str(exc))

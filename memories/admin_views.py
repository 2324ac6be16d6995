"""Custom admin pages: review queue, retrievals, stats, usage, settings. They call services/queries only."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from yullu_site.config import SECRET_KEYS, load_for_project, mask
from yullu_site.errors import UserError

from . import services, stats
from .models import Memory
from .scope import known_root


def _page(request: HttpRequest, template: str, title: str, **context: Any) -> HttpResponse:
    return TemplateResponse(request, template, {**admin.site.each_context(request), "title": title, **context})


def bar_chart(points: list[tuple[str, float]], height: int = 120, bar: int = 18) -> dict[str, Any]:
    """Geometry for a server-rendered SVG bar chart (no JavaScript, no CDN)."""
    top = max((v for _, v in points), default=0) or 1
    bars = []
    for n, (label, value) in enumerate(points):
        h = round(value / top * (height - 20))
        bars.append({"x": n * (bar + 4), "y": height - h - 14, "w": bar, "h": h, "label": label, "value": value})
    return {"bars": bars, "width": max(1, len(points)) * (bar + 4), "height": height}


def dashboard_context() -> dict[str, Any]:
    data = stats.stats(None, 30)
    days = data["per_day"]
    return {
        "yullu_stats": data,
        "chart_created": bar_chart([(d["day"][5:], d["created"]) for d in days]),
        "chart_recalled": bar_chart([(d["day"][5:], d["recalled"]) for d in days]),
        "chart_cost": bar_chart(_cost_by_day()),
        "dream_passes": _recent_passes(),
    }


def _cost_by_day() -> list[tuple[str, float]]:
    per_day: dict[str, float] = {}
    for row in stats.usage_by_day(30):
        per_day[row["day"]] = per_day.get(row["day"], 0) + (row["cost_microcents_usd"] or 0) / 10**8
    return [(day[5:], round(v, 4)) for day, v in sorted(per_day.items())]


def _recent_passes() -> list[Any]:
    from dreaming.models import DreamPass

    return list(DreamPass.objects.order_by("-started_at")[:10])


def review_view(request: HttpRequest) -> HttpResponse:
    """Unrated memories, newest first; rate 1–10 with an optional comment (1–5 archives)."""
    if request.method == "POST":
        try:
            outcome = services.rate_memory(
                request.POST.get("memory_id"),
                request.POST.get("rating"),
                request.POST.get("comment", ""),
                source="admin",
            )
            verb = "archived to rejected memories" if outcome["archived"] else "kept"
            messages.success(request, f"Memory {outcome['id']} rated {outcome['rating']}: {verb}.")
        except UserError as exc:
            messages.error(request, str(exc))
        return HttpResponseRedirect(request.get_full_path())
    qs = Memory.objects.filter(rating__isnull=True).order_by("-created_at", "-id")
    project = request.GET.get("project_id", "")
    if project:
        qs = qs.filter(project_id=project)
    projects = sorted(set(Memory.objects.filter(rating__isnull=True).values_list("project_id", flat=True)))
    return _page(
        request,
        "admin/yullu/review.html",
        "Review queue",
        memories=qs[:50],
        project=project,
        projects=projects,
        ratings=range(1, 11),
        total=qs.count(),
    )


def retrievals_view(request: HttpRequest) -> HttpResponse:
    project = request.GET.get("project_id") or None
    return _page(
        request,
        "admin/yullu/retrievals.html",
        "Retrievals",
        groups=stats.retrievals(project, 50),
        project=project or "",
    )


def stats_view(request: HttpRequest) -> HttpResponse:
    return _page(request, "admin/yullu/stats.html", "Stats", **dashboard_context())


def usage_view(request: HttpRequest) -> HttpResponse:
    summary = stats.usage_summary(None, recent=True, recent_limit=50)
    for bucket in summary["buckets"]:
        bucket["cost_usd"] = (bucket["cost_microcents_usd"] or 0) / 10**8
    return _page(
        request,
        "admin/yullu/usage.html",
        "Usage",
        summary=summary,
        total_usd=summary["total_cost_microcents_usd"] / 10**8,
        days=stats.usage_by_day(30),
        chart_cost=bar_chart(_cost_by_day()),
    )


def settings_view(request: HttpRequest) -> HttpResponse:
    """Effective config per project with the layer each value comes from; keys masked."""
    project = request.GET.get("project_id", "")
    cfg, origin = load_for_project(project, known_root(project) if project else None, settings.YULLU)
    rows = []
    for section, keys in cfg.items():
        for key, value in keys.items():
            shown = mask(value) if (section, key) in SECRET_KEYS else value
            rows.append({"key": f"{section}.{key}", "value": shown, "origin": origin[f"{section}.{key}"]})
    projects = [p["project_id"] for p in stats.projects()]
    return _page(
        request,
        "admin/yullu/settings.html",
        "Settings",
        rows=rows,
        project=project,
        projects=projects,
        config_file=str(settings.YULLU_HOME),
        changelist=reverse("admin:memories_memory_changelist"),
    )

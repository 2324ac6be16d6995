"""Dreaming in the admin: buffered sessions, dream now with live progress, history, prompt, schedules."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, Max
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from .models import DreamPass, DreamSchedule, SessionMessage
from .prompt import DEFAULT_PROMPT, current_prompt, reset_prompt, set_prompt


@admin.register(DreamPass)
class DreamPassAdmin(admin.ModelAdmin):
    list_display = [
        "started_at",
        "project_id",
        "trigger",
        "reasoner",
        "phase",
        "sessions_processed",
        "messages_processed",
        "ops_created",
        "ops_updated",
        "ops_deleted",
        "ops_skipped",
        "error_list",
    ]
    list_filter = ["project_id", "trigger"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="errors")
    def error_list(self, obj: DreamPass) -> str:
        return "; ".join(obj.errors or [])

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path("dreaming/", wrap(self.dreaming_view), name="dreaming_dreampass_dreaming"),
            *super().get_urls(),
        ]

    def dreaming_view(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST":
            return self._post(request)
        sessions = (
            SessionMessage.objects.values("project_id", "session_id")
            .annotate(n=Count("id"), last=Max("created_at"))
            .order_by("project_id", "-last")
        )
        grouped: dict[str, list[dict[str, Any]]] = {}
        for row in sessions:
            row["messages"] = list(
                SessionMessage.objects.filter(project_id=row["project_id"], session_id=row["session_id"])
                .order_by("id")
                .values("role", "content")[:20]
            )
            grouped.setdefault(row["project_id"], []).append(row)
        running = DreamPass.objects.filter(finished_at__isnull=True).exists()
        context = {
            **self.admin_site.each_context(request),
            "title": "Dreaming",
            "projects": grouped,
            "passes": DreamPass.objects.order_by("-started_at")[:20],
            "prompt": current_prompt(),
            "is_default_prompt": current_prompt() == DEFAULT_PROMPT,
            "running": running,
        }
        return TemplateResponse(request, "admin/yullu/dreaming.html", context)

    def _post(self, request: HttpRequest) -> HttpResponse:
        action = request.POST.get("action")
        if action == "dream":
            from .tasks import dream_project

            project = request.POST.get("project_id", "")
            dream_project.delay(project)
            messages.success(request, f"Dream pass queued for {project}; progress shows below.")
        elif action == "save_prompt":
            set_prompt(request.POST.get("prompt", ""))
            messages.success(request, "Prompt saved.")
        elif action == "reset_prompt":
            reset_prompt()
            messages.success(request, "Prompt reset to the default.")
        else:
            messages.error(request, "Unknown action.")
        return HttpResponseRedirect(reverse("admin:dreaming_dreampass_dreaming"))


@admin.register(DreamSchedule)
class DreamScheduleAdmin(admin.ModelAdmin):
    list_display = ["project_id", "enabled", "interval_seconds", "on_idle_seconds", "last_pass_at"]
    list_editable = ["enabled", "interval_seconds", "on_idle_seconds"]
    readonly_fields = ["last_pass_at"]

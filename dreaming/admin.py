"""Dreaming in the admin: buffered sessions, dream now with live status, each pass with its
proposed and applied operations, the prompt and per-project schedules."""

from __future__ import annotations

import time
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from unfold.admin import ModelAdmin, TabularInline

from memories.scope import validate_project_id
from yullu_core.errors import UserError
from yullu_core.forms import untrimmed
from yullu_core.json_body import json_response
from yullu_core.locks import LockKey, held

from .models import DreamOp, DreamPass, DreamSchedule
from .prompt import DEFAULT_PROMPT, current_prompt, reset_prompt, set_prompt
from .services import (
    buffered_sessions,
    delete_schedules,
    recent_passes,
    require_dream,
    require_schedule,
    save_schedule,
    unfinished_projects,
)


class DreamOpInline(TabularInline):
    model = DreamOp
    fields = ["session_id", "op", "outcome", "category", "content", "reasoning", "detail"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def pass_status(p: DreamPass) -> dict[str, Any]:
    return {
        "id": p.pk,
        "project_id": p.project_id,
        "phase": p.phase,
        "running": p.running,
        "started": p.started_at.timestamp(),
        "failed": p.failed,
        "sessions": f"{p.sessions_processed}/{p.sessions_total}",
        "ops": f"+{p.ops_created} ~{p.ops_updated} −{p.ops_deleted} skipped {p.ops_skipped}",
        "errors": list(p.errors or []),
    }


@admin.register(DreamPass)
class DreamPassAdmin(ModelAdmin):
    list_display = ["started_at", "project_id", "trigger", "status", "sessions", "ops", "first_error"]
    list_filter = ["project_id", "trigger", "phase"]
    fields = [
        "project_id",
        "trigger",
        "reasoner",
        "status",
        "started_at",
        "finished_at",
        "sessions",
        "ops",
        "error_text",
    ]
    readonly_fields = fields
    inlines = [DreamOpInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="status")
    def status(self, obj: DreamPass) -> str:
        css = "y-bad" if obj.failed else ("y-warn" if obj.errors else "y-ok")
        return format_html('<span class="y-badge {}">{}</span>', css, obj.phase)

    @admin.display(description="sessions")
    def sessions(self, obj: DreamPass) -> str:
        return f"{obj.sessions_processed} of {obj.sessions_total} ({obj.messages_processed} messages)"

    @admin.display(description="ops (+ ~ − skipped)")
    def ops(self, obj: DreamPass) -> str:
        return f"+{obj.ops_created} ~{obj.ops_updated} −{obj.ops_deleted} ·{obj.ops_skipped}"

    @admin.display(description="first error")
    def first_error(self, obj: DreamPass) -> str:
        first = (obj.errors or [""])[0]
        return first if len(first) <= 90 else first[:87] + "…"

    @admin.display(description="errors")
    def error_text(self, obj: DreamPass) -> str:
        if not obj.errors:
            return "none"
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{}</li>", ((e,) for e in obj.errors)))

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path("dreaming/", wrap(self.dreaming_view), name="dreaming_dreampass_dreaming"),
            path("status.json", wrap(self.status_view), name="dreaming_dreampass_status"),
            *super().get_urls(),
        ]

    def status_view(self, request: HttpRequest) -> HttpResponse:
        """Polled by the Dreaming page while a pass is queued or running."""
        passes = [pass_status(p) for p in recent_passes(limit=10)]
        return json_response({"passes": passes, "running": any(p["running"] for p in passes)})

    def dreaming_view(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST":
            return self._post(request)
        context = {
            **self.admin_site.each_context(request),
            "title": "Dreaming",
            "projects": buffered_sessions(),
            "passes": recent_passes(limit=20),
            "prompt": current_prompt(),
            "is_default_prompt": current_prompt() == DEFAULT_PROMPT,
            # Epoch seconds the page waits for a pass started after ("Dream now"), or 0 to watch a running one.
            "watch": request.GET.get("watch", "")
            or ("0" if any(held(LockKey.DREAM, p) for p in unfinished_projects()) else ""),
        }
        return TemplateResponse(request, "admin/yullu/dreaming.html", context)

    def _post(self, request: HttpRequest) -> HttpResponse:
        action = request.POST.get("action")
        target = reverse("admin:dreaming_dreampass_dreaming")
        try:
            if action == "dream":
                project = request.POST.get("project_id", "")
                queued_at = time.time() - 2  # before queuing: a fast worker may start (or finish) at once
                require_dream(project)  # the worker acts as the system: the caller's role is checked here
                from .tasks import dream_project

                dream_project.delay(project)
                messages.success(request, f"Dream pass queued for {project}; its status updates below.")
                target += f"?watch={queued_at:.0f}"
            elif action == "save_prompt":
                set_prompt(request.POST.get("prompt", ""))
                messages.success(request, "Prompt saved.")
            elif action == "reset_prompt":
                reset_prompt()
                messages.success(request, "Prompt reset to the default.")
            else:
                messages.error(request, "Unknown action.")
        except UserError as exc:  # a project the reviewer may not dream on, the install-wide prompt
            messages.error(request, str(exc))
        return HttpResponseRedirect(target)


class DreamScheduleForm(forms.ModelForm):
    class Meta:
        model = DreamSchedule
        fields = "__all__"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        untrimmed(self)

    def clean_project_id(self) -> str:
        """Checked before the form's uniqueness test: "already exists" would tell a project that the
        reviewer may not see from one that does not exist. A pasted bell or newline: the sentence of every path."""
        try:
            project_id = validate_project_id(str(self.cleaned_data["project_id"]))
            require_schedule(project_id)
        except UserError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return project_id


@admin.register(DreamSchedule)
class DreamScheduleAdmin(ModelAdmin):
    list_display = ["project_id", "enabled", "interval_seconds", "on_idle_seconds", "last_pass_at"]
    list_editable = ["enabled", "interval_seconds", "on_idle_seconds"]
    readonly_fields = ["last_pass_at"]
    form = DreamScheduleForm

    # Changes go through the service, which checks the admin role on the project (list_editable too).
    def save_model(self, request: HttpRequest, obj: DreamSchedule, form: Any, change: bool) -> None:
        save_schedule(obj)

    def delete_model(self, request: HttpRequest, obj: DreamSchedule) -> None:
        delete_schedules([obj])

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        delete_schedules(list(queryset))

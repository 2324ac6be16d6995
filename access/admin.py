"""Tokens, projects, grants and the audit trail in the admin (superusers only: yullu_site.admin.site
puts the access app among the internals). Token and grant changes go through access.services, so
the admin's are audited like the CLI's; a new token is shown once, in the confirmation message."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from unfold.admin import ModelAdmin

from yullu_core.errors import UserError
from yullu_core.forms import untrimmed
from yullu_core.text import label_problem

from . import services
from .audit import record
from .models import ApiToken, AuditEntry, Grant, Project


class TokenForm(forms.ModelForm):
    expires_days = forms.FloatField(required=False, min_value=0.01, max_value=services.MAX_TOKEN_DAYS)

    class Meta:
        model = ApiToken
        fields = ["user", "name", "read_only"]

    def clean_name(self) -> str:
        """The service's rule on the form: a name with a tab reached create_token in save_model, whose refusal
        was a bare text page in place of the form (review of 0d04ed4)."""
        name = str(self.cleaned_data["name"])
        if problem := label_problem(name, "a token's name", services.MAX_TOKEN_NAME):
            raise forms.ValidationError(problem)
        return name


@admin.register(ApiToken)
class ApiTokenAdmin(ModelAdmin):
    form = TokenForm
    list_display = ["id", "user", "name", "read_only", "created_at", "last_used_at", "expires_at"]
    list_filter = ["read_only"]
    search_fields = ["user__username", "name"]
    readonly_fields = ["created_at", "last_used_at", "expires_at"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a token is created or revoked, never edited

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        issued = services.create_token(
            obj.user, obj.name, read_only=obj.read_only, expires_days=form.cleaned_data.get("expires_days")
        )
        obj.pk = issued.token.pk
        messages.warning(request, f"The new token (shown once, copy it now): {issued.raw}")

    def delete_model(self, request: HttpRequest, obj: ApiToken) -> None:
        services.revoke_token(obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for pk in list(queryset.values_list("pk", flat=True)):
            services.revoke_token(pk)


class ProjectForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = "__all__"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        untrimmed(self)

    def clean_project_id(self) -> str:
        """The id as `yullu grant` and the API take it (services.project_key): a control character refused in
        their sentence, a clone URL read as the project its checkouts name. A pasted bell made a project here."""
        try:
            return services.project_key(self.cleaned_data["project_id"])
        except UserError as exc:
            raise forms.ValidationError(str(exc)) from None


class GrantInline(admin.TabularInline):
    model = Grant
    extra = 0


@admin.register(Project)
class ProjectAdmin(ModelAdmin):
    form = ProjectForm
    list_display = ["project_id", "created_at", "created_by"]
    search_fields = ["project_id"]
    inlines = [GrantInline]

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        super().save_formset(request, form, formset, change)
        for grant in formset.new_objects + [g for g, _ in formset.changed_objects]:
            who = grant.user or grant.group
            record("grant.set", f"{who} → {grant.project}", {"role": grant.role, "via": "admin"})
        for grant in formset.deleted_objects:
            record("grant.revoke", f"{grant.user or grant.group} → {grant.project}", {"via": "admin"})


@admin.register(Grant)
class GrantAdmin(ModelAdmin):
    list_display = ["project", "user", "group", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["project__project_id", "user__username", "group__name"]

    def save_model(self, request: HttpRequest, obj: Grant, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        record("grant.set", f"{obj.user or obj.group} → {obj.project}", {"role": obj.role, "via": "admin"})

    def delete_model(self, request: HttpRequest, obj: Grant) -> None:
        record("grant.revoke", f"{obj.user or obj.group} → {obj.project}", {"via": "admin"})
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Grant]) -> None:
        for obj in queryset:
            self.delete_model(request, obj)


@admin.register(AuditEntry)
class AuditEntryAdmin(ModelAdmin):
    list_display = ["at", "actor_name", "action", "target"]
    list_filter = ["action"]
    search_fields = ["actor_name", "target"]
    date_hierarchy = "at"
    list_per_page = 50
    # What it covers, and where the rest is: a reviewer looked here for ratings and edits (review 19).
    list_before_template = "admin/yullu/audit_note.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

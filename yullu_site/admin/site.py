"""The admin site: the review UI (django-unfold theme). Authenticated non-staff users get 403
instead of a login loop; scheduler and account internals are for superusers only."""

from __future__ import annotations

from collections.abc import Callable
from functools import update_wrapper
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.urls import path, reverse
from unfold.sites import UnfoldAdminSite

from yullu_core.errors import UserError

SESSION_ENDED = "Your session had ended, so what you just sent was not saved: log in, then do it again."

# Apps whose models are plumbing (accounts, beat schedules): hidden from reviewers who are not superusers.
SUPERUSER_APPS = {"auth", "django_celery_beat", "yullu_site", "access"}


class YulluAdminSite(UnfoldAdminSite):
    site_header = "Yul'lu"
    site_title = "Yul'lu"
    index_title = "Dashboard"
    index_template = "admin/yullu_index.html"

    def admin_view(self, view: Callable[..., HttpResponse], cacheable: bool = False) -> Callable[..., HttpResponse]:
        inner = super().admin_view(view, cacheable)

        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.user.is_authenticated and not request.user.is_staff:
                return HttpResponseForbidden("Staff access only.")
            logging_out = request.path == reverse("admin:logout", current_app=self.name)
            if request.method == "POST" and not request.user.is_authenticated and not logging_out:
                # A rating or an edit sent after the session ended (expired, logged out in another tab) was
                # dropped by the login redirect without a word: the reviewer logged in again to the same queue
                # and believed it saved (walk 18). The login page shows this.
                messages.warning(request, SESSION_ENDED)
            try:
                return inner(request, *args, **kwargs)
            except UserError as exc:  # e.g. a project the reviewer has no role on: access.policy's sentence
                return HttpResponse(str(exc), status=exc.status, content_type="text/plain; charset=utf-8")

        return update_wrapper(wrapper, view)

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        from .views import dashboard_context

        return super().index(request, {**dashboard_context(request), **(extra_context or {})})

    def get_urls(self) -> list[Any]:
        from .views import projects_view

        # The projects page spans apps (memories, dream passes), so the site serves it; it keeps the
        # address and name it had under the memories admin. First, before the memory change pages.
        projects = path("memories/memory/projects/", self.admin_view(projects_view), name="memories_projects")
        return [projects, *super().get_urls()]


class YulluAdminConfig(AdminConfig):
    default_site = "yullu_site.admin.site.YulluAdminSite"

    def ready(self) -> None:
        super().ready()
        restrict_internals(admin.site)
        scope_to_grants(admin.site)


def _superuser_only(model_admin: admin.ModelAdmin) -> None:
    """A superuser, and then what the page itself allows: the audit trail's own "no add, change or delete"
    was replaced by "any superuser" (walk 13: an admin could write, edit and delete audit entries)."""
    for name in (
        "has_module_permission",
        "has_view_permission",
        "has_add_permission",
        "has_change_permission",
        "has_delete_permission",
    ):
        own = getattr(model_admin, name)

        def allowed(request: HttpRequest, *args: Any, own: Callable[..., bool] = own) -> bool:
            return bool(request.user.is_active and request.user.is_superuser) and own(request, *args)

        setattr(model_admin, name, allowed)


def restrict_internals(site: admin.AdminSite) -> None:
    """Staff reviewers see memories, dreaming and sync; accounts and beat schedules need a superuser."""
    for model, model_admin in list(site._registry.items()):
        if model._meta.app_label in SUPERUSER_APPS:
            _superuser_only(model_admin)


def scope_to_grants(site: admin.AdminSite) -> None:
    """Every model page with a project_id lists only the projects the reviewer has a role on
    (access.policy: the acting user is set from the login by access.middleware). Changes made from
    those pages go through the services, which check the role each change needs."""
    from access.policy import WRITE, can, only_visible, require

    for model, model_admin in list(site._registry.items()):
        if "project_id" not in {f.name for f in model._meta.get_fields()}:
            continue
        base = model_admin.get_queryset

        def get_queryset(request: HttpRequest, base: Callable[[HttpRequest], Any] = base) -> Any:
            return only_visible(base(request))

        model_admin.get_queryset = get_queryset  # type: ignore[method-assign]
        # Changing or deleting a row of a project needs write on it (a reader's page is read-only), also
        # for rows no service writes (rejected memories, dream passes) and for the bulk delete action.
        for name in ("has_change_permission", "has_delete_permission"):
            allowed = getattr(model_admin, name)

            def check(request: HttpRequest, obj: Any = None, allowed: Callable[..., bool] = allowed) -> bool:
                return allowed(request, obj) and (obj is None or can(obj.project_id, WRITE))

            setattr(model_admin, name, check)
        delete_queryset = model_admin.delete_queryset

        def checked_delete(request: HttpRequest, queryset: Any, delete: Callable[..., None] = delete_queryset) -> None:
            for project_id in set(queryset.values_list("project_id", flat=True)):
                require(project_id, WRITE)
            delete(request, queryset)

        model_admin.delete_queryset = checked_delete  # type: ignore[method-assign]


def is_superuser(request: HttpRequest) -> bool:
    return bool(request.user.is_superuser)


def _memories_active(request: HttpRequest) -> bool:
    """The memory list and its change pages, not the custom pages that live under the same prefix."""
    base = reverse("admin:memories_memory_changelist")
    rest = request.path[len(base) :] if request.path.startswith(base) else None
    return rest is not None and (rest == "" or rest.split("/")[0].isdigit() or rest.startswith("add"))


def _item(title: str, icon: str, url: str, **extra: Any) -> dict[str, Any]:
    return {"title": title, "icon": icon, "link": reverse(url), **extra}


def _system() -> dict[str, Any]:
    return {
        "title": "System",
        "collapsible": True,
        "items": [
            _item("Users", "person", "admin:auth_user_changelist"),
            _item("Groups", "group", "admin:auth_group_changelist"),
            _item("API tokens", "key", "admin:access_apitoken_changelist"),
            _item("Projects and grants", "folder_shared", "admin:access_project_changelist"),
            _item("Audit trail", "history", "admin:access_auditentry_changelist"),
            _item("Beat tasks", "timer", "admin:django_celery_beat_periodictask_changelist"),
        ],
    }


def navigation(request: HttpRequest) -> list[dict[str, Any]]:
    """The sidebar: review first, then what happened, then setup; internals last and superuser-only."""
    groups = [
        {
            "title": "Review",
            "items": [
                _item("Dashboard", "dashboard", "admin:index"),
                _item("Review queue", "rate_review", "admin:memories_review"),
                _item("Memories", "neurology", "admin:memories_memory_changelist", active=_memories_active),
                _item("Conflicts", "compare_arrows", "admin:memories_conflicts"),
                _item("Stale", "history_toggle_off", "admin:memories_stale"),
                _item("Rejected memories", "delete_history", "admin:memories_rejectedmemory_changelist"),
                _item("Graph", "hub", "admin:memories_graph"),
            ],
        },
        {
            "title": "Activity",
            "items": [
                _item("Memory changes", "manage_history", "admin:memories_memorychange_changelist"),
                _item("Retrievals", "manage_search", "admin:memories_retrievals"),
                _item("Dreaming", "bedtime", "admin:dreaming_dreampass_dreaming"),
                _item("Dream passes", "history", "admin:dreaming_dreampass_changelist"),
                _item("Stats", "bar_chart", "admin:memories_stats"),
                _item("Usage", "payments", "admin:memories_usage"),
            ],
        },
        {
            "title": "Setup",
            "items": [
                _item("Projects", "folder_open", "admin:memories_projects"),
                _item("Settings", "settings", "admin:memories_settings"),
                _item("Dream schedules", "schedule", "admin:dreaming_dreamschedule_changelist"),
            ],
        },
    ]
    if is_superuser(request):
        groups.append(_system())
    return groups

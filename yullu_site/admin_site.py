"""The admin site: the review UI. Authenticated non-staff users get 403 instead of a login loop."""

from __future__ import annotations

from collections.abc import Callable
from functools import update_wrapper
from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden


class YulluAdminSite(admin.AdminSite):
    site_header = "Yul'lu"
    site_title = "Yul'lu"
    index_title = "Memory review"
    index_template = "admin/yullu_index.html"

    def admin_view(self, view: Callable[..., HttpResponse], cacheable: bool = False) -> Callable[..., HttpResponse]:
        inner = super().admin_view(view, cacheable)

        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.user.is_authenticated and not request.user.is_staff:
                return HttpResponseForbidden("Staff access only.")
            return inner(request, *args, **kwargs)

        return update_wrapper(wrapper, view)

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        from dreaming.reasoners import reasoner_status
        from memories.admin_views import dashboard_context

        warning = {"reasoner_warning": reasoner_status()["warning"]}
        return super().index(request, {**dashboard_context(), **warning, **(extra_context or {})})


class YulluAdminConfig(AdminConfig):
    default_site = "yullu_site.admin_site.YulluAdminSite"

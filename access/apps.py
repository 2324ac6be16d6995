from typing import Any

from django.apps import AppConfig


class AccessConfig(AppConfig):
    """People, tokens, projects and grants (docs/contract.md §11): who may see and change which project."""

    name = "access"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        user_logged_in.connect(_audit_login, dispatch_uid="access.audit_login")


def _audit_login(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    from .audit import record

    record("admin.login", user.get_username(), {"ip": getattr(request, "META", {}).get("REMOTE_ADDR", "")}, user=user)

"""The audit trail of access itself (docs/contract.md §11): token creation and revocation, grant changes,
admin logins, projects claimed under open_projects. A small model, not a library: see
docs/decisions.md."""

from __future__ import annotations

from typing import Any

from .actor import acting
from .models import AuditEntry


def record(action: str, target: str = "", detail: dict[str, Any] | None = None, *, user: Any = None) -> AuditEntry:
    """One row: who (the acting user, or `user` when given, e.g. at login), what, on what."""
    if user is not None:
        actor_id, name = user.pk, user.get_username()
    else:
        actor = acting()
        actor_id, name = actor.user_id, actor.username
    return AuditEntry.objects.create(
        actor_id=actor_id, actor_name=name, action=action, target=target, detail=detail or {}
    )

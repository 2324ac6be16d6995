"""Reconcile: apply teammates' events and publish local-only memories (SPEC §5)."""

from __future__ import annotations

from typing import Any

from memories.scope import Scope
from yullu_site.errors import UserError


def reconcile_scope(scope: Scope) -> dict[str, Any]:
    raise UserError("reconcile is not available yet in this build.")


def reconcile_cli(cwd: str, project_id: str | None) -> dict[str, Any]:
    raise UserError("reconcile is not available yet in this build.")

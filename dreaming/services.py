"""The dream buffer (record_messages) and dream passes."""

from __future__ import annotations

from typing import Any, TypedDict

from django.db import transaction

from sync.secrets import redact
from yullu_site.errors import UserError

from .models import SessionMessage

MAX_MESSAGES_PER_CALL = 200
MAX_MESSAGE_CHARS = 100_000


class RecordResult(TypedDict):
    session_id: str
    project_id: str
    count: int


def validate_messages(messages: Any) -> list[tuple[str, str]]:
    if not isinstance(messages, list) or not messages:
        raise UserError("messages must be a non-empty list of {role, content} objects.")
    if len(messages) > MAX_MESSAGES_PER_CALL:
        raise UserError(f"messages holds {len(messages)} items; send at most {MAX_MESSAGES_PER_CALL} per call.")
    out = []
    for n, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise UserError(f"messages[{n}] must be an object with role and content.")
        role, content = msg.get("role"), msg.get("content")
        if role not in ("user", "assistant"):
            raise UserError(f"messages[{n}].role must be 'user' or 'assistant'")
        if not isinstance(content, str) or not content.strip():
            raise UserError(f"messages[{n}].content must be a non-empty string")
        if len(content) > MAX_MESSAGE_CHARS or "\x00" in content:
            raise UserError(f"messages[{n}].content must be at most {MAX_MESSAGE_CHARS} characters without NUL")
        out.append((role, content))
    return out


def record_messages(project_id: str, session_id: Any, messages: Any) -> RecordResult:
    """Buffer turns for dreaming. Secrets are redacted before anything is stored."""
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 200:
        raise UserError("session_id must be a non-empty string of at most 200 characters.")
    valid = validate_messages(messages)
    with transaction.atomic():
        SessionMessage.objects.bulk_create(
            [
                SessionMessage(project_id=project_id, session_id=session_id.strip(), role=r, content=redact(c))
                for r, c in valid
            ]
        )
    return {"session_id": session_id.strip(), "project_id": project_id, "count": len(valid)}


def dream_cli(cwd: str, project_id: str | None) -> dict[str, Any]:
    raise UserError("dreaming is not available yet in this build.")

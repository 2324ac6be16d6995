"""Input cleaning for every write path (MCP, REST, admin, CLI, import, dreaming): each field's
rule and its one-sentence refusal. A write is cleaned whole before anything is stored."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from yullu_core.errors import UserError
from yullu_core.text import find_control

from ..models import CATEGORIES, IMPORTANCES, SESSION_TAG, Importance
from .secrets import first_secret

MAX_TAGS = 20
MAX_TAG_CHARS = 100


def session_tag(session_id: str) -> str:
    """`session:<id>`; an id too long for a tag becomes a stable hash of itself."""
    sid = session_id.strip()
    tag = SESSION_TAG + sid
    return tag if len(tag) <= MAX_TAG_CHARS else SESSION_TAG + hashlib.sha256(sid.encode()).hexdigest()[:32]


def with_session(tags: Any, session_id: str | None) -> Any:
    """`tags` plus the session's tag. Unchanged without a session, when a session tag is already
    there (the caller's wins), or when `tags` is malformed (clean_tags refuses it with its own message);
    the session tag takes the last place when the tags are full."""
    if not session_id or not session_id.strip():
        return tags
    if tags is not None and (not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags)):
        return tags
    tags = list(tags or [])
    if any(t.strip().startswith(SESSION_TAG) for t in tags):
        return tags
    return [*tags[: MAX_TAGS - 1], session_tag(session_id)]


def max_content_chars() -> int:
    return settings.YULLU["retrieval"]["max_content_chars"]


def clean_content(content: Any) -> str:
    if not isinstance(content, str):
        raise UserError("content must be a string.")
    content = content.strip()
    if not content:
        raise UserError("content must not be empty.")
    if "\x00" in content:
        raise UserError("content must not contain NUL characters.")
    if bad := find_control(content):
        raise UserError(f"content must not contain control or bidi characters (found {bad}); remove them.")
    limit = max_content_chars()
    if len(content) > limit:
        raise UserError(
            f"content is {len(content)} characters; the limit is {limit}. Store a shorter, self-contained fact."
        )
    return content


def clean_tags(tags: Any) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags):
        raise UserError("tags must be a list of strings.")
    seen: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if "\x00" in tag:
            raise UserError("tags must not contain NUL characters.")
        if bad := find_control(tag):
            raise UserError(f"tags must not contain control or bidi characters (found {bad}).")
        if len(tag) > MAX_TAG_CHARS:
            raise UserError(f"each tag must be at most {MAX_TAG_CHARS} characters.")
        if tag and tag not in seen:
            seen.append(tag)
    if len(seen) > MAX_TAGS:
        raise UserError(f"at most {MAX_TAGS} tags are allowed.")
    return seen


def clean_category(category: Any, *, strict: bool = True) -> str | None:
    """Empty is null ("uncategorised"); an unknown category is an error naming the five (docs/contract.md §1,
    every path: MCP, REST, CLI, import). `strict=False` keeps null for text we did not write and
    must not refuse whole: a teammate's event, a reasoner's proposal."""
    if category is None:
        return None
    if not isinstance(category, str):
        raise UserError("category must be a string.")
    value = category.strip().lower()
    if value and value not in CATEGORIES and strict:
        raise UserError(f"{value[:40]!r} is not a category; use one of {', '.join(CATEGORIES)} (or leave it empty).")
    return value if value in CATEGORIES else None


def refuse_secrets(*texts: str) -> None:
    if kind := first_secret(*texts):
        raise UserError(f"refused: the content contains {kind}; remove it and try again (nothing was stored).")


def clean_importance(importance: Any) -> str | None:
    """None = not given (keep the current value / default)."""
    if importance is None or importance == "":
        return None
    if not isinstance(importance, str) or importance.strip().lower() not in IMPORTANCES:
        raise UserError("importance must be one of: low, normal, high.")
    return importance.strip().lower()


MAX_TTL_DAYS = 3650


def expiry_from_ttl(ttl_days: Any, now: datetime | None = None) -> datetime | None:
    """ttl_days (1–3650) → expires_at. None = no expiry."""
    if ttl_days is None:
        return None
    if isinstance(ttl_days, bool) or not isinstance(ttl_days, (int, float)) or not 1 <= ttl_days <= MAX_TTL_DAYS:
        raise UserError(f"ttl_days must be a number of days from 1 to {MAX_TTL_DAYS}.")
    return (now or timezone.now()) + timedelta(days=float(ttl_days))


def parse_id(value: Any, name: str = "id") -> int:
    if isinstance(value, bool):
        raise UserError(f"{name} must be an integer.")
    try:
        return int(str(value))
    except ValueError:
        raise UserError(f"{name} must be an integer.") from None


def parse_rating(rating: Any) -> int:
    if isinstance(rating, bool):
        raise UserError("rating must be a whole number from 1 to 10.")
    try:
        value = int(str(rating))
    except ValueError:
        raise UserError("rating must be a whole number from 1 to 10.") from None
    if not 1 <= value <= 10:
        raise UserError("rating must be a whole number from 1 to 10.")
    return value


@dataclass
class NewMemory:
    content: str
    category: str | None = None
    tags: list[str] | None = None
    created_at: datetime | None = None
    importance: str | None = None
    ttl_days: float | None = None
    supersedes: int | None = None
    expires_at: datetime | None = None
    uuid: str | None = None  # kept by imports, so importing twice finds the same memory
    # The active embedder's vector of this content, when the caller has it (an export made with
    # `--vectors` by the same model): the import then skips the embedding call.
    vector: Sequence[float] | None = None
    anchors: Any = None  # code it cites (docs/contract.md §12): strings like 'app/clock.py::Clock.now'
    lenient_anchors: bool = False  # drop anchors that do not resolve instead of refusing (dreaming, carried over)


@dataclass
class CleanMemory(NewMemory):
    """A NewMemory after validation: tags a list, importance one of IMPORTANCES."""

    tags: list[str] = field(default_factory=list)
    importance: str = Importance.NORMAL


def clean_item(i: NewMemory, now: datetime) -> CleanMemory:
    return CleanMemory(
        clean_content(i.content),
        clean_category(i.category),
        clean_tags(i.tags),
        i.created_at,
        clean_importance(i.importance) or Importance.NORMAL,
        None,
        None if i.supersedes is None else parse_id(i.supersedes, "supersedes"),
        i.expires_at or expiry_from_ttl(i.ttl_days, now),
        i.uuid,
        i.vector,
    )

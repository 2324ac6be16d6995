"""Each memory field's rule, declared once: what it accepts and the one sentence a bad value gets.

The write services enforce them on every write (MCP, REST, the admin, the CLI, imports, dreaming,
teammates' events), and the adapters take their checks from here instead of writing their own:
the REST serializers' fields (memories/api.py `ruled`) and the MCP tool arguments
(memories/mcp.py `AS_GIVEN`) pass the value through unjudged and describe it with
`json_schema()`; the admin form (memories/admin.py) and `yullu memories add` read text
(`tags_from_text`, numeric text for ttl_days) and call the same cleaners. So the same bad value
gets the same sentence on every path and nothing is stored (tests/test_field_rules.py asks them
all). A write is cleaned whole before anything is stored."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from yullu_core.arguments import SESSION_ID
from yullu_core.errors import UserError
from yullu_core.text import find_control, find_id_control

from ..models import CATEGORIES, IMPORTANCES, SESSION_TAG, Importance

MAX_TAGS = 20
MAX_TAG_CHARS = 100
_LINE_BREAKS = re.compile("[\t\n\r]")  # in a teammate's tag: read as spaces
MIN_TTL_DAYS = 1
MAX_TTL_DAYS = 3650

TTL_PROBLEM = f"ttl_days must be a number of days from {MIN_TTL_DAYS} to {MAX_TTL_DAYS}."
TTL_UPDATE_PROBLEM = f"ttl_days must be a number of days from {MIN_TTL_DAYS} to {MAX_TTL_DAYS}, or 0 for no expiry."
IMPORTANCE_PROBLEM = f"importance must be one of: {', '.join(IMPORTANCES)}."


def session_tag(session_id: str) -> str:
    """`session:<id>`; an id too long for a tag becomes a stable hash of itself."""
    sid = session_id.strip()
    tag = SESSION_TAG + sid
    return tag if len(tag) <= MAX_TAG_CHARS else SESSION_TAG + hashlib.sha256(sid.encode()).hexdigest()[:32]


def with_session(tags: Any, session_id: Any) -> Any:
    """`tags` plus the session's tag. Unchanged without a session, when a session tag is already
    there (the caller's wins), or when `tags` is malformed (clean_tags refuses it with its own message);
    the session tag takes the last place when the tags are full. A session id that is not text is refused
    (SESSION_ID's sentence, on every transport)."""
    session_id = SESSION_ID.clean(session_id)
    if not session_id.strip():
        return tags
    if tags is not None and (not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags)):
        return tags
    tags = list(tags or [])
    if any(t.strip().startswith(SESSION_TAG) for t in tags):
        return tags
    return [*tags[: MAX_TAGS - 1], session_tag(session_id)]


def max_content_chars() -> int:
    return int(settings.YULLU["retrieval"]["max_content_chars"])


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


def tags_from_text(text: str) -> list[str]:
    """Tags typed as one line, comma-separated (`yullu memories add --tags`, the admin's Tags box)."""
    return [tag.strip() for tag in text.split(",") if tag.strip()]


def clean_tags(tags: Any, *, strict: bool = True) -> list[str]:
    """A tag is a name: a tab, newline or carriage return inside one is refused as any control is (walk 13:
    `["a\\nb"]` was stored, and the admin's one-line Tags box could not show or keep it). `strict=False`
    (a teammate's event, which an earlier version may have written with one) reads each as a space."""
    if tags is None:
        return []
    if not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags):
        raise UserError("tags must be a list of strings.")
    seen: list[str] = []
    for tag in tags:
        tag = tag.strip() if strict else _LINE_BREAKS.sub(" ", tag).strip()
        if "\x00" in tag:
            raise UserError("tags must not contain NUL characters.")
        if bad := find_control(tag) or find_id_control(tag):
            raise UserError(f"tags must not contain control or bidi characters (found {bad}).")
        if len(tag) > MAX_TAG_CHARS:
            raise UserError(f"each tag must be at most {MAX_TAG_CHARS} characters.")
        if tag and tag not in seen:
            seen.append(tag)
    if len(seen) > MAX_TAGS:
        raise UserError(f"at most {MAX_TAGS} tags are allowed.")
    return seen


# What each category holds (SPEC §1), for the tools' descriptions; and the words people reach for instead, so
# the refusal can say where such a memory goes ("decisions, gotchas, conventions" is how the product is
# described: walk 13 stored four conventions and had them refused with no hint).
CATEGORY_MEANINGS = {
    "process": "how to do things: commands, layout, conventions",
    "decision": "why X over Y",
    "gotcha": "what bites",
    "domain": "what terms mean, invariants",
    "style": "UI patterns, tone",
}
_CATEGORY_NEAR = {
    "convention": "process",
    "conventions": "process",
    "workflow": "process",
    "howto": "process",
    "how-to": "process",
    "command": "process",
    "rule": "process",
    "decisions": "decision",
    "architecture": "decision",
    "gotchas": "gotcha",
    "pitfall": "gotcha",
    "bug": "gotcha",
    "warning": "gotcha",
    "glossary": "domain",
    "term": "domain",
    "ui": "style",
    "tone": "style",
}


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
        near = _CATEGORY_NEAR.get(value)
        hint = f"; {value} belongs in {near!r} ({CATEGORY_MEANINGS[near]})" if near else ""
        raise UserError(
            f"{value[:40]!r} is not a category; use one of {', '.join(CATEGORIES)} (or leave it empty){hint}."
        )
    return value if value in CATEGORIES else None


def refuse_secrets(*texts: str) -> None:
    # Imported here, by the first write: compiling the scanner's rules took ~0.5 s of every command's start,
    # since the admin's autodiscovery reaches this module (docs/benchmarks.md "Start-up of a command").
    from ..secrets import REFUSAL, first_secret

    if kind := first_secret(*texts):
        raise UserError(REFUSAL.format(kind=kind))


def clean_importance(importance: Any) -> str | None:
    """None or empty = not given (keep the current value / the default)."""
    if importance is None or importance == "":
        return None
    if not isinstance(importance, str) or importance.strip().lower() not in IMPORTANCES:
        raise UserError(IMPORTANCE_PROBLEM)
    return importance.strip().lower()


def clean_ttl_days(ttl_days: Any, *, zero_clears: bool = False) -> float | None:
    """A number of days (a number, or text that reads as one: the admin's box, the CLI's option);
    None or empty = not given. `zero_clears` (an update): 0 is allowed and means "no expiry"."""
    if ttl_days is None or ttl_days == "":
        return None
    problem = TTL_UPDATE_PROBLEM if zero_clears else TTL_PROBLEM
    if isinstance(ttl_days, bool) or not isinstance(ttl_days, (int, float, str)):
        raise UserError(problem)
    try:
        days = float(ttl_days)
    except (ValueError, OverflowError):  # (an integer too large for a float: 1 and 400 zeros in JSON)
        raise UserError(problem) from None
    if not math.isfinite(days) or not (MIN_TTL_DAYS <= days <= MAX_TTL_DAYS or (zero_clears and days == 0)):
        raise UserError(problem)
    return days


def expiry_from_ttl(ttl_days: Any, now: datetime | None = None) -> datetime | None:
    """ttl_days (1–3650) → expires_at. None = no expiry."""
    days = clean_ttl_days(ttl_days)
    return None if days is None else (now or timezone.now()) + timedelta(days=days)


def json_schema(name: str, *, update: bool = False) -> dict[str, Any]:
    """How the MCP tools and the OpenAPI schema describe field `name` to clients (the rules above
    still judge what arrives). `update`: the shape an update takes (content may be left out, ttl_days
    0 clears)."""
    nullable: dict[str, dict[str, Any]] = {
        "category": {"type": "string", "enum": [*CATEGORIES, ""]},
        "importance": {"type": "string", "enum": list(IMPORTANCES)},
        "ttl_days": {"type": "number", "minimum": 0 if update else MIN_TTL_DAYS, "maximum": MAX_TTL_DAYS},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": MAX_TAG_CHARS}, "maxItems": MAX_TAGS},
    }
    content = {"type": "string", "minLength": 1, "maxLength": max_content_chars()}
    if name == "content" and not update:
        return content
    return {"anyOf": [nullable.get(name, content), {"type": "null"}]}


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
    # Columns an import carries over from its export (attname → value, checked by the import: times,
    # rating, lifecycle fields), written with the insert itself. The history's first snapshot and the
    # create event keep the write path's values, as when the import set these after the insert.
    carried: dict[str, Any] | None = None
    # A memory written before (a rejection undone: memories.write.edit.restore_rejected): who first wrote it, a
    # user id of this machine and / or a teammate's name, in place of the acting person. `created_at` is then its
    # first creation time only: the row is updated and its create event stamped now (after the delete it undoes),
    # and the event carries `created_at`, so teammates fold the same creation time.
    first_writer: tuple[int | None, str] | None = None
    # Its create event comes after this time (a restore: after the memory's last event, so after its delete).
    not_before: datetime | None = None


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
        carried=i.carried,
        first_writer=i.first_writer,
        not_before=i.not_before,
    )

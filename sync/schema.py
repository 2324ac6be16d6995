"""The one definition of a team-sync event (docs/contract.md §5), used to write and to read event files.

Wire format = the original Go Yul'lu's: types `create`/`update`/`delete`/`embedding`, an
RFC 3339 `ts` with up to nanoseconds. Ours adds optional fields (category and the
lifecycle fields of §10); readers ignore fields they do not know. Files written by earlier
versions of this product (`remember`/`revise`/`forget`, vectors in a `vectors` map) are
read as the matching new types plus one `embedding` per vector (`from_wire`).

Validation uses the write side's own rules (memories.write.validation.clean_*), so a file is
refused on read exactly when the same content would be refused on write: bad JSON, an
unknown type, too many or too long tags, NUL bytes, oversized content, a secret.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from memories.anchors import refs as anchor_refs
from memories.write.poisoning import hold_reason
from memories.write.validation import clean_category, clean_content, clean_tags
from yullu_core.errors import UserError
from yullu_core.timestamps import parse_ts

_DISPLAY_NAME = re.compile(r"[^\W_][\w .'@-]{0,63}")

EventType = Literal["create", "update", "delete", "embedding"]
LEGACY_TYPES = {"remember": "create", "revise": "update", "forget": "delete"}
MAX_VECTOR_DIM = 8192
MAX_EVENT_BYTES = 4 * 1024 * 1024


class EventError(ValueError):
    """An event (or file) that breaks the schema; the message names what is wrong."""


def content_sha256(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()


def _user_rule(fn: Any, value: Any) -> Any:
    try:
        return fn(value)
    except UserError as exc:
        raise ValueError(str(exc)) from None


def _no_secret(*texts: str) -> None:
    # Here, not at import: the scanner's rules cost every command ~0.5 s (docs/benchmarks.md).
    from memories.secrets import first_secret

    if kind := first_secret(*texts):
        raise ValueError(f"contains {kind}")


class Link(BaseModel):
    """A typed edge from the event's memory to another memory of the project."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    kind: Literal["supersedes", "contradicts", "related"]
    to: UUID


class Anchor(BaseModel):
    """Code a memory cites (docs/contract.md §12), as pinned by its writer; each reader checks it against its own
    checkout. A path outside the repository breaks the event, like any other bad field."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    path: str = Field(max_length=1000)
    symbol: str | None = Field(default=None, max_length=300)
    lines: list[int] | None = Field(default=None, min_length=2, max_length=2)
    commit: str | None = Field(default=None, pattern=r"^[0-9a-f]{40,64}$")
    blob: str | None = Field(default=None, pattern=r"^[0-9a-f]{40,64}$")
    text_hash: str | None = Field(default=None, pattern=r"^[0-9a-f]{1,64}$")

    @field_validator("path")
    @classmethod
    def _inside(cls, value: str) -> str:
        return _user_rule(lambda v: anchor_refs.clean_path(v, v), value)

    @field_validator("lines")
    @classmethod
    def _range(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and not 1 <= value[0] <= value[1]:
            raise ValueError("lines must be [first, last] with 1 <= first <= last")
        return value

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class Event(BaseModel):
    """One event. Presence matters for `update`: absent = unchanged (`model_fields_set`)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: UUID
    type: EventType
    memory_id: UUID
    ts: str
    content: str | None = None
    tags: list[str] | None = None
    category: str | None = None
    supersedes: list[UUID] | None = Field(default=None, max_length=50)  # memories this one replaces
    links: list[Link] | None = Field(default=None, max_length=50)
    importance: Literal["low", "normal", "high"] | None = None
    expires_at: str | None = None
    anchors: list[Anchor] | None = Field(default=None, max_length=20)  # ours: docs/contract.md §12
    embedder: str | None = Field(default=None, min_length=1, max_length=200)
    vector: list[float] | None = Field(default=None, min_length=1, max_length=MAX_VECTOR_DIM)
    content_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")  # ours: the content a vector is of
    created_at: str | None = None  # ours: compacted snapshots keep the memory's creation time
    # ours (docs/contract.md §11): the display name of who made the change; readers that do not know it ignore it
    author: str | None = Field(default=None, max_length=150)
    # ours: a compacted snapshot names who wrote the memory first and who changed it last by these, not by
    # `author` (which older readers take for the writer of a create)
    created_by: str | None = Field(default=None, max_length=150)
    updated_by: str | None = Field(default=None, max_length=150)

    @field_validator("author", "created_by", "updated_by", mode="before")
    @classmethod
    def _display_name(cls, value: Any) -> Any:
        # A teammate's free text reaches the assistant (get_memory's recent changes: "sync (NAME)") and
        # is not a memory the poisoning hold would keep back, so only a name is kept: at most four words
        # of letters, digits and . ' - _ @, 64 characters, nothing the hold would flag. Anything else is
        # dropped, never the event (review7).
        if not isinstance(value, str):
            return None
        name = " ".join(value.split())
        if not _DISPLAY_NAME.fullmatch(name) or len(name.split()) > 4 or hold_reason(name):
            return None
        return name

    @field_validator("supersedes", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("expires_at", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return None if value == "" else value  # earlier files wrote "" for "no expiry"

    @field_validator("ts", "expires_at", "created_at")
    @classmethod
    def _rfc3339(cls, value: str | None) -> str | None:
        if value is not None:
            parse_ts(value)
        return value

    @field_validator("content")
    @classmethod
    def _content(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = _user_rule(clean_content, value)
        _no_secret(value)
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        tags = _user_rule(lambda v: clean_tags(v, strict=False), value)  # an earlier version's \n: a space
        _no_secret(*tags)
        return tags

    @field_validator("category")
    @classmethod
    def _category(cls, value: str | None) -> str | None:
        # A teammate's unknown category (another version's) is kept as uncategorised, not refused.
        return _user_rule(lambda v: clean_category(v, strict=False), value)

    @field_validator("vector")
    @classmethod
    def _finite(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and not all(math.isfinite(x) for x in value):
            raise ValueError("vector must hold finite numbers")
        return value

    @model_validator(mode="after")
    def _shape(self) -> Event:
        if self.type == "create" and self.content is None:
            raise ValueError("a create event needs content")
        if self.type == "embedding" and (self.embedder is None or self.vector is None):
            raise ValueError("an embedding event needs embedder and vector")
        return self

    @property
    def ts_ns(self) -> int:
        return parse_ts(self.ts)

    @property
    def order(self) -> tuple[int, str]:
        """Fold order (docs/contract.md §5): time, then event id (ties: `digest`, see sync.fold)."""
        return self.ts_ns, str(self.id)

    @property
    def digest(self) -> str:
        """sha256 of the event's content: orders two different events that share a time and an id
        the same way on every machine, whichever file was listed first."""
        return hashlib.sha256(json.dumps(self.to_wire(), sort_keys=True).encode()).hexdigest()

    def has(self, name: str) -> bool:
        return name in self.model_fields_set

    def to_wire(self) -> dict[str, Any]:
        """The JSON object to write: only the fields that were set."""
        return self.model_dump(mode="json", include=self.model_fields_set)


def _error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def build(**fields: Any) -> Event:
    """A new event from the write side; refuses (EventError) what readers would refuse."""
    try:
        return Event.model_validate(fields)  # a present None is written: in an update it clears the field
    except ValidationError as exc:
        raise EventError(_error(exc)) from None


def from_wire(raw: Any) -> list[Event]:
    """Parse one decoded JSON file into its events (legacy files may hold a vector map too)."""
    if not isinstance(raw, dict):
        raise EventError("not a JSON object")
    raw = dict(raw)
    vectors = None
    if not isinstance(raw.get("type"), str | None):  # a list or an object is no key to look up (a 500 each pass)
        raise EventError(f"unknown event type: a {type(raw['type']).__name__}, not a string")
    if raw.get("type") in LEGACY_TYPES:
        raw["type"] = LEGACY_TYPES[raw["type"]]
        vectors = raw.pop("vectors", None)
        if vectors is not None and not isinstance(vectors, dict):
            raise EventError("vectors must be an object")
    elif raw.get("type") not in ("create", "update", "delete", "embedding"):
        raise EventError(f"unknown event type {str(raw.get('type'))[:40]!r}")
    try:
        main = Event.model_validate(raw)
        events = [main]
        for embedder, vector in (vectors or {}).items():
            events.append(
                Event.model_validate(
                    {"id": raw["id"], "type": "embedding", "memory_id": raw["memory_id"], "ts": raw["ts"]}
                    | {"embedder": embedder, "vector": vector}
                )
            )
    except ValidationError as exc:
        raise EventError(_error(exc)) from None
    if main.type == "update" and vectors and main.model_fields_set == {"id", "type", "memory_id", "ts"}:
        events = events[1:]  # a legacy vector-only revise is just its embeddings
    return events


def parse_bytes(data: bytes) -> list[Event]:
    if len(data) > MAX_EVENT_BYTES:
        raise EventError("file is larger than 4 MiB")
    if b"\x00" in data:
        raise EventError("file contains NUL bytes")
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise EventError("file is not UTF-8") from None
    except json.JSONDecodeError as exc:
        # json's own words for a truncated string end in "at" ("Unterminated string starting at"): said once.
        raise EventError(f"bad JSON: {exc.msg.removesuffix(' at')} at line {exc.lineno}") from None
    except RecursionError:
        raise EventError("JSON nested too deeply") from None
    return from_wire(raw)

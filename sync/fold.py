"""The convergent fold (docs/contract.md §5): a memory's state from ALL its events, whatever order they arrived in.

Events are ordered by (ts, event id, then the event's content digest for two different files
that share an id and a time); for each field the last event that sets it wins;
`delete` tombstones; a later `create`/`update` resurrects (a `create` sets every field,
absent ones to their defaults); `links` accumulate (each event names the links it adds).
`embedding` events never change fields: the latest vector per embedder is kept with its
time, for reuse when it is not older than the content.
`created_at` comes from the first field event, `updated_at` from the last (vectors arriving
later do not make a memory "updated"). A pure function of the set of events: every machine
holding the same files computes the same state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from yullu_core.timestamps import parse_ts

from .schema import Event, content_sha256

FIELD_DEFAULTS: dict[str, Any] = {
    "content": None,
    "tags": [],
    "category": None,
    "supersedes": None,
    "links": None,
    "importance": None,
    "expires_at": None,
    "anchors": None,  # code anchors (docs/contract.md §12): the latest list wins, like a field
}


@dataclass
class Vector:
    values: list[float]
    ts_ns: int
    content_sha256: str | None


@dataclass
class Folded:
    fields: dict[str, Any] = field(default_factory=lambda: dict(FIELD_DEFAULTS))
    deleted: bool = False
    has_fields: bool = False  # at least one create/update/delete
    has_created: bool = False  # a create applied (the first one names the creator)
    created_ns: int | None = None
    updated_ns: int | None = None
    content_ns: int = 0  # time of the latest content change
    vectors: dict[str, Vector] = field(default_factory=dict)
    author: str | None = None  # of the last create/update/delete (for history; None: it named none)
    creator: str | None = None  # of the first create (who wrote the memory; None: it named none)

    @property
    def content(self) -> str | None:
        return self.fields["content"]

    @property
    def exists(self) -> bool:
        """Alive, with content: a tags- or embedding-only history never materialises a memory."""
        return not self.deleted and self.content is not None

    def vector_for(self, embedder: str) -> list[float] | None:
        """The logged vector of `embedder`, if it is of the current content."""
        vec = self.vectors.get(embedder)
        if vec is None or self.content is None:
            return None
        if vec.content_sha256 is not None:
            return vec.values if vec.content_sha256 == content_sha256(self.content) else None
        return vec.values if vec.ts_ns >= self.content_ns else None


def _apply(state: Folded, event: Event, ts_ns: int) -> None:
    if event.type == "embedding":
        assert event.embedder is not None and event.vector is not None
        current = state.vectors.get(event.embedder)
        if current is None or current.ts_ns <= ts_ns:
            state.vectors[event.embedder] = Vector(list(event.vector), ts_ns, event.content_sha256)
        return
    state.has_fields = True
    state.author = event.updated_by or event.author  # a snapshot names its last editor by updated_by
    if event.type == "create" and not state.has_created:
        state.creator, state.has_created = _creator(event), True
    created = parse_ts(event.created_at) if event.type == "create" and event.created_at else ts_ns
    state.created_ns = created if state.created_ns is None else min(state.created_ns, created)
    state.updated_ns = ts_ns
    if event.type == "delete":
        state.deleted = True
        return
    state.deleted = False
    names = FIELD_DEFAULTS if event.type == "create" else [n for n in FIELD_DEFAULTS if event.has(n)]
    for name in names:
        value = getattr(event, name)
        if name == "tags" and value is None:
            value = []
        if name == "anchors" and value is not None:
            value = [a.to_wire() for a in value]
        if name == "supersedes" and value is not None:
            value = [str(u) for u in value]
        if name == "links":  # links only accumulate (events carry the new ones)
            if value is None:
                continue
            known = state.fields["links"] or []
            value = known + [x for x in ({"kind": k.kind, "to": str(k.to)} for k in value) if x not in known]
        state.fields[name] = value
        if name == "content":
            state.content_ns = ts_ns


def _creator(event: Event) -> str | None:
    """Who wrote the memory, by its first create. A create carrying `created_at` stands for an earlier history
    (a compacted snapshot, an undone rejection): its `author` or `updated_by` is the last change's, so only
    `created_by` names the writer (none: unknown, never the last editor)."""
    return event.created_by if event.created_at is not None else event.author


def fold(events: list[Event]) -> Folded:
    """Fold one memory's events (any order in, (ts, id) order applied)."""
    state = Folded()
    for event in ordered(events):
        _apply(state, event, event.ts_ns)
    return state


def ordered(events: list[Event]) -> list[Event]:
    """(ts, id) order; only when two events share both is their digest computed to order them."""
    keyed = sorted(((e.ts_ns, str(e.id), e) for e in events), key=lambda t: (t[0], t[1]))
    if all(a[:2] != b[:2] for a, b in zip(keyed, keyed[1:], strict=False)):
        return [e for _, _, e in keyed]
    return [e for _, _, _, e in sorted(((t, i, e.digest, e) for t, i, e in keyed), key=lambda t: t[:3])]


def fold_all(events: list[Event]) -> dict[str, Folded]:
    by_memory: dict[str, list[Event]] = {}
    for event in events:
        by_memory.setdefault(str(event.memory_id), []).append(event)
    return {uuid_: fold(evs) for uuid_, evs in by_memory.items()}

"""Who wrote a memory, read one way on every page and answer that names an author (review 19).

The row says it: `created_by` (a user of this machine) or `created_author` (a teammate's name from the event
log, docs/contract.md §11; migration 0021). Memories written before 0021 were filled in from their history by
migration 0023, and an undone rejection gives both back (memories.write.edit.restore_rejected). The history's
"created" row is not read: it names who applied or restored a memory, and a teammate's memory folded from a
create and a later edit named the editor there (the review queue said the editor wrote it)."""

from __future__ import annotations

from collections.abc import Iterable

from access.people import username

from .models import Memory


def written_by(memory: Memory) -> str | None:
    """The person who wrote `memory` first; None for the system's own writes (dreaming, the CLI's imports)."""
    return username(memory.created_by_id) or memory.created_author or None


def writers(memories: Iterable[Memory]) -> dict[int, str]:
    """`written_by` of each memory that names one, by id."""
    return {m.pk: name for m in memories if (name := written_by(m))}

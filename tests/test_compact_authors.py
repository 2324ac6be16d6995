"""A compacted team log keeps who wrote each memory and who changed it last (docs/contract.md §5 compaction, §11
attribution): a teammate who reconciles only the snapshots sees the same created_by / updated_by as one who
applied the whole history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memories.models import Memory
from memories.scope import resolve
from sync.compact import compact
from sync.fold import fold
from sync.models import LedgerEntry
from sync.schema import build
from sync.services import reconcile_scope
from tests import team_log

pytestmark = pytest.mark.django_db(transaction=True)
U1 = "33333333-3333-4333-8333-333333333333"


def _authors(memory: Memory) -> tuple[str, str]:
    return memory.created_author, memory.updated_author


def _fresh_teammate_reads(repo: Path) -> Memory:
    """This machine forgets the memory and its ledger, as a teammate cloning the compacted log would be."""
    Memory.objects.filter(uuid=U1).delete()
    LedgerEntry.objects.all().delete()
    assert reconcile_scope(resolve(None, str(repo)))["created"] == 1
    return Memory.objects.get(uuid=U1)


def test_a_fresh_teammate_reading_a_compacted_log_sees_who_wrote_and_who_last_edited(
    repo: Path, keyword_only: None
) -> None:
    team_log.teammate_event(repo, U1, 1, "create", content="The deploy key rotates monthly.", tags=[], author="Dana")
    team_log.teammate_event(repo, U1, 2, "update", tags=["ops"], author="Sam Okafor")
    scope = resolve(None, str(repo))
    reconcile_scope(scope)
    assert _authors(Memory.objects.get(uuid=U1)) == ("Dana", "Sam Okafor")
    compact(scope)
    creates = [e for e in team_log.events(repo) if e["type"] == "create"]
    assert [(e.get("created_by"), e.get("updated_by"), e.get("author")) for e in creates] == [
        ("Dana", "Sam Okafor", None)
    ]
    assert _authors(_fresh_teammate_reads(repo)) == ("Dana", "Sam Okafor")


def test_a_log_whose_create_named_no_author_does_not_credit_the_last_editor_after_compaction(
    repo: Path, keyword_only: None
) -> None:
    # A create written before attribution, then a named edit: the writer is unknown, not the editor, and
    # compacting again changes nothing (the snapshot is a fixpoint).
    team_log.teammate_event(repo, U1, 1, "create", content="Invoices are numbered per year.", tags=[])
    team_log.teammate_event(repo, U1, 2, "update", tags=["billing"], author="Sam Okafor")
    scope = resolve(None, str(repo))
    compact(scope)
    names = sorted(p.name for p in (repo / ".yullu" / "logs").iterdir())
    assert _authors(_fresh_teammate_reads(repo)) == ("", "Sam Okafor")
    compact(scope)
    assert sorted(p.name for p in (repo / ".yullu" / "logs").iterdir()) == names


def _event(n: int, kind: str, **fields: Any) -> Any:
    ts = f"2026-06-01T00:00:{n:02d}Z"
    return build(id=f"00000000-0000-4000-8000-{n:012d}", type=kind, memory_id=U1, ts=ts, **fields)


def test_a_snapshot_folds_to_the_same_creator_and_last_author_as_the_history_it_replaces() -> None:
    from sync.compact import _snapshot

    history = [_event(1, "create", content="x", author="Dana"), _event(2, "update", tags=["a"], author="Sam")]
    whole = fold(history)
    again = fold(_snapshot(U1, whole))
    assert (again.creator, again.author) == (whole.creator, whole.author) == ("Dana", "Sam")


def test_an_older_reader_of_a_snapshot_credits_no_one_rather_than_the_last_editor() -> None:
    # An older version's fold takes a create's `author` for its writer (review 23): a snapshot must not carry
    # the last editor there.
    from sync.compact import _snapshot

    history = [_event(1, "create", content="x", author="Dana"), _event(2, "update", tags=["a"], author="Sam")]
    create = _snapshot(U1, fold(history))[0]
    assert create.type == "create" and create.author is None
    assert (create.created_by, create.updated_by) == ("Dana", "Sam")

"""Convergence, property-tested against the real database: whatever order event files arrive in,
and however they are split across reconciles, a machine ends in the state the fold of all of them
describes — so every machine holding the same files agrees."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memories.models import Memory
from memories.scope import Scope
from sync.eventlog import list_names
from sync.models import LedgerEntry, ProjectSyncState
from sync.services import reconcile_scope
from tests.processes import git_repo
from tests.stubs import StubServer
from yullu_core.timestamps import parse_ts

pytestmark = pytest.mark.django_db(transaction=True)
PROJECT = "example.com/convergence"
MEMORIES = [f"c0000000-0000-4000-8000-00000000000{n}" for n in range(3)]

words = st.sampled_from(["alpha", "beta", "gamma", "delta"])
tags = st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True)
category = st.sampled_from([None, "process", "decision", "gotcha"])


@st.composite
def event(draw: st.DrawFn, n: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(["create", "create", "update", "update", "delete", "embedding"]))
    second = draw(st.integers(0, 5))  # few distinct times: ties are ordered by event id
    body: dict[str, Any] = {
        "id": f"e0000000-0000-4000-8000-{n:012d}",
        "type": kind,
        "memory_id": draw(st.sampled_from(MEMORIES)),
        "ts": f"2026-06-01T00:00:0{second}.{draw(st.integers(0, 2))}Z",
    }
    if kind == "create":
        body |= {"content": f"{draw(words)} {n}", "tags": draw(tags), "category": draw(category)}
    elif kind == "update":
        for name, strategy in (("content", words), ("tags", tags), ("category", category)):
            if draw(st.booleans()):
                value = draw(strategy)
                body[name] = f"{value} {n}" if name == "content" else value
    elif kind == "embedding":
        body |= {"embedder": "openai:stub-embed", "vector": [1.0] + [0.0] * 7}
    return body


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[list[int]], list[list[int]]]:
    count = draw(st.integers(1, 12))
    events = [draw(event(n)) for n in range(count)]

    def arrival() -> list[list[int]]:
        order = draw(st.permutations(range(count)))
        cuts = sorted(draw(st.sets(st.integers(1, max(1, count - 1)), max_size=3)))
        return [list(order[a:b]) for a, b in zip([0, *cuts], [*cuts, count], strict=True) if order[a:b]]

    return events, arrival(), arrival()


def state() -> list[tuple[Any, ...]]:
    return sorted(
        Memory.objects.filter(project_id=PROJECT).values_list(
            "uuid", "content", "tags", "category", "created_at", "updated_at"
        )
    )


def replay(repo: Path, events: list[dict[str, Any]], batches: list[list[int]]) -> list[tuple[Any, ...]]:
    """A fresh machine receives the files batch by batch (a pull each), reconciling after each."""
    Memory.objects.filter(project_id=PROJECT).delete()
    LedgerEntry.objects.filter(project_id=PROJECT).delete()
    ProjectSyncState.objects.filter(project_id=PROJECT).delete()
    logs = repo / ".yullu" / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    for batch in batches:
        for n in batch:
            (logs / f"event-{n}.json").write_text(json.dumps(events[n]))
        result = reconcile_scope(Scope(PROJECT, repo))
        assert result["parse_errors"] == []
    assert len(list_names(logs)) >= len(events)
    return state()


def expected(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """docs/contract.md §5's rule, written here independently of sync.fold (an oracle, not the product's own
    fold): per memory, events in (ts, id) order; each field takes the last value set; a create
    sets every field (tags [] and category null when absent), an update the ones it carries; a
    delete tombstones and a later create/update resurrects; embeddings change no field;
    created_at is the first field event's time, updated_at the last's (microseconds, truncated)."""
    by_memory: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_memory.setdefault(e["memory_id"], []).append(e)
    rows = []
    for memory, evs in by_memory.items():
        fields: dict[str, Any] = {"content": None, "tags": [], "category": None}
        deleted, first, last = False, None, None
        for e in sorted(evs, key=lambda e: (when(e["ts"]), e["id"])):
            if e["type"] == "embedding":
                continue
            first, last = first or when(e["ts"]), when(e["ts"])
            deleted = e["type"] == "delete"
            if e["type"] == "create":
                fields = {"content": e["content"], "tags": e.get("tags") or [], "category": e.get("category")}
            elif e["type"] == "update":
                fields |= {k: (v or [] if k == "tags" else v) for k, v in e.items() if k in fields}
        if not deleted and fields["content"] is not None:
            rows.append((UUID(memory), fields["content"], fields["tags"], fields["category"], first, last))
    return sorted(rows)


def when(ts: str) -> datetime:
    """`2026-06-01T00:00:03.1Z` as the database stores it (tenths of a second fit a microsecond)."""
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


# CI replays the same examples every run (a red CI is a regression, never a dice roll); local runs explore.
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=bool(os.environ.get("CI")),
)
@given(history=histories())
def test_any_arrival_order_and_partition_ends_in_the_same_state(
    history: tuple[list[dict[str, Any]], list[list[int]], list[list[int]]], tmp_path: Path, stub_embedder: StubServer
) -> None:
    events, first, second = history
    repo = git_repo(tmp_path / "repo")
    want = expected(events)
    assert replay(repo, events, first) == want
    assert replay(repo, events, second) == want
    assert replay(repo, events, [list(range(len(events)))]) == want


def test_ts_parsing_keeps_nanoseconds_and_offsets() -> None:
    assert parse_ts("2026-06-02T11:00:00+02:00") == parse_ts("2026-06-02T09:00:00Z")
    assert parse_ts("2026-06-01T04:12:13.364878123Z") - parse_ts("2026-06-01T04:12:13.364878Z") == 123

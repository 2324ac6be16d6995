"""A question naming a date favours the memories created then (memories.search.expansion)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.embedding.embedders import get_embedder
from memories.embedding.vector_index import vector_literal
from memories.models import Memory
from memories.scope import Scope
from memories.search import bm25, expansion, queries
from memories.search.expansion import date_windows, in_window
from memories.write import create, validation
from tests.stubs import StubServer

A = Scope("acme/dates", None)


def at(year: int, month: int, day: int, hour: int = 0) -> float:
    return datetime(year, month, day, hour, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("question", "inside", "outside"),
    [
        ("What painting did she show on October 13, 2023?", at(2023, 10, 13, 18), at(2023, 10, 20)),
        ("what did we decide on 1 February, 2023", at(2023, 2, 1, 9), at(2023, 3, 1)),
        ("why did the deploy fail on 2024-05-08?", at(2024, 5, 8, 23), at(2024, 5, 11)),
        ("What class did Maria start in December 2023?", at(2023, 12, 30), at(2024, 1, 2)),
        ("When did Melanie go camping in June?", at(2021, 6, 5), at(2021, 7, 5)),
        ("how many outages did we have in 2022", at(2022, 7, 1), at(2023, 1, 2)),
    ],
)
def test_a_question_naming_a_date_gives_its_window(question: str, inside: float, outside: float) -> None:
    windows = date_windows(question)
    assert in_window(inside, windows) and not in_window(outside, windows)


def test_a_day_without_a_year_is_its_latest_occurrence() -> None:
    last = datetime.now(UTC) - timedelta(days=10)
    named = f"{last.day} {last.strftime('%B')}"
    for question in (f"what did we decide on {named}?", f"what broke on {last.strftime('%B')} {last.day}th"):
        windows = date_windows(question)
        assert in_window(last.timestamp(), windows), question
        assert not in_window((last - timedelta(days=365)).timestamp(), windows), question


@pytest.mark.parametrize(
    "question", ["may I skip the canary?", "how do we deploy?", "run make test 2023 times", "may 3 tests fail?"]
)
def test_a_question_without_a_date_names_none(question: str) -> None:
    assert date_windows(question) == []


@pytest.mark.django_db(transaction=True)
def test_the_memory_created_on_the_day_asked_about_comes_first(stub_embedder: StubServer) -> None:
    items = [
        validation.NewMemory("vec:1,0,0 the dated note", None, [], datetime(2026, 3, 3, 10, tzinfo=UTC)),
        validation.NewMemory("vec:1,0,0 the newer note", None, [], datetime(2026, 3, 10, 10, tzinfo=UTC)),
    ]
    create.store_memories(A, items, source="test", dedupe=False)  # equal vectors on purpose

    def order(question: str) -> list[str]:
        found = queries.search(A.project_id, question, limit=2, min_similarity=0.0, log=False)
        return [hit["content"].split(" ", 1)[1] for hit in found.results]

    assert order("vec:1,0,0 what happened on 3 March 2026") == ["the dated note", "the newer note"]
    # Both in the month asked about, or no date at all: the newer one wins the tie.
    assert order("vec:1,0,0 what happened in March 2026") == ["the newer note", "the dated note"]
    assert order("vec:1,0,0 what happened") == ["the newer note", "the dated note"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "exact_max", [expansion.WINDOW_EXACT_MAX, 3, 2], ids=["small project", "small window", "large window: hnsw"]
)
def test_the_window_search_finds_the_memory_from_the_year_asked_about(
    stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch, exact_max: int
) -> None:
    # Eight memories, three of 2024 (so a bound of 2 sends the window through the HNSW index, one of
    # 3 scans the window's ids exactly) and, closer to the question, 2025 ones the window leaves out.
    dated = [("vec:1,1,0 the 2024 release note", 2024)] + [(f"vec:0,0,1 other 2024 note {n}", 2024) for n in range(2)]
    others = [(f"vec:1,0.{n},0 a 2025 note {n}", 2025) for n in range(5)]
    items = [validation.NewMemory(text, None, [], datetime(year, 6, 1, tzinfo=UTC)) for text, year in dated + others]
    create.store_memories(A, items, source="test", dedupe=False)
    monkeypatch.setattr(expansion, "WINDOW_EXACT_MAX", exact_max)
    bm25.forget(A.project_id)  # the project's cached count may be an earlier test's
    embedder = get_embedder()
    qvec = embedder.embed(["vec:1,0,0 what did we release in 2024?"], kind="query")[0]
    with CaptureQueriesContext(connection) as ran:
        found = expansion.nearest_in_windows(
            A.project_id, embedder.id, vector_literal(qvec), len(qvec), date_windows("in 2024"), [], 1
        )
    assert Memory.objects.get(pk=found[0]).content.endswith("the 2024 release note")
    assert any(") + 0" in q["sql"] for q in ran.captured_queries) == (exact_max > 2)

"""Fusion with the real default local embedder: one literal keyword match does not outrank a much
closer meaning in a small project (keyword evidence is measured against what the query could attain,
not against the best candidate), and a memory that asks the question ranks below one that answers it."""

from __future__ import annotations

import pytest

from memories.scope import resolve
from memories.search import queries
from memories.write import create, validation

pytestmark = pytest.mark.django_db(transaction=True)

TESTS = "Run the test suite with `make test`; it starts a throwaway Postgres and runs pytest."
DECISION = "We chose PostgreSQL over MongoDB because we need transactions across tables and pgvector."


@pytest.mark.parametrize("question", ["why postgres?", "why did we pick postgres over mongo"])
def test_a_closer_meaning_beats_one_literal_keyword_match(question: str) -> None:
    scope = resolve(project_id="acme/fusion")
    _, decision = [
        s.memory for s in create.store_memories(scope, [validation.NewMemory(TESTS), validation.NewMemory(DECISION)])
    ]
    found = queries.search(scope.project_id, question, log=False).results
    assert found and found[0]["id"] == decision.id, [(h["content"][:30], h["similarity"]) for h in found]


def test_a_memory_that_asks_the_question_ranks_below_one_that_answers_it(monkeypatch: pytest.MonkeyPatch) -> None:
    scope = resolve(project_id="acme/asking")
    asking, answer = (
        create.store_memory(scope, text, None).memory
        for text in (
            "Any idea why the billing export keeps failing at night?",
            "The nightly billing export keeps failing because its S3 credentials expire. Rotate them.",
        )
    )
    create.store_memory(scope, "The frontend uses React with Vite.", None)
    question = "why does the nightly billing export keep failing?"

    def first() -> int:
        return queries.search(scope.project_id, question, limit=10, min_similarity=0.0, log=False).results[0]["id"]

    assert first() == answer.id  # the asking memory is closer in meaning (0.91 against 0.78)
    monkeypatch.setattr(queries, "W_ASKING", 0.0)
    assert first() == asking.id

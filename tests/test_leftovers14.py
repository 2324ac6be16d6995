"""The last note's small leftovers (lane fixes14): each test is red without its fix."""

from __future__ import annotations

import re
from typing import Any

import pytest

from memories.scope import resolve
from memories.search import asking, expansion, queries
from memories.write import create

# --- 5. a search reads the CHOICE pattern once per prompt -------------------------------------------------------


class CountingPattern:
    """asking.CHOICE, counting its searches."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.searched = pattern, 0

    def search(self, text: str) -> Any:
        self.searched += 1
        return self.pattern.search(text)


@pytest.mark.django_db(transaction=True)
def test_a_search_reads_whether_its_prompt_asks_about_a_choice_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """asking.asks_in_general and gates.judged_test each ran CHOICE on a short prompt, with the real local
    embedder and cross-encoder (the calibrated gate) through the search path."""
    scope = resolve("acme/choices", None)
    create.store_memory(scope, "We host on RDS rather than JawsDB: point-in-time restore and IAM auth.", "decision")
    create.store_memory(scope, "Pricing talks REST, not gRPC: the partner SDKs only speak JSON.", "decision")
    counting = CountingPattern(asking.CHOICE)
    monkeypatch.setattr(asking, "CHOICE", counting)
    for prompt in ("why rds instead of jawsdb", "why not grpc for pricing", "how do we host the database"):
        before = counting.searched
        found = queries.search(scope.project_id, prompt, log=False)
        assert counting.searched - before == 1, (prompt, counting.searched - before)
        if prompt.startswith("why"):
            assert found.results, prompt  # a question about the choice still finds it


def test_the_shorthands_words_name_no_choice() -> None:
    """The search reads CHOICE of the prompt as typed and gives the answer to the gate, which judges the text
    with the shorthand's words appended (expansion.with_jargon): the same answer only while none of those
    words makes a choice ("over", "not", "instead of")."""
    for _, words in expansion._JARGON:
        assert not asking.asks_about_a_choice(f"why postgres ({words})"), words

"""A shorter copy of a memory is its duplicate (walk 20): a CLAUDE.md line stored beside the memory that
holds that line and one more step was kept twice, the extra step's flag and number read as a changed
fact. A longer text that adds a fact stays new. Real default embedder: the cosine gate is part of it."""

from __future__ import annotations

import pytest

from memories.scope import resolve
from memories.write import create, validation

pytestmark = pytest.mark.django_db

LONG = (
    "The deploy process: run make ship, then watch the 10 percent canary. "
    "After 30 minutes, promote it with make promote --all."
)
SHORT = "The deploy process: run make ship, then watch the 10 percent canary."


def test_a_shorter_copy_of_a_memory_is_its_duplicate() -> None:
    scope = resolve("walk20/shorter", None)
    first = create.store_memory(scope, LONG, "process")
    again = create.store_memory(scope, SHORT, "process")
    assert (again.created, again.duplicate_of) == (False, first.memory.pk)


def test_a_longer_text_that_adds_a_step_is_a_new_memory() -> None:
    scope = resolve("walk20/longer", None)
    create.store_memory(scope, SHORT, "process")
    assert create.store_memory(scope, LONG, "process").created


def test_a_shorter_copy_later_in_one_batch_is_stored_once() -> None:
    stored = create.store_memories(resolve("walk20/batch", None), [validation.NewMemory(t) for t in (LONG, SHORT)])
    assert [s.created for s in stored] == [True, False]


def test_a_sentence_copied_from_beside_a_negation_is_a_new_memory() -> None:
    scope = resolve("walk20/negated", None)
    create.store_memory(scope, "Never push the release branch to production directly from a laptop.")
    assert create.store_memory(scope, "Push the release branch to production directly from a laptop.").created


NIGHTLY = "Staging deploys run every night from the main branch, after the full integration suite passes."


def test_a_copy_less_one_middle_word_is_a_duplicate() -> None:
    # Round 24: dup23's rule took one unbroken run, so dropping "full" made the copy a new memory (the guard
    # read one word fewer as a changed fact).
    scope = resolve("r24/less-one-word", None)
    first = create.store_memory(scope, NIGHTLY, "process")
    again = create.store_memory(scope, NIGHTLY.replace("full ", ""), "process")
    assert (again.created, again.duplicate_of) == (False, first.memory.pk)
    part = "Staging deploys run every night from the branch"  # a run of it, less one word inside the run
    assert create.store_memory(scope, part, "process").duplicate_of == first.memory.pk


def test_a_copy_that_drops_a_flag_or_a_number_is_a_new_memory() -> None:
    # Dropping a literal may be the fix ("pytest -x" was wrong): not a copy.
    scope = resolve("r24/less-one-flag", None)
    create.store_memory(scope, "Run the unit tests with pytest -x before every push to main.")
    assert create.store_memory(scope, "Run the unit tests with pytest before every push to main.").created
    create.store_memory(scope, "The nightly backup keeps 14 daily snapshots in the cold bucket.")
    assert create.store_memory(scope, "The nightly backup keeps daily snapshots in the cold bucket.").created

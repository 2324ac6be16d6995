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


# Review 24: round 24 merged a copy less one ordinary word inside it; each of these drops the word that is the
# correction, and each was answered duplicate_of (the write thrown away).
CORRECTIONS = [
    ("Run make dev to start the local stack with hot reload.", "Run make to start the local stack with hot reload."),
    ("Use npm ci to install dependencies on the build agents.", "Use npm to install dependencies on the build agents."),
    ("Deploy only from the main branch after the checks pass.", "Deploy from the main branch after the checks pass."),
    ("Staging deploys run every night from the main branch.", "Staging deploys run every night from the branch."),
]


@pytest.mark.parametrize(("old", "new"), CORRECTIONS)
def test_a_copy_less_one_word_inside_it_is_a_new_memory(old: str, new: str) -> None:
    scope = resolve(f"r24/less-one-word-{CORRECTIONS.index((old, new))}", None)
    create.store_memory(scope, old, "process")
    assert create.store_memory(scope, new, "process").created


def test_a_copy_that_drops_a_flag_or_a_number_is_a_new_memory() -> None:
    # Dropping a literal may be the fix ("pytest -x" was wrong): not a copy.
    scope = resolve("r24/less-one-flag", None)
    create.store_memory(scope, "Run the unit tests with pytest -x before every push to main.")
    assert create.store_memory(scope, "Run the unit tests with pytest before every push to main.").created
    create.store_memory(scope, "The nightly backup keeps 14 daily snapshots in the cold bucket.")
    assert create.store_memory(scope, "The nightly backup keeps daily snapshots in the cold bucket.").created

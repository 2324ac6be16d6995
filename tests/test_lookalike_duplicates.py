"""Look-alike Unicode does not slip past duplicate detection (issue 33): a Cyrillic `е`, a zero-width
space or full-width letters do not make a new fact. The stub embedder gives unrelated texts unrelated
vectors, so only reading the text as a reader sees it can find these duplicates."""

from __future__ import annotations

import pytest

from memories.scope import resolve
from memories.write import create, validation
from memories.write.duplicates import skeleton
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db

PLAIN = "We deploy with make ship after the staging checks pass"
LOOKALIKES = [
    PLAIN.replace("e", "\u0435", 2),  # Cyrillic е
    PLAIN.replace("o", "\u03bf"),  # Greek ο
    PLAIN.replace("make", "ma\u200bke"),  # a zero-width space
    PLAIN.replace("ship", "\uff53\uff48\uff49\uff50"),  # full-width letters
    PLAIN.replace(" ", "  ", 3),  # doubled spaces
]


def test_the_skeleton_reads_look_alikes_as_the_letters_they_imitate() -> None:
    assert {skeleton(text) for text in LOOKALIKES} == {PLAIN}
    assert skeleton("проект") != skeleton("npoekt")  # text in another script is not turned into Latin


@pytest.mark.parametrize("lookalike", LOOKALIKES)
def test_a_look_alike_of_a_memory_is_its_duplicate(stub_embedder: StubServer, lookalike: str) -> None:
    scope = resolve("acme/dupes", None)
    first = create.store_memory(scope, PLAIN)
    again = create.store_memory(scope, lookalike)
    assert (again.created, again.duplicate_of) == (False, first.memory.pk)


@pytest.mark.parametrize("lookalike", LOOKALIKES[:3])
def test_a_plain_memory_is_the_duplicate_of_an_earlier_look_alike(stub_embedder: StubServer, lookalike: str) -> None:
    scope = resolve("acme/dupes-reverse", None)
    first = create.store_memory(scope, lookalike)
    again = create.store_memory(scope, PLAIN)
    assert (again.created, again.duplicate_of) == (False, first.memory.pk)


def test_look_alikes_in_one_batch_are_stored_once(stub_embedder: StubServer) -> None:
    stored = create.store_memories(
        resolve("acme/dupes-batch", None), [validation.NewMemory(t) for t in [PLAIN, *LOOKALIKES]]
    )
    assert [s.created for s in stored] == [True] + [False] * len(LOOKALIKES)


def test_a_changed_literal_is_still_a_new_fact(stub_embedder: StubServer) -> None:
    scope = resolve("acme/dupes-literal", None)
    create.store_memory(scope, "The API listens on port 8080")
    assert create.store_memory(scope, "The API listens on port 8\u0030\u0038\u0031").created  # 8081

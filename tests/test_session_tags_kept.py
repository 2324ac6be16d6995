"""A memory tagged with its session (`session:<id>`, the tag every write with a client's session id gets) is
stored: the secret scanner's rule for a text that is only `user:password` (credential-pair-alone) read the tag
`session:<uuid>` as a login and its password, so every store with a session id was refused, and LoCoMo's
ingest with its session tags stopped at the first conversation."""

from __future__ import annotations

import uuid

import pytest

from memories.scope import resolve
from memories.secrets import find_secret
from memories.write import create, validation

pytestmark = pytest.mark.django_db(transaction=True)

SESSION_IDS = [str(uuid.UUID(int=i * 7919 + 12345678901234567890)) for i in range(1, 6)]
SESSION_IDS += [uuid.UUID(int=987654321987654321).hex, "conv-43-D29", "rollout-7f3a1c9e"]


@pytest.mark.parametrize("session_id", SESSION_IDS)
def test_a_session_tag_is_not_a_secret(session_id: str) -> None:
    assert find_secret(validation.session_tag(session_id)) is None


def test_a_store_with_a_session_is_kept_and_a_real_pair_still_refused() -> None:
    scope = resolve("acme/sessions", None)
    tags = validation.with_session(["deploy"], SESSION_IDS[0])
    stored = create.store_memory(scope, "Deploys go out through Argo CD after the smoke suite passes.", "process", tags)
    assert validation.session_tag(SESSION_IDS[0]) in stored.memory.tags
    # a text that is only a login and its password is still one
    assert find_secret("deploy:Hound7!Lantern") is not None

"""Dreaming against existing memories (docs/contract.md §10): a conversation that reverses a decision yields a
supersede or a contradicts link, never a second memory. Stub reasoner over real HTTP (openai client)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.conf import settings

from dreaming.models import DreamOp
from dreaming.reasoners import configured_reasoner
from dreaming.services import DreamResult, record_messages, run_dream_pass
from memories import lifecycle
from memories.models import LinkKind, Memory, MemoryLink
from memories.scope import Scope
from memories.search import queries
from memories.write import create
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)
P = Scope("acme/dream-life", None)
OLD = "vec:1,0,0 We deploy with make ship"
# Cosine 0.86 with OLD: related (so the judge is asked), not a duplicate.
REVERSAL = "vec:1,0.6,0 make ship is retired; deploy with make release"


@pytest.fixture
def reasoner_stub(stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch) -> StubServer:
    monkeypatch.setitem(
        settings.YULLU, "reasoning", {"provider": "openai", "model": "stub-chat", "timeout_seconds": 10}
    )
    return stub_embedder


def converse() -> None:
    record_messages(
        P.project_id,
        "s1",
        [
            {"role": "user", "content": "make ship is gone, right?"},
            {"role": "assistant", "content": "Yes: since the CI move we deploy with make release."},
        ],
    )


def propose(stub: StubServer, *replies: dict[str, Any] | str) -> DreamResult:
    stub.chat_replies.extend(r if isinstance(r, str) else json.dumps(r) for r in replies)
    return run_dream_pass(P.project_id, reasoner=configured_reasoner())


def judge_prompt(stub: StubServer) -> str:
    chats = [r for r in stub.requests if r["path"].endswith("/chat/completions")]
    return chats[-1]["body"]["messages"][1]["content"]


def test_a_reversed_decision_supersedes_the_old_memory_instead_of_adding_one(reasoner_stub: StubServer) -> None:
    old = create.store_memory(P, OLD, "process").memory
    converse()
    result = propose(
        reasoner_stub,
        {"operations": [{"op": "create", "content": REVERSAL, "category": "process"}]},
        {"decision": "supersede", "uuid": str(old.uuid), "reasoning": "the command was renamed"},
    )
    assert result["errors"] == [] and str(old.uuid) in judge_prompt(reasoner_stub)
    old.refresh_from_db()
    new = Memory.objects.current().get(project_id=P.project_id)
    assert new.content == REVERSAL and old.superseded_by_id == new.pk
    found = queries.search(P.project_id, "vec:1,0,0 how do we deploy?", min_similarity=0.0, log=False)
    assert [h["id"] for h in found.results] == [new.pk]
    assert DreamOp.objects.get().outcome == "superseded"
    assert [c["source"] for c in lifecycle.history(old.pk)] == ["api", "dream"]


def test_an_unclear_disagreement_opens_a_conflict(reasoner_stub: StubServer) -> None:
    old = create.store_memory(P, OLD, "process").memory
    converse()
    propose(
        reasoner_stub,
        {"operations": [{"op": "create", "content": REVERSAL}]},
        {"decision": "contradicts", "uuid": str(old.uuid)},
    )
    new = Memory.objects.exclude(pk=old.pk).get()
    assert MemoryLink.objects.filter(from_memory=new, to_memory=old, kind=LinkKind.CONTRADICTS).exists()
    assert [c["to_id"] for c in lifecycle.open_conflicts(P.project_id)] == [old.pk]


def test_the_reasoner_can_supersede_directly_and_a_bad_judge_answer_means_create(reasoner_stub: StubServer) -> None:
    old = create.store_memory(P, OLD, "process").memory
    other = create.store_memory(P, "vec:0,0,1 Releases are tagged vX.Y.Z").memory
    converse()
    propose(
        reasoner_stub,
        {
            "operations": [
                {"op": "supersede", "uuid": str(old.uuid), "content": REVERSAL},
                {"op": "create", "content": "vec:0,0.6,1 Release tags are signed"},
            ]
        },
        "not json at all",
    )
    old.refresh_from_db()
    assert old.superseded_by_id is not None
    assert Memory.objects.current().filter(project_id=P.project_id).count() == 3  # new, other, signed tags
    assert other.pk in Memory.objects.current().values_list("pk", flat=True)


def test_a_proposal_sets_importance_and_expiry_and_an_odd_value_is_dropped(reasoner_stub: StubServer) -> None:
    # SPEC §10: importance and expires_at (ttl_days) on every write path, dreaming's too.
    kept = create.store_memory(P, OLD, "process").memory
    converse()
    ops = [
        {"op": "create", "content": "vec:0,1,0 Staging runs on Fly", "category": "process",
         "importance": "high", "ttl_days": 30},
        {"op": "create", "content": "vec:0,0,1 The ledger is append-only", "category": "domain",
         "importance": "urgent", "ttl_days": -4},
        {"op": "update", "uuid": str(kept.uuid), "importance": "low"},
    ]  # fmt: skip
    result = propose(reasoner_stub, {"operations": ops})
    assert (result["ops_created"], result["ops_updated"], result["ops_skipped"]) == (2, 1, 0), result
    staging = Memory.objects.get(content="vec:0,1,0 Staging runs on Fly")
    assert staging.importance == "high" and staging.expires_at is not None
    assert 29 < (staging.expires_at - staging.created_at).total_seconds() / 86400 <= 30
    ledger = Memory.objects.get(content="vec:0,0,1 The ledger is append-only")
    assert (ledger.importance, ledger.expires_at) == ("normal", None), "a reasoner's odd value is dropped, not the fact"
    assert Memory.objects.get(pk=kept.pk).importance == "low"

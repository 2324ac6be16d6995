"""A dream pass keeps what the reasoner proposed and what became of it; a pass that failed says so."""

from __future__ import annotations

import json

import pytest

from dreaming.models import DreamOp, DreamPass
from dreaming.reasoners import configured_reasoner
from dreaming.services import run_dream_pass
from tests.stubs import StubServer
from tests.test_dreaming import reasoner_stub, seed_session

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["reasoner_stub"]  # a fixture, imported for use by name


def test_each_proposed_op_is_kept_with_its_reasoning_and_outcome(reasoner_stub: StubServer) -> None:
    seed_session("acme/ops")
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    ops = [
        {"op": "create", "content": "Deploys need the VPN", "category": "gotcha", "reasoning": "said twice"},
        {"op": "delete", "uuid": "not-a-uuid", "reasoning": "stale"},
        {"op": "create", "content": f"the token is {token}", "reasoning": "why not"},
    ]
    reasoner_stub.chat_replies.append(json.dumps({"operations": ops}))
    result = run_dream_pass("acme/ops", reasoner=configured_reasoner())
    kept = list(DreamOp.objects.filter(dream_pass_id=result["pass_id"]).order_by("id"))
    assert [(o.op, o.outcome) for o in kept] == [("create", "created"), ("delete", "skipped"), ("create", "skipped")]
    assert kept[0].reasoning == "said twice" and kept[0].category == "gotcha" and kept[0].session_id == "s1"
    assert "not a memory uuid" in kept[1].detail
    assert token not in kept[2].content and "refused" in kept[2].detail
    assert DreamPass.objects.get().phase == "done"


def test_a_pass_without_a_reasoner_is_recorded_as_failed(stub_embedder: StubServer) -> None:
    seed_session("acme/ops")
    run_dream_pass("acme/ops", reasoner=None, manual=True)
    dream = DreamPass.objects.get()
    assert dream.phase == "failed" and dream.failed and dream.finished_at is not None
    assert str(dream).startswith(f"Dream pass {dream.pk} · acme/ops")

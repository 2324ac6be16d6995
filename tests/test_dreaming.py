"""Dreaming against a real OpenAI-compatible stub server through the real `openai` client."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from dreaming import operations
from dreaming.models import DreamOp, DreamPass, SessionMessage
from dreaming.parse import ParseError, parse_operations
from dreaming.reasoners import configured_reasoner
from dreaming.services import record_messages, run_dream_pass, should_dream
from memories.models import Memory, Usage
from memories.scope import resolve
from memories.write import create, edit, validation
from sync.eventlog import read_events
from tests.processes import product_env, run_cli, start_worker_and_beat, stop, stub_env, wait_until
from tests.stubs import StubServer
from yullu_core.locks import LockKey

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reasoner_stub(stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch) -> StubServer:
    monkeypatch.setitem(
        settings.YULLU, "reasoning", {"provider": "openai", "model": "stub-chat", "timeout_seconds": 10}
    )
    return stub_embedder


def chat_requests(stub: StubServer) -> list[dict[str, Any]]:
    return [r for r in stub.requests if r["path"].endswith("/chat/completions")]


def chat_calls(stub: StubServer) -> int:
    return len(chat_requests(stub))


def seed_session(project_id: str, n: int = 3, session_id: str = "s1") -> None:
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} about the build"} for i in range(n)]
    record_messages(project_id, session_id, turns)


def test_a_pass_applies_creates_and_updates_and_clears_the_buffer(reasoner_stub: StubServer, repo: Path) -> None:
    scope = resolve(None, str(repo))
    seeded = create.store_memory(scope, "CI runs on every push", "process").memory
    seed_session(scope.project_id)
    reasoner_stub.chat_replies.append(
        json.dumps(
            {
                "operations": [
                    {
                        "op": "create",
                        "content": "The build uses make, never npm scripts",
                        "category": "process",
                        "tags": ["build"],
                    },
                    {
                        "op": "create",
                        "content": "Migrations must be backwards compatible for one release",
                        "category": "gotcha",
                    },
                    {"op": "update", "uuid": str(seeded.uuid), "content": "CI runs on every push and nightly"},
                ]
            }
        )
    )
    result = run_dream_pass(scope.project_id, reasoner=configured_reasoner())
    assert (result["ops_created"], result["ops_updated"], result["ops_skipped"]) == (2, 1, 0)
    assert (result["sessions_processed"], result["messages_processed"], result["errors"]) == (1, 3, [])
    assert chat_calls(reasoner_stub) == 1
    assert SessionMessage.objects.count() == 0
    assert Memory.objects.get(pk=seeded.pk).content == "CI runs on every push and nightly"
    kinds = [e.type for _, e in read_events(repo / ".yullu" / "logs").events]
    assert kinds.count("create") == 3 and kinds.count("update") == 1
    row = DreamPass.objects.get()
    assert (row.phase, row.ops_created, row.messages_processed) == ("done", 2, 3)
    prompt = chat_requests(reasoner_stub)[-1]["body"]["messages"][1]["content"]
    assert "turn 0 about the build" in prompt and str(seeded.uuid) in prompt


@pytest.mark.parametrize("reply", ["I think there is nothing JSON here.", 500])
def test_a_bad_answer_or_failure_keeps_the_messages(reasoner_stub: StubServer, reply: Any) -> None:
    seed_session("acme/p")
    reasoner_stub.chat_replies += [reply] * 3
    result = run_dream_pass("acme/p", reasoner=configured_reasoner())
    assert result["errors"] and result["sessions_processed"] == 0
    assert "\n" not in result["errors"][0]
    assert SessionMessage.objects.count() == 3 and Memory.objects.count() == 0


def test_unknown_ops_and_unknown_uuids_are_skipped(reasoner_stub: StubServer) -> None:
    seed_session("acme/p")
    reasoner_stub.chat_replies.append(
        "Sure! ```json\n"
        + json.dumps(
            {
                "operations": [
                    {"op": "merge", "content": "x"},
                    {"op": "update", "uuid": "00000000-0000-4000-8000-000000000000", "content": "y"},
                    {"op": "delete", "uuid": "not-a-uuid"},
                    {"op": "create", "content": "Deploys need the VPN", "category": "gotcha"},
                ]
            }
        )
        + "\n```\nHope that helps."
    )
    result = run_dream_pass("acme/p", reasoner=configured_reasoner())
    assert (result["ops_created"], result["ops_skipped"]) == (1, 3)
    assert SessionMessage.objects.count() == 0


def test_secrets_in_ops_are_refused_and_redacted_before_the_reasoner(reasoner_stub: StubServer) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    record_messages("acme/p", "s", [{"role": "user", "content": f"my token is {token}"}])
    assert token not in SessionMessage.objects.get().content
    reasoner_stub.chat_replies.append(json.dumps({"operations": [{"op": "create", "content": f"token {token}"}]}))
    result = run_dream_pass("acme/p", reasoner=configured_reasoner())
    assert result["ops_skipped"] == 1 and Memory.objects.count() == 0
    assert token not in json.dumps(chat_requests(reasoner_stub)[-1]["body"])


def test_a_proposal_that_is_only_redacted_secrets_is_skipped_with_its_reason(reasoner_stub: StubServer) -> None:
    """Walk 16: user turns pasting keys are redacted before the reasoner reads them, and a reasoner copying the
    fact proposed `HEROKU_API_KEY=[REDACTED heroku-api-key]`: 24 of a pass's 27 creates were stored like that and
    came back from searches about anything. A proposal that is only markers and a name is skipped, its reason
    kept; one whose words say something around the marker is kept."""
    key = "6a670b68-1457-188b-570f-818ebdfb5bff"
    record_messages("acme/p", "s", [{"role": "user", "content": f"FACT: HEROKU_API_KEY={key} ENDFACT"}])
    said = "Billing gotcha: the live key [REDACTED high-entropy-token] must never be used in tests"
    empty = [
        "HEROKU_API_KEY=[REDACTED heroku-api-key]",
        "[REDACTED private-key-header][REDACTED private-key]",
        "export OPENAI_API_KEY=[REDACTED generic-api-key]",
    ]
    ops = [{"op": "create", "content": c} for c in [*empty, said]]
    reasoner_stub.chat_replies.append(json.dumps({"operations": ops}))
    result = run_dream_pass("acme/p", reasoner=configured_reasoner())
    assert (result["ops_created"], result["ops_skipped"]) == (1, 3), result
    assert list(Memory.objects.values_list("content", flat=True)) == [said]
    skipped = DreamOp.objects.filter(outcome="skipped")
    assert sorted(skipped.values_list("content", flat=True)) == sorted(empty)
    assert {op.detail for op in skipped} == {operations.ONLY_REDACTED}


def test_near_duplicate_creates_become_updates_or_skips(reasoner_stub: StubServer) -> None:
    scope = resolve("acme/p", None)
    existing = create.store_memory(scope, "vec:1,0,0 Use pnpm for installs").memory
    seed_session("acme/p")
    reasoner_stub.chat_replies.append(
        json.dumps(
            {
                "operations": [
                    {"op": "create", "content": "vec:1,0,0 Use pnpm for installs"},
                    {"op": "create", "content": "vec:1,0,0 Use pnpm for every single install"},
                ]
            }
        )
    )
    result = run_dream_pass("acme/p", reasoner=configured_reasoner())
    assert (result["ops_created"], result["ops_updated"], result["ops_skipped"]) == (0, 1, 1)
    assert Memory.objects.get().pk == existing.pk


def test_without_a_reasoner_a_scheduled_pass_records_a_clear_error(stub_embedder: StubServer) -> None:
    seed_session("acme/p", n=12)
    result = run_dream_pass("acme/p", reasoner=None, manual=False, trigger="scheduled")
    assert "no reasoner configured" in result["errors"][0]
    assert SessionMessage.objects.count() == 12
    assert "no reasoner configured" in DreamPass.objects.get().errors[0]


def test_min_messages_applies_to_scheduled_passes_only(reasoner_stub: StubServer) -> None:
    seed_session("acme/p", n=2)
    assert run_dream_pass("acme/p", reasoner=configured_reasoner(), manual=False)["sessions_processed"] == 0
    assert run_dream_pass("acme/p", reasoner=configured_reasoner(), manual=True)["sessions_processed"] == 1


def test_a_second_pass_in_another_process_is_skipped(reasoner_stub: StubServer, tmp_path: Path) -> None:
    seed_session("acme/locked")
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [LockKey.DREAM, "acme/locked"])
    try:
        env = product_env(tmp_path / "home", **stub_env(reasoner_stub.url, reasoning=True))
        out = run_cli(["dream", "--project-id", "acme/locked"], env, timeout=120)
        assert out.returncode == 0, out.stderr[-1000:]
        assert json.loads(out.stdout)["skipped"] is True
    finally:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [LockKey.DREAM, "acme/locked"])
    assert SessionMessage.objects.count() == 3 and chat_calls(reasoner_stub) == 0


def test_yullu_dream_without_a_reasoner_says_what_to_configure_and_exits_1(tmp_path: Path) -> None:
    seed_session("acme/noreasoner")
    env = product_env(tmp_path / "home", YULLU_EMBED_PROVIDER="none", PATH="/usr/bin:/bin")
    env.pop("ANTHROPIC_API_KEY", None)
    out = run_cli(["dream", "--project-id", "acme/noreasoner"], env)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith("yullu: no reasoner") and "ANTHROPIC_API_KEY" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and not DreamPass.objects.exists()


@pytest.mark.parametrize(
    ("last_pass", "last_msg", "interval", "idle", "expected"),
    [
        (None, 5, 1800, 0, True),  # first pass fires
        (3600, 5, 1800, 0, True),  # interval elapsed
        (60, 5, 1800, 0, False),  # not elapsed, idle off
        (600, 300, 1800, 120, True),  # quiet for longer than idle, new messages since the last pass
        (600, 30, 1800, 120, False),  # a recent message suppresses idle
        (None, 5, 0, 0, False),  # both off never fires
        (60, 300, 1800, 120, False),  # idle: nothing new since the last pass
    ],
)
def test_the_schedule_decision(last_pass: int | None, last_msg: int, interval: int, idle: int, expected: bool) -> None:
    now = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    ago = lambda s: now - timedelta(seconds=s)  # noqa: E731
    assert (
        should_dream(now, ago(last_pass) if last_pass is not None else None, ago(last_msg), interval, idle, True)
        is expected
    )


@pytest.mark.parametrize(
    "text",
    [
        '{"operations": [{"op": "create", "content": "a"}]}',
        'Here you go:\n```json\n{"operations": [{"op": "create", "content": "a"}]}\n```',
        'I found one. {"operations": [{"op": "create", "content": "a {b} \\"c\\""}]} Done.',
    ],
)
def test_tolerant_parsing(text: str) -> None:
    assert parse_operations(text)[0]["op"] == "create"


def test_prose_without_json_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_operations("Nothing durable here {but braces}.")


@pytest.mark.slow
def test_a_beat_scheduled_pass_runs_end_to_end(reasoner_stub: StubServer, tmp_path: Path) -> None:
    seed_session("acme/scheduled", n=10)
    reasoner_stub.chat_replies.append(
        json.dumps({"operations": [{"op": "create", "content": "Scheduled passes work", "category": "process"}]})
    )
    env = product_env(
        tmp_path / "home",
        **stub_env(reasoner_stub.url, reasoning=True),
        YULLU_SCHEDULER_TICK_SECONDS="2",
        YULLU_HEARTBEAT_SECONDS="3600",
    )
    worker, beat = start_worker_and_beat(env, tmp_path)
    try:
        wait_until(  # the pass row is finished last, after its memories and the consumed messages
            lambda: DreamPass.objects.filter(project_id="acme/scheduled", phase="done").exists(),
            "beat to schedule a dream pass and the worker to finish it",
            timeout=90,
            alive=[worker, beat],
        )
        assert Memory.objects.filter(project_id="acme/scheduled").count() == 1
        assert DreamPass.objects.get(project_id="acme/scheduled").trigger == "scheduled"
        assert SessionMessage.objects.count() == 0
    finally:
        stop(beat)
        stop(worker)
    with psycopg.connect(
        **{
            "dbname": connection.settings_dict["NAME"],
            "host": connection.settings_dict["HOST"],
            "user": connection.settings_dict["USER"],
        }
    ) as conn:
        assert conn.execute("SELECT count(*) FROM dreaming_dreampass").fetchone() == (1,)


def test_memories_dreamed_from_one_session_carry_it_and_rise_together(reasoner_stub: StubServer) -> None:
    from memories.search import queries

    seed_session("acme/p", session_id="deploy-chat")
    reasoner_stub.chat_replies.append(
        json.dumps(
            {
                "operations": [
                    {"op": "create", "content": "vec:1,0,0 The probe deploys with make ship-it", "tags": ["deploy"]},
                    {"op": "create", "content": "vec:0,1,0 ship-it waits for the canary to pass"},
                ]
            }
        )
    )
    result = run_dream_pass("acme/p", reasoner=configured_reasoner())
    assert (result["ops_created"], result["errors"]) == (2, [])
    tags = {m.content.split(" ", 1)[1]: m.tags for m in Memory.objects.filter(project_id="acme/p")}
    assert tags == {
        "The probe deploys with make ship-it": ["deploy", "session:deploy-chat"],
        "ship-it waits for the canary to pass": ["session:deploy-chat"],
    }
    # As close to the question as the canary memory, newer, but from no session: without the
    # session signal recency would rank it second.
    create.store_memories(
        resolve("acme/p", None),
        [validation.NewMemory("vec:0,1,0 the office plants need water")],
        source="test",
        dedupe=False,
    )
    found = queries.search(
        "acme/p", "vec:1,0.5,0 how do we deploy", limit=3, min_similarity=0.0, mode="dense", log=False
    )
    assert [hit["content"].split(" ", 1)[1] for hit in found.results] == [
        "The probe deploys with make ship-it",
        "ship-it waits for the canary to pass",
        "the office plants need water",
    ]


def test_a_session_id_too_long_for_a_tag_is_tagged_by_its_hash() -> None:
    long_id = "x" * 150
    tag = validation.session_tag(long_id)
    assert (
        tag.startswith("session:") and len(tag) <= validation.MAX_TAG_CHARS and tag == validation.session_tag(long_id)
    )
    assert (
        validation.with_session(["a"] * 20, long_id)[-1] == tag and len(validation.with_session(["a"] * 20, "s")) == 20
    )
    assert validation.with_session(["session:mine"], "other") == ["session:mine"]


def test_a_pending_operation_that_fails_unexpectedly_is_skipped_not_left_to_block_every_pass(
    reasoner_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every pass applies what an interrupted pass left pending first: one that raised the same
    # unexpected error each time would have stopped the project's dreaming for good (review7).
    real = operations._apply_op

    def breaks_on_boom(scope: Any, op: dict[str, Any], *args: Any, **kwargs: Any) -> str:
        if op.get("content") == "boom":
            raise RuntimeError("a bug in one operation")
        return real(scope, op, *args, **kwargs)

    monkeypatch.setattr(operations, "_apply_op", breaks_on_boom)
    dream = DreamPass.objects.create(project_id="acme/p")
    ops = [
        {"op": "create", "content": "boom"},
        {"op": "create", "content": "Deploys need the VPN", "category": "gotcha"},
    ]
    operations.pend(dream, "s1", ops)
    counts = operations.apply_pending(resolve("acme/p", None), operations.left_pending("acme/p"), None)
    assert (counts["skipped"], counts["created"]) == (1, 1)
    assert operations.left_pending("acme/p") == []
    failed = DreamOp.objects.get(content="boom")
    assert failed.outcome == "skipped" and failed.detail == "failed: RuntimeError: a bug in one operation"
    assert Memory.objects.filter(project_id="acme/p", content="Deploys need the VPN").exists()


def test_the_prompt_holds_the_latest_memories_the_five_latest_rejections_and_a_sessions_oldest_500_turns(
    reasoner_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC §6: the `context_memories` most recently updated memories, the 5 most recent rejected ones
    # with their rating comment (anti-examples), and per session its oldest 500 messages.
    monkeypatch.setitem(settings.YULLU, "dreaming", {**settings.YULLU["dreaming"], "context_memories": 2})
    scope = resolve("acme/prompt", None)
    axis = ["vec:" + ",".join("1" if i == n else "0" for i in range(8)) for n in range(8)]  # orthogonal: no duplicates
    first, second, third = (
        create.store_memory(scope, f"{axis[i]} Fact number {i} about the build", "process").memory for i in (1, 2, 3)
    )
    edit.update_memory(first.pk, content=f"{axis[1]} Fact number 1 about the build, reworded")
    for n in range(6):
        rejected = create.store_memory(scope, f"{axis[4]} Rejected idea {n}", "gotcha").memory
        edit.rate_memory(rejected.pk, 2, f"too vague {n}")
    turns = [{"role": "user", "content": f"turn {i:03d} about the build"} for i in range(505)]
    for start in range(0, 505, 200):  # at most 200 per call
        record_messages(scope.project_id, "long", turns[start : start + 200])
    reasoner_stub.chat_replies.append('{"operations": []}')

    result = run_dream_pass(scope.project_id, reasoner=configured_reasoner(), manual=True)

    assert result["messages_processed"] == 500, result
    prompt = chat_requests(reasoner_stub)[-1]["body"]["messages"][-1]["content"]
    assert "Fact number 1 about the build, reworded" in prompt and "Fact number 3" in prompt
    assert "Fact number 2" not in prompt, "only the context_memories most recently updated"
    assert [f"too vague {n}" in prompt for n in range(6)] == [False] + [True] * 5
    assert "turn 000" in prompt and "turn 499" in prompt and "turn 500" not in prompt
    left = SessionMessage.objects.filter(project_id=scope.project_id).order_by("id")
    assert [m.content for m in left] == [f"turn {i:03d} about the build" for i in range(500, 505)]
    assert {second.pk, third.pk} <= set(Memory.objects.values_list("pk", flat=True))


def test_the_anthropic_reasoner_dreams_and_its_calls_are_priced(
    stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC §6: reasoners are MCP sampling, `openai` and `anthropic` (through the official client).
    reasoning = {"provider": "anthropic", "model": "", "timeout_seconds": 10}  # its default model
    monkeypatch.setitem(settings.YULLU, "reasoning", reasoning)
    root = stub_embedder.url.removesuffix("/v1")  # the anthropic client adds /v1/messages
    monkeypatch.setitem(settings.YULLU, "anthropic", {"api_key": "sk-ant-test-not-real", "base_url": root})
    seed_session("acme/claude")
    proposal = {"op": "create", "content": "Migrations run before deploys", "category": "process"}
    stub_embedder.chat_replies.append(json.dumps({"operations": [proposal]}))
    reasoner = configured_reasoner()
    assert reasoner is not None and reasoner.name == "anthropic:claude-haiku-4-5"
    result = run_dream_pass("acme/claude", reasoner=reasoner, manual=True)
    assert (result["ops_created"], result["errors"]) == (1, []), result
    asked = [r for r in stub_embedder.requests if r["path"].endswith("/v1/messages")]
    assert len(asked) == 1 and asked[0]["body"]["system"] and "turn 0 about the build" in str(asked[0]["body"])
    usage = Usage.objects.get(kind="reason")
    assert (usage.provider, usage.input_tokens, usage.output_tokens, usage.ok) == ("anthropic", 100, 20, True)
    assert usage.cost_microcents == (100 * 100 + 20 * 500)  # $1 / $5 per 1M tokens


def test_the_default_reasoner_models_are_none_the_anthropic_sdk_lists_as_retired() -> None:
    # claude-3-5-haiku-latest, our default until stop 43, reached end of life on 2026-02-19: with
    # ANTHROPIC_API_KEY set (the README's way to get a reasoner) every dream pass failed.
    from anthropic.resources.messages.messages import DEPRECATED_MODELS

    from dreaming.reasoners import DEFAULT_MODELS, PRICES

    assert DEFAULT_MODELS["anthropic"] not in DEPRECATED_MODELS
    assert all(model in PRICES for model in DEFAULT_MODELS.values()), "a default model is priced"

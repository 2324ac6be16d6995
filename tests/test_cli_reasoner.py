"""Dreaming with no API key: an installed assistant CLI as the reasoner, buffer retention, and the
warning when there is no reasoner at all. The fake `claude`/`codex` are real executables on PATH."""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from dreaming import reasoners
from dreaming.models import DreamPass, SessionMessage
from dreaming.reasoners import CLIReasoner, configured_reasoner, reasoner_status
from dreaming.services import prune_buffer, record_messages, run_dream_pass
from memories.models import Memory, Usage
from tests.processes import product_env, start_worker_and_beat, stop, wait_until
from yullu_core.errors import Unavailable

pytestmark = pytest.mark.django_db(transaction=True)

OPS = {"operations": [{"op": "create", "content": "Releases are tagged from main by CI", "category": "process"}]}

FAKE_CLAUDE = """#!{python}
import json, sys
args = sys.argv[1:]
prompt = sys.stdin.read()
with open({log!r}, "a") as fh:
    fh.write(json.dumps({{"args": args, "prompt_chars": len(prompt)}}) + "\\n")
if args[:3] != ["-p", "--output-format", "json"]:
    print("unexpected arguments", file=sys.stderr)
    sys.exit(2)
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": {answer!r},
                  "usage": {{"input_tokens": 1200, "output_tokens": 80}}, "total_cost_usd": 0.0042}}))
"""

FAKE_CODEX = """#!{python}
import sys
args = sys.argv[1:]
sys.stdin.read()
out = args[args.index("--output-last-message") + 1]
open(out, "w").write({answer!r})
print("codex chatter on stdout")
"""


def fake_tool(folder: Path, name: str, template: str, answer: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(template.format(python=sys.executable, log=str(folder / f"{name}.log"), answer=answer))
    path.chmod(0o755)
    return path


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing configured: no provider, no keys, keyword-only embedding, an empty PATH."""
    monkeypatch.setitem(settings.YULLU, "reasoning", {**settings.YULLU["reasoning"], "provider": "", "cli": ""})
    monkeypatch.setitem(settings.YULLU, "anthropic", {"api_key": "", "base_url": ""})
    monkeypatch.setitem(settings.YULLU, "embedding", {**settings.YULLU["embedding"], "provider": "none"})
    monkeypatch.setenv("PATH", "/nonexistent")
    from memories.embedding import embedders

    embedders._cache.clear()


def test_without_keys_or_cli_there_is_no_reasoner_and_status_says_how_to_get_one(no_keys: None) -> None:
    assert configured_reasoner() is None
    state = reasoner_status()
    assert not state["available"] and "install Claude Code" in state["warning"]


def test_an_installed_claude_is_chosen_and_its_usage_recorded(
    no_keys: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_tool(tmp_path / "bin", "claude", FAKE_CLAUDE, json.dumps(OPS))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    reasoner = configured_reasoner()
    assert isinstance(reasoner, CLIReasoner) and reasoner.name == "cli:claude"
    assert reasoner_status()["available"]
    record_messages("acme/cli", "s1", [{"role": "user", "content": "we tag releases from main in CI"}])
    result = run_dream_pass("acme/cli", reasoner=reasoner)
    assert result["ops_created"] == 1 and not result["errors"]
    usage = Usage.objects.get(provider="claude-cli")
    assert (usage.kind, usage.input_tokens, usage.output_tokens, usage.ok) == ("reason", 1200, 80, True)
    assert usage.cost_microcents == 420_000


def test_codex_exec_answers_through_its_last_message_file(
    no_keys: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_tool(tmp_path / "bin", "codex", FAKE_CODEX, json.dumps(OPS))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    reasoner = configured_reasoner()
    assert reasoner is not None and reasoner.name == "cli:codex"
    assert json.loads(reasoner.complete("system", "prompt")) == OPS
    assert Usage.objects.get(provider="codex-cli").input_tokens > 0


def test_a_failing_cli_is_a_clear_error_with_a_usage_row(tmp_path: Path) -> None:
    bad = tmp_path / "claude"
    bad.write_text("#!/bin/sh\necho 'not logged in' >&2\nexit 1\n")
    bad.chmod(0o755)
    with pytest.raises(Unavailable, match="exited with status 1: not logged in"):
        CLIReasoner("claude", str(bad)).complete("s", "p")
    assert Usage.objects.get(provider="claude-cli").ok is False


def test_buffer_retention_drops_old_and_surplus_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        settings.YULLU, "dreaming", {**settings.YULLU["dreaming"], "buffer_max_messages": 10, "buffer_max_age_days": 7}
    )
    record_messages("acme/big", "s", [{"role": "user", "content": f"turn {n}"} for n in range(25)])
    record_messages("acme/old", "s", [{"role": "user", "content": "an old turn"}])
    SessionMessage.objects.filter(project_id="acme/old").update(created_at=timezone.now() - timedelta(days=8))
    assert prune_buffer() == 16
    kept = list(SessionMessage.objects.filter(project_id="acme/big").order_by("id").values_list("content", flat=True))
    assert kept == [f"turn {n}" for n in range(15, 25)]
    assert not SessionMessage.objects.filter(project_id="acme/old").exists()


@pytest.mark.slow
def test_a_scheduled_pass_with_only_a_fake_claude_on_path_creates_memories(tmp_path: Path) -> None:
    record_messages("acme/nokey", "s1", [{"role": "user", "content": f"turn {n} about releases"} for n in range(10)])
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "claude", FAKE_CLAUDE, json.dumps(OPS))
    env = product_env(
        tmp_path / "home",
        YULLU_EMBED_PROVIDER="none",
        YULLU_SCHEDULER_TICK_SECONDS="2",
        YULLU_HEARTBEAT_SECONDS="3600",
        PATH=f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin",
    )
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "VOYAGE_API_KEY", "YULLU_REASON_PROVIDER", "OPENAI_BASE_URL"):
        env.pop(key, None)
    worker, beat = start_worker_and_beat(env, tmp_path)
    try:
        wait_until(
            lambda: DreamPass.objects.filter(project_id="acme/nokey", phase="done").exists(),  # finished last
            "a scheduled pass through the cli reasoner",
            timeout=90,
            alive=[worker, beat],
        )
    finally:
        stop(beat)
        stop(worker)
    assert list(Memory.objects.filter(project_id="acme/nokey").values_list("content", flat=True)) == [
        "Releases are tagged from main by CI"
    ]
    dream = DreamPass.objects.get(project_id="acme/nokey")
    assert (dream.trigger, dream.reasoner) == ("scheduled", "cli:claude")
    assert Usage.objects.filter(provider="claude-cli", ok=True).count() == 1
    calls = [json.loads(line) for line in (bin_dir / "claude.log").read_text().splitlines()]
    assert calls[0]["prompt_chars"] > 0


def test_detection_is_cached_per_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert reasoners.detect_cli() is None
    fake_tool(tmp_path, "codex", FAKE_CODEX, "{}")
    assert reasoners.detect_cli() is None  # detected once at start, not on every pass
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/nonexistent")
    assert reasoners.detect_cli() == ("codex", str(tmp_path / "codex"))

"""Transcript adapters for `record-turn` and the Codex/PreCompact hooks, on recorded fixtures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dreaming.models import SessionMessage
from memories.scope import folder_id
from tests.processes import run_cli
from yullu_cli.hooks import last_turn, read_turns

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"


def test_a_codex_session_file_gives_the_users_words_and_the_final_answer() -> None:
    user, assistant = last_turn(FIXTURES / "codex-rollout.jsonl")
    assert user == "How do we cut a release?"  # not the injected <environment_context>
    assert assistant == "Releases are cut with `make release VERSION=x.y.z` from main; CI publishes the tag."


def test_an_opencode_export_gives_text_parts_only() -> None:
    assert read_turns(FIXTURES / "opencode-export.json") == [
        ("user", "Why do we pool database connections per worker?"),
        ("assistant", "Each worker keeps its own pool because connections cannot cross processes."),
    ]


def _folder(path: Path) -> str:
    """A hook's cwd must exist (docs/contract.md §2); outside git its project is the name qualified by the path."""
    path.mkdir()
    return folder_id(path.resolve())


@pytest.mark.django_db(transaction=True)
def test_record_turn_reads_a_codex_session_file(hook_env: dict[str, str], tmp_path: Path) -> None:
    project = _folder(tmp_path / "codexproj")
    stdin = json.dumps({"transcript_path": str(FIXTURES / "codex-rollout.jsonl"), "cwd": str(tmp_path / "codexproj")})
    assert run_cli(["record-turn"], hook_env, stdin).returncode == 0
    rows = list(SessionMessage.objects.filter(project_id=project).order_by("id").values_list("role", "content"))
    assert rows[0] == ("user", "How do we cut a release?") and rows[1][0] == "assistant"


@pytest.mark.django_db(transaction=True)
def test_codex_notify_records_the_finished_turn(hook_env: dict[str, str], tmp_path: Path) -> None:
    project = _folder(tmp_path / "notifyproj")
    payload = {
        "type": "agent-turn-complete",
        "thread-id": "t-1",
        "turn-id": "12",
        "cwd": str(tmp_path / "notifyproj"),
        "input-messages": ["Which port does the dev server use?"],
        "last-assistant-message": "The dev server listens on 47823 unless YULLU_PORT says otherwise.",
    }
    out = run_cli(["codex-notify", json.dumps(payload)], hook_env)
    assert (out.returncode, out.stdout) == (0, "")
    rows = list(SessionMessage.objects.filter(project_id=project).order_by("id").values_list("session_id", "role"))
    assert rows == [("codex-t-1", "user"), ("codex-t-1", "assistant")]
    assert run_cli(["codex-notify", "not json"], hook_env).returncode == 0
    assert run_cli(["codex-notify", json.dumps({"type": "other"})], hook_env).returncode == 0


@pytest.mark.django_db(transaction=True)
def test_pre_compact_sends_the_whole_transcript_once(hook_env: dict[str, str], tmp_path: Path) -> None:
    transcript = tmp_path / "claude.jsonl"
    lines = []
    for n in range(3):
        lines.append({"type": "user", "message": {"role": "user", "content": f"question number {n} about the build"}})
        lines.append({"type": "assistant", "message": {"content": [{"type": "text", "text": f"answer number {n}"}]}})
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    project = _folder(tmp_path / "compactproj")
    stdin = json.dumps(
        {"transcript_path": str(transcript), "session_id": "s-compact", "cwd": str(tmp_path / "compactproj")}
    )
    for _ in range(2):  # a second PreCompact (or an earlier Stop hook) adds nothing twice
        assert run_cli(["pre-compact"], hook_env, stdin).returncode == 0
    assert SessionMessage.objects.filter(project_id=project, session_id="s-compact").count() == 6


def test_hooks_exit_0_when_the_server_is_down(tmp_path: Path) -> None:
    env = {**os.environ, "YULLU_HOME": str(tmp_path), "YULLU_PORT": "9"}
    stdin = json.dumps({"transcript_path": str(FIXTURES / "codex-rollout.jsonl")})
    for args in (["pre-compact"], ["record-turn"], ["codex-notify", json.dumps({"type": "agent-turn-complete"})]):
        out = run_cli(args, env, stdin)
        assert (out.returncode, out.stdout) == (0, ""), args

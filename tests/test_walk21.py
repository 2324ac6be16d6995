"""Walk 21: a team's first day, from fresh clones and clean homes, with real Claude Code and Codex (docs/testing.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from unittest.mock import patch

import pytest
from django.utils import timezone

from dreaming.models import ConsumedTurn, DreamPass, SessionMessage
from dreaming.reasoners import CallbackReasoner, FallbackReasoner
from dreaming.services import prune_buffer, record_messages, run_dream_pass
from memories.models import Memory
from tests.processes import git_repo, product_env, run_cli
from yullu_core.errors import Unavailable


def turn(role: str, content: str) -> dict[str, str]:
    return {"role": role, "content": content}


@pytest.mark.django_db(transaction=True)
def test_a_whole_transcript_sent_after_its_last_turn_is_buffered_in_the_transcripts_order() -> None:
    """The Stop hook sent a session's last exchange, then PreCompact sent the whole transcript: the earlier
    turns, new to the buffer, were added after it, so the dream pass read "Yes. And staging is reset…" before
    the question it answered (walk 21: a session older than the install, compacted)."""
    early = [turn("user", "Refunds are credit notes with their own CN- series?"), turn("assistant", "Yes, CN-<n>.")]
    late = [turn("user", "Yes. And staging is reset nightly at 02:00 UTC."), turn("assistant", "Noted: staging.")]
    record_messages("acme/order", "s1", late)  # Stop: the last exchange
    assert record_messages("acme/order", "s1", early + late)["count"] == 2  # PreCompact: the two new turns only
    record_messages("acme/order", "s1", [turn("user", "A later question?")])  # the next Stop
    buffered = list(SessionMessage.objects.filter(session_id="s1").order_by("id").values_list("content", flat=True))
    assert buffered == [t["content"] for t in early + late] + ["A later question?"]


@pytest.mark.django_db(transaction=True)
def test_turns_a_pass_consumed_are_not_read_again_when_a_whole_transcript_moved_them_meanwhile() -> None:
    """Review 24: the reordering above rewrites held turns with new ids. PreCompact's whole transcript arriving
    while a pass waits on the model moved the turns the pass had read, so the pass consumed ids that were gone
    and the next pass read (and extracted) the same exchange again."""
    early = [turn("user", "Refunds are credit notes with their own CN- series?"), turn("assistant", "Yes, CN-<n>.")]
    late = [turn("user", "Yes. And staging is reset nightly at 02:00 UTC."), turn("assistant", "Noted: staging.")]
    record_messages("acme/order", "s1", late)  # Stop: the last exchange

    def model(system: str, prompt: str) -> str:
        record_messages("acme/order", "s1", early + late)  # PreCompact, while the pass waits on the model
        return json.dumps({"operations": []})

    run_dream_pass("acme/order", reasoner=CallbackReasoner("sampling", model), session_id="s1")
    buffered = list(SessionMessage.objects.filter(session_id="s1").order_by("id").values_list("content", flat=True))
    assert buffered == [t["content"] for t in early]  # the turns the pass read are consumed, wherever they moved


@pytest.mark.django_db(transaction=True)
def test_a_whole_transcript_sent_after_a_pass_brings_back_only_the_turns_no_pass_read() -> None:
    """Walk 21: PreCompact after a finished pass resent the turns the pass had consumed (it deletes them), and the
    next pass dreamed them again. Only digests of consumed turns are kept, and pruned with the buffer."""
    read = [turn("user", "Refunds are credit notes with their own CN- series?"), turn("assistant", "Yes, CN-<n>.")]
    later = [turn("user", "And staging is reset nightly at 02:00 UTC."), turn("assistant", "Noted: staging.")]
    record_messages("acme/order", "s2", read)
    run_dream_pass("acme/order", reasoner=CallbackReasoner("sampling", lambda s, p: '{"operations": []}'))
    assert not SessionMessage.objects.filter(session_id="s2").exists()
    assert record_messages("acme/order", "s2", read + later)["count"] == 2  # PreCompact: the whole transcript
    buffered = list(SessionMessage.objects.filter(session_id="s2").order_by("id").values_list("content", flat=True))
    assert buffered == [t["content"] for t in later]
    prune_buffer(now=timezone.now() + timedelta(days=365))  # older than the buffer keeps anything: gone too
    assert not ConsumedTurn.objects.exists()


def alices_event(repo: Path, content: str) -> None:
    """A `create` event Alice's machine wrote and she committed: what a teammate's clone brings."""
    event = {
        "id": str(uuid.uuid4()),
        "type": "create",
        "memory_id": str(uuid.uuid4()),
        "ts": "2026-11-28T04:40:19.572416590Z",
        "content": content,
        "category": "decision",
        "author": "Alice A",
    }
    logs = repo / ".yullu" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / f"20261128T044019.572416590Z-{event['id'][:8]}.json").write_text(json.dumps(event))


@pytest.mark.django_db(transaction=True)
def test_a_session_in_a_fresh_clone_starts_with_the_team_log_applied(
    live_server_url: str, keyword_only: None, hook_env: dict[str, str], tmp_path: Path
) -> None:
    """Bob cloned the repository Alice had committed twelve memories to, ran `yullu install` and started a
    session: no primer, no recall, `yullu memories list` "0 shown". Reads never record where a checkout lives,
    so his server had not applied the log until something was written there (walk 21)."""
    repo = git_repo(tmp_path / "harbor", "git@github.com:acme/harbor.git")
    alices_event(repo, "Invoice totals use banker's rounding (ROUND_HALF_EVEN); the tax office rounds half to even.")
    out = run_cli(["session-start"], hook_env, json.dumps({"cwd": str(repo), "source": "startup"}))
    assert out.returncode == 0 and "banker's rounding" in out.stdout, out.stdout + out.stderr
    assert Memory.objects.get(project_id="github.com/acme/harbor").created_author == "Alice A"
    outside = tmp_path / "notes"  # no checkout: nothing to apply, the primer as before
    outside.mkdir()
    assert run_cli(["session-start"], hook_env, json.dumps({"cwd": str(outside)})).returncode == 0


def test_a_dream_whose_sampling_and_configured_reasoner_both_fail_names_both_failures() -> None:
    """dream_now from a client whose sampling failed fell back to `claude`, nobody logged in: the pass's error
    named only `claude -p`, and the client never learnt it had been asked (walk 21)."""

    def sampling(system: str, prompt: str) -> str:
        raise RuntimeError("Sampling not supported")

    def claude(system: str, prompt: str) -> str:
        raise Unavailable("`claude -p` failed: Not logged in · Please run /login.")

    with patch("dreaming.reasoners.record_usage"):  # no usage rows: no database here
        reasoner = FallbackReasoner(CallbackReasoner("sampling", sampling), CallbackReasoner("cli:claude", claude))
        with pytest.raises(Unavailable) as failed:
            reasoner.complete("system", "prompt")
    assert str(failed.value) == (
        "the MCP client could not run the model (RuntimeError: Sampling not supported), "
        "then cli:claude failed: `claude -p` failed: Not logged in · Please run /login."
    )


@pytest.mark.django_db(transaction=True)
def test_doctor_in_a_checkout_warns_of_team_log_files_not_applied_here(tmp_path: Path) -> None:
    """In Bob's fresh clone doctor said "ok" to everything while `yullu memories list` said "0 shown" beside the
    24 files Alice had committed: none was applied on his machine, and nothing said so (walk 21)."""
    repo = git_repo(tmp_path / "ledger", "git@github.com:acme/ledger.git")
    alices_event(repo, "Journal entries are never edited once posted: corrections are reversing entries.")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path), YULLU_PORT="9")

    def checkout_line() -> dict[str, str]:
        ran = subprocess.run(
            [sys.executable, "-m", "yullu_cli.main", "doctor", "--json"],
            env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            cwd=repo, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        return next(c for c in json.loads(ran.stdout)["checks"] if c["check"] == "checkout")

    line = checkout_line()
    assert line["status"] == "warn" and line["detail"].startswith("1 of the 1 files of "), line
    assert "yullu reconcile" in line["fix"]
    assert run_cli(["reconcile", "--cwd", str(repo)], env).returncode == 0
    assert checkout_line()["status"] == "ok"


def test_a_session_start_applies_a_team_log_kept_under_a_renamed_sync_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 24: the hook looked for `.yullu` alone, so a team whose `[sync].dir` names another folder got no
    reconcile at session start."""
    from yullu_cli import hooks

    repo = git_repo(tmp_path / "harbor", "git@github.com:acme/harbor.git")
    (repo / "team-memory" / "logs").mkdir(parents=True)
    config = tmp_path / "config.toml"
    config.write_text('[sync]\ndir = "team-memory"\n')
    monkeypatch.setenv("YULLU_CONFIG", str(config))
    monkeypatch.delenv("YULLU_SERVER", raising=False)
    with patch.object(hooks, "post_about") as sent:
        hooks.apply_team_log(str(repo))
    assert [c.args[0] for c in sent.call_args_list] == ["/api/reconcile"]
    config.write_text("[sync]\n")  # the default name, which this checkout does not have: nothing to apply
    with patch.object(hooks, "post_about") as sent:
        hooks.apply_team_log(str(repo))
    assert not sent.called


@pytest.mark.django_db(transaction=True)
def test_a_pass_is_labelled_with_the_reasoner_that_answered_it() -> None:
    """Walk 21: a pass read "sampling → cli:claude" whichever of the two answered."""

    def sampling(system: str, prompt: str) -> str:
        raise RuntimeError("Sampling not supported")

    record_messages("acme/label", "s1", [turn("user", "Invoices close on the 1st?"), turn("assistant", "Yes.")])
    claude = CallbackReasoner("cli:claude", lambda s, p: '{"operations": []}')
    result = run_dream_pass("acme/label", reasoner=FallbackReasoner(CallbackReasoner("sampling", sampling), claude))
    assert DreamPass.objects.get(pk=result["pass_id"]).reasoner == "cli:claude"

"""Defects a second new-user walk met (team server from a laptop, dreaming without a reasoner), each as
it was met: `yullu install --server --token` on a laptop that never ran a server, doctor's reasoner
warning printed twice, `yullu dream` with no reasoner speaking of "background" dreaming."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from dreaming.services import record_messages
from tests.processes import product_env, run_cli

pytestmark = pytest.mark.django_db(transaction=True)

HOW_TO = "install Claude Code (`claude`) or Codex (`codex`)"


def no_reasoner_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = product_env(
        tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"), PATH="/usr/bin:/bin", **extra
    )
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "YULLU_REASON_PROVIDER", "OPENAI_BASE_URL"):
        env.pop(key, None)
    return env


def test_install_with_a_token_on_a_laptop_that_never_ran_a_server_keeps_the_token(tmp_path: Path) -> None:
    laptop = tmp_path / "laptop" / "yullu"  # does not exist yet: nothing ever ran here
    (tmp_path / "home/.claude").mkdir(parents=True)
    env = no_reasoner_env(tmp_path, YULLU_HOME=str(laptop))
    ran = run_cli(["install", "claude", "--server", "http://127.0.0.1:1", "--token", "yl_laptop"], env)
    assert ran.returncode == 0, ran.stderr
    token = laptop / "token"
    assert token.read_text() == "yl_laptop\n" and stat.S_IMODE(token.stat().st_mode) == 0o600
    assert stat.S_IMODE(laptop.stat().st_mode) == 0o700


def test_doctor_says_how_to_get_a_reasoner_once(tmp_path: Path) -> None:
    ran = run_cli(["doctor"], no_reasoner_env(tmp_path, YULLU_PORT="1"))
    assert "WARN  reasoner  no reasoner for background dreaming" in ran.stdout, ran.stdout
    assert ran.stdout.count(HOW_TO) == 1, ran.stdout


def test_yullu_dream_without_a_reasoner_is_one_sentence_about_this_pass(tmp_path: Path) -> None:
    record_messages("acme/walk2-dream", "s1", [{"role": "user", "content": "we tag releases from main"}])
    # YULLU_PORT: not the default port, where a developer's own `make run` may be up with a reasoner (walk 9: the
    # sentence then named that server's reasoner, and this test failed beside it).
    ran = run_cli(["dream", "--project-id", "acme/walk2-dream"], no_reasoner_env(tmp_path, YULLU_PORT="1"))
    assert ran.returncode == 1 and ran.stdout == ""
    said = ran.stderr.strip()
    assert said.startswith("yullu: no reasoner to dream with: install Claude Code") and HOW_TO in said, said
    assert said.endswith("the recorded turns are kept.") and said.count(". ") == 0 and "background" not in said


TEAM_COMMANDS = [["reconcile"], ["sync", "compact"], ["anchors", "check"], ["dream"], ["users", "add"]]
TEAM_COMMANDS += [["tokens", "create"]]


@pytest.mark.parametrize("command", TEAM_COMMANDS)
def test_every_option_of_the_team_commands_says_what_it_is(command: list[str]) -> None:
    from yullu_cli.main import build_parser

    parser: Any = build_parser()
    for word in command:
        subs = next(a for a in parser._actions if a.dest in ("command", "op", "sync_command", "anchors_command"))
        parser = subs.choices[word]
    unexplained = [a.option_strings for a in parser._actions if a.option_strings and not a.help]
    assert unexplained == [], unexplained

"""Leftovers of the command line (lane fixes10): `yullu dream --cwd` of a folder nothing was recorded
in made a stray project; every command's bad input is one sentence with the right exit code."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from access.models import Project
from dreaming.models import DreamPass, DreamSchedule, SessionMessage
from tests.processes import product_env, run_cli, spawn, stub_env, wait_until
from tests.stubs import StubServer
from yullu_core import postgres

pytestmark = pytest.mark.django_db(transaction=True)


def with_a_reasoner(tmp_path: Path) -> dict[str, str]:
    """The product's environment with a `claude` on PATH (found as the reasoner; it answers nothing useful)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text("#!/bin/sh\necho '{}'\n")
    claude.chmod(0o755)
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_")}


def nothing_made() -> bool:
    return not (Project.objects.exists() or DreamPass.objects.exists() or DreamSchedule.objects.exists())


def test_dream_in_a_folder_nothing_was_recorded_in_is_refused_and_makes_no_project(tmp_path: Path) -> None:
    env = with_a_reasoner(tmp_path)
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    ran = run_cli(["dream", "--cwd", str(outside)], env)
    assert ran.returncode == 1, ran.stdout
    assert ran.stderr.startswith(f"yullu: {outside} is not inside a git repository and nothing was recorded for it")
    assert len(ran.stderr.strip().splitlines()) == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert nothing_made(), list(Project.objects.values_list("project_id", flat=True))

    ran = run_cli(["dream", "--project-id", "nobody/never"], env)
    assert ran.returncode == 1 and "project 'nobody/never' not found" in ran.stderr, ran.stderr
    assert nothing_made()


def test_dream_in_a_folder_outside_git_with_recorded_turns_runs(tmp_path: Path) -> None:
    env = with_a_reasoner(tmp_path)
    notes = tmp_path / "notes"
    notes.mkdir()
    listed = run_cli(["memories", "list", "--cwd", str(notes), "--json"], env)
    project_id = json.loads(listed.stdout)["project_id"]  # the folder's own id, as the hooks record it
    SessionMessage.objects.create(project_id=project_id, session_id="s1", role="user", content="we deploy on Fridays")
    ran = run_cli(["dream", "--cwd", str(notes)], env)
    assert "nothing was recorded" not in ran.stderr, ran.stderr
    assert DreamPass.objects.filter(project_id=project_id).exists(), ran.stdout + ran.stderr


def test_doctor_prints_each_check_as_it_is_done(tmp_path: Path) -> None:
    """Doctor printed every line at the end: ~5 s of nothing (Django's set-up, the embedding model's
    load). Here the embedder's probe is held at the stub: the lines before it must be out already."""
    with StubServer() as stub:
        stub.embed_gate = threading.Event()
        env = product_env(tmp_path / "yhome", HOME=str(tmp_path / "home"), **stub_env(stub.url))
        proc = spawn(["-m", "yullu_cli.main", "doctor"], env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        lines: list[str] = []
        threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True).start()  # type: ignore[union-attr]
        try:
            wait_until(stub.embed_calls, "the embedder's probe", alive=proc, output=lambda: "".join(lines))
            said = lambda: [line.split()[1] for line in lines if line[:1] != " "]  # noqa: E731
            wait_until(lambda: said() == ["config", "database", "broker", "disk"], "the lines before the embedder's",
                       timeout=30, output=lambda: "".join(lines))  # fmt: skip
        finally:
            stub.embed_gate.set()
            proc.wait(timeout=120)
        assert "embedder" in said() and "folder" in said(), lines


# A new user's mistakes (fixes10's walk over every command): each is a usage error, exit 2, the
# command's usage line and one sentence naming the argument; nothing runs.
USAGE_ERRORS = [
    (["memories", "list", "--limit", "0"], "argument --limit: must be a whole number of at least 1, not '0'"),
    (["memories", "show", "abc"], "argument id: must be a whole number of at least 1, not 'abc'"),  # exit 1 before
    (["memories", "rm", "-5"], "argument id: must be a whole number of at least 1, not '-5'"),  # 'memory -5 not found'
    (["tokens", "revoke", ""], "argument id: must be a whole number of at least 1, not ''"),  # 'token  not found'
    # past PostgreSQL's bigint: "of at least 1" was true of it (walk 14)
    (["memories", "show", "9" * 23], f"argument id: must be a whole number from 1 to {2**63 - 1}, not '{'9' * 23}'"),
    (["memories", "list", "--cwd", ""], "argument --cwd: must name a folder, not be empty"),  # listed this folder
    (["reconcile", "--cwd", ""], "argument --cwd: must name a folder, not be empty"),  # reconciled this checkout
    (["dream", "--cwd", " "], "argument --cwd: must name a folder, not be empty"),
    (["import", ""], "argument path: must name a file or folder, not be empty"),  # imported this folder
]


@pytest.mark.parametrize(("args", "said"), USAGE_ERRORS)
def test_a_mistyped_argument_is_a_usage_error(tmp_path: Path, args: list[str], said: str) -> None:
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    ran = run_cli(args, env)
    assert ran.returncode == 2 and ran.stdout == "", (ran.returncode, ran.stdout, ran.stderr)
    lines = ran.stderr.strip().splitlines()
    command = " ".join(args[:2] if args[0] in ("memories", "tokens") else args[:1])
    assert lines[0].startswith(f"usage: yullu {command} ") and lines[-1] == f"yullu {command}: error: {said}", lines
    assert "Traceback" not in ran.stderr


def test_project_id_is_taken_wherever_project_is(tmp_path: Path) -> None:
    """`--project-id` (reconcile, dream, anchors, sync) and `--project` (memories, export, import) named the
    same thing; `yullu memories list --project-id X` was 'unrecognized arguments'."""
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    for command in (["memories", "list"], ["export", "json"]):
        ran = run_cli([*command, "--project-id", "nobody/never"], env)
        assert ran.returncode == 1 and "project 'nobody/never' not found" in ran.stderr, ran.stderr


def test_crash_recovery_lines_are_not_given_as_why_postgres_did_not_start(tmp_path: Path) -> None:
    """After a quick second kill -9, the supervisor quoted recovery's "invalid record length …" as the reason
    PostgreSQL did not start (walk 14); a bad setting's line still is one."""
    log = tmp_path / "server.log"
    log.write_text(
        "2026-11-27 08:23:01.1 UTC [81] LOG:  database system was interrupted; last known up at 08:22:58 UTC\n"
        "2026-11-27 08:23:01.2 UTC [81] LOG:  invalid record length at 0/1EB8FD0: expected at least 24, got 0\n"
        "2026-11-27 08:23:01.3 UTC [81] LOG:  redo done at 0/1EB8F98\n"
    )
    assert "invalid record length" not in postgres._why(log, "pg_ctl: could not start server")
    with log.open("a") as fh:
        fh.write('2026-11-27 08:23:02.0 UTC [82] LOG:  invalid value for parameter "max_connections": "abc"\n')
    assert 'invalid value for parameter "max_connections"' in postgres._why(log, "")

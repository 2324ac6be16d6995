"""The first hour of a new user: commands run before the first `make run`, commands printed for
pasting, files holding the token, hooks against a server on a non-default port."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from memories.scope import resolve
from memories.write import create
from tests.processes import REPO, git_repo, product_env, run_cli, stub_env
from tests.stubs import StubServer
from yullu_cli.banner import path_hint

YULLU = str(Path(sys.executable).parent / "yullu")


@pytest.fixture
def fresh_home(stub_api: StubServer) -> Iterator[dict[str, str]]:
    """A YULLU_HOME nothing has run in yet, on the embedded PostgreSQL (no DATABASE_URL)."""
    base = Path(tempfile.mkdtemp(prefix="yullu-fresh-"))
    base.chmod(0o755)  # as root, PostgreSQL's system user must reach its data folder
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "YULLU_", "DJANGO_", "CELERY_"))}
    env.update(YULLU_HOME=str(base / "home"), YULLU_CONFIG=str(base / "config.toml"),
               YULLU_ROOT_PG_BASE=str(base / "pg"), **stub_env(stub_api.url))  # fmt: skip
    try:
        yield env
    finally:
        stop = "from yullu_core import paths, postgres as pg; pg.stop(paths.ensure_home())"
        subprocess.run([sys.executable, "-c", stop], env=env, cwd=REPO, timeout=120, check=False)
        shutil.rmtree(base, ignore_errors=True)


def postgres_running_under(base: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if proc.info["name"] == "postgres" and base in cmdline:
            found.append(proc.pid)
    return found


def test_serve_on_a_taken_port_says_so_at_once_and_starts_nothing(fresh_home: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = run_cli(["serve"], {**fresh_home, "YULLU_PORT": str(port)}, timeout=120)
    assert ran.returncode == 1 and ran.stdout == "", ran.stdout + ran.stderr
    assert ran.stderr.splitlines() == [
        f"yullu: port {port} on 127.0.0.1 is already in use; stop what uses it, or pick another port with "
        f"`yullu serve --port N`, YULLU_PORT=N or [server].port in {fresh_home['YULLU_CONFIG']}."
    ]
    base = Path(fresh_home["YULLU_ROOT_PG_BASE"]).parent
    assert not list(base.rglob("PG_VERSION")), "the embedded Postgres was not even created"
    assert postgres_running_under(str(base)) == []
    assert not list((Path(fresh_home["YULLU_HOME"]) / "run").glob("serve*.pid"))


@pytest.mark.slow
def test_token_before_the_first_run_prints_the_token_and_leaves_nothing_running(fresh_home: dict[str, str]) -> None:
    issued = run_cli(["token"], fresh_home, timeout=300)
    assert issued.returncode == 0, issued.stderr
    assert "Traceback" not in issued.stderr
    # Said before the silent part (walk 9: 46-56 s on a busy machine with nothing on the screen), then when done.
    said = [line for line in issued.stderr.splitlines() if line.startswith("yullu: ")]
    assert said[0].startswith("yullu: creating the database in ") and said[0].endswith(
        "(its first use: a few seconds)…"
    )
    assert said[1:] == ["yullu: brought the database up to date."], said
    again = run_cli(["token"], fresh_home, timeout=300)
    assert again.returncode == 0 and "creating the database" not in again.stderr, again.stderr
    token = issued.stdout.strip().splitlines()[-1]
    assert token.startswith("yl_") and token == (Path(fresh_home["YULLU_HOME"]) / "token").read_text().strip()
    assert postgres_running_under(str(Path(fresh_home["YULLU_ROOT_PG_BASE"]).parent)) == []


@pytest.mark.slow
def test_bench_locomo_runs_on_a_fresh_home(fresh_home: dict[str, str], tmp_path: Path) -> None:
    turns = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "vec:1,0,0 We deploy with make deploy"},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "vec:0,1,0 The cat is called Miso"},
    ]
    qa = [{"question": "vec:1,0,0 How do we deploy?", "evidence": ["D1:1"], "category": 4}]
    conversation = {"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": turns}
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([{"sample_id": "tiny-1", "conversation": conversation, "qa": qa}]))
    ran = run_cli(["bench", "locomo", "--data", str(data), "--modes", "hybrid"], fresh_home, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "Traceback" not in ran.stderr and "tiny-1" in ran.stdout


def test_install_without_claude_prints_a_command_that_works_when_pasted(tmp_path: Path) -> None:
    home = tmp_path / "yullu-home"
    home.mkdir()
    (home / "token").write_text("yl_pasted-token\n")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "YULLU_HOME": str(home), "YULLU_PORT": "47999"}
    out = run_cli(["install", "claude"], env)
    assert out.returncode == 0, out.stderr
    line = next(ln.strip() for ln in out.stdout.splitlines() if ln.strip().startswith("claude mcp add"))
    # Paste it into a shell where `claude` is a script that records its arguments, in another folder.
    recorder = fake_bin / "claude"
    recorder.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path / "args"}\n')
    recorder.chmod(0o755)
    pasted = subprocess.run(["bash", "-c", line], env={"PATH": f"{fake_bin}:/usr/bin:/bin"}, cwd="/", check=False)
    assert pasted.returncode == 0
    args = (tmp_path / "args").read_text().splitlines()
    assert args[-1] == "Authorization: Bearer yl_pasted-token"
    assert "http://127.0.0.1:47999/mcp" in args


def test_the_path_hint_printed_by_make_run_puts_yullu_on_path(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    hint = path_hint(bin_dir, "/usr/bin:/bin")
    assert hint is not None
    export = hint.split("add it with:", 1)[1].strip()
    found = subprocess.run(["bash", "-c", f"{export}; command -v yullu"], env={"PATH": "/usr/bin:/bin"},
                           capture_output=True, text=True, check=False)  # fmt: skip
    assert Path(found.stdout.strip()).resolve() == (bin_dir / "yullu").resolve()
    assert path_hint(bin_dir, f"{bin_dir}:/usr/bin") is None  # already on PATH: nothing to say


def test_codex_and_cursor_files_holding_the_token_are_private(tmp_path: Path) -> None:
    home = tmp_path / "yullu-home"
    home.mkdir()
    (home / "token").write_text("yl_secret-token\n")
    codex = tmp_path / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text('model = "o3"\n')
    codex.chmod(0o644)  # an existing, world-readable config
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "YULLU_HOME": str(home)}
    out = run_cli(["install", "codex", "cursor"], env)
    assert out.returncode == 0, out.stderr
    for path in (codex, tmp_path / ".cursor" / "mcp.json"):
        assert "yl_secret-token" in path.read_text()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for backup in (tmp_path / ".codex").glob("config.toml.yullu-backup-*"):
        assert stat.S_IMODE(backup.stat().st_mode) == 0o600


@pytest.mark.django_db(transaction=True)
def test_installed_hooks_find_a_server_on_a_non_default_port(
    tmp_path: Path, live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    repo = git_repo(tmp_path / "app", "git@github.com:acme/hooked.git")
    create.store_memory(resolve(None, str(repo)), "vec:1,0,0 Deploys go through make deploy", "process", [])
    home = tmp_path / "yullu-home"
    home.mkdir()
    (home / "token").write_text(owner_token + "\n")
    port = live_server_url.rsplit(":", 1)[1]
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "YULLU_HOME": str(home), "YULLU_PORT": port}
    assert run_cli(["install", "claude"], env).returncode == 0
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    # The assistant runs the hook without our environment: no YULLU_PORT, no YULLU_HOME.
    hook = json.dumps({"prompt": "vec:1,0,0 how do we deploy this service?", "cwd": str(repo)})
    deadline = time.monotonic() + 60
    while True:  # the hook gives up after 1.5 s by design; a cold server may need a first call
        ran = subprocess.run(["bash", "-c", command], input=hook, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                             capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert ran.returncode == 0
        if "make deploy" in ran.stdout or time.monotonic() > deadline:
            break
    assert "make deploy" in ran.stdout, (command, ran.stdout, ran.stderr)


@pytest.mark.django_db(transaction=True)
def test_export_of_an_unknown_project_says_it_was_not_found(tmp_path: Path) -> None:
    out = run_cli(["export", "agents-md", "--project", "nope"], product_env(tmp_path / "home"))
    assert out.returncode == 1
    assert "project 'nope' not found" in out.stderr and "Traceback" not in out.stderr
    assert out.stdout == ""


def test_bench_load_without_a_server_says_so_and_starts_nothing(tmp_path: Path) -> None:
    from tests.conftest import free_port

    home = tmp_path / "never-started"
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "YULLU_HOME": str(home), "YULLU_PORT": str(free_port()),
           "YULLU_CONFIG": str(tmp_path / "config.toml")}  # fmt: skip
    out = run_cli(["bench", "load", "--duration", "1", "--clients", "1"], env)
    assert out.returncode == 1
    assert "no Yul'lu server answers" in out.stderr and "Traceback" not in out.stderr
    assert not home.exists()  # no database initialised, no PostgreSQL started


@pytest.mark.slow
def test_a_manage_py_command_leaves_no_postgres_running(fresh_home: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], env=fresh_home, cwd=REPO,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert postgres_running_under(str(Path(fresh_home["YULLU_ROOT_PG_BASE"]).parent)) == []


def test_a_user_error_in_any_database_command_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    for args in (["reconcile", "--cwd", str(tmp_path / "notes")], ["dream", "--project", "x" * 600]):
        out = run_cli(args, product_env(tmp_path / "home"))
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
        assert out.stderr.strip().startswith("yullu: ") and len(out.stderr.strip().splitlines()) == 1, out.stderr

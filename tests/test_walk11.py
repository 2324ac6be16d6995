"""What the eleventh walk met (a new solo user's first hour from a fresh clone, then crash drills)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

import yullu_cli
from tests.stubs import StubServer
from tests.test_errors_said import mcp
from yullu_cli.assistants.claude import HOOKS
from yullu_cli.memory_commands import _hooks
from yullu_core.failures import DISK_FULL

HOOK_ENTRY = Path(yullu_cli.__file__).parent / "hook_entry.py"


def _installed_hooks(home: Path, data: Path, server: str = "") -> None:
    """Claude Code hooks as `yullu install` writes them (pinned home, real files), and no token file."""
    pinned = f"YULLU_HOME={data} YULLU_PORT=47823" + (f" YULLU_SERVER={server}" if server else "")
    command = f"{pinned} {sys.executable} -I -S {HOOK_ENTRY}"
    hooks = {
        event: [{"hooks": [{"type": "command", "command": f"{command} {verb} || true"}]}]
        for event, verb in HOOKS.items()
    }
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    data.mkdir(parents=True)


@pytest.mark.parametrize("server", ["", "https://yullu.example.com"])
def test_doctor_says_how_to_get_a_deleted_token_file_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: str
) -> None:
    """Deleted while the server ran, doctor said "run `yullu serve` once (it writes the token), then
    `yullu install` again": `yullu serve` stopped at its busy port. `yullu token` writes it again; a team
    server's client installs again with its token."""
    home, data = tmp_path / "home", tmp_path / "home" / ".local" / "share" / "yullu"
    _installed_hooks(home, data, server)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("YULLU_HOME", str(data))
    ok, detail, fix = _hooks()
    assert not ok
    assert detail.endswith("missing: API token file"), detail
    assert "yullu serve" not in fix
    if server:
        assert fix.startswith(f"install again with your token: `yullu install --server {server} --token"), fix
    else:
        assert fix.startswith("run `yullu token` (it writes the token file again"), fix
    (data / "token").write_text("yl_x\n")
    assert _hooks()[0]


@pytest.fixture
def recall_log_on_a_full_disk() -> Iterator[None]:
    """PostgreSQL answering the recall log's rows with its real "disk full" error (SQLSTATE 53100): a search
    on a full disk fails there, or earlier when its sort spills to a temp file (as on the walk)."""
    with connection.cursor() as cur:
        cur.execute(
            "CREATE FUNCTION yullu_test_recall_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "RAISE EXCEPTION 'could not write to file \"base/pgsql_tmp/pgsql_tmp1.0\": No space left on device' "
            "USING ERRCODE = 'disk_full'; END $$"
        )
        cur.execute(
            "CREATE TRIGGER yullu_test_recall_disk_full BEFORE INSERT ON memories_memoryevent "
            "FOR EACH ROW WHEN (NEW.kind = 'recalled') EXECUTE FUNCTION yullu_test_recall_disk_full()"
        )
    yield
    with connection.cursor() as cur:
        cur.execute("DROP TRIGGER yullu_test_recall_disk_full ON memories_memoryevent")
        cur.execute("DROP FUNCTION yullu_test_recall_disk_full()")


@pytest.mark.django_db(transaction=True)
def test_a_search_on_a_full_disk_is_not_said_as_a_store(
    live_server_url: str, owner_token: str, stub_embedder: StubServer, recall_log_on_a_full_disk: None
) -> None:
    """`retrieve_memories` on a full disk answered "The disk is full, so nothing was stored" (walk 11)."""
    stored = mcp(
        live_server_url,
        owner_token,
        "store_memory",
        content="Releases go out by pushing a v tag",
        project_id="acme/full",
    )
    assert not stored[0], stored
    is_error, said = mcp(
        live_server_url, owner_token, "retrieve_memories", query="how do releases go out", project_id="acme/full"
    )
    assert is_error, said
    assert said == DISK_FULL and said.startswith("The disk is full, so this was not done"), said


def test_make_runs_first_install_prints_no_setuptools_warning_box() -> None:
    """`make run` on a fresh clone showed setuptools' 12-line "!! Please be careful with folders in your
    working directory with the same name as your package" box between its progress lines (walk 11). The
    package's editable install is -qq (errors only); the dependencies' stays -q."""
    root = Path(__file__).resolve().parent.parent
    planned = subprocess.run(["make", "-n", "-B", "install"], cwd=root, capture_output=True, text=True, check=True)
    installs = [line for line in planned.stdout.splitlines() if "pip install" in line and "--upgrade pip" not in line]
    package = [line for line in installs if line.rstrip().endswith("-e .")]
    assert len(package) == 1 and " -qq " in package[0], installs
    assert all(" -q " in line for line in installs if line not in package), installs


def test_install_in_a_folder_outside_the_allowed_roots_says_so(tmp_path: Path) -> None:
    """Installed from a checkout outside the home, every MCP call from it was refused, and install had said
    nothing (walk 11: a package copied to /tmp, `git init`). From inside the home it says nothing more."""
    root = Path(__file__).resolve().parent.parent
    home, data = tmp_path / "user", tmp_path / "user" / ".local" / "share" / "yullu"
    data.mkdir(parents=True)
    (data / "token").write_text("yl_walk11-token\n")
    outside, inside = tmp_path / "srv" / "app", home / "src" / "app"
    outside.mkdir(parents=True)
    inside.mkdir(parents=True)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "YULLU_PORT": "47999"}

    def install_in(folder: Path) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "yullu_cli.main", "install", "codex"],
            env=env,
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        return done.stdout + done.stderr

    said = install_in(outside)
    assert f"note: {outside} is outside [server].allowed_roots ({home}): assistants' MCP calls" in said, said
    assert f"add it to [server].allowed_roots in {home}/.config/yullu/config.toml" in said, said
    assert "allowed_roots" not in install_in(inside)

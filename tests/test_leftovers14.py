"""The last note's small leftovers (lane fixes14): each test is red without its fix."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil
import pytest

from memories.scope import resolve
from memories.search import asking, expansion, queries
from memories.write import create
from tests.processes import REPO, run_cli, spawn, stop, wait_until

# --- 5. a search reads the CHOICE pattern once per prompt -------------------------------------------------------


class CountingPattern:
    """asking.CHOICE, counting its searches."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.searched = pattern, 0

    def search(self, text: str) -> Any:
        self.searched += 1
        return self.pattern.search(text)


@pytest.mark.django_db(transaction=True)
def test_a_search_reads_whether_its_prompt_asks_about_a_choice_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """asking.asks_in_general and gates.judged_test each ran CHOICE on a short prompt, with the real local
    embedder and cross-encoder (the calibrated gate) through the search path."""
    scope = resolve("acme/choices", None)
    create.store_memory(scope, "We host on RDS rather than JawsDB: point-in-time restore and IAM auth.", "decision")
    create.store_memory(scope, "Pricing talks REST, not gRPC: the partner SDKs only speak JSON.", "decision")
    counting = CountingPattern(asking.CHOICE)
    monkeypatch.setattr(asking, "CHOICE", counting)
    for prompt in ("why rds instead of jawsdb", "why not grpc for pricing", "how do we host the database"):
        before = counting.searched
        found = queries.search(scope.project_id, prompt, log=False)
        assert counting.searched - before == 1, (prompt, counting.searched - before)
        if prompt.startswith("why"):
            assert found.results, prompt  # a question about the choice still finds it


def test_the_shorthands_words_name_no_choice() -> None:
    """The search reads CHOICE of the prompt as typed and gives the answer to the gate, which judges the text
    with the shorthand's words appended (expansion.with_jargon): the same answer only while none of those
    words makes a choice ("over", "not", "instead of")."""
    for _, words in expansion._JARGON:
        assert not asking.asks_about_a_choice(f"why postgres ({words})"), words


# --- 3. a worker or beat supervisor migrates the cluster it made anew -------------------------------------------

PENDING = (
    "from yullu_cli.django_setup import setup_django; setup_django(migrate=False); from django.db import connection;"
    "from django.db.migrations.executor import MigrationExecutor; e = MigrationExecutor(connection);"
    "print(len(e.migration_plan(e.loader.graph.leaf_nodes())))"
)
WHERE = "from yullu_core import paths, postgres as pg; print(pg.plan(paths.yullu_home()).pgdata)"


def _python(code: str, env: dict[str, str]) -> str:
    ran = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    return ran.stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize("role", ["worker", "beat"])
def test_a_worker_or_beat_supervisor_migrates_the_cluster_it_made_anew(role: str) -> None:
    """Only the web role's supervisor migrated a cluster it started again on a deleted data folder: one with
    `--role worker` or `--role beat` on the machine's embedded server left it empty (every table missing)."""
    base = Path(tempfile.mkdtemp(prefix="yullu-role-"))
    base.chmod(0o755)  # as root, PostgreSQL's system user must reach the data folder
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "YULLU_", "DJANGO_", "CELERY_"))}
    env |= {"YULLU_HOME": str(base / "home"), "YULLU_CONFIG": str(base / "config.toml"),
            "YULLU_ROOT_PG_BASE": str(base / "pg"), "YULLU_EMBED_PROVIDER": "none", "YULLU_LOG_LEVEL": "warning",
            "YULLU_SCHEDULER_TICK_SECONDS": "3600"}  # fmt: skip
    log = base / "serve.log"
    serve = None
    try:
        assert run_cli(["prune", "--dry-run"], env, timeout=300).returncode == 0  # a migrated database to start on
        with open(log, "wb") as out:
            serve = spawn(["-m", "yullu_cli.main", "serve", "--role", role], env, stdout=out, stderr=subprocess.STDOUT)

        def said() -> str:
            return log.read_text(errors="replace")

        wait_until(lambda: f"Yul'lu {role} started" in said(), f"the {role} to start", alive=serve, output=said)
        pgdata = Path(_python(WHERE, env))
        wait_until(lambda: (pgdata / "postmaster.pid").exists(), "the embedded PostgreSQL", alive=serve, output=said)
        old = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
        shutil.rmtree(pgdata)
        wait_until(lambda: "is back (pid" in said(), "the cluster made anew", timeout=180, alive=serve, output=said)
        wait_until(lambda: _python(PENDING, env) == "0", "no migration pending", alive=serve, output=said)
        assert "brought the new database up to date" in said(), said()[-3000:]
        assert not old.is_running() or old.status() == psutil.STATUS_ZOMBIE
    finally:
        if serve is not None:
            stop(serve)
        _python("from yullu_core import paths, postgres as pg; pg.stop(paths.yullu_home())", env)
        shutil.rmtree(base, ignore_errors=True)

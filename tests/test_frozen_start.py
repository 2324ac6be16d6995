"""A web, worker or beat process started while the embedded PostgreSQL is frozen (SIGSTOP) says one line.

Chaos drill: PostgreSQL stopped with SIGSTOP under `yullu serve`, the web and worker killed meanwhile. The
supervisor restarted them and excused their exits (the database was unreachable), but above its line the web
printed uvicorn's 50-line traceback of the connect timeout and the worker Celery's 25."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import REPO, own_cluster

WHERE = "from yullu_core import paths, postgres as pg; print(pg.plan(paths.yullu_home()).pgdata)"
START = "from yullu_core import paths, postgres as pg; pg.ensure_running(paths.ensure_home())"
WORKER_START = (
    "from celery import signals; from yullu_site.celery import _start_database_first;"
    "_start_database_first(signal=signals.worker_init)"
)


def _python(code: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


@pytest.fixture
def frozen() -> Iterator[dict[str, str]]:
    """A product environment whose embedded PostgreSQL runs, stopped with SIGSTOP for the test."""
    with own_cluster("yullu-frozen-", DJANGO_SETTINGS_MODULE="yullu_site.settings") as (_base, env):
        started = _python(START, env)
        assert started.returncode == 0, started.stderr[-2000:]
        pgdata = Path(_python(WHERE, env).stdout.strip())
        postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGSTOP)
        try:
            yield env
        finally:
            os.kill(postmaster, signal.SIGCONT)


@pytest.mark.slow
def test_a_web_or_worker_started_on_a_frozen_postgres_says_one_line_not_a_traceback(frozen: dict[str, str]) -> None:
    web = _python("import yullu_site.asgi", frozen)
    assert web.returncode == 1
    assert "the web process could not reach the embedded PostgreSQL at start (connection timeout expired); " \
           "exiting" in web.stderr, web.stderr  # fmt: skip
    assert "Traceback" not in web.stderr, web.stderr
    worker = _python(WORKER_START, frozen)
    assert worker.returncode == 0, worker.stderr
    assert "the worker process could not reach the embedded PostgreSQL at start (connection timeout expired); " \
           "it runs on" in worker.stderr, worker.stderr  # fmt: skip
    assert "Traceback" not in worker.stderr, worker.stderr

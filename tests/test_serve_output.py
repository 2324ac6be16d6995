"""`yullu serve` whose output's reader goes away (`yullu serve | head`, a log pipe whose reader died) keeps serving.

Chaos drill: `yullu serve 2>&1 | head -3`: at its next line the supervisor died of BrokenPipeError without its
clean-up; its children were killed with it and the embedded PostgreSQL was left running with no owner."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest

from tests.conftest import free_port
from tests.processes import REPO, is_ready, own_cluster, wait_until


def _children(serve: subprocess.Popen[bytes]) -> dict[str, int]:
    found = {}
    for child in psutil.Process(serve.pid).children():
        try:
            line = " ".join(child.cmdline())
        except psutil.Error:  # the killed one, a zombie until reaped
            continue
        for name in ("uvicorn", " worker ", " beat "):
            if name in line:
                found[name.strip()] = child.pid
    return found


@pytest.mark.slow
def test_serve_whose_output_reader_went_away_keeps_serving_and_restarting_children() -> None:
    port = free_port()
    with own_cluster("yullu-pipe-", YULLU_PORT=str(port), YULLU_SCHEDULER_TICK_SECONDS="3600") as (_base, env):
        serve = subprocess.Popen([sys.executable, "-m", "yullu_cli.main", "serve"], env=env, cwd=REPO,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            assert serve.stdout is not None
            serve.stdout.readline()  # the first line, as `| head -1` reads it
            serve.stdout.close()  # and the reader is gone
            wait_until(lambda: is_ready(url), "the site to be ready", timeout=300, alive=serve)
            worker = wait_until(lambda: _children(serve).get("worker"), "the worker", alive=serve)
            os.kill(worker, signal.SIGKILL)  # the supervisor says a line about it, into the broken pipe
            wait_until(lambda: _children(serve).get("worker") not in (None, worker), "a new worker", alive=serve)
            assert is_ready(url)
            serve.send_signal(signal.SIGTERM)
            assert serve.wait(timeout=120) == 0  # its clean-up ran: the embedded PostgreSQL it started is stopped
        finally:
            if serve.poll() is None:
                os.killpg(serve.pid, signal.SIGKILL)

"""Broker benchmark: how fast tasks go through the default broker (or another URL).

Run: `python -m bench.broker --tasks 200` (this home's database; `--broker redis://…` to compare).

Starts a real Celery worker (concurrency 2), sends N `heartbeat` tasks and times until all have run
(the heartbeat row counts them). A worker killed mid-task is covered by tests/test_supervisor.py.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _beats() -> int:
    from yullu_site.models import Heartbeat

    row = Heartbeat.objects.filter(name="beat").first()
    return row.beats if row else 0


def _worker(env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "celery", "-A", "yullu_site", "worker", "--concurrency", "2",
           "--loglevel", "ERROR", "-n", f"{name}@%h"]  # fmt: skip
    return subprocess.Popen(cmd, env=env, cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip


def _wait(target: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _beats() >= target:
            return True
        time.sleep(0.05)
    return False


def run_one(tasks: int) -> dict[str, Any]:
    from yullu_site.celery import app
    from yullu_site.tasks import heartbeat

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "yullu_site.settings"}
    worker = _worker(env, f"bench-{os.getpid()}")
    try:
        start = _beats()
        heartbeat.delay()  # warm-up: the worker is up once this has run
        if not _wait(start + 1, 120):
            return {"broker": app.conf.broker_url, "error": "worker never ran a task"}
        base = _beats()
        t0 = time.perf_counter()
        for _ in range(tasks):
            heartbeat.delay()
        sent = time.perf_counter() - t0
        done = _wait(base + tasks, 300)
        total = time.perf_counter() - t0
        return {"broker": app.conf.broker_url.split("://")[0], "tasks": tasks, "completed": done,
                "send_per_s": round(tasks / sent, 1), "end_to_end_per_s": round(tasks / total, 1)}  # fmt: skip
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--broker", default="", help="broker URL to measure instead of the default")
    args = parser.parse_args(argv)
    if args.broker:
        os.environ["CELERY_BROKER_URL"] = args.broker
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yullu_site.settings")
    import django

    django.setup()
    print(json.dumps(run_one(args.tasks)))


if __name__ == "__main__":
    main()

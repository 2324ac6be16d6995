"""`yullu serve --workers 2`: two uvicorn worker processes behind one port, MCP in stateless mode,
driven through the official MCP SDK client. Per-process caches must not make one worker miss
what the other wrote."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import free_port
from tests.mcp_client import call, http_session
from tests.processes import REPO, product_env, wait_ready, wait_until


@pytest.fixture
def two_workers(django_db_setup: Any, tmp_path: Path) -> Iterator[tuple[str, str]]:
    port = free_port()
    home = tmp_path / "home"
    env = product_env(home, YULLU_PORT=str(port))
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "yullu_cli.main", "serve", "--role", "web", "--workers", "2", "--port", str(port)],
            env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, output=lambda: log.read_text(errors="replace"))
        wait_until(lambda: _uvicorn_workers(proc.pid) >= 2, "two uvicorn worker processes", alive=proc)
        yield url, (home / "token").read_text().strip()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def _uvicorn_workers(supervisor: int) -> int:
    try:
        procs = psutil.Process(supervisor).children(recursive=True)
    except psutil.Error:
        return 0
    return sum(1 for p in procs if "multiprocessing" in " ".join(p.cmdline()))


async def _retrieve_many(url: str, token: str, project: str, query: str, sessions: int) -> list[list[str]]:
    async def one() -> list[str]:
        async with http_session(url, token) as s:
            found = []
            for _ in range(3):
                is_error, body = await call(s, "retrieve_memories", query=query, project_id=project)
                assert not is_error, body
                found.append(",".join(hit["content"] for hit in body["results"]))
            return found

    return await asyncio.gather(*(one() for _ in range(sessions)))


def test_mcp_sessions_work_across_two_workers_and_every_worker_sees_a_new_memory(two_workers: tuple[str, str]) -> None:
    url, token = two_workers
    project = f"workers-{uuid.uuid4().hex[:8]}"
    fact = "The staging deploy waits for the schema migration job before switching traffic."
    query = "what does the staging deploy wait for?"

    # Both workers first see the project empty (and may cache what they learn about it)…
    before = asyncio.run(_retrieve_many(url, token, project, query, sessions=4))
    assert all(found == "" for session in before for found in session)

    async def store() -> dict[str, Any]:
        async with http_session(url, token) as s:
            is_error, body = await call(s, "store_memory", content=fact, category="process", project_id=project)
            assert not is_error, body
            return body

    assert asyncio.run(store())["created"] is True
    # …then every request, whichever worker answers it, finds the memory the other may have written.
    after = asyncio.run(_retrieve_many(url, token, project, query, sessions=4))
    assert all(found == fact for session in after for found in session), after

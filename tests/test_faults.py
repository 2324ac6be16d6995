"""Fault injection with real processes (`-m faults`): nothing acknowledged is lost, nothing half-written."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from memories.models import Memory
from memories.scope import resolve
from memories.write import create
from sync import services as sync_services
from sync.eventlog import read_events
from tests.conftest import free_port
from tests.mcp_client import call, http_session
from tests.processes import DEADLINE, REPO, product_env, run_cli, stub_env, wait_ready, wait_until
from tests.stubs import StubServer

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


def start_web(env: dict[str, str], port: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "yullu_site.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env=env,
        cwd=REPO,
        start_new_session=True,
        text=True,
    )
    wait_ready(f"http://127.0.0.1:{port}", proc)
    return proc


STORES = 50  # sent at once by CLIENTS sessions; the kill lands while some are still in flight
CLIENTS = 5


def test_kill_9_during_a_store_burst_loses_nothing_acknowledged(
    tmp_path: Path, repo: Path, owner_token: str, stub_api: StubServer
) -> None:
    env = product_env(tmp_path / "home", **stub_env(stub_api.url))
    port = free_port()
    web = start_web(env, port)
    acked: dict[str, str] = {}  # uuid → content, for every store the server acknowledged
    refused: list[str] = []  # error answers: concurrent first stores must not trip over each other
    in_flight = STORES  # stores not answered yet (acknowledged or failed)

    async def burst() -> None:
        async def one_client(n: int) -> None:
            nonlocal in_flight

            async def store(i: int) -> None:
                nonlocal in_flight
                content = f"fault fact {n}-{i}"
                try:
                    err, result = await call(s, "store_memory", content=content, cwd=str(repo))
                    if err:
                        refused.append(result)
                    else:
                        acked[result["uuid"]] = content
                finally:
                    in_flight -= 1

            try:
                async with http_session(f"http://127.0.0.1:{port}", owner_token) as s:
                    await asyncio.gather(*(store(i) for i in range(STORES // CLIENTS)))
            except BaseException:  # the server vanished mid-call: expected
                return

        tasks = [asyncio.create_task(one_client(n)) for n in range(CLIENTS)]
        # Kill once the first stores are acknowledged, while the others are still in flight.
        deadline = asyncio.get_running_loop().time() + DEADLINE
        while len(acked) < STORES // 5 and in_flight and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        os.killpg(web.pid, signal.SIGKILL)
        await asyncio.wait(tasks, timeout=DEADLINE)

    asyncio.run(burst())
    web.wait(timeout=10)
    assert len(acked) >= STORES // 5, f"only {len(acked)} of {STORES} stores were acknowledged before the kill"
    assert refused == []
    stored = {str(u): content for u, content in Memory.objects.values_list("uuid", "content")}
    lost = {u: c for u, c in acked.items() if stored.get(u) != c}
    assert not lost, f"{len(lost)} acknowledged stores are missing or changed: {lost}"
    from sync.outbox import flush

    flush()  # what the periodic outbox sweep does for writes whose process died between commit and file
    events = read_events(repo / ".yullu" / "logs")
    assert events.parse_errors == []
    logged = {str(e.memory_id) for _, e in events.events}
    assert set(stored) <= logged, "a committed memory has no event file"
    # A clean restart serves again.
    web = start_web(env, port)
    try:

        async def after() -> tuple[bool, Any]:
            async with http_session(f"http://127.0.0.1:{port}", owner_token) as s:
                return await call(s, "store_memory", content="after restart", cwd=str(repo))

        assert asyncio.run(after())[0] is False
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=15)


def test_an_interrupted_reconcile_reruns_to_the_same_state(
    repo: Path, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    scope = resolve(None, str(repo))
    for i in range(6):
        create.store_memory(scope, f"shared fact {i}", "process", [f"t{i}"])
    expected = sorted(Memory.objects.values_list("uuid", "content", "category"))
    from sync.models import LedgerEntry

    Memory.objects.all().delete()  # this machine forgets everything; the log still has it
    LedgerEntry.objects.all().delete()  # its own files entered the ledger as they were written (0050c30)

    real = sync_services.remote.create_remote_many
    calls = {"n": 0}

    def crash_after_three(project_id: str, fresh: list[Any]) -> Any:
        """New memories are inserted together per batch (create_remote_many): cut the power after three."""
        calls["n"] += 1
        real(project_id, fresh[:3])
        raise RuntimeError("power cut")

    monkeypatch.setattr(sync_services.remote, "create_remote_many", crash_after_three)
    with pytest.raises(RuntimeError):
        sync_services.reconcile_scope(scope)
    assert calls["n"] == 1
    assert Memory.objects.count() == 0  # the batch being applied rolled back with its ledger entries
    assert LedgerEntry.objects.count() == 0
    monkeypatch.setattr(sync_services.remote, "create_remote_many", real)
    result = sync_services.reconcile_scope(scope)
    assert result["created"] == 6
    assert sorted(Memory.objects.values_list("uuid", "content", "category")) == expected
    assert sync_services.reconcile_scope(scope)["created"] == 0


def _pg(env: dict[str, str], action: str) -> None:
    code = f"from yullu_core import paths, postgres as pg; pg.{action}(paths.ensure_home())"
    subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, check=True, timeout=120)


def test_postgres_restart_gives_503_then_recovers_by_itself(tmp_path: Path) -> None:
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="yullu-faults-"))
    base.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(
        YULLU_HOME=str(base / "home"),
        YULLU_ROOT_PG_BASE=str(base / "pg"),
        YULLU_EMBED_PROVIDER="none",
        YULLU_CONFIG=str(base / "config.toml"),
        DJANGO_SETTINGS_MODULE="yullu_site.settings",
    )
    web = None
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], env=env, cwd=REPO, check=True, timeout=180)
        issued = run_cli(["token"], env)
        assert issued.returncode == 0, issued.stderr
        token = issued.stdout.strip().splitlines()[-1]
        port = free_port()
        web = start_web(env, port)
        url, auth = f"http://127.0.0.1:{port}", {"authorization": f"Bearer {token}"}
        assert httpx.get(f"{url}/api/memories", headers=auth, timeout=10).status_code == 200

        def mcp_list() -> httpx.Response:
            return httpx.post(
                f"{url}/mcp",
                headers={**auth, "accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                timeout=10,
            )

        assert mcp_list().status_code == 400  # past the token check (the SDK then wants a session)
        _pg(env, "stop")
        down = httpx.get(f"{url}/api/memories", headers=auth, timeout=10)
        assert down.status_code == 503
        assert "error" in down.json() and "Traceback" not in down.text
        mcp_down = mcp_list()
        assert mcp_down.status_code == 503 and "database" in mcp_down.json()["error"]["message"]  # JSON-RPC
        status = httpx.get(f"{url}/api/status", timeout=10)
        assert status.status_code == 503 and status.json()["ready"] is False
        _pg(env, "ensure_running")
        wait_until(
            lambda: httpx.get(f"{url}/api/memories", headers=auth, timeout=10).status_code == 200,
            "the server to recover after Postgres came back",
            alive=web,
        )
        # The MCP token check reconnects by itself too (after a failed connect it answers 503 at
        # once for a moment, token_check.RECONNECT_PAUSE, rather than each request waiting to connect).
        wait_until(lambda: mcp_list().status_code == 400, "the MCP token check to reconnect", alive=web)
    finally:
        if web is not None:
            os.killpg(web.pid, signal.SIGTERM)
            web.wait(timeout=15)
        _pg(env, "stop")
        shutil.rmtree(base, ignore_errors=True)


def test_kill_9_of_a_worker_mid_dream_keeps_the_messages(
    tmp_path: Path, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from django.conf import settings

    from dreaming.models import SessionMessage
    from dreaming.reasoners import configured_reasoner
    from dreaming.services import DreamResult, record_messages, run_dream_pass
    from tests.processes import spawn

    record_messages("acme/killed", "s1", [{"role": "user", "content": "we build with make, never with npm"}])
    reply = json.dumps({"operations": [{"op": "create", "content": "Build with make", "category": "process"}]})
    stub_embedder.chat_replies += [reply, reply]
    stub_embedder.chat_delay = 30.0  # the reasoner is "thinking" when the worker dies
    env = product_env(tmp_path / "home", **stub_env(stub_embedder.url, reasoning=True))
    worker = spawn(["-m", "celery", "-A", "yullu_site", "worker", "--concurrency", "1", "--loglevel", "WARNING",
                    "-n", f"killed-{tmp_path.name}@%h"], env)  # fmt: skip
    queue = (
        "import django; django.setup(); from dreaming.tasks import dream_project; dream_project.delay('acme/killed')"
    )
    subprocess.run([sys.executable, "-c", queue], env=env, cwd=REPO, check=True, timeout=60)
    wait_until(
        lambda: any(r["path"].endswith("/chat/completions") for r in stub_embedder.requests),
        "the worker to ask the reasoner",
        timeout=90,
        alive=worker,
    )
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=10)
    assert SessionMessage.objects.count() == 1 and Memory.objects.count() == 0
    stub_embedder.chat_delay = 0.0
    monkeypatch.setitem(
        settings.YULLU, "reasoning", {"provider": "openai", "model": "stub-chat", "timeout_seconds": 10}
    )

    # The dead worker's lock goes with its database session; until Postgres notices, a pass is skipped.
    def a_pass_that_ran() -> DreamResult | None:
        result = run_dream_pass("acme/killed", reasoner=configured_reasoner())
        return None if result.get("skipped") else result

    result = wait_until(a_pass_that_ran, "the dead worker's dream lock to be released")
    assert result["ops_created"] == 1 and SessionMessage.objects.count() == 0
    assert Memory.objects.filter(content="Build with make").count() == 1

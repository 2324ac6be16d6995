"""The fault matrix of docs/reliability.md: kill -9 of one part of a running site during a burst of
stores from many MCP clients; how long until /api/status is ready again, what the clients saw, and
whether any acknowledged store was lost.

Run (starts its own `yullu serve` on a new home with the embedded PostgreSQL, stops it after):
    python -m bench.faults [--clients 50] [--burst 40] [--kill-after 10] [--out FILE]

Each fault, in turn, on the same site: `--clients` sessions of the official MCP SDK client store
memories back to back for `--burst` seconds (a broken session is reopened after 0.5 s, as an
assistant would); `--kill-after` seconds in, the part is killed with SIGKILL:

- supervisor: the `yullu serve` process (its children die with it; PostgreSQL does not). Nothing
  restarts a supervisor by itself, so the script starts `yullu serve` again at once, as systemd or
  the user would; that start adopts the PostgreSQL left running.
- web, worker, beat: the supervisor's child of that name.
- postmaster: the embedded PostgreSQL's postmaster (postmaster.pid).
- backend: one client backend of the `yullu` database (PostgreSQL then resets all of them).

Reported per fault: `not_ready_s` (how long /api/status, polled every 0.1 s, did not say ready),
`ready_again_s` (seconds from the kill to the first ready answer after that; 0 when it never
stopped being ready), `stores_again_s` (from the kill to the sending of the first store, over raw
MCP HTTP in a new session tried every 0.25 s, that was acknowledged: when the server takes writes
again), `sdk_stores_again_s` (the same for the burst's SDK clients, which includes how the SDK
reconnects: a session it opens while the server still answers 503 can wait for its 20 s read
timeout), `errors` (failed calls, broken sessions and failed reconnects seen by the
clients; each is followed by a new session 0.5 s later), `acked` and
`lost` (acknowledged stores missing from the database afterwards; must be 0), and whether the
supervisor kept running. Stores use the keyword-only embedder (no model), so the numbers are the
fault's, not the embedding's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import psutil
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

FAULTS = ["supervisor", "web", "worker", "beat", "postmaster", "backend"]
REPO = Path(__file__).resolve().parents[1]


@dataclass
class Site:
    env: dict[str, str]
    url: str
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    serve_args: list[str] = field(default_factory=list)  # `yullu serve`'s options (chaos round 26: --workers 2)

    def start(self) -> None:
        with open(self.log, "ab") as out:
            command = [sys.executable, "-m", "yullu_cli.main", "serve", *self.serve_args]
            self.proc = subprocess.Popen(command, env=self.env, cwd=REPO,
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip

    def child(self, kind: str) -> psutil.Process:
        assert self.proc is not None
        return next(p for p in psutil.Process(self.proc.pid).children() if kind in p.cmdline())

    def postmaster(self) -> psutil.Process:
        pgdata = self.python("from yullu_core import paths, postgres as pg; print(pg.plan(paths.yullu_home()).pgdata)")
        return psutil.Process(int((Path(pgdata) / "postmaster.pid").read_text().split()[0]))

    def python(self, code: str) -> str:
        done = subprocess.run([sys.executable, "-c", code], env=self.env, cwd=REPO, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"{code!r} failed: {done.stderr[-2000:]}")
        return done.stdout.strip()

    def stored(self, project: str) -> set[str]:
        code = ("import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'yullu_site.settings'; "
                "import django, json; django.setup(); from memories.models import Memory; "
                f"print(json.dumps([str(u) for u in Memory.objects.filter(project_id={project!r})"
                ".values_list('uuid', flat=True)]))")  # fmt: skip
        return set(json.loads(self.python(code).splitlines()[-1]))

    def ready(self) -> bool:
        try:
            answer = httpx.get(f"{self.url}/api/status", timeout=2)
            return answer.status_code == 200 and answer.json().get("ready") is True
        except (httpx.HTTPError, ValueError):
            return False

    def wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready():
            if time.monotonic() > deadline or (self.proc is not None and self.proc.poll() is not None):
                raise SystemExit(f"the site did not become ready; see {self.log}")
            time.sleep(0.2)

    @property
    def base(self) -> Path:
        """The drill's folder (its home's parent)."""
        return Path(self.env["YULLU_HOME"]).parent

    def token(self) -> str:
        return (self.base / "home" / "token").read_text().strip()

    def stop(self) -> None:
        """SIGTERM the server, then make sure its PostgreSQL is down too (a drill may have left it orphaned)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=120)
        self.python("from yullu_core import paths, postgres as pg; pg.stop(paths.yullu_home())")


def drill_arguments(doc: str | None, drills: str) -> argparse.ArgumentParser:
    """The options every chaos drill tool takes: which drills, where its folder goes, whether to keep it."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--drills", default=drills)
    parser.add_argument("--base", type=Path, default=Path("/tmp/yullu-chaos"))
    parser.add_argument("--keep", action="store_true", help="keep the drill's folder (home, log) after")
    return parser


CALLERS_OWN = ("DATABASE_URL", "YULLU_", "DJANGO_", "CELERY_")  # a drill's site never uses the caller's


@contextlib.contextmanager
def drill_site(
    root: Path,
    name: str,
    config: str,
    *,
    keep: bool,
    port: int = 0,
    extra: dict[str, str] | None = None,
    serve_args: list[str] | None = None,
) -> Iterator[Site]:
    """A site of its own for a chaos drill (bench.chaos, chaos_live, chaos_worker): `root`/`name-<pid>`
    holds its home, `config` as config.toml, its embedded PostgreSQL and serve.log, and is the one
    allowed root (the drills' checkouts live there). The caller's own database, Yul'lu, Django and
    Celery settings are left out, `extra` added. Started and ready in the block; stopped (its
    PostgreSQL too) and, unless `keep`, removed after it, on a SIGTERM too."""
    base = root / f"{name}-{os.getpid()}"
    base.mkdir(parents=True)
    for folder in (root, base):
        folder.chmod(0o755)  # as root, PostgreSQL's system user must reach the data folder
    (base / "config.toml").write_text(config)
    port = port or free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(CALLERS_OWN)}
    env |= {"YULLU_HOME": str(base / "home"), "YULLU_CONFIG": str(base / "config.toml"), "YULLU_PORT": str(port),
            "YULLU_ROOT_PG_BASE": str(base / "pg"), "YULLU_ALLOWED_ROOTS": str(base), "YULLU_LOG_LEVEL": "warning",
            "PYTHONPATH": str(REPO), **(extra or {})}  # fmt: skip
    site = Site(env, f"http://127.0.0.1:{port}", base / "serve.log", serve_args=serve_args or [])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the clean-up below runs on a SIGTERM too
    try:
        site.start()
        site.wait_ready()
        yield site
    finally:
        site.stop()
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


@dataclass
class Burst:
    acked: list[str] = field(default_factory=list)
    acked_at: list[float] = field(default_factory=list)  # when each acknowledged store was sent
    errors: int = 0
    done: bool = False


@contextlib.asynccontextmanager
async def session_for(url: str, token: str) -> AsyncIterator[ClientSession]:
    """The official SDK client over Streamable HTTP, with timeouts short enough that a client
    notices a server that went away (the SDK's defaults wait up to 300 s on a stream)."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(10, read=20))
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await asyncio.wait_for(session.initialize(), 20)
        yield session


async def store_client(url: str, token: str, project: str, burst: Burst) -> None:
    while not burst.done:
        try:
            async with session_for(url, token) as session:
                while not burst.done:
                    fact = f"fault matrix fact {uuid.uuid4().hex}: the deploy waits for the queue to drain"
                    started = time.monotonic()
                    result = await session.call_tool(
                        "store_memory", {"content": fact, "project_id": project}, read_timeout_seconds=20
                    )
                    if result.is_error:
                        burst.errors += 1
                        break  # reopen, as an assistant's client does after an error
                    burst.acked.append(result.structured_content["uuid"])
                    burst.acked_at.append(started)
        except Exception:  # the session broke (server gone, connection reset, timeout): reopen it
            burst.errors += 1
        if not burst.done:
            await asyncio.sleep(0.5)


def first_store_after(url: str, token: str, project: str, deadline: float) -> float | None:
    """Monotonic time at which a store over raw MCP HTTP (a new session: initialize, then
    tools/call) is first acknowledged, trying every 0.25 s: when the server can take writes again,
    whatever a client library does while it reconnects."""
    headers = {"authorization": f"Bearer {token}", "accept": "application/json, text/event-stream"}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "faults", "version": "1"}}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
    with httpx.Client(timeout=10) as http:
        while time.monotonic() < deadline:
            sent = time.monotonic()
            try:
                opened = http.post(url, headers=headers, json=init)
                session = {**headers, "mcp-session-id": opened.headers.get("mcp-session-id", ""),
                           "mcp-protocol-version": "2025-06-18"}  # fmt: skip
                if opened.status_code == 200:
                    http.post(url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
                    args = {"content": f"fault matrix probe {uuid.uuid4().hex}", "project_id": project}
                    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "store_memory", "arguments": args}}  # fmt: skip
                    answer = http.post(url, headers=session, json=call)
                    if answer.status_code == 200 and '"isError":true' not in answer.text.replace(" ", ""):
                        return sent
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
    return None


def watch_status(site: Site, stop: threading.Event, seen: list[tuple[float, bool]]) -> None:
    while not stop.is_set():
        seen.append((time.monotonic(), site.ready()))
        time.sleep(0.1)


def kill(site: Site, fault: str) -> None:
    assert site.proc is not None
    if fault == "supervisor":
        os.kill(site.proc.pid, signal.SIGKILL)
        site.proc.wait()
        site.start()  # what systemd (Restart=always) or the user does
        return
    if fault == "postmaster":
        site.postmaster().kill()
    elif fault == "backend":
        for backend in site.postmaster().children():
            with contextlib.suppress(psutil.Error):  # a request's connection may just have ended
                if " yullu " in " ".join(backend.cmdline()):
                    backend.kill()
                    return
    else:
        site.child({"web": "uvicorn"}.get(fault, fault)).kill()


def run_fault(site: Site, fault: str, args: argparse.Namespace, token: str) -> dict[str, Any]:
    project = f"faults/{fault}-{uuid.uuid4().hex[:6]}"
    burst, stop = Burst(), threading.Event()
    seen: list[tuple[float, bool]] = []
    watcher = threading.Thread(target=watch_status, args=(site, stop, seen))
    killed_at = 0.0
    writable_at: list[float | None] = [None]

    async def drive() -> None:
        nonlocal killed_at
        mcp = f"{site.url}/mcp"
        clients = [asyncio.create_task(store_client(mcp, token, project, burst)) for _ in range(args.clients)]
        await asyncio.sleep(args.kill_after)
        killed_at = time.monotonic()
        await asyncio.to_thread(kill, site, fault)
        probe = asyncio.create_task(
            asyncio.to_thread(first_store_after, mcp, token, project + "-probe", killed_at + args.burst)
        )
        await asyncio.sleep(max(0.0, args.burst - args.kill_after))
        writable_at[0] = await probe
        burst.done = True
        await asyncio.wait(clients, timeout=60)

    watcher.start()
    asyncio.run(drive())
    site.wait_ready()  # before the next fault; the watcher still records
    time.sleep(0.5)
    stop.set()
    watcher.join()
    after = [(t, ok) for t, ok in seen if t >= killed_at]
    down = [t for t, ok in after if not ok]
    ready_again = next((t for t, ok in after if ok and down and t > down[0]), None)
    lost = set(burst.acked) - site.stored(project)
    sdk_again = min((t for t in burst.acked_at if t > killed_at), default=None)
    return {
        "fault": fault,
        "stores_again_s": round(writable_at[0] - killed_at, 1) if writable_at[0] else None,
        "sdk_stores_again_s": round(sdk_again - killed_at, 1) if sdk_again else None,
        "not_ready_s": round(ready_again - down[0], 1) if down and ready_again else 0.0,
        "ready_again_s": round(ready_again - killed_at, 1) if ready_again else 0.0,
        "errors": burst.errors,
        "acked": len(burst.acked),
        "lost": len(lost),
        "supervisor_running": fault == "supervisor" or (site.proc is not None and site.proc.poll() is None),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--burst", type=float, default=40.0, help="seconds of stores per fault")
    parser.add_argument("--kill-after", type=float, default=10.0, help="seconds into the burst")
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--out", default=None, help="also write the results as JSON")
    args = parser.parse_args()
    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # the SDK logs every broken session with a traceback
    base = Path(tempfile.mkdtemp(prefix="yullu-faults-"))
    base.chmod(0o755)  # as root, PostgreSQL's system user must reach the data folder
    (base / "config.toml").write_text("[dreaming]\nenabled = false\n")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "YULLU_", "DJANGO_", "CELERY_"))}
    env |= {"YULLU_HOME": str(base / "home"), "YULLU_CONFIG": str(base / "config.toml"),
            "YULLU_ROOT_PG_BASE": str(base / "pg"), "YULLU_PORT": str(port), "YULLU_EMBED_PROVIDER": "none",
            "YULLU_LOG_LEVEL": "warning", "PYTHONPATH": str(REPO)}  # fmt: skip
    site = Site(env, f"http://127.0.0.1:{port}", base / "serve.log")
    rows = []
    try:
        site.start()
        site.wait_ready()
        token = (base / "home" / "token").read_text().strip()
        for fault in args.faults.split(","):
            row = run_fault(site, fault, args, token)
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        site.stop()
        print(f"log: {site.log}", flush=True)
    columns = ("fault", "ready_again_s", "not_ready_s", "stores_again_s", "sdk_stores_again_s", "errors", "acked",
               "lost")  # fmt: skip
    print("\n| kill -9 of | ready again after (s) | not ready for (s) | stores again after (s) "
          "| SDK clients store again after (s) | client errors | acknowledged stores | lost |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in columns) + " |")
    if args.out:
        Path(args.out).write_text(json.dumps({"clients": args.clients, "burst_s": args.burst, "rows": rows}, indent=2))
        shutil.copy(site.log, Path(args.out).with_suffix(".serve.log"))
    if not any(r["lost"] for r in rows):
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

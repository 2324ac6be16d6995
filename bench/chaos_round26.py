"""Chaos drills of round 26 (docs/reliability.md, "Chaos drills (round 26)"): `yullu serve --workers 2`, whose web
workers hand stateful MCP sessions to each other over unix sockets (yullu_site.mcp.routing), under a steady write
load (bench.chaos_live.Load: REST writers and MCP SDK sessions storing back to back, a broken session opened again):

- worker: `kill -9` of one web worker (uvicorn starts another): do its sessions end cleanly and open again?
- workers: the same ten times in a row (each as soon as the new worker's socket is there).
- supervisor: `kill -9` of `yullu serve`: what is left running, and the sockets' folder; then `yullu serve` again.
- postmaster: `kill -9` of the embedded PostgreSQL's postmaster: does the site live on and serve again?
- sigstop: the postmaster stopped (SIGSTOP) for --stop-s seconds, then continued.
- routes: the sockets' folder deleted while serving.
- routes_worker: the sockets' folder deleted and a web worker killed at once (the new one starts with no folder).
- clients: `yullu bench load` (MCP clients) and the hooks' requests by curl while one web worker is killed.
- disk (alone, a site of its own): $YULLU_HOME, the embedded PostgreSQL's data and a checkout on a small tmpfs mounted
  on the drill's folder (root), filled (`dd`) for --full-s seconds while REST writers store into the checkout's
  project (each store an event file in its `.yullu/logs`) and MCP writers store; then the filler removed.

After each: a new MCP session must store within a deadline, and every acknowledged store must be in the database.

Run (its own home under --base, port 48061 unless --port; stopped and deleted after unless --keep):
    python -m bench.chaos_round26 [--drills worker,workers,supervisor,postmaster,sigstop,routes] [--clients 2]

Each prints one JSON line: `acked`, `lost` (must be 0), what the clients saw, `stall_s` (the longest time with no
store acknowledged after the fault, a hang if it is the drill's whole length), the supervisor's lines, and the
tracebacks the log gained.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.chaos import git_repo
from bench.chaos_live import Load, ready_after
from bench.chaos_round23 import log_since
from bench.faults import CALLERS_OWN, REPO, Site, drill_arguments, drill_site, session_for


class TimedLoad(Load):
    """Load, with when each store was acknowledged (a hang is a long gap)."""

    def __init__(self, site: Site, token: str, project: str) -> None:
        super().__init__(site, token, project)
        self.times: list[float] = []
        self._count = 0

    def tick(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                if len(self.acked) != self._count:
                    self._count = len(self.acked)
                    self.times.append(time.monotonic())
            time.sleep(0.05)

    def stall_after(self, since: float) -> float:
        marks = [since, *[t for t in self.times if t > since], time.monotonic()]
        return round(max(b - a for a, b in zip(marks, marks[1:], strict=False)), 1)


def web_parent(site: Site) -> psutil.Process:
    return site.child("uvicorn")


def route_folder(site: Site) -> Path:
    return Path(web_parent(site).environ()["YULLU_MCP_ROUTE_DIR"])


def workers(site: Site) -> list[psutil.Process]:
    """The web workers that listen on their socket (uvicorn's spawned children, not its resource tracker)."""
    folder = route_folder(site)
    return [p for p in web_parent(site).children() if (folder / f"{p.pid}.sock").exists()]


def wait_for(what: str, check: Any, timeout: float = 120) -> float:
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise SystemExit(f"no {what} within {timeout} s")
        time.sleep(0.1)
    return round(time.monotonic() - start, 1)


def new_session_stores(site: Site, token: str, project: str) -> bool:
    async def once() -> bool:
        async with session_for(f"{site.url}/mcp", token) as session:
            result = await session.call_tool("store_memory", {"content": f"after the drill {uuid.uuid4().hex}",
                                                              "project_id": project})  # fmt: skip
            return not result.is_error

    try:
        return asyncio.run(asyncio.wait_for(once(), 60))
    except Exception as exc:  # noqa: BLE001 - the drill reports it
        print(json.dumps({"new_session_failed": repr(exc)[:300]}), flush=True)
        return False


def tracebacks(site: Site, offset: int) -> list[str]:
    """The last line of each traceback the log gained since `offset`."""
    lines = site.log.read_bytes()[offset:].decode(errors="replace").splitlines()
    found, inside = [], False
    for line in lines:
        if line.startswith("Traceback"):
            inside = True
        elif inside and line and not line.startswith((" ", "\t", "Traceback", "During handling", "The above")):
            found.append(line[:200])
            inside = False
    return found


def finish(site: Site, token: str, load: TimedLoad, threads: Any, at: float, offset: int, **extra: Any) -> dict:
    time.sleep(10)  # the load runs on after the fault
    stall = load.stall_after(at)
    result = load.result(threads)
    fresh = new_session_stores(site, token, load.project)
    return {**extra, "stall_s": stall, **result, "new_session_stores": fresh, "said": log_since(site, offset),
            "tracebacks": tracebacks(site, offset)}  # fmt: skip


def start_load(site: Site, token: str, name: str, clients: int) -> tuple[TimedLoad, Any, int]:
    offset = site.log.stat().st_size
    load = TimedLoad(site, token, f"chaos/{name}-{uuid.uuid4().hex[:6]}")
    threads = load.run(clients)
    threading.Thread(target=load.tick, daemon=True).start()
    time.sleep(8)
    return load, threads, offset


def drill_worker(site: Site, token: str, clients: int, kills: int = 1) -> dict[str, Any]:
    load, threads, offset = start_load(site, token, f"worker{kills}", clients)
    at, back = time.monotonic(), []
    for _ in range(kills):
        before = {p.pid for p in workers(site)}
        victim = workers(site)[0]
        victim.kill()
        back.append(wait_for("new worker", lambda b=before: len({p.pid for p in workers(site)} - b) >= 1))
    return finish(site, token, load, threads, at, offset, drill=f"worker x{kills}", worker_back_s=back)


def drill_supervisor(site: Site, token: str, clients: int) -> dict[str, Any]:
    assert site.proc is not None
    load, threads, offset = start_load(site, token, "supervisor", clients)
    folder = route_folder(site)
    home = site.env["YULLU_HOME"]
    site.proc.kill()
    at = time.monotonic()
    site.proc.wait()
    time.sleep(3)
    left = []
    for p in psutil.process_iter(["pid", "cmdline", "environ"]):
        with_home = (p.info["environ"] or {}).get("YULLU_HOME") == home
        if with_home and "postgres" not in " ".join(p.info["cmdline"] or []):
            left.append(" ".join(p.info["cmdline"] or [])[:80])
    folder_left = folder.exists()
    site.start()
    ready = ready_after(site, at)
    return finish(site, token, load, threads, at, offset, drill="supervisor", left_running=left,
                  routes_left=folder_left, routes_after_restart=folder.exists(), ready_again_s=ready)  # fmt: skip


def drill_postmaster(site: Site, token: str, clients: int) -> dict[str, Any]:
    assert site.proc is not None
    load, threads, offset = start_load(site, token, "postmaster", clients)
    site.postmaster().kill()
    at = time.monotonic()
    ready = ready_after(site, at)
    return finish(site, token, load, threads, at, offset, drill="postmaster", ready_again_s=ready,
                  supervisor_running=site.proc.poll() is None)  # fmt: skip


def drill_sigstop(site: Site, token: str, clients: int, stop_s: float) -> dict[str, Any]:
    assert site.proc is not None
    load, threads, offset = start_load(site, token, "sigstop", clients)
    postmaster = site.postmaster()
    postmaster.send_signal(signal.SIGSTOP)
    at = time.monotonic()
    time.sleep(stop_s)
    postmaster.send_signal(signal.SIGCONT)
    ready = ready_after(site, time.monotonic())
    return finish(site, token, load, threads, at, offset, drill=f"sigstop {stop_s:g}s", ready_after_cont_s=ready,
                  same_postmaster=site.postmaster().pid == postmaster.pid)  # fmt: skip


def drill_routes(site: Site, token: str, clients: int) -> dict[str, Any]:
    load, threads, offset = start_load(site, token, "routes", clients)
    folder = route_folder(site)
    shutil.rmtree(folder)
    at = time.monotonic()
    time.sleep(10)
    return finish(site, token, load, threads, at, offset, drill="routes", folder_back=folder.exists(),
                  sockets_back=sorted(p.name for p in folder.glob("*.sock")) if folder.exists() else [])  # fmt: skip


def hooks_by_curl(site: Site, token: str, stop: threading.Event, codes: collections.Counter[str]) -> None:
    """What the assistant's hooks send, by curl: the prompt hook's POST /api/context and the turns' /api/messages."""
    bodies = {
        "/api/context": {"query": "how do the invoices wait for the queue?", "project_id": "chaos/hooks26"},
        "/api/messages": {"session_id": "chaos-hooks-26", "project_id": "chaos/hooks26",
                          "messages": [{"role": "user", "content": "the queue drains before the deploy"}]},
    }  # fmt: skip
    while not stop.is_set():
        for path, body in bodies.items():
            curl = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "30", "-X", "POST",
                    "-H", f"Authorization: Bearer {token}", "-H", "Content-Type: application/json",
                    "-d", json.dumps(body), site.url + path]  # fmt: skip
            done = subprocess.run(curl, capture_output=True, text=True)
            codes[f"{path} {done.stdout or 'curl exit ' + str(done.returncode)}"] += 1
        time.sleep(0.2)


def drill_clients(site: Site, token: str, clients: int) -> dict[str, Any]:
    """`yullu bench load` (its MCP clients) and the hooks by curl while one web worker is killed."""
    offset = site.log.stat().st_size
    report = site.base / "bench_load.json"
    command = [sys.executable, "-m", "yullu_cli.main", "bench", "load", "--url", f"{site.url}/mcp",
               "--clients", str(clients * 2), "--duration", "45", "--out", str(report)]  # fmt: skip
    load = subprocess.Popen(command, env=site.env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    stop, codes = threading.Event(), collections.Counter[str]()
    curl = threading.Thread(target=hooks_by_curl, args=(site, token, stop, codes), daemon=True)
    curl.start()
    time.sleep(15)
    before = {p.pid for p in workers(site)}
    workers(site)[0].kill()
    back = wait_for("new worker", lambda: len({p.pid for p in workers(site)} - before) >= 1)
    out, _ = load.communicate(timeout=300)
    stop.set()
    curl.join(60)
    lines = out.decode(errors="replace").splitlines()
    return {"drill": "clients", "worker_back_s": back, "bench_load_exit": load.returncode, "load_said": lines[-6:],
            "bench_load_traceback": any(line.startswith("Traceback") for line in lines), "hooks": dict(codes),
            "said": log_since(site, offset), "tracebacks": tracebacks(site, offset)}  # fmt: skip


class CheckoutLoad(TimedLoad):
    """TimedLoad whose REST writers store into a git checkout's project (`cwd`): each store is an event file in its
    `.yullu/logs` too (the team log)."""

    def __init__(self, site: Site, token: str, repo: Path) -> None:
        body = {"content": "the disk drill's checkout", "cwd": str(repo)}
        first = httpx.post(f"{site.url}/api/memories", json=body, headers={"Authorization": f"Bearer {token}"})
        super().__init__(site, token, first.json()["project_id"])  # the MCP writers store into the same project
        self.repo = repo

    def rest_body(self) -> dict[str, str]:
        return {"content": f"disk chaos fact {uuid.uuid4().hex}: the cache warms first", "cwd": str(self.repo)}


def drill_disk(base: Path, port: int, clients: int, size_mb: int, full_s: float) -> dict[str, Any]:
    """$YULLU_HOME, the embedded PostgreSQL's data and the checkout on one small file system (a tmpfs mounted on the
    drill's own folder), filled while REST writers store into the checkout (event files) and MCP writers store."""
    folder = base / f"r26disk-{os.getpid()}"
    vol = folder / "vol"
    vol.mkdir(parents=True)
    for f in (base, folder):
        f.chmod(0o755)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=755", "tmpfs", str(vol)], check=True)
    try:
        return _disk(folder, vol, port, clients, full_s)
    finally:
        subprocess.run(["umount", "-l", str(vol)], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _disk(folder: Path, vol: Path, port: int, clients: int, full_s: float) -> dict[str, Any]:
    repo = git_repo(vol / "repo", "git@example.com:chaos/disk26.git")
    (folder / "config.toml").write_text("[dreaming]\nenabled = false\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(CALLERS_OWN)}
    env |= {"YULLU_HOME": str(vol / "home"), "YULLU_CONFIG": str(folder / "config.toml"), "YULLU_PORT": str(port),
            "YULLU_ROOT_PG_BASE": str(vol / "pg"), "YULLU_ALLOWED_ROOTS": str(vol), "YULLU_LOG_LEVEL": "warning",
            "PYTHONPATH": str(REPO), "YULLU_EMBED_PROVIDER": "none"}  # fmt: skip
    site = Site(env, f"http://127.0.0.1:{port}", folder / "serve.log", serve_args=["--workers", "2"])
    site.start()
    assert site.proc is not None
    try:
        site.wait_ready()
        token = site.token()
        load = CheckoutLoad(site, token, repo)
        threads = load.run(clients)
        threading.Thread(target=load.tick, daemon=True).start()
        time.sleep(8)
        offset = site.log.stat().st_size
        filler, before = vol / "filler", len(load.acked)
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M"], capture_output=True, check=False)
        at = time.monotonic()
        time.sleep(full_s)
        acked_full = len(load.acked) - before
        filler.unlink()
        freed = time.monotonic()
        time.sleep(20)
        stall = load.stall_after(freed)
        result = load.result(threads)
        logs = repo / ".yullu" / "logs"
        said = {
            "said": log_since(site, offset),
            "tracebacks": tracebacks(site, offset),
            "warnings": _warnings(site, offset),
        }
        return {"drill": f"disk {full_s:g}s full", **result, "acked_while_full": acked_full, "stall_s": stall,
                "event_files": sum(1 for _ in logs.rglob("*.json")) if logs.exists() else 0,
                "full_for_s": round(freed - at, 1), "supervisor_running": site.proc.poll() is None,
                "new_session_stores": new_session_stores(site, token, load.project), **said}  # fmt: skip
    finally:
        site.stop()


def _warnings(site: Site, offset: int) -> list[str]:
    text = site.log.read_bytes()[offset:].decode(errors="replace")
    lines = [line.split(" WARNING ", 1)[1][:200] for line in text.splitlines() if " WARNING " in line]
    return [f"{n}x {line}" for line, n in collections.Counter(lines).most_common(10)]


def drill_routes_then_worker(site: Site, token: str, clients: int) -> dict[str, Any]:
    """The sockets' folder deleted, and at once a web worker killed: the new worker starts with no folder."""
    load, threads, offset = start_load(site, token, "routes-worker", clients)
    folder, parent = route_folder(site), web_parent(site)
    before = {p.pid for p in workers(site)}
    shutil.rmtree(folder)
    next(p for p in parent.children() if p.pid in before).kill()
    at = time.monotonic()
    back = wait_for("a new worker's socket", lambda: len({p.pid for p in workers(site)} - before) >= 1)
    return finish(site, token, load, threads, at, offset, drill="routes+worker", worker_back_s=back,
                  same_web_parent=web_parent(site).pid == parent.pid)  # fmt: skip


def main() -> None:
    parser = drill_arguments(__doc__, "worker,workers,supervisor,postmaster,sigstop,routes")
    parser.add_argument("--clients", type=int, default=2, help="MCP clients, and as many REST clients")
    parser.add_argument("--stop-s", type=float, default=30)
    parser.add_argument("--port", type=int, default=48061)
    parser.add_argument("--disk-mb", type=int, default=300, help="the disk drill's file system")
    parser.add_argument("--full-s", type=float, default=30, help="how long the disk drill keeps it full")
    args = parser.parse_args()
    if args.drills == "disk":  # a site of its own, on a small file system
        print(json.dumps(drill_disk(args.base, args.port, args.clients, args.disk_mb, args.full_s)), flush=True)
        return
    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # the SDK logs every broken session with a traceback
    no_dreams, no_model = "[dreaming]\nenabled = false\n", {"YULLU_EMBED_PROVIDER": "none"}
    drills = {
        "worker": lambda s, t: drill_worker(s, t, args.clients),
        "workers": lambda s, t: drill_worker(s, t, args.clients, kills=10),
        "supervisor": lambda s, t: drill_supervisor(s, t, args.clients),
        "postmaster": lambda s, t: drill_postmaster(s, t, args.clients),
        "sigstop": lambda s, t: drill_sigstop(s, t, args.clients, args.stop_s),
        "routes": lambda s, t: drill_routes(s, t, args.clients),
        "clients": lambda s, t: drill_clients(s, t, args.clients),
        "routes_worker": lambda s, t: drill_routes_then_worker(s, t, args.clients),
    }
    os.environ.pop("YULLU_HOME", None)
    with drill_site(args.base, "r26", no_dreams, keep=args.keep, port=args.port, extra=no_model,
                    serve_args=["--workers", "2"]) as site:  # fmt: skip
        for drill in args.drills.split(","):
            site.wait_ready()
            print(json.dumps(drills[drill](site, site.token())), flush=True)
        print(json.dumps({"serve_log_tracebacks": site.log.read_text(errors="replace").count("Traceback")}))


if __name__ == "__main__":
    main()

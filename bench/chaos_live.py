"""Chaos drills of rounds eight and nine (docs/reliability.md, "Chaos drills (round eight)" and
"(round nine)"): faults of the database, the web process and the supervisor under a steady write
load from several clients, on a running site.

Run (starts its own `yullu serve` on a new home under --base with the embedded PostgreSQL and the
keyword-only embedder, stops it and its PostgreSQL after, and deletes the home unless --keep):
    python -m bench.chaos_live [--drills kills,sigstop,backend,web,supervisor] [--kills 10] [--clients 3]

Drills:
- kills: --clients MCP clients (the official SDK) and as many REST clients store back to back;
  the postmaster is killed with SIGKILL --kills times, each time as soon as /api/status is
  ready again.
- sigstop: the same load; the postmaster is stopped with SIGSTOP for --stop-s seconds, then
  continued.
- backend: a store (REST), an edit (REST PATCH) and an import (`yullu import`) are each made to wait
  inside their transaction (a side connection holds the project's write lock or the row), then the
  backend serving them is ended: pg_terminate_backend, or SIGKILL of its pid.
- web (round nine): the same load; the web (uvicorn) child is killed with SIGKILL --kills times,
  each time as soon as /api/status is ready again (the supervisor restarts it).
- supervisor (round nine): the same load; `yullu serve` itself is killed with SIGKILL, what it left
  is listed (processes of the home still running, files in run/, its metrics folder in /dev/shm),
  then `yullu serve` is started again (as systemd would) and what the new start cleaned up is listed.

Each prints one JSON line: `acked` (writes the clients saw acknowledged), `lost` (acknowledged
but not in the database afterwards; must be 0), `errors` (what the clients saw, by message, each
cut to 120 characters), `tracebacks` (answers holding one; must be 0), the seconds each restart
took to be ready again, and whether the supervisor kept running.
"""

from __future__ import annotations

import ast
import asyncio
import collections
import contextlib
import json
import logging
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg

from bench.faults import REPO, Site, drill_arguments, drill_site, session_for


class Load:
    """Writers over REST and MCP until `stop`; what each saw."""

    def __init__(self, site: Site, token: str, project: str) -> None:
        self.site, self.token, self.project = site, token, project
        self.acked: list[str] = []
        self.errors: collections.Counter[str] = collections.Counter()
        self.tracebacks = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def saw(self, message: str) -> None:
        with self.lock:
            self.errors[message[:120]] += 1
            if "Traceback" in message or "Internal error" in message or "Internal Server Error" in message:
                self.tracebacks += 1

    def rest_body(self) -> dict[str, str]:
        """One REST writer's store (a subclass stores elsewhere, e.g. into a checkout by `cwd`)."""
        return {"content": f"rest chaos fact {uuid.uuid4().hex}: invoices wait", "project_id": self.project}

    def rest(self) -> None:
        with httpx.Client(base_url=self.site.url, headers={"Authorization": f"Bearer {self.token}"}) as api:
            while not self.stop.is_set():
                body = self.rest_body()
                try:
                    r = api.post("/api/memories", json=body, timeout=30)
                except httpx.HTTPError as exc:
                    self.saw(f"REST {type(exc).__name__}")
                    time.sleep(0.5)
                    continue
                if r.status_code == 201:
                    with self.lock:
                        self.acked.append(str(r.json()["uuid"]))
                else:
                    self.saw(f"REST {r.status_code} {r.text}")
                    time.sleep(0.5)

    async def mcp(self) -> None:
        while not self.stop.is_set():
            try:
                async with session_for(f"{self.site.url}/mcp", self.token) as session:
                    while not self.stop.is_set():
                        fact = f"mcp chaos fact {uuid.uuid4().hex}: the queue drains first"
                        args = {"content": fact, "project_id": self.project}
                        result = await session.call_tool("store_memory", args, read_timeout_seconds=20)
                        if result.is_error:
                            self.saw("MCP tool error: " + " ".join(getattr(c, "text", "") for c in result.content))
                            break
                        assert result.structured_content is not None
                        with self.lock:
                            self.acked.append(str(result.structured_content["uuid"]))
            except Exception as exc:  # the session broke: reopen it, as an assistant's client does
                while isinstance(exc, ExceptionGroup):
                    exc = exc.exceptions[0]
                self.saw(f"MCP session {type(exc).__name__}: {exc}")
            await asyncio.sleep(0.5)

    def run(self, clients: int) -> list[threading.Thread]:
        async def mcp_clients() -> None:
            await asyncio.gather(*(self.mcp() for _ in range(clients)))

        threads = [threading.Thread(target=self.rest, daemon=True) for _ in range(clients)]  # a failed drill exits
        threads.append(threading.Thread(target=asyncio.run, args=(mcp_clients(),), daemon=True))
        for t in threads:
            t.start()
        return threads

    def result(self, threads: list[threading.Thread]) -> dict[str, Any]:
        self.stop.set()
        for t in threads:
            t.join(timeout=90)
        lost = set(self.acked) - self.site.stored(self.project)
        return {"acked": len(self.acked), "lost": len(lost), "errors": dict(self.errors.most_common(8)),
                "tracebacks": self.tracebacks}  # fmt: skip


def ready_after(site: Site, since: float, timeout: float = 300) -> float:
    """Seconds from `since` until /api/status says ready (after first seeing it not ready, for 5 s at most)."""
    deadline = time.monotonic() + 5
    while site.ready() and time.monotonic() < deadline:
        time.sleep(0.05)
    site.wait_ready(timeout)
    return round(time.monotonic() - since, 1)


@dataclass
class PowerCut:
    """A power cut under load (`power_cut`): the writers still running, the data folder and system user of the
    postmaster killed (read before the kill), and when."""

    load: Load
    threads: list[threading.Thread]
    pgdata: Path
    pg_user: str
    at: float


def power_cut(site: Site, token: str, drill: str, clients: int) -> PowerCut:
    """`kill -9` of `yullu serve` and of the postmaster at once, after 8 s of writes; returns once the supervisor
    is reaped and its children gone (rounds 24 and 25 then damage what a cut leaves, and start `yullu serve`)."""
    assert site.proc is not None
    load = Load(site, token, f"chaos/{drill}-{uuid.uuid4().hex[:6]}")
    threads = load.run(clients)
    time.sleep(8)
    postmaster = site.postmaster()
    pgdata, pg_user = Path(postmaster.cwd()), postmaster.username()
    site.proc.kill()
    postmaster.kill()
    at = time.monotonic()
    site.proc.wait()
    time.sleep(3)  # its children die with it (PR_SET_PDEATHSIG)
    return PowerCut(load, threads, pgdata, pg_user, at)


Drill = Callable[[Site, str, int], dict[str, Any]]


def run_drills(doc: str | None, name: str, port: int, drills: dict[str, Drill], *, token_each: bool = False) -> None:
    """The command of a round's drills under load (chaos_round23 to 25): `--drills` (all, in `drills`' order, by
    default) each on the same site, ready first, one JSON line each, then the serve log's count of tracebacks.
    `token_each`: the token is read again before each drill (a drill that rewrites the token file, round 25's)."""
    parser = drill_arguments(doc, ",".join(drills))
    parser.add_argument("--clients", type=int, default=2, help="MCP clients, and as many REST clients")
    parser.add_argument("--port", type=int, default=port)
    args = parser.parse_args()
    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # the SDK logs every broken session with a traceback
    no_dreams, no_model = "[dreaming]\nenabled = false\n", {"YULLU_EMBED_PROVIDER": "none"}
    with drill_site(args.base, name, no_dreams, keep=args.keep, port=args.port, extra=no_model) as site:
        token = site.token()
        for drill in args.drills.split(","):
            site.wait_ready()
            print(json.dumps(drills[drill](site, site.token() if token_each else token, args.clients)), flush=True)
        print(json.dumps({"serve_log_tracebacks": site.log.read_text(errors="replace").count("Traceback")}))


def drill_kills(site: Site, token: str, kills: int, clients: int) -> dict[str, Any]:
    return kill_under_load(site, token, "kills", kills, clients, site.postmaster)


def kill_under_load(
    site: Site, token: str, drill: str, kills: int, clients: int, victim: Callable[[], psutil.Process]
) -> dict[str, Any]:
    """`kills` times: wait until the site is ready, kill -9 `victim()`, time until ready again; writers
    keep storing throughout (5 s before the first kill and after the last)."""
    load = Load(site, token, f"chaos/{drill}-{uuid.uuid4().hex[:6]}")
    threads = load.run(clients)
    time.sleep(5)
    took = []
    for _ in range(kills):
        site.wait_ready()
        process = victim()
        at = time.monotonic()
        process.kill()
        took.append(ready_after(site, at))
    time.sleep(5)  # writes go on after the last one
    return {"drill": drill, "kills": kills, "ready_again_s": took, **load.result(threads),
            "supervisor_running": site.proc is not None and site.proc.poll() is None}  # fmt: skip


def drill_sigstop(site: Site, token: str, stop_s: float, clients: int) -> dict[str, Any]:
    load = Load(site, token, f"chaos/sigstop-{uuid.uuid4().hex[:6]}")
    threads = load.run(clients)
    time.sleep(5)
    postmaster = site.postmaster()
    stopped = time.monotonic()
    postmaster.suspend()
    not_ready_seen = False
    while time.monotonic() - stopped < stop_s:
        not_ready_seen |= not site.ready()
        time.sleep(1)
    postmaster.resume()
    continued = time.monotonic()
    site.wait_ready()
    again = round(time.monotonic() - continued, 1)
    time.sleep(5)
    return {"drill": "sigstop", "stopped_s": stop_s, "not_ready_while_stopped": not_ready_seen,
            "ready_again_after_cont_s": again, "postmaster_same": site.postmaster().pid == postmaster.pid,
            **load.result(threads),
            "supervisor_running": site.proc is not None and site.proc.poll() is None}  # fmt: skip


def drill_web(site: Site, token: str, kills: int, clients: int) -> dict[str, Any]:
    return kill_under_load(site, token, "web", kills, clients, lambda: site.child("uvicorn"))


def home_processes(home: str) -> list[str]:
    """The processes whose environment names this YULLU_HOME (the site's children and their pools),
    PostgreSQL's own excepted."""
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if proc.environ().get("YULLU_HOME") == home and "postgres" not in proc.info["name"]:
                found.append(f"{proc.pid} {' '.join(proc.info['cmdline'] or [])[:100]}")
    return found


def metrics_folders(site: Site) -> list[str]:
    code = (
        "from yullu_cli.supervisor import _metrics_base; from yullu_core import paths; "
        "print(sorted(p.name for p in _metrics_base(paths.yullu_home() / 'run').iterdir()))"
    )
    return list(ast.literal_eval(site.python(code)))


def drill_supervisor(site: Site, token: str, clients: int) -> dict[str, Any]:
    """kill -9 of `yullu serve` under load; what it left; the next start's clean-up."""
    assert site.proc is not None
    home = site.env["YULLU_HOME"]
    run = Path(home) / "run"
    load = Load(site, token, f"chaos/supervisor-{uuid.uuid4().hex[:6]}")
    threads = load.run(clients)
    time.sleep(5)
    killed = site.proc.pid
    postmaster = site.postmaster().pid
    at = time.monotonic()
    site.proc.kill()
    site.proc.wait()
    deadline = time.monotonic() + 30  # children die with it (PR_SET_PDEATHSIG); their pools after them
    while (left := home_processes(home)) and time.monotonic() < deadline:
        time.sleep(0.5)
    after_kill = {"processes_left": left, "run_files": sorted(p.name for p in run.iterdir()),
                  "metrics_folders": metrics_folders(site),
                  "postmaster_running": psutil.pid_exists(postmaster)}  # fmt: skip
    site.start()
    ready = ready_after(site, at)
    time.sleep(5)
    serve_pid = (run / "serve.pid").read_text().strip()
    log = site.log.read_text(errors="replace")
    after_start = {"serve_pid_is_new_server": serve_pid == str(site.proc.pid), "metrics_folders": metrics_folders(site),
                   "adopted": f"adopting the embedded PostgreSQL (pid {postmaster})" in log,
                   "postmaster_same": site.postmaster().pid == postmaster}  # fmt: skip
    return {"drill": "supervisor", "killed": killed, "after_kill": after_kill, "ready_again_s": ready,
            "after_start": after_start, **load.result(threads),
            "supervisor_running": site.proc.poll() is None}  # fmt: skip


def dsn(site: Site) -> str:
    code = "from yullu_core import paths, postgres as pg; print(pg.plan(paths.yullu_home()).conninfo())"
    info = ast.literal_eval(site.python(code))
    return f"host={info['host']} dbname={info['dbname']} user={info['user']}"


def waiting_backend(conn: psycopg.Connection[Any], timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = conn.execute("SELECT pid FROM pg_locks WHERE NOT granted LIMIT 1").fetchone()
        if row:
            return int(row[0])
        time.sleep(0.1)
    raise SystemExit("nothing waited for the held lock")


def end_backend(conn: psycopg.Connection[Any], pid: int, how: str) -> None:
    if how == "terminate":
        conn.execute("SELECT pg_terminate_backend(%s)", [pid])
    else:
        psutil.Process(pid).kill()


def drill_backend(site: Site, token: str, base: Path) -> list[dict[str, Any]]:
    """Each write waits inside its transaction for what a side connection holds; its backend is ended."""
    rows = []
    api = httpx.Client(base_url=site.url, headers={"Authorization": f"Bearer {token}"}, timeout=120)
    for how in ("terminate", "kill"):
        for write in ("store", "edit", "import"):
            project = f"chaos/backend-{write}-{how}"
            seed = api.post("/api/memories", json={"content": f"the {write} drill's first fact", "project_id": project})
            memory = seed.json()
            outcome: dict[str, Any] = {}
            side = psycopg.connect(dsn(site), autocommit=True)
            with side, contextlib.suppress(psycopg.Error), side.transaction():  # a kill -9 ends this one too
                if write == "edit":
                    side.execute("SELECT 1 FROM memories_memory WHERE id = %s FOR UPDATE", [memory["id"]])
                else:
                    side.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [0x59_75_6C_18, project])
                worker = threading.Thread(target=_write, args=(site, api, write, project, memory, base, outcome))
                worker.start()
                end_backend(side, waiting_backend(side), how)
                worker.join(timeout=120)
            site.wait_ready()
            after = api.get("/api/memories", params={"project_id": project, "limit": 100}).json()
            contents = sorted(m["content"] for m in after["results"])
            rows.append({"drill": "backend", "ended_by": how, "write": write, "client_saw": outcome.get("saw"),
                         "memories_after": contents[:4], "count_after": len(contents)})  # fmt: skip
    return rows


def _write(site: Site, api: httpx.Client, write: str, project: str, memory: dict[str, Any], base: Path,
           out: dict[str, Any]) -> None:  # fmt: skip
    if write == "store":
        r = api.post("/api/memories", json={"content": "a store cut short", "project_id": project})
        out["saw"] = f"{r.status_code} {r.text[:200]}"
    elif write == "edit":
        r = api.patch(f"/api/memories/{memory['id']}", json={"content": "an edit cut short"})
        out["saw"] = f"{r.status_code} {r.text[:200]}"
    else:
        data = base / f"{uuid.uuid4().hex}.jsonl"
        with data.open("w") as fh:
            fh.write(json.dumps({"format": "yullu-memories", "version": 1, "project_id": project}) + "\n")
            for n in range(50):
                fh.write(json.dumps({"project_id": project, "content": f"imported fact {n} cut short"}) + "\n")
        done = subprocess.run([sys.executable, "-m", "yullu_cli.main", "import", str(data)], env=site.env, cwd=REPO,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        out["saw"] = f"exit {done.returncode}: {(done.stdout + done.stderr).strip()[-300:]}"


def main() -> None:
    parser = drill_arguments(__doc__, "kills,sigstop,backend")
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--clients", type=int, default=3, help="MCP clients, and as many REST clients")
    parser.add_argument("--stop-s", type=float, default=30.0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # the SDK logs every broken session with a traceback
    no_dreams, no_model = "[dreaming]\nenabled = false\n", {"YULLU_EMBED_PROVIDER": "none"}
    with drill_site(args.base, "live", no_dreams, keep=args.keep, port=args.port, extra=no_model) as site:
        token, base = site.token(), site.base
        for drill in args.drills.split(","):
            if drill == "kills":
                print(json.dumps(drill_kills(site, token, args.kills, args.clients)), flush=True)
            elif drill == "sigstop":
                print(json.dumps(drill_sigstop(site, token, args.stop_s, args.clients)), flush=True)
            elif drill == "web":
                print(json.dumps(drill_web(site, token, args.kills, args.clients)), flush=True)
            elif drill == "supervisor":
                print(json.dumps(drill_supervisor(site, token, args.clients)), flush=True)
            elif drill == "backend":
                for row in drill_backend(site, token, base):
                    print(json.dumps(row), flush=True)
            else:
                raise SystemExit(f"unknown drill {drill!r}")
        serve_log = site.log.read_text(errors="replace")
        print(json.dumps({"serve_log_tracebacks": serve_log.count("Traceback")}), flush=True)


if __name__ == "__main__":
    main()

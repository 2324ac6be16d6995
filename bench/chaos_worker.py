"""Chaos drills of round nine (docs/reliability.md, "Chaos drills (round nine)"): `kill -9` of a running
site's Celery worker while it checks code anchors and while it runs a dream pass.

Run (starts its own `yullu serve` on a new home under --base with the embedded PostgreSQL, the
keyword-only embedder and a stub reasoner served here, a scheduler tick of 2 s; stops it after and
deletes the home unless --keep):
    python -m bench.chaos_worker [--drills anchors,dream] [--memories 400]

- anchors: --memories memories stored over REST in a git checkout, two anchors each (a function and
  a line range), checked at HEAD; then every function is changed and committed. The beat's anchors
  tick (every 10 s) re-checks them all and writes the verdicts in one transaction: a side connection
  holds one anchor row locked, so that write waits, and the worker is killed then. Then again with
  no lock, the worker killed as soon as its check reads the anchors (the check in Python). After
  each kill: every anchor still as it was (checked at the old HEAD); then the next check, by the
  restarted worker, checks every anchor at the new HEAD once, no anchor duplicated or lost.
- dream: two sessions' turns recorded over REST; a dream pass queued (the admin's "dream now", a
  Celery task); the stub reasoner answers after 60 s; the worker is killed while the pass waits on
  it. Then the stub answers at once: the pass runs again by itself (acknowledged late, the task
  is delivered again), each fact the reasoner gave stored once, the buffer consumed.

Prints one JSON line per drill.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench.chaos_live import dsn
from bench.faults import Site, drill_arguments, drill_site

FACTS = ["The billing worker retries invoices three times.", "Deploys wait for the queue to drain first."]


class Reasoner:
    """An OpenAI-compatible chat endpoint answering every call with the same operations, after `delay`."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.calls = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                stub.calls += 1
                time.sleep(stub.delay)
                ops = [{"op": "create", "content": fact, "category": "process"} for fact in FACTS]
                message = {"role": "assistant", "content": json.dumps({"operations": ops})}
                body = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "stub-chat",
                                   "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                                   "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                             "total_tokens": 2}})  # fmt: skip
                with_body = body.encode()
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(with_body)))
                    self.end_headers()
                    self.wfile.write(with_body)
                except OSError:
                    pass  # the worker that asked was killed

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def until(check: Any, what: str, timeout: float = 300) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


def kill_worker(site: Site) -> int:
    worker = site.child("worker")
    pid = worker.pid
    worker.kill()
    return pid


def worker_restarted(site: Site, old: int) -> bool:
    try:
        return site.child("worker").pid != old
    except StopIteration:
        return False


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def module(version: int, functions: int) -> str:
    return "".join(f"def f{i}(x):\n    y = x + {version}\n    return y * {i}\n\n\n" for i in range(functions))


def anchor_rows(conn: psycopg.Connection[Any], project: str) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT id, memory_id, path, symbol, line_start, line_end, status, checked_head FROM memories_memoryanchor "
        "WHERE project_id = %s ORDER BY id",
        [project],
    ).fetchall()


def drill_anchors(site: Site, token: str, base: Path, memories: int) -> dict[str, Any]:
    repo = base / "checkout"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", f"https://github.com/chaos/anchors-{uuid.uuid4().hex[:6]}.git")
    (repo / "app").mkdir()
    (repo / "app" / "mod.py").write_text(module(1, memories))
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=c", "-c", "user.email=c@x", "commit", "-qm", "one")
    first = git(repo, "rev-parse", "HEAD")
    api = httpx.Client(base_url=site.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    project = ""
    for i in range(memories):
        body = {"content": f"f{i} multiplies by {i} after adding the version", "cwd": str(repo),
                "anchors": [f"app/mod.py::f{i}", f"app/mod.py:{5 * i + 2}-{5 * i + 3}"]}  # fmt: skip
        r = api.post("/api/memories", json=body)
        if r.status_code != 201:
            raise SystemExit(f"store {i}: {r.status_code} {r.text}")
        project = r.json()["project_id"]
    conn = psycopg.connect(dsn(site), autocommit=True)
    stored = anchor_rows(conn, project)
    rows: dict[str, Any] = {"drill": "anchors", "memories": memories, "anchors": len(stored)}
    for round_, how in enumerate(("during its write (one row held locked)", "during its check"), start=2):
        rows[f"kill {how}"] = _anchors_round(site, conn, repo, project, round_, memories)
    rows["first_head"] = first[:12]
    return rows


def _anchors_round(site: Site, conn: psycopg.Connection[Any], repo: Path, project: str, round_: int,
                   memories: int) -> dict[str, Any]:  # fmt: skip
    (repo / "app" / "mod.py").write_text(module(round_, memories))
    git(repo, "-c", "user.name=c", "-c", "user.email=c@x", "commit", "-qam", f"v{round_}")
    head = git(repo, "rev-parse", "HEAD")
    committed = conn.execute("SELECT now()").fetchone()[0]  # type: ignore[index]
    before = anchor_rows(conn, project)
    side = psycopg.connect(dsn(site))
    if round_ == 2:  # the verdicts' write waits on this row: the worker dies inside its transaction
        side.execute("SELECT 1 FROM memories_memoryanchor WHERE id = %s FOR UPDATE", [before[-1][0]])
        until(lambda: conn.execute("SELECT 1 FROM pg_locks WHERE NOT granted").fetchone(),
              "the anchors check to wait for the locked row", 120)  # fmt: skip
    else:  # once a check has read the anchors and works out their verdicts (its last statement that SELECT)
        until(lambda: conn.execute("SELECT 1 FROM pg_stat_activity WHERE query LIKE 'SELECT %%checked_head%%"
                                   "memories_memoryanchor%%' AND query_start > %s AND pid <> pg_backend_pid()",
                                   [committed]).fetchone(), "a check reading the anchors", 120)  # fmt: skip
    killed = kill_worker(site)
    side.close()  # the lock goes
    time.sleep(1)
    after_kill = anchor_rows(conn, project)
    until(lambda: worker_restarted(site, killed), "the worker to be started again", 120)
    checked = until(lambda: all(r[7] == head for r in anchor_rows(conn, project)) or None,
                    "the next check to reach the new HEAD", 300)  # fmt: skip
    after = anchor_rows(conn, project)
    statuses: dict[str, int] = {}
    for r in after:
        statuses[r[6]] = statuses.get(r[6], 0) + 1
    return {
        "as_it_was_after_the_kill": after_kill == before,
        "old_head_rows_after_the_kill": sum(r[7] != head for r in after_kill),
        "next_check_complete": bool(checked),
        "same_anchor_rows": [r[:6] for r in after] == [r[:6] for r in before],
        "statuses": statuses,
    }


def drill_dream(site: Site, token: str, reasoner: Reasoner) -> dict[str, Any]:
    project = f"chaos/dream-{uuid.uuid4().hex[:6]}"
    api = httpx.Client(base_url=site.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    for session in ("s1", "s2"):
        turns = [{"role": "user", "content": f"in {session} we said: {fact}"} for fact in FACTS]
        r = api.post("/api/messages", json={"project_id": project, "session_id": session, "messages": turns})
        assert r.status_code == 201, r.text
    conn = psycopg.connect(dsn(site), autocommit=True)

    def buffered() -> int:
        row = conn.execute("SELECT count(*) FROM dreaming_sessionmessage WHERE project_id = %s", [project]).fetchone()
        return int(row[0]) if row else 0

    def stored() -> list[str]:
        return [r[0] for r in conn.execute("SELECT content FROM memories_memory WHERE project_id = %s ORDER BY id",
                                           [project]).fetchall()]  # fmt: skip

    reasoner.delay, calls = 60.0, reasoner.calls
    queue = ("import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'yullu_site.settings'; import django; django.setup(); "
             f"from dreaming.tasks import dream_project; dream_project.delay({project!r})")  # fmt: skip
    site.python(queue)
    until(lambda: reasoner.calls > calls, "the worker to ask the reasoner", 120)
    killed = kill_worker(site)
    time.sleep(1)
    at_kill = {"buffered": buffered(), "memories": stored()}
    reasoner.delay = 0.0
    until(lambda: worker_restarted(site, killed), "the worker to be started again", 120)
    until(lambda: buffered() == 0 or None, "a pass to consume the buffer", 300)
    time.sleep(5)  # anything still queued runs
    memories = stored()
    passes = api.get("/api/dream/passes", params={"project_id": project}).json()["passes"]
    return {"drill": "dream", "at_kill": at_kill, "memories_after": memories,
            "each_fact_once": sorted(memories) == sorted(FACTS), "buffered_after": buffered(),
            "passes": [(p["phase"], p["ops_created"], p["last_error"]) for p in passes],
            "reasoner_calls": reasoner.calls - calls}  # fmt: skip


def main() -> None:
    parser = drill_arguments(__doc__, "anchors,dream")
    parser.add_argument("--memories", type=int, default=400)
    args = parser.parse_args()
    reasoner = Reasoner()
    env = {"YULLU_EMBED_PROVIDER": "none", "YULLU_SCHEDULER_TICK_SECONDS": "2", "YULLU_REASON_PROVIDER": "openai",
           "YULLU_REASON_MODEL": "stub-chat", "OPENAI_API_KEY": "sk-test-not-real",
           "OPENAI_BASE_URL": reasoner.url}  # fmt: skip
    with drill_site(args.base, "worker", "", keep=args.keep, extra=env) as site:
        for drill in args.drills.split(","):
            if drill == "anchors":
                print(json.dumps(drill_anchors(site, site.token(), site.base, args.memories)), flush=True)
            elif drill == "dream":
                print(json.dumps(drill_dream(site, site.token(), reasoner)), flush=True)
            else:
                raise SystemExit(f"unknown drill {drill!r}")
        print(json.dumps({"serve_log_tracebacks": site.log.read_text(errors="replace").count("Traceback")}), flush=True)


if __name__ == "__main__":
    main()

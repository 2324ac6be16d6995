"""Chaos drills (docs/reliability.md, "Chaos drills"): kill -9 of one part of a running site in the
middle of a long pass, then check that nothing acknowledged was lost or doubled, that no temp
file was left in the event log, and that the pass run again finishes the work once.

Run (starts its own `yullu serve` on a new home under --base with the embedded PostgreSQL and the
local embedder, stops it and its PostgreSQL after, and deletes the home unless --keep):
    python -m bench.chaos [--drills import,reconcile,compact] [--rows 4000] [--base /tmp/chaos]

Drills, each against a fresh project:
- import: `yullu import` of --rows memories (a `yullu export json` file with uuids); killed once
  its first batch of 2,000 is reported: the postmaster (kill=postmaster) or the import itself
  (kill=process). Then the same import again: every row exactly once, the vector index there.
- reconcile: `yullu reconcile` of a teammate's log of --rows `create` files; killed once the first
  rows are in: the postmaster or the reconcile itself. Then reconcile again: every memory once,
  every file in the ledger, no temp file.
- compact: `yullu sync compact` of that log; killed once its snapshots are written and it is
  removing the old files. Then reconcile (nothing changes) and compact again (the fixpoint).

Each drill prints one JSON line: what was killed and when, then `rows` (expected), `found`,
`distinct` (by uuid or content), `temp_files` left in the log, `index` (the embedder's HNSW
index exists), and the second run's summary. The dream and backfill drills are tests
(tests/test_chaos.py) or described in docs/reliability.md. Round eight's drills of the database
under a steady write load (the postmaster killed ten times, stopped for 30 s, a backend ended
mid-transaction) are bench/chaos_live.py.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench.faults import REPO, Site, drill_arguments, drill_site

WORDS = sorted(
    {
        w.lower()
        for f in (REPO / "docs").glob("*.md")
        for w in f.read_text().split()
        if w.isalpha() and 4 <= len(w) <= 12
    }
)
CATEGORIES = ["process", "decision", "gotcha", "domain", "style"]


def sentence(rng: random.Random, n: int, lead: str) -> str:
    return f"{lead} {n}: " + " ".join(rng.sample(WORDS, 14)) + "."


def export_file(path: Path, project: str, rows: int, seed: int) -> None:
    rng = random.Random(seed)
    with path.open("w") as out:
        out.write(json.dumps({"format": "yullu-memories", "version": 1, "project_id": project, "count": rows}) + "\n")
        for n in range(rows):
            memory = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            record = {"uuid": memory, "project_id": project, "content": sentence(rng, n, "Rule"),
                      "category": CATEGORIES[n % 5], "tags": ["chaos"]}  # fmt: skip
            out.write(json.dumps(record) + "\n")


def team_log(folder: Path, rows: int, seed: int) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    base = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
    for n in range(rows):
        event_id = uuid.UUID(int=rng.getrandbits(128), version=4)
        at = base + dt.timedelta(seconds=n, microseconds=rng.randrange(10**6))
        memory = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        event = {"id": str(event_id), "type": "create", "memory_id": memory,
                 "ts": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "content": sentence(rng, n, "Team fact"), "tags": ["team"],
                 "category": CATEGORIES[n % 5]}  # fmt: skip
        name = f"{at:%Y%m%dT%H%M%S.%f}000Z-{event_id.hex[:8]}.json"
        (folder / name).write_text(json.dumps(event, indent=2) + "\n")


def git_repo(path: Path, origin: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", origin], check=True)
    return path


def sql(site: Site, query: str) -> Any:
    code = ("import os, json; os.environ['DJANGO_SETTINGS_MODULE'] = 'yullu_site.settings'; import django; "
            "django.setup(); from django.db import connection; cur = connection.cursor(); "
            f"cur.execute({query!r}); print(json.dumps(cur.fetchone(), default=str))")  # fmt: skip
    return json.loads(site.python(code).splitlines()[-1])


def counts(site: Site, project: str) -> tuple[int, int]:
    found, distinct = sql(
        site, f"SELECT count(*), count(DISTINCT content) FROM memories_memory WHERE project_id = '{project}'"
    )
    return int(found), int(distinct)


def index_exists(site: Site) -> bool:
    return bool(sql(site, "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'memvec_hnsw_%'")[0])


def json_files(folder: Path) -> int:
    return sum(1 for n in os.listdir(folder) if n.endswith(".json"))


def temp_files(folder: Path) -> int:
    return sum(1 for n in os.listdir(folder) if n.endswith(".tmp")) if folder.is_dir() else 0


def yullu(site: Site, args: list[str], out: Path) -> subprocess.Popen[bytes]:
    with out.open("wb") as fh:
        return subprocess.Popen([sys.executable, "-m", "yullu_cli.main", *args], env=site.env, cwd=REPO, stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip


def until(check: Any, what: str, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def kill(site: Site, target: str, proc: subprocess.Popen[bytes]) -> None:
    if target == "postmaster":
        site.postmaster().kill()
    else:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=120)
    site.wait_ready()


def drill_import(site: Site, base: Path, rows: int, target: str) -> dict[str, Any]:
    project = f"github.com/chaos/import-{target}"
    data = base / f"import-{target}.jsonl"
    export_file(data, project, rows, seed=len(target))  # other uuids per drill
    out = base / f"import-{target}.out"
    proc = yullu(site, ["import", str(data)], out)
    until(lambda: "read 2000" in out.read_text(errors="replace") or proc.poll() is not None, "the first batch")
    before = counts(site, project)[0]
    kill(site, target, proc)
    said = [line for line in out.read_text(errors="replace").splitlines() if line.startswith("yullu:")]
    again = subprocess.run([sys.executable, "-m", "yullu_cli.main", "import", str(data)], env=site.env, cwd=REPO,
                           capture_output=True, text=True, timeout=1800)  # fmt: skip
    found, distinct = counts(site, project)
    return {"drill": "import", "kill": target, "rows": rows, "in_at_kill": before, "said": said,
            "traceback": "Traceback" in out.read_text(errors="replace"), "rerun_exit": again.returncode,
            "found": found, "distinct": distinct, "index": index_exists(site)}  # fmt: skip


def drill_reconcile(site: Site, base: Path, rows: int, target: str) -> dict[str, Any]:
    repo = git_repo(base / f"team-{target}", f"git@github.com:chaos/team-{target}.git")
    project = f"github.com/chaos/team-{target}"
    folder = repo / ".yullu" / "logs"
    team_log(folder, rows, seed=100 + len(target))  # other uuids per drill
    out = base / f"reconcile-{target}.out"
    proc = yullu(site, ["reconcile", "--cwd", str(repo)], out)
    until(lambda: counts(site, project)[0] > 0 or proc.poll() is not None, "the first applied rows")
    before = counts(site, project)[0]
    kill(site, target, proc)
    result: dict[str, Any] = {}
    for _ in range(20):  # a beat tick may be reconciling the project (`skipped`): try again
        again = subprocess.run([sys.executable, "-m", "yullu_cli.main", "reconcile", "--cwd", str(repo)],
                               env=site.env, cwd=REPO, capture_output=True, text=True, timeout=1800)  # fmt: skip
        result = json.loads(again.stdout) if again.returncode == 0 else {"error": again.stderr[-500:]}
        if not result.get("skipped"):
            break
        time.sleep(5)
    found, distinct = counts(site, project)
    ledger = sql(site, f"SELECT count(*) FROM sync_ledgerentry WHERE project_id = '{project}'")[0]
    files = sum(1 for n in os.listdir(folder) if n.endswith(".json"))
    return {"drill": "reconcile", "kill": target, "rows": rows, "in_at_kill": before, "found": found,
            "distinct": distinct, "files": files, "ledger": ledger, "temp_files": temp_files(folder),
            "rerun": {k: result.get(k) for k in ("events_new", "created", "updated", "error")}}  # fmt: skip


def drill_compact(site: Site, base: Path, target: str) -> dict[str, Any]:
    repo = base / f"team-{target}"
    project = f"github.com/chaos/team-{target}"
    folder = repo / ".yullu" / "logs"
    files = json_files(folder)
    out = base / "compact.out"
    proc = yullu(site, ["sync", "compact", "--cwd", str(repo)], out)
    # killed once the snapshots are linked (more event files than before) and old files are going
    until(lambda: json_files(folder) > files or proc.poll() is not None, "the snapshots to be linked")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    left = json_files(folder)
    runs = []
    for verb in (["reconcile"], ["sync", "compact"], ["reconcile"]):
        ran = subprocess.run([sys.executable, "-m", "yullu_cli.main", *verb, "--cwd", str(repo)], env=site.env,
                             cwd=REPO, capture_output=True, text=True, timeout=1800)  # fmt: skip
        summary = json.loads(ran.stdout) if ran.returncode == 0 else {"error": ran.stderr[-500:]}
        runs.append(
            {k: v for k, v in summary.items() if k in ("created", "updated", "deleted", "files_after", "error")}
        )
    found, distinct = counts(site, project)
    return {"drill": "compact", "kill": "process", "files_before": files, "files_at_kill": left, "runs": runs,
            "found": found, "distinct": distinct, "temp_files": temp_files(folder)}  # fmt: skip


def main() -> None:
    parser = drill_arguments(__doc__, "import,reconcile,compact")
    parser.add_argument("--rows", type=int, default=4000)
    args = parser.parse_args()
    with drill_site(args.base, "run", "[dreaming]\nenabled = false\n", keep=args.keep) as site:
        for drill in args.drills.split(","):
            for target in ("postmaster", "process"):
                if drill == "import":
                    row = drill_import(site, site.base, args.rows, target)
                elif drill == "reconcile":
                    row = drill_reconcile(site, site.base, args.rows, target)
                elif drill == "compact":
                    row = drill_compact(site, site.base, target)
                else:
                    raise SystemExit(f"unknown drill {drill!r}")
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()

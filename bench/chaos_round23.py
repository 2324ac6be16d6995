"""Chaos drills of round 23 (docs/reliability.md, "Chaos drills (round 23)"), each under a steady write
load (REST and MCP clients, bench.chaos_live.Load) on a running site of its own:

- smart: `pg_ctl stop -m smart` of the embedded PostgreSQL (said as a shutdown, not "crash recovery");
- twice: a second `yullu serve` on the same home (same port, then another port) while the first serves;
- token: the token file deleted, then rewritten with another value, while serving: what the clients see,
  and what `yullu doctor` says.

Run (its own home under --base, stopped and deleted after unless --keep):
    python -m bench.chaos_round23 [--drills smart,twice,token] [--clients 2]

Each prints one JSON line: `acked`, `lost` (acknowledged but not in the database afterwards; must be 0),
what the clients saw, and the supervisor's lines the drill caused.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.chaos_live import Load, ready_after, run_drills
from bench.faults import REPO, Site


def log_since(site: Site, offset: int) -> list[str]:
    """The supervisor's own lines (`yullu: …`) written to the site's log since `offset`."""
    text = site.log.read_bytes()[offset:].decode(errors="replace")
    return [line for line in text.splitlines() if line.startswith("yullu:")]


def yullu(site: Site, *args: str, timeout: float = 120, port: str | None = None) -> dict[str, Any]:
    """`yullu ARGS` in the site's environment: its exit code and its last lines."""
    env = site.env | ({"YULLU_PORT": port} if port else {})
    done = subprocess.run([sys.executable, "-m", "yullu_cli.main", *args], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip
    return {"exit": done.returncode, "said": (done.stdout + done.stderr).strip().splitlines()[-4:]}


def hooks_get(site: Site) -> str:
    """What a hook gets from the site with the token it reads from the token file at every prompt (none: no header)."""
    said = ast.literal_eval(site.python("from yullu_cli import hooks; print(repr(hooks.token()))"))
    headers = {"Authorization": f"Bearer {said}"} if said else {}
    answer = httpx.get(f"{site.url}/api/memories", params={"limit": 1}, timeout=10, headers=headers)
    return f"{answer.status_code} {answer.text[:160]}"


def drill_smart(site: Site, token: str, clients: int) -> dict[str, Any]:
    load = Load(site, token, f"chaos/smart-{uuid.uuid4().hex[:6]}")
    threads = load.run(clients)
    time.sleep(5)
    offset = site.log.stat().st_size
    stop = site.python("from yullu_core import paths, postgres as pg; c = pg.plan(paths.yullu_home()); "
                       "print(' '.join(pg._run(c, ['pg_ctl', 'stop', '-m', 'smart', '-D', str(c.pgdata), '-t', '60'],"
                       " timeout=90).stdout.split()))")  # fmt: skip
    at = time.monotonic()
    ready = ready_after(site, at)
    time.sleep(5)
    return {"drill": "smart", "pg_ctl": stop, "ready_again_s": ready, **load.result(threads),
            "said": log_since(site, offset)}  # fmt: skip


def drill_twice(site: Site, token: str, clients: int) -> dict[str, Any]:
    load = Load(site, token, f"chaos/twice-{uuid.uuid4().hex[:6]}")
    threads = load.run(clients)
    time.sleep(3)
    same_port = yullu(site, "serve")
    other_port = yullu(site, "serve", port="48059")
    time.sleep(3)
    return {"drill": "twice", "same_port": same_port, "other_port": other_port, **load.result(threads),
            "first_running": site.proc is not None and site.proc.poll() is None}  # fmt: skip


def drill_token(site: Site, token: str, clients: int) -> dict[str, Any]:
    file = Path(site.env["YULLU_HOME"]) / "token"
    load = Load(site, token, f"chaos/token-{uuid.uuid4().hex[:6]}")
    threads = load.run(clients)
    time.sleep(3)
    file.unlink()
    time.sleep(3)
    deleted = {"doctor": yullu(site, "doctor"), "hooks_get": hooks_get(site)}
    file.write_text("yl_" + uuid.uuid4().hex + "\n")
    time.sleep(3)
    rewritten = {"doctor": yullu(site, "doctor"), "hooks_get": hooks_get(site)}
    restored = yullu(site, "token")
    return {"drill": "token", "deleted": deleted, "rewritten": rewritten, "yullu_token": restored,
            "file_after": file.read_text().strip() == token, **load.result(threads)}  # fmt: skip


def main() -> None:
    run_drills(__doc__, "r23", 48050, {"smart": drill_smart, "twice": drill_twice, "token": drill_token})


if __name__ == "__main__":
    main()

"""Chaos drills of round 25 (docs/reliability.md, "Chaos drills (round 25)"), under a steady write load (REST and
MCP clients, bench.chaos_live.Load) on a running site of its own:

- locks: a power cut (`kill -9` of `yullu serve` and of the postmaster at once), then the cluster's postmaster.pid
  and its socket's lock file filled with NUL bytes (what delayed allocation leaves of a file written just before the
  cut), then `yullu serve` again: does it start, and lose no acknowledged store?
- token: the token file overwritten with bytes that are not UTF-8 while the site serves; `yullu doctor`,
  `yullu mcp-headers` and `yullu token` asked; then `yullu serve` started again over a damaged file.

Run (its own home under --base, stopped and deleted after unless --keep):
    python -m bench.chaos_round25 [--drills locks,token] [--clients 2]

Each prints one JSON line: `acked`, `lost` (acknowledged but not in the database afterwards; must be 0), what the
clients saw, the seconds until ready again, and the supervisor's lines the drill caused.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from bench.chaos_live import Load, power_cut, ready_after, run_drills
from bench.chaos_round23 import log_since, yullu
from bench.faults import REPO, Site

DAMAGED = b"\xff\xfe\x00\x9c garbage\n"


def _warnings(site: Site, offset: int) -> list[str]:
    text = site.log.read_bytes()[offset:].decode(errors="replace")
    return [line.split(" WARNING ", 1)[1] for line in text.splitlines() if " WARNING " in line]


def drill_locks(site: Site, token: str, clients: int) -> dict[str, Any]:
    cut = power_cut(site, token, "locks", clients)
    assert site.proc is not None
    locks = [cut.pgdata / "postmaster.pid", cut.pgdata / ".s.PGSQL.5432.lock"]
    for lock in locks:
        lock.write_bytes(b"\0" * lock.stat().st_size)
    offset = site.log.stat().st_size
    site.start()
    ready = ready_after(site, cut.at)
    return {"drill": "locks", "ready_again_s": ready, "supervisor_running": site.proc.poll() is None,
            **cut.load.result(cut.threads), "said": log_since(site, offset),
            "warnings": _warnings(site, offset)}  # fmt: skip


def drill_token(site: Site, token: str, clients: int) -> dict[str, Any]:
    assert site.proc is not None
    load = Load(site, token, f"chaos/token-{uuid.uuid4().hex[:6]}")
    threads = load.run(clients)
    file = Path(site.env["YULLU_HOME"]) / "token"
    file.write_bytes(DAMAGED)
    asked = {"mcp-headers": yullu(site, "mcp-headers")}
    doctor = subprocess.run([sys.executable, "-m", "yullu_cli.main", "doctor"], env=site.env, cwd=REPO,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    asked["doctor"] = {
        "exit": doctor.returncode,
        "said": [line for line in doctor.stdout.splitlines() if "token" in line],
    }
    result = load.result(threads)  # the clients hold the token: the file is not read for their requests
    file.write_bytes(DAMAGED)
    site.stop()
    offset = site.log.stat().st_size
    site.start()
    site.wait_ready()
    return {"drill": "token", **result, "asked": asked, "restart_warnings": _warnings(site, offset),
            "token_written_again": file.read_text().startswith("yl_")}  # fmt: skip


def main() -> None:
    # (the token drill rewrites the token file: each drill reads it again)
    run_drills(__doc__, "r25", 48061, {"locks": drill_locks, "token": drill_token}, token_each=True)


if __name__ == "__main__":
    main()

"""Chaos drills of round 24 (docs/reliability.md, "Chaos drills (round 24)"), under a steady write load (REST and
MCP clients, bench.chaos_live.Load) on a running site of its own:

- reboot: a power cut (`kill -9` of `yullu serve` and of the postmaster at once), then every pid file's pid given to
  another live program, as after a reboot (`run/serve.pid` and `run/beat.pid` a root `sleep`, the cluster's
  `postmaster.pid` a `sleep` of the user PostgreSQL runs as), then `yullu serve` again: does it start, adopt nothing
  it should not, and lose no acknowledged store?
- port: the site stopped, another program (`python -m http.server`) takes its port, `yullu serve`: one line?

Run (its own home under --base, stopped and deleted after unless --keep):
    python -m bench.chaos_round24 [--drills reboot,port] [--clients 2]

Each prints one JSON line: `acked`, `lost` (acknowledged but not in the database afterwards; must be 0), what the
clients saw, the seconds until ready again, and the supervisor's lines the drill caused.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from bench.chaos_live import power_cut, ready_after, run_drills
from bench.chaos_round23 import log_since
from bench.faults import REPO, Site


def _sleeper(*user: str) -> subprocess.Popen[bytes]:
    """A live program that is neither Yul'lu nor PostgreSQL (`user`: run as that system user)."""
    return subprocess.Popen([*(["runuser", "-u", user[0], "--"] if user else []), "sleep", "600"],
                            start_new_session=True)  # fmt: skip


def _pid_of(proc: subprocess.Popen[bytes]) -> int:
    """The `sleep` itself (runuser forks it)."""
    time.sleep(0.5)
    kids = psutil.Process(proc.pid).children()
    return kids[0].pid if kids else proc.pid


def drill_reboot(site: Site, token: str, clients: int) -> dict[str, Any]:
    run = Path(site.env["YULLU_HOME"]) / "run"
    cut = power_cut(site, token, "reboot", clients)
    pgdata, pg_user = cut.pgdata, cut.pg_user
    assert site.proc is not None
    root_sleep, pg_sleep = _sleeper(), _sleeper(pg_user) if pg_user != "root" else _sleeper()
    others = (_pid_of(root_sleep), _pid_of(pg_sleep))
    try:
        for name in ("serve.pid", "beat.pid"):
            (run / name).write_text(str(others[0]))
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        (pgdata / "postmaster.pid").write_text("\n".join([str(others[1]), *lines[1:]]) + "\n")
        offset = site.log.stat().st_size
        site.start()
        ready = ready_after(site, cut.at)
        time.sleep(8)
        beat = [p.pid for p in psutil.Process(site.proc.pid).children() if "beat" in p.cmdline()]
        return {"drill": "reboot", "pids_reused": {"serve.pid/beat.pid": others[0], f"postmaster.pid ({pg_user})":
                others[1]}, "ready_again_s": ready, "supervisor_running": site.proc.poll() is None,
                "beat_running": bool(beat), **cut.load.result(cut.threads), "said": log_since(site, offset),
                "warnings": [line[24:] for line in site.log.read_bytes()[offset:].decode().splitlines()
                             if " WARNING " in line]}  # fmt: skip
    finally:
        for proc in (root_sleep, pg_sleep):
            for p in [*psutil.Process(proc.pid).children(), psutil.Process(proc.pid)]:
                p.kill()
            proc.wait()


def drill_port(site: Site, token: str, clients: int) -> dict[str, Any]:
    site.stop()
    port = site.env["YULLU_PORT"]
    other = subprocess.Popen([sys.executable, "-m", "http.server", port, "--bind", "127.0.0.1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        time.sleep(2)
        done = subprocess.run([sys.executable, "-m", "yullu_cli.main", "serve"], env=site.env, cwd=REPO,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
    finally:
        other.kill()
        other.wait()
    run = Path(site.env["YULLU_HOME"]) / "run"
    site.start()
    site.wait_ready()
    return {"drill": "port", "exit": done.returncode, "said": (done.stdout + done.stderr).strip().splitlines(),
            "left_in_run": sorted(p.name for p in run.iterdir() if p.name != "serve.pid")}  # fmt: skip


def main() -> None:
    run_drills(__doc__, "r24", 48051, {"reboot": drill_reboot, "port": drill_port})


if __name__ == "__main__":
    main()

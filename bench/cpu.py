"""CPU accounting for the load benchmarks: the processes of the server on a home (web, worker,
PostgreSQL), and the CPU seconds each group, the load generator and the whole machine used over a
measured stretch (other users of a shared machine show up in the last)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psutil


def server_groups(home: Path) -> dict[str, list[psutil.Process]]:
    """The processes of the server on this home: web (uvicorn), worker (Celery), postgres."""
    groups: dict[str, list[psutil.Process]] = {"web": [], "worker": [], "postgres": []}
    pidfile = home / "run" / "serve.pid"
    if pidfile.exists():
        try:
            for proc in psutil.Process(int(pidfile.read_text().strip())).children(recursive=True):
                cmd = " ".join(proc.cmdline())
                groups["web" if "uvicorn" in cmd or "multiprocessing" in cmd else "worker"].append(proc)
        except (psutil.Error, ValueError):
            pass
    from yullu_core import postgres as pg

    postmaster = pg.plan(home).pgdata / "postmaster.pid"
    try:
        main = psutil.Process(int(postmaster.read_text().split()[0]))
        groups["postgres"] = [main, *main.children(recursive=True)]
    except (OSError, ValueError, IndexError, psutil.Error):
        pass
    return groups


def cpu_seconds(procs: list[psutil.Process]) -> dict[int, float]:
    out = {}
    for proc in procs:
        try:
            t = proc.cpu_times()
            out[proc.pid] = t.user + t.system
        except psutil.Error:
            pass
    return out


class CpuMeter:
    """CPU seconds used by each server group, this process and the whole machine over a level."""

    def __init__(self, home: Path) -> None:
        self.home = home

    def __enter__(self) -> CpuMeter:
        self.groups = server_groups(self.home)
        self.before = {name: cpu_seconds(procs) for name, procs in self.groups.items()}
        self.self_before = _own_cpu()
        self.machine_before = psutil.cpu_times()
        self.wall = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.monotonic() - self.wall
        # Processes started meanwhile (a postgres backend per new connection) count from zero.
        groups = server_groups(self.home)
        self.used: dict[str, float] = {}
        for name, procs in groups.items():
            after = cpu_seconds(procs)
            self.used[name] = sum(t - self.before[name].get(pid, 0.0) for pid, t in after.items())
        self.used["load_generator"] = _own_cpu() - self.self_before
        machine = psutil.cpu_times()
        busy = sum(getattr(machine, f) - getattr(self.machine_before, f) for f in ("user", "nice", "system", "irq"))
        busy += sum(getattr(machine, f, 0) - getattr(self.machine_before, f, 0) for f in ("softirq", "steal"))
        self.used["machine"] = busy
        self.cores = psutil.cpu_count() or 1

    def report(self, operations: int) -> dict[str, Any]:
        per_op = {name: round(1000 * s / max(1, operations), 2) for name, s in self.used.items()}
        ours = sum(v for k, v in self.used.items() if k != "machine")
        return {
            "cpu_ms_per_op": per_op,
            "machine_busy_share": round(self.used["machine"] / (self.wall * self.cores), 3),
            "other_processes_cpu_share": round(max(0.0, self.used["machine"] - ours) / (self.wall * self.cores), 3),
        }


def _own_cpu() -> float:
    t = psutil.Process().cpu_times()
    return t.user + t.system

"""Wall time of a `yullu` command to its first and second lines of output and to its exit, for two
checkouts run alternately (docs/benchmarks.md, "Start-up of a command"):

    .venv/bin/python -m bench.command_startup BEFORE AFTER RUNS ARGS...
    .venv/bin/python -m bench.command_startup /tmp/main-before . 5 doctor

Each checkout runs as `python -m yullu_cli.main ARGS` with PYTHONPATH set to it (so the venv's
editable install does not pick the code), the lines read from its stdout pipe; medians are reported.
Use one YULLU_HOME whose embedded PostgreSQL is already running, or the first run pays for its start.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time


def timed(tree: str, args: list[str]) -> tuple[float, float, float]:
    """(first line, second line, exit) in seconds from the process's start."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "yullu_cli.main", *args], cwd=tree, text=True,
                            env={**os.environ, "PYTHONPATH": tree}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)  # fmt: skip
    assert proc.stdout is not None
    proc.stdout.readline()
    first = time.perf_counter() - t0
    proc.stdout.readline()
    second = time.perf_counter() - t0
    proc.stdout.read()
    proc.wait()
    return first, second, time.perf_counter() - t0


def main(argv: list[str]) -> None:
    before, after, runs, args = os.path.abspath(argv[0]), os.path.abspath(argv[1]), int(argv[2]), argv[3:]
    times: dict[str, list[tuple[float, float, float]]] = {before: [], after: []}
    for _ in range(runs):
        for tree in (before, after):  # alternated, so the machine's load falls on both alike
            times[tree].append(timed(tree, args))
    for label, tree in (("before", before), ("after", after)):
        first, second, end = (statistics.median(column) for column in zip(*times[tree], strict=True))
        print(f"yullu {' '.join(args):<14} {label:<6} first line {first:.2f} s  second {second:.2f} s  "
              f"exit {end:.2f} s  (n={runs})")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])

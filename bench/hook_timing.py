"""The prompt hook, process start to exit, as an assistant runs it (docs/benchmarks.md, Hooks).

Run against a running `yullu serve` (same YULLU_HOME and YULLU_PORT as the server), in a folder
named like a project that holds memories (the hook's cwd picks the project):

    .venv/bin/python -m bench.hook_timing PROJECT [RUNS] [--console-script]

Each run is one inject with a real prompt and one with a trivial prompt ("ok", skipped before any
request: the cost of starting the hook process). Reported: wall p50/p95 and the hook process's own
CPU (user + system of the child). `--console-script` also times `yullu inject` (the command the
hooks ran before they went through hook_entry.py), interleaved with the installed command.
Standard library only, so it does not disturb what it measures.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from yullu_cli.hooks import hook_argv

PROMPTS = [
    "How do we handle the deploy retries for the staging database?",
    "Why did we choose this cache timeout for the session service?",
    "What does the queue scheduler do when the webhook payload fails?",
    "How should I run the migration for the tenant schema?",
]


def timed(argv: list[str], payload: bytes) -> tuple[float, float]:
    """(wall ms, child CPU ms) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, input=payload, capture_output=True, check=False)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def main(argv: list[str]) -> dict[str, dict[str, float]]:
    project = argv[0]
    runs = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 30
    commands = {"installed (python -I -S hook_entry.py inject)": hook_argv("inject")}
    if "--console-script" in argv:
        commands["console script (yullu inject)"] = [str(Path(sys.executable).with_name("yullu")), "inject"]
    samples: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp) / project
        cwd.mkdir()
        for n in range(runs):
            real = json.dumps({"prompt": PROMPTS[n % len(PROMPTS)], "cwd": str(cwd)}).encode()
            trivial = json.dumps({"prompt": "ok", "cwd": str(cwd)}).encode()
            for name, command in commands.items():
                samples.setdefault(f"{name}, real prompt", []).append(timed(command, real))
                samples.setdefault(f"{name}, trivial prompt", []).append(timed(command, trivial))
    report = {}
    for name, values in samples.items():
        walls = sorted(w for w, _ in values)
        report[name] = {
            "n": len(walls),
            "wall_p50_ms": round(statistics.median(walls), 1),
            "wall_p95_ms": round(walls[min(len(walls) - 1, int(0.95 * len(walls)))], 1),
            "cpu_p50_ms": round(statistics.median(c for _, c in values), 1),
        }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python -m bench.hook_timing PROJECT [RUNS] [--console-script]")
    main(sys.argv[1:])

"""Where a web process's CPU per operation goes, function by function, without a load's noise.

`yullu bench load`'s operations (70 % retrieve_memories, 30 % store_memory, its wordings: bench/load.py)
replayed one at a time in this process against the service layer (memories.search.merged.Recall,
memories.write.create.store_memory: what the MCP tools call), under cProfile with the process's CPU clock.
CPU time, one operation at a time, the embedder's batching thread included (its CPU lands on the caller
waiting for it), so a neighbour's load moves it far less than a throughput does; cProfile's own overhead
inflates pure-Python functions, so compare two checkouts by the same replay, not with a load's ms/op.
The MCP and HTTP layers are not in it (docs/benchmarks.md, issue 34 round seventeen).

Run from a checkout, with a YULLU_HOME whose server (or database) is up; runnable in older checkouts
too (it needs only those two calls), by path:
    python bench/cost_replay.py OUT.pstats [--ops 400] [--seed 1]
    python -c "import pstats; pstats.Stats('OUT.pstats').sort_stats('cumtime').print_stats(40)"
`--plain`: no profiler (OUT is not written), and the embedding model thread's own CPU apart (`model_ms`,
read from /proc; `bodies_ms` = the rest; `pg_ms`: the PostgreSQL backend's CPU over the same operations): the
numbers to compare checkouts by (issue 34 round eighteen).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import random
import sys
import time
import uuid
from pathlib import Path

SEEDED = 200  # bench load's --seed: memories stored, unmeasured, before the first operation
WARM_UP = 30  # operations run before the profile starts (models loaded, caches warm)

Operation = tuple[str, str]  # ("retrieve" | "store", text)


def pick(rng: random.Random, retrieve: float = 0.7) -> Operation:
    """One operation drawn as bench/load.py's pick draws it (retrieve or store), from its words."""
    from bench.load import TOPICS, WORDS

    roll, topic = rng.random(), rng.choice(TOPICS)
    if roll < retrieve:
        return "retrieve", f"how do we handle {topic} for the {' '.join(rng.sample(WORDS, 2))}?"
    fact = uuid.UUID(int=rng.getrandbits(128)).hex[:8]
    return "store", f"Load test fact {fact}: the {' '.join(rng.sample(WORDS, 3))} {topic} uses retries"


def run(project: str, op: Operation) -> None:
    from memories.scope import Scope
    from memories.search.merged import Recall
    from memories.write import create

    kind, text = op
    if kind == "retrieve":
        Recall.judged(text, 5, None, None).run(project)
    else:
        create.store_memory(Scope(project, None), text, "process", [], source="mcp")


def model_thread_cpu() -> float:
    """CPU seconds of this process's embedding batcher thread (its name starts with yullu-, ends -batcher)."""
    import threading

    for thread in threading.enumerate():
        if thread.name.startswith("yullu-") and thread.name.endswith("-batcher") and thread.native_id:
            stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


def backend_cpu() -> float:
    """CPU seconds of this connection's PostgreSQL backend (the embedded server runs on this machine)."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


def replay(out: Path, ops: int, seed: int, plain: bool = False) -> dict[str, float]:
    """Profile `ops` operations into `out` (`plain`: no profiler, nothing written); CPU ms per operation of
    each kind."""
    rng = random.Random(seed)
    project = f"replay-{seed}-{uuid.uuid4().hex[:6]}"
    for _ in range(SEEDED):
        run(project, pick(rng, retrieve=0.0))
    for _ in range(WARM_UP):
        run(project, pick(rng))
    todo = [pick(rng) for _ in range(ops)]
    profile = cProfile.Profile(time.process_time)
    spent = {"retrieve": 0.0, "store": 0.0}
    count = {"retrieve": 0, "store": 0}
    model_before, pg_before = model_thread_cpu(), backend_cpu()
    for op in todo:
        started = time.process_time()
        if not plain:
            profile.enable()
        run(project, op)
        if not plain:
            profile.disable()
        spent[op[0]] += time.process_time() - started
        count[op[0]] += 1
    model, pg = model_thread_cpu() - model_before, backend_cpu() - pg_before
    if not plain:
        profile.dump_stats(str(out))
    report = {f"{k}_ms": 1000 * spent[k] / max(1, count[k]) for k in spent}
    report["all_ms"] = 1000 * sum(spent.values()) / ops
    report["model_ms"] = 1000 * model / ops
    report["bodies_ms"] = report["all_ms"] - report["model_ms"]
    report["pg_ms"] = 1000 * pg / ops  # the statements' server side (issue 34, round twenty-three)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ops", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plain", action="store_true", help="no profiler; the model thread's CPU apart")
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())  # the checkout this runs from, not the installed package
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yullu_site.settings")
    from yullu_cli.django_setup import setup_django

    setup_django()
    report = replay(args.out, args.ops, args.seed, args.plain)
    print(f"{args.out}: {args.ops} operations, CPU ms/op " + ", ".join(f"{k} {v:.2f}" for k, v in report.items()))


if __name__ == "__main__":
    main()

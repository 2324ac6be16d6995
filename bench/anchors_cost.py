"""What code anchors cost a search and the beat task (docs/benchmarks.md, "code anchors").

Stores N memories (default 1,000) in a scratch project, each with one anchor pinned at HEAD of a
real checkout (functions and line ranges of its Python files), then times:
- a search's anchor work on an unchanged HEAD: `demote` over 20 ranked candidates + `annotate` of
  5 hits (the two calls memories.search.queries makes), warm (the per-HEAD cache) and cold (cache
  dropped before each search: one query, verdicts already saved at this HEAD, no git);
- the beat task's `check_project` over all anchors: every row re-checked (`force`, as after a
  new HEAD) and on an unchanged HEAD.

    YULLU_HOME=/tmp/somewhere python -m bench.anchors_cost --repo /path/to/clone

Uses the database of YULLU_HOME / DATABASE_URL; the scratch project is deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

import pygit2

from yullu_cli.django_setup import setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--pin-back", type=int, default=100, help="pin this many first-parent commits before HEAD")
    args = parser.parse_args()
    setup_django()
    print(json.dumps(measure(Path(args.repo), args.memories, args.rounds, args.pin_back), indent=2))


def _candidates(repo_root: Path, count: int, back: int) -> list[Any]:
    from bench.anchors_replay import _defs, _python_files, first_parent_chain
    from memories.anchors import pins
    from memories.anchors.refs import AnchorRef
    from memories.anchors.repo import open_repo

    repo = open_repo(repo_root)
    assert repo is not None
    head = first_parent_chain(repo, back)[0]  # pinned `back` commits ago: the beat has real work at HEAD
    commit = repo.git.get(head)
    assert isinstance(commit, pygit2.Commit)
    out = []
    for path in _python_files(commit.tree, ""):
        data = repo.read(str(commit.tree[path].id)) or b""
        for name, start, end in _defs(data):
            out.append(pins.pin(repo, head, AnchorRef(path, symbol=name)))
            out.append(pins.pin(repo, head, AnchorRef(path, start=start, end=min(end, start + 5))))
    random.Random(1).shuffle(out)
    return (out * (count // max(len(out), 1) + 1))[:count]


def measure(repo_root: Path, count: int, rounds: int, back: int) -> dict[str, Any]:
    from memories.models import Memory, MemoryAnchor, ProjectLocation

    project = "bench/anchors-cost"
    Memory.objects.filter(project_id=project).delete()
    ProjectLocation.objects.update_or_create(project_id=project, defaults={"git_root": str(repo_root)})
    pinned = _candidates(repo_root, count, back)
    memories = Memory.objects.bulk_create(
        [Memory(project_id=project, content=f"fact {n} about {p.path}") for n, p in enumerate(pinned)]
    )
    MemoryAnchor.objects.bulk_create(
        [
            MemoryAnchor(
                memory=m,
                project_id=project,
                path=p.path,
                symbol=p.symbol,
                line_start=p.start,
                line_end=p.end,
                commit=p.commit,
                blob=p.blob,
                text_hash=p.text_hash,
                status="ok",
                checked_head=p.commit,
            )
            for m, p in zip(memories, pinned, strict=True)
        ]
    )
    try:
        beat = _beat_cost(project, repo_root)  # first: the verdicts at HEAD are saved, as in production
        return {"memories": count, "pinned_commits_back": back, **beat, **_search_cost(project, memories, rounds)}
    finally:
        Memory.objects.filter(project_id=project).delete()
        ProjectLocation.objects.filter(project_id=project).delete()


class _Cand:
    memory_id: int
    updated: Any
    score: float
    similarity: float | None
    stale: bool = False

    def __init__(self, m: Any) -> None:
        self.memory_id, self.updated, self.score, self.similarity = m.pk, m.updated_at.timestamp(), 1.0, 0.5


def _search_cost(project: str, memories: list[Any], rounds: int) -> dict[str, Any]:
    from django.db import connection

    from memories.anchors import checks

    rng = random.Random(2)

    def one(cold: bool) -> tuple[float, float]:
        picked = rng.sample(memories, 20)
        cands = [_Cand(m) for m in picked]
        hits = [{"id": m.pk, "project_id": project, "updated_at": m.updated_at.isoformat()} for m in picked[:5]]
        if cold:
            checks.forget_cache()
        began, cpu = time.perf_counter(), time.thread_time()
        checks.demote(project, cands)
        checks.annotate(project, hits)
        return (time.perf_counter() - began) * 1000, (time.thread_time() - cpu) * 1000

    for m in memories:  # warm: every memory seen once at this HEAD
        checks.for_memories(project, {m.pk: checks.stamp(m.updated_at)})

    def select_one() -> float:  # the noise floor of one database round trip on this machine
        began = time.perf_counter()
        with connection.cursor() as cur:
            cur.execute("SELECT 1")
        return (time.perf_counter() - began) * 1000

    warm: list[tuple[float, float]] = []
    cold: list[tuple[float, float]] = []
    floor: list[float] = []
    for _ in range(rounds):  # alternating, so machine load hits all three alike
        warm.append(one(False))
        cold.append(one(True))
        floor.append(select_one())

    def p(values: list[float], q: float) -> float:
        return round(sorted(values)[min(len(values) - 1, int(len(values) * q))], 3)

    # Wall time includes waiting for a core on a shared machine; this thread's CPU time does not
    # (nor the database server's work, which the cold rows' one query adds).
    return {
        "select_1_ms_p50": p(floor, 0.5),
        "search_added_ms_p50_warm": p([w for w, _ in warm], 0.5),
        "search_added_ms_p95_warm": p([w for w, _ in warm], 0.95),
        "search_added_cpu_ms_p50_warm": p([c for _, c in warm], 0.5),
        "search_added_ms_p50_cold": p([w for w, _ in cold], 0.5),
        "search_added_ms_p95_cold": p([w for w, _ in cold], 0.95),
        "search_added_cpu_ms_p50_cold": p([c for _, c in cold], 0.5),
    }


def _beat_cost(project: str, root: Path) -> dict[str, Any]:
    from memories.anchors import checks

    began, cpu = time.perf_counter(), time.process_time()
    forced = checks.check_project(project, root, force=True)
    forced_s, forced_cpu = time.perf_counter() - began, time.process_time() - cpu
    began = time.perf_counter()
    checks.check_project(project, root)
    same_s = time.perf_counter() - began
    per = 1000 / max(forced.anchors, 1)
    return {
        "beat_check_s_per_1000_new_head": round(forced_s * per, 3),
        "beat_check_cpu_s_per_1000_new_head": round(forced_cpu * per, 3),
        "beat_check_s_per_1000_same_head": round(same_s * per, 3),
        "beat_by_status": forced.by_status,
    }


if __name__ == "__main__":
    main()

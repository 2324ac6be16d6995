"""Code anchors checked against the project's HEAD: one row, a project (the beat task, `yullu anchors
check`), or the memories a search returns, with a per-(repository, HEAD) cache; and a stale
memory's place in a ranking."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from django.db import transaction
from django.utils import timezone

from yullu_core.errors import UserError

from ..models import STALE_STATUSES, Memory, MemoryAnchor
from ..scope import known_root
from ..wire import AnchorOut
from . import pins
from .pins import Pin, Verdict
from .refs import AnchorRef
from .repo import Repo, open_repo

log = logging.getLogger(__name__)

_ROOT_TTL_S = 10.0
_roots: dict[str, tuple[float, Path | None]] = {}
# (project, HEAD) → {memory id: (its updated_at, its anchors)}: a search on an unchanged HEAD pays
# neither git nor a query for memories it has seen. Bounded; a new HEAD starts a new entry.
_CACHE_HEADS = 64
_cache: OrderedDict[tuple[str, str], dict[int, tuple[float, list[AnchorOut]]]] = OrderedDict()
_lock = threading.Lock()


def project_root(project_id: str) -> Path | None:
    now = time.monotonic()
    hit = _roots.get(project_id)
    if hit is not None and hit[0] > now:
        return hit[1]
    root = known_root(project_id)
    _roots[project_id] = (now + _ROOT_TTL_S, root)
    return root


def _pin_of(a: MemoryAnchor) -> Pin:
    return Pin(a.path, a.symbol, a.line_start, a.line_end, a.commit, a.blob, a.text_hash)


def check_row(repo: Repo, head: str, a: MemoryAnchor) -> bool:
    """Check (or, never pinned, pin) one anchor row against `head`, in memory. True if it changed."""
    if not a.commit:
        try:
            p = pins.pin(repo, head, AnchorRef(a.path, a.symbol, a.line_start, a.line_end))
        except UserError:
            verdict = Verdict(pins.MISSING, a.path)
        else:
            a.commit, a.blob, a.text_hash, a.line_start, a.line_end = p.commit, p.blob, p.text_hash, p.start, p.end
            verdict = Verdict(pins.OK, p.path, p.start, p.end)
    else:
        verdict = pins.check(repo, head, _pin_of(a))
    before = (a.status, a.current_path, a.current_start, a.current_end, a.checked_head)
    a.status = verdict.status
    a.current_path = verdict.path if verdict.path != a.path else ""
    moved_lines = (verdict.start, verdict.end) != (a.line_start, a.line_end)
    a.current_start, a.current_end = (verdict.start, verdict.end) if moved_lines else (None, None)
    a.checked_head, a.checked_at = head, timezone.now()
    return before != (a.status, a.current_path, a.current_start, a.current_end, a.checked_head)


def _safe_check(repo: Repo, head: str, a: MemoryAnchor) -> bool:
    """check_row for a search: a repository git cannot read (corrupt, permissions) leaves the
    anchor as last checked rather than failing the search."""
    try:
        return check_row(repo, head, a)
    except Exception:  # a search must answer whatever the checkout's state
        log.warning("anchor %s of memory %s could not be checked", a, a.memory_id, exc_info=True)
        return False


CHECK_FIELDS = ["status", "current_path", "current_start", "current_end", "checked_head", "checked_at"]
PIN_FIELDS = ["commit", "blob", "text_hash", "line_start", "line_end"]


def _save_checked(rows: list[MemoryAnchor]) -> None:
    if rows:
        MemoryAnchor.objects.bulk_update(rows, CHECK_FIELDS + PIN_FIELDS)


def anchor_out(a: MemoryAnchor) -> AnchorOut:
    out: AnchorOut = {
        "path": a.path,
        "symbol": a.symbol or None,
        "lines": [a.line_start, a.line_end] if a.line_start is not None and a.line_end is not None else None,
        "status": a.status or None,  # type: ignore[typeddict-item]  # the model's choices are the four
        "commit": a.commit or None,
    }
    if a.current_path:
        out["current_path"] = a.current_path
    if a.current_start is not None and a.current_end is not None:
        out["current_lines"] = [a.current_start, a.current_end]
    return out


def anchors_of(memory: Memory) -> list[AnchorOut]:
    """A memory's anchors as pinned (the order they were given in), as get_memory and an update answer them."""
    return [anchor_out(a) for a in memory.anchors.order_by("id")]


def is_stale(anchors: Iterable[AnchorOut]) -> bool:
    return any(a["status"] in STALE_STATUSES for a in anchors)


def head_of(project_id: str) -> tuple[Repo | None, str]:
    repo = open_repo(project_root(project_id))
    head = repo.head() if repo else None
    return repo, head or ""


def stamp(updated: datetime | str | float | None) -> float:
    """A memory's updated_at as the cache's key (epoch seconds to the millisecond): searches see it
    as a float (queries' candidates), hits as ISO text, the ORM as a datetime."""
    if updated is None:
        return 0.0
    if isinstance(updated, str):
        updated = datetime.fromisoformat(updated)
    if isinstance(updated, datetime):
        updated = updated.timestamp()
    return round(updated, 3)


def for_memories(project_id: str, memories: dict[int, float]) -> dict[int, list[AnchorOut]]:
    """The anchors of these memories (id → its updated_at, which keys the cache), checked against
    the project's HEAD. Each (memory, HEAD) is checked once: later searches answer from memory."""
    if not memories:
        return {}
    repo, head = head_of(project_id)
    key = (project_id, head)
    with _lock:
        seen = _cache.get(key)
        if seen is None:
            seen = _cache[key] = {}
            while len(_cache) > _CACHE_HEADS:
                _cache.popitem(last=False)
        else:
            _cache.move_to_end(key)
        out = {mid: hit[1] for mid, stamp in memories.items() if (hit := seen.get(mid)) and hit[0] == stamp}
    todo = [mid for mid in memories if mid not in out]
    if not todo:
        return out
    rows = list(MemoryAnchor.objects.filter(memory_id__in=todo).order_by("id"))
    changed = [a for a in rows if repo is not None and head and a.checked_head != head and _safe_check(repo, head, a)]
    _save_checked(changed)
    found: dict[int, list[AnchorOut]] = {mid: [] for mid in todo}
    for a in rows:
        found[a.memory_id].append(anchor_out(a))
    with _lock:
        for mid in todo:
            seen[mid] = (memories[mid], found[mid])
    out.update(found)
    return out


def annotate(project_id: str, hits: Sequence[Any]) -> None:
    """Add `anchors` and `stale` to recall hits (dicts with id, updated_at, project_id)."""
    by_project: dict[str, dict[int, float]] = {}
    for h in hits:
        by_project.setdefault(h["project_id"], {})[h["id"]] = stamp(h["updated_at"])
    found: dict[int, list[AnchorOut]] = {}
    for project, ids in by_project.items():
        found.update(for_memories(project, ids))
    for h in hits:
        h["anchors"] = found.get(h["id"], [])
        h["stale"] = is_stale(h["anchors"])


def forget_cache() -> None:
    """Tests and re-pins: drop what this process remembers."""
    with _lock:
        _cache.clear()
    _roots.clear()


@dataclass
class ProjectCheck:
    project_id: str
    git_root: str | None
    head: str | None
    anchors: int
    checked: int  # rows whose verdict was computed now (HEAD moved since their last check)
    by_status: dict[str, int]
    stale: list[dict[str, Any]]  # [{id, content, anchors: [AnchorOut]}]

    def as_dict(self) -> dict[str, Any]:
        return {
            "project_id": self.project_id,
            "git_root": self.git_root,
            "head": self.head,
            "anchors": self.anchors,
            "checked": self.checked,
            "by_status": self.by_status,
            "stale_memories": self.stale,
        }


def check_project(project_id: str, root: Path | None = None, *, force: bool = False) -> ProjectCheck:
    """Every anchor of the project's current memories against HEAD (the beat task and `yullu anchors
    check`). Rows already checked at this HEAD are not checked again unless `force`."""
    root = root or project_root(project_id)
    repo = open_repo(root)
    head = repo.head() if repo else None
    rows = list(
        MemoryAnchor.objects.filter(
            project_id=project_id, memory__in=Memory.objects.current().filter(project_id=project_id)
        )
        .select_related("memory")
        .order_by("memory_id", "id")
    )
    todo = [a for a in rows if repo is not None and head and (force or a.checked_head != head)]
    changed = [a for a in todo if check_row(repo, head, a)] if repo is not None and head else []
    with transaction.atomic():
        _save_checked(changed)
    by_status: dict[str, int] = {}
    stale: dict[int, dict[str, Any]] = {}
    for a in rows:
        by_status[a.status or "unchecked"] = by_status.get(a.status or "unchecked", 0) + 1
        if a.status in STALE_STATUSES:
            entry = stale.setdefault(a.memory_id, {"id": a.memory_id, "content": a.memory.content, "anchors": []})
            entry["anchors"].append(anchor_out(a))
    return ProjectCheck(
        project_id, str(root) if root else None, head, len(rows), len(todo), by_status, list(stale.values())
    )


def cited(anchor: AnchorOut) -> str:
    """An anchor as it was given (AnchorRef's spelling, as the admin shows it): path, path::Symbol or
    path:40-58, so two ranges of one file are told apart."""
    first, last = anchor["lines"] or (None, None)
    return str(AnchorRef(anchor["path"], anchor["symbol"] or "", first, last))


def describe(result: ProjectCheck) -> str:
    """`yullu anchors check`'s human output: one line per stale memory and its stale anchors."""
    lines = [f"{result.project_id}: {result.anchors} anchors at {(result.head or 'no checkout')[:12]}"]
    lines.append("  " + ", ".join(f"{n} {s}" for s, n in sorted(result.by_status.items())) if result.by_status else "")
    for memory in result.stale:
        lines.append(f"stale memory {memory['id']}: {memory['content'][:100]}")
        for a in memory["anchors"]:
            # The cited path is the pinned one; a renamed file's code is elsewhere now (walk, lane team23).
            now = f" (now in {a['current_path']})" if a.get("current_path") else ""
            lines.append(f"  {a['status']}: {cited(a)}{now}")
    if not result.stale:
        lines.append("no stale memories")
    return "\n".join(line for line in lines if line)


def check_known_projects() -> list[ProjectCheck]:
    """The beat task: every project with anchors and a known checkout on this machine."""
    from ..models import ProjectLocation

    projects = set(MemoryAnchor.objects.values_list("project_id", flat=True).distinct())
    out = []
    for loc in ProjectLocation.objects.filter(project_id__in=projects):
        root = Path(loc.git_root)
        if (root / ".git").exists():
            out.append(check_project(loc.project_id, root))
    return out


def stale_paths(anchors: Iterable[AnchorOut]) -> list[str]:
    """The cited paths whose code changed or is gone, for "cited code changed since …" notes: where the
    code is now when its file was renamed (walk 19: the prompt hook named src/billing.py, a file gone since
    its rename to src/payments.py, while `yullu memories search` named the new path)."""
    paths: list[str] = []
    for a in anchors:
        path = a.get("current_path") or a["path"]
        if a["status"] in STALE_STATUSES and path not in paths:
            paths.append(path)
    return paths


# Score a stale memory loses in a search (fused scores are ~ cosine + keyword + recency). Measured
# with bench/anchors_rank.py (docs/benchmarks.md, "code anchors: ranking"): 0.3 is the
# smallest weight that put the current version of a fact above its stale version in 20 of 20
# pairs (0.15: 16, 0: 11); a stale memory alone stayed the first hit in 18 of 19 questions (19 at
# 0.15), and it is still returned: the gate, not the score, decides what is sent.
W_STALE = 0.3


class Ranked(Protocol):
    memory_id: int
    updated: Any
    score: float
    similarity: float | None
    stale: bool


R = TypeVar("R", bound=Ranked)


def demote(project_id: str, ordered: list[R], weight: float | None = None) -> list[R]:
    """`ordered` with stale memories moved down by `weight` (W_STALE) of score, re-sorted."""
    weight = W_STALE if weight is None else weight
    stamps = {c.memory_id: stamp(c.updated) for c in ordered}
    found = for_memories(project_id, stamps) if weight else {}
    stale = {mid for mid, anchors in found.items() if is_stale(anchors)}
    if not stale:
        return ordered
    for c in ordered:
        if c.memory_id in stale:
            c.score -= weight
            c.stale = True  # so that a later reordering (queries.closest_first) keeps it below
    return sorted(ordered, key=lambda c: (-c.score, -(c.similarity or 0.0), -c.memory_id))

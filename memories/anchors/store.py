"""The database side of code anchors: attach them to a memory (pinned when the caller's checkout is
readable), check them against the project's HEAD with a per-(repository, HEAD) cache, re-pin them,
and list stale memories. memories.services calls in here; nothing here calls services."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NotRequired, Protocol, TypedDict, TypeVar

from django.db import transaction
from django.utils import timezone

from yullu_core.errors import UserError

from ..models import STALE_STATUSES, Memory, MemoryAnchor
from ..scope import known_root
from ..serializers import AnchorOut
from . import pins, refs
from .pins import Pin, Verdict
from .refs import AnchorRef
from .repo import Repo, open_repo, unified_diff

log = logging.getLogger(__name__)
_HEX = re.compile(r"^[0-9a-f]{1,64}$")


class AnchorWire(TypedDict):
    """An anchor as it travels in a sync event (docs/contract.md §12, Team)."""

    path: str
    symbol: NotRequired[str]
    lines: NotRequired[list[int]]
    commit: NotRequired[str]
    blob: NotRequired[str]
    text_hash: NotRequired[str]


@dataclass(frozen=True)
class Prepared:
    """An anchor ready to store: what it cites, and its pin when the checkout was readable."""

    ref: AnchorRef
    pin: Pin | None


# --- writing ----------------------------------------------------------------------------


def prepare(
    raw: Any, content: str | None, root: Path | None, *, detect: bool = True, lenient: bool = False
) -> list[Prepared] | None:
    """Validate and pin the `anchors` argument (None: not given) plus the paths written in `content`
    that exist in the repository. UserError for an anchor outside the repository or not in it
    (`lenient`: such anchors are dropped instead, for writers that are not a person: dreaming, a
    supersede carrying anchors over); None when neither gives anything and `raw` was not given
    (the memory's anchors stay as they are)."""
    given = refs.parse_all(raw) if not lenient else _parse_lenient(raw)
    repo = open_repo(root)
    head = repo.head() if repo else None
    out: list[Prepared] = []
    for ref in given:
        try:
            if root is not None and not refs.inside(root, ref.path):
                raise UserError(f"anchor {str(ref)!r} is outside the repository (a symlink leaves it).")
            out.append(Prepared(ref, pins.pin(repo, head, ref) if repo and head else None))
        except UserError:
            if not lenient:
                raise
    if detect and content and repo is not None and head is not None and root is not None:
        cited = {p.ref.path for p in out}
        for ref in refs.detect(content):
            if ref.path in cited or len(out) >= refs.MAX_ANCHORS or not refs.inside(root, ref.path):
                continue
            try:
                out.append(Prepared(ref, pins.pin(repo, head, ref)))
            except UserError:
                continue  # a name that only looks like a path, or lines the file does not have
            cited.add(ref.path)
    if raw is None and not out:
        return None
    return out


def _parse_lenient(raw: Any) -> list[AnchorRef]:
    out: list[AnchorRef] = []
    for item in raw if isinstance(raw, (list, tuple)) else []:
        try:
            ref = refs.parse(item)
        except UserError:
            continue
        if ref not in out:
            out.append(ref)
    return out[: refs.MAX_ANCHORS]


def refs_now(memory: Memory) -> list[str]:
    """The memory's anchors as strings naming where their code is now (a renamed file's new path,
    moved lines), leaving out those whose code is gone: what a successor of the memory cites."""
    out = []
    for a in MemoryAnchor.objects.filter(memory=memory).order_by("id"):
        if a.status == pins.MISSING:
            continue
        path = a.current_path or a.path
        start = a.current_start if a.current_start is not None else a.line_start
        end = a.current_end if a.current_end is not None else a.line_end
        out.append(str(AnchorRef(path, a.symbol, None if a.symbol else start, None if a.symbol else end)))
    return out


def _row(memory: Memory, item: Prepared) -> MemoryAnchor:
    ref, p = item.ref, item.pin
    now = timezone.now()
    return MemoryAnchor(
        memory=memory,
        project_id=memory.project_id,
        path=ref.path,
        symbol=ref.symbol,
        line_start=p.start if p else ref.start,
        line_end=p.end if p else ref.end,
        commit=p.commit if p else "",
        blob=p.blob if p else "",
        text_hash=p.text_hash if p else "",
        status=pins.OK if p else "",
        checked_head=p.commit if p else "",
        checked_at=now if p else None,
    )


def attach(memory: Memory, items: Sequence[Prepared]) -> list[MemoryAnchor]:
    """Replace the memory's anchors with `items`. Inside the write's transaction."""
    MemoryAnchor.objects.filter(memory=memory).delete()
    return MemoryAnchor.objects.bulk_create([_row(memory, i) for i in items])


def to_wire(rows: Iterable[MemoryAnchor]) -> list[AnchorWire]:
    out: list[AnchorWire] = []
    for a in rows:
        item: AnchorWire = {"path": a.path}
        if a.symbol:
            item["symbol"] = a.symbol
        if a.line_start is not None and a.line_end is not None:
            item["lines"] = [a.line_start, a.line_end]
        if a.commit:
            item.update({"commit": a.commit, "blob": a.blob, "text_hash": a.text_hash})
        out.append(item)
    return out


def wire_of(memory: Memory) -> list[AnchorWire]:
    return to_wire(MemoryAnchor.objects.filter(memory=memory).order_by("id"))


def from_wire(memory: Memory, items: Sequence[AnchorWire]) -> None:
    """A teammate's anchors (a sync event): stored as pinned there, checked here against our own
    checkout on the next retrieval or beat tick. Inside the apply's transaction."""
    MemoryAnchor.objects.filter(memory=memory).delete()
    add_from_wire([(memory, items)])


def add_from_wire(pairs: Sequence[tuple[Memory, Sequence[AnchorWire] | None]]) -> None:
    """Anchors for memories that have none yet (new rows from a teammate's log), in one statement."""
    rows = []
    for memory, items in pairs:
        for item in items or []:
            lines: list[int | None] = [*item["lines"]] if "lines" in item else [None, None]
            rows.append(
                MemoryAnchor(
                    memory=memory,
                    project_id=memory.project_id,
                    path=item["path"],
                    symbol=item.get("symbol", ""),
                    line_start=lines[0],
                    line_end=lines[1],
                    commit=item.get("commit", ""),
                    blob=item.get("blob", ""),
                    text_hash=item.get("text_hash", ""),
                )
            )
    if rows:
        MemoryAnchor.objects.bulk_create(rows)


# --- checking ---------------------------------------------------------------------------

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


def is_stale(anchors: Iterable[AnchorOut]) -> bool:
    return any(a["status"] in STALE_STATUSES for a in anchors)


def _head(project_id: str) -> tuple[Repo | None, str]:
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
    repo, head = _head(project_id)
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


# --- stale memories: the admin queue, re-pin, the diff ----------------------------------


def stale_ids(project_id: str | None = None) -> list[int]:
    rows = MemoryAnchor.objects.filter(status__in=STALE_STATUSES, memory__superseded_by__isnull=True)
    if project_id is not None:
        rows = rows.filter(project_id=project_id)
    return sorted(set(rows.values_list("memory_id", flat=True)))


def stale_count(project_id: str | None = None) -> int:
    return len(stale_ids(project_id))


def repin(memory: Memory, *, strict: bool = True) -> list[MemoryAnchor] | None:
    """Keep: pin every anchor of `memory` again at HEAD, where its code is now (a renamed file's new
    path; a symbol's or moved lines' current lines). An anchor whose code is gone is dropped.
    Inside the caller's transaction; the caller publishes the change (a re-pin is an event)."""
    repo, head = _head(memory.project_id)
    if repo is None or not head:
        if not strict:
            return None  # no checkout here: the anchors stay as they were pinned
        raise UserError("re-pin needs the project's checkout on this machine: run a tool with cwd in it first.")
    rows = list(MemoryAnchor.objects.filter(memory=memory).order_by("id"))
    if not rows and not strict:
        return None
    kept: list[Prepared] = []
    for a in rows:
        path = a.current_path or a.path
        start = a.current_start if a.current_start is not None else a.line_start
        end = a.current_end if a.current_end is not None else a.line_end
        ref = AnchorRef(path, a.symbol, None if a.symbol else start, None if a.symbol else end)
        try:
            kept.append(Prepared(ref, pins.pin(repo, head, ref)))
        except UserError:
            continue
    forget_cache()
    return attach(memory, kept)


def diff(a: MemoryAnchor) -> str:
    """The cited code between the pinned commit and HEAD, as a unified diff ('' when unreadable)."""
    repo, head = _head(a.project_id)
    if repo is None or not head:
        return ""
    before = repo.read(a.blob)
    if before is not None and a.line_start is not None and a.line_end is not None:
        before = "\n".join(before.decode("utf-8", "replace").splitlines()[a.line_start - 1 : a.line_end]).encode()
    path = a.current_path or a.path
    blob = repo.blob_id(head, path)
    after = repo.read(blob) if blob else None
    if after is not None and (a.symbol or a.line_start is not None):
        start = a.current_start if a.current_start is not None else a.line_start
        end = a.current_end if a.current_end is not None else a.line_end
        if a.symbol:
            from .symbols import find

            span = find(path, after, a.symbol)
            start, end = span if span else (None, None)
        if start is not None and end is not None:
            after = "\n".join(after.decode("utf-8", "replace").splitlines()[start - 1 : end]).encode()
        elif a.symbol:
            after = None
    return unified_diff(before, after, a.path, path)


# --- ranking ----------------------------------------------------------------------------

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
    return sorted(ordered, key=lambda c: (-c.score, -(c.similarity or 0.0), -c.memory_id))


def describe(result: ProjectCheck) -> str:
    """`yullu anchors check`'s human output: one line per stale memory and its stale anchors."""
    lines = [f"{result.project_id}: {result.anchors} anchors at {(result.head or 'no checkout')[:12]}"]
    lines.append("  " + ", ".join(f"{n} {s}" for s, n in sorted(result.by_status.items())) if result.by_status else "")
    for memory in result.stale:
        lines.append(f"stale memory {memory['id']}: {memory['content'][:100]}")
        for a in memory["anchors"]:
            where = a["path"] + (f"::{a['symbol']}" if a["symbol"] else "")
            lines.append(f"  {a['status']}: {where}")
    if not result.stale:
        lines.append("no stale memories")
    return "\n".join(line for line in lines if line)


def stale_paths(anchors: Iterable[AnchorOut]) -> list[str]:
    """The cited paths whose code changed or is gone, for "cited code changed since …" notes."""
    paths: list[str] = []
    for a in anchors:
        if a["status"] in STALE_STATUSES and a["path"] not in paths:
            paths.append(a["path"])
    return paths


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


def stale_rows(project_id: str | None, limit: int = 30) -> list[dict[str, Any]]:
    """The Stale queue's page: stale memories (newest first), each with its anchors and, for the
    stale ones, the cited code's diff between the pinned commit and HEAD."""
    ids = stale_ids(project_id)
    memories = Memory.objects.filter(pk__in=ids).order_by("-updated_at", "-id")[:limit]
    by_memory: dict[int, list[MemoryAnchor]] = {}
    for a in MemoryAnchor.objects.filter(memory_id__in=[m.pk for m in memories]).order_by("id"):
        by_memory.setdefault(a.memory_id, []).append(a)
    rows = []
    for m in memories:
        anchors = [
            {**anchor_out(a), "diff": diff(a) if a.status in STALE_STATUSES else ""} for a in by_memory.get(m.pk, [])
        ]
        rows.append({"m": m, "anchors": anchors})
    return rows


def stale_notes(memory_ids: Sequence[int], max_diff: int = 1500) -> dict[int, list[dict[str, Any]]]:
    """For dreaming's context: each stale memory's changed anchors with the diff of their code
    (cut to `max_diff` characters), so the reasoner may propose an update."""
    out: dict[int, list[dict[str, Any]]] = {}
    rows = MemoryAnchor.objects.filter(memory_id__in=memory_ids, status__in=STALE_STATUSES).order_by("id")
    for a in rows:
        text = diff(a)
        where = a.path + (f"::{a.symbol}" if a.symbol else "")
        out.setdefault(a.memory_id, []).append({"anchor": where, "status": a.status, "diff": text[:max_diff]})
    return out


def clean_wire(raw: Any) -> list[AnchorWire]:
    """Anchors read from a file (an export being imported): the well-formed ones, paths inside the
    repository; anything else is dropped."""
    out: list[AnchorWire] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            continue
        try:
            anchor: AnchorWire = {"path": refs.clean_path(item["path"], item["path"])}
        except UserError:
            continue
        if isinstance(item.get("symbol"), str) and item["symbol"]:
            anchor["symbol"] = item["symbol"][: refs.MAX_SYMBOL]
        lines = item.get("lines")
        if isinstance(lines, list) and len(lines) == 2 and all(isinstance(n, int) and n > 0 for n in lines):
            anchor["lines"] = [lines[0], max(lines)]
        pins_ok = all(isinstance(item.get(k), str) and _HEX.match(item[k]) for k in ("commit", "blob", "text_hash"))
        if pins_ok:
            anchor.update({"commit": item["commit"], "blob": item["blob"], "text_hash": item["text_hash"]})
        out.append(anchor)
    return out[: refs.MAX_ANCHORS]


def cited(memory: Memory) -> list[str]:
    """The memory's anchors as the strings they were given as (the admin form shows these)."""
    rows = MemoryAnchor.objects.filter(memory=memory).order_by("id")
    return [
        str(AnchorRef(a.path, a.symbol, None if a.symbol else a.line_start, None if a.symbol else a.line_end))
        for a in rows
    ]

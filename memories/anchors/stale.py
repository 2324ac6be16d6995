"""Stale memories (docs/contract.md §12): the admin's queue, re-pinning a memory's anchors where their code
is now, and the diff of cited code between its pin and HEAD (the queue's and dreaming's)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from access import policy as access
from yullu_core.errors import UserError

from ..models import STALE_STATUSES, Memory, MemoryAnchor
from . import pins
from .checks import anchor_out, forget_cache, head_of
from .refs import AnchorRef
from .repo import unified_diff
from .store import Prepared, attach


def stale_ids(project_id: str | None = None) -> list[int]:
    """Stale memories of the projects the caller may read (the admin's Stale queue and dashboard are
    everyone's with a role: a project they may not read answers as one that does not exist)."""
    rows = access.only_visible(
        MemoryAnchor.objects.filter(status__in=STALE_STATUSES, memory__superseded_by__isnull=True)
    )
    if project_id is not None:
        access.require(project_id, access.READ)
        rows = rows.filter(project_id=project_id)
    return sorted(set(rows.values_list("memory_id", flat=True)))


def anchored_projects() -> list[str]:
    """The projects with anchors that the caller may read (the Stale queue's project choice)."""
    return sorted(set(access.only_visible(MemoryAnchor.objects.all()).values_list("project_id", flat=True)))


def stale_count(project_id: str | None = None) -> int:
    return len(stale_ids(project_id))


def repin(memory: Memory, *, strict: bool = True) -> list[MemoryAnchor] | None:
    """Keep: pin every anchor of `memory` again at HEAD, where its code is now (a renamed file's new
    path; a symbol's or moved lines' current lines). An anchor whose code is gone is dropped.
    Inside the caller's transaction; the caller publishes the change (a re-pin is an event)."""
    repo, head = head_of(memory.project_id)
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
    repo, head = head_of(a.project_id)
    if repo is None or not head:
        return ""
    pinned = before = repo.read(a.blob)
    old_first = new_first = 1
    if before is not None and a.line_start is not None and a.line_end is not None:
        before = _span(before, a.line_start, a.line_end)
        old_first = a.line_start
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
        elif a.status == pins.CHANGED and pinned is not None and a.line_start is not None and a.line_end is not None:
            # A changed span's verdict keeps the pinned numbers; read at HEAD they cut off what an added line
            # pushed down (its last line showed as removed). Follow the lines through the file's own diff.
            start, end = follow(_text_lines(pinned), _text_lines(after), a.line_start, a.line_end)
        if start is not None and end is not None:
            after = _span(after, start, end)
            new_first = start
        elif a.symbol:
            after = None
    return unified_diff(before, after, a.path, path, first_lines=(old_first, new_first))


def _text_lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines()


def _span(data: bytes, start: int, end: int) -> bytes:
    """Lines `start`..`end` (1-based) of a file's bytes."""
    return "\n".join(_text_lines(data)[start - 1 : end]).encode()


def follow(before: list[str], after: list[str], start: int, end: int) -> tuple[int, int]:
    """Where lines `start`..`end` (1-based) of `before` are in `after`, by a line diff of the two: an unchanged
    line keeps its place relative to its neighbours, a replaced one maps to its replacement, lines inserted
    inside the span join it, and a span whose lines are all gone ends before it starts (nothing there now). A line
    that changed places with its neighbour maps to that neighbour (_swaps_as_replacements)."""
    first, last = start - 1, end - 1
    new_first, new_last = first, last
    opcodes = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in _swaps_as_replacements(before, after, opcodes):
        if i1 <= first < i2:
            new_first = j1 + (first - i1) if tag == "equal" else j1
        if i1 <= last < i2:
            new_last = j1 + (last - i1) if tag == "equal" else j2 - 1
    return new_first + 1, new_last + 1


Opcode = tuple[str, int, int, int, int]


def _swaps_as_replacements(before: list[str], after: list[str], opcodes: Sequence[Opcode]) -> list[Opcode]:
    """Two neighbouring blocks of as many lines that changed places, read as each replacing the other. difflib
    says "X inserted, E kept, X deleted" (it keeps the earlier block): a cited last line swapped with the next
    one was followed down a line and the next one counted as added inside the span, so the diff showed new code
    where a line had only moved. Read as replacements, the span keeps its place: the cited line moved out, its
    neighbour in."""
    out: list[Opcode] = []
    k = 0
    while k < len(opcodes):
        window = opcodes[k : k + 3]
        if [op[0] for op in window] == ["insert", "equal", "delete"]:
            (_, _, _, xj1, xj2), (_, ei1, ei2, ej1, ej2), (_, di1, di2, _, _) = window
            if xj2 - xj1 == ei2 - ei1 and after[xj1:xj2] == before[di1:di2]:  # the same lines, moved past E
                out += [("replace", ei1, ei2, xj1, xj2), ("replace", di1, di2, ej1, ej2)]
                k += 3
                continue
        out.append(opcodes[k])
        k += 1
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

"""The database side of code anchors, writing: attach them to a memory (pinned when the caller's
checkout is readable), their wire form in sync events and exports, and the strings they were given
as. memories.write calls in here; nothing here calls the write side. Checking against HEAD:
memories.anchors.checks; the stale queue and re-pins: memories.anchors.stale."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from django.utils import timezone

from yullu_core.errors import UserError

from ..models import Memory, MemoryAnchor
from . import pins, refs
from .pins import Pin
from .refs import AnchorRef
from .repo import open_repo

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
            # a symbol the file does not define (a typo, another language's form) still cites its file
            for candidate in (ref, AnchorRef(ref.path)) if ref.symbol else (ref,):
                try:
                    out.append(Prepared(candidate, pins.pin(repo, head, candidate)))
                except UserError:
                    continue  # a name that only looks like a path, or lines the file does not have
                cited.add(ref.path)
                break
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

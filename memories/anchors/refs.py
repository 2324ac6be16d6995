"""Anchor strings (`path`, `path:40-58`, `path::Clock.now`), their safety, and detection in content."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yullu_core.errors import UserError

MAX_ANCHORS = 20
MAX_PATH = 1000
MAX_SYMBOL = 300
FORMS = "anchors must be a list of strings like 'app/clock.py', 'app/clock.py:40-58' or 'app/clock.py::Clock.now'."
# A bare `name.ext` (no folder, no line) counts as a path only with one of these extensions ("e.g.", "v1.2" do not).
_FILE_EXT = re.compile(r"\.(py|pyi|ts|tsx|js|jsx|mjs|go|rs|java|rb|md|toml|yaml|yml|json|cfg|ini|sh|sql|c|h|cpp)$")
_LINES = re.compile(r"^(?P<path>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$")
_SYMBOL = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*$")
# A path written in prose: segments of word characters, dots and dashes with at least one `/` or a
# file extension, optionally `:line`, `:start-end` or `::Symbol` (the anchor forms). Backticks and quotes around it
# are fine.
_IN_TEXT = re.compile(
    r"(?<![\w./-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z0-9]{1,10})"
    r"(?::(\d+)(?:-(\d+))?|::([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*))?(?![\w/-])"
)


@dataclass(frozen=True)
class AnchorRef:
    """What an anchor cites: a file, a symbol in it, or a line range (1-based, inclusive)."""

    path: str
    symbol: str = ""
    start: int | None = None
    end: int | None = None

    def __str__(self) -> str:
        if self.symbol:
            return f"{self.path}::{self.symbol}"
        if self.start is not None:
            return f"{self.path}:{self.start}-{self.end}" if self.end != self.start else f"{self.path}:{self.start}"
        return self.path


def clean_path(raw: str, label: str) -> str:
    """A repository-relative POSIX path, or UserError: absolute paths and `..` leave the repository."""
    path = raw.strip().replace("\\", "/")
    if not path or "\x00" in path or len(path) > MAX_PATH:
        raise UserError(f"anchor {label!r}: give a file path relative to the repository root.")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path) or path.startswith("~"):
        raise UserError(f"anchor {label!r} is outside the repository: give a path relative to its root.")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UserError(f"anchor {label!r} is outside the repository: '..' is not allowed.")
    if not parts or parts[0] == ".git":
        raise UserError(f"anchor {label!r}: give a file path relative to the repository root.")
    return posixpath.join(*parts)


def parse(raw: Any) -> AnchorRef:
    """One anchor string → AnchorRef, or UserError naming it."""
    if not isinstance(raw, str):
        raise UserError(FORMS)
    text = raw.strip()
    if "::" in text:
        path, _, symbol = text.partition("::")
        symbol = symbol.strip()
        if not _SYMBOL.match(symbol) or len(symbol) > MAX_SYMBOL:
            raise UserError(f"anchor {raw!r}: the symbol must be a name like Clock.now.")
        return AnchorRef(clean_path(path, raw), symbol=symbol)
    m = _LINES.match(text)
    if m:
        start, end = int(m["start"]), int(m["end"] or m["start"])
        if start < 1 or end < start:
            raise UserError(f"anchor {raw!r}: lines must be start-end with 1 <= start <= end.")
        return AnchorRef(clean_path(m["path"], raw), start=start, end=end)
    return AnchorRef(clean_path(text, raw))


def parse_all(raw: Any) -> list[AnchorRef]:
    """The `anchors` argument of a write path: None or a list of strings; duplicates dropped."""
    if raw is None:
        return []
    if isinstance(raw, str) or not isinstance(raw, (list, tuple)):
        raise UserError(FORMS)
    out: list[AnchorRef] = []
    for item in raw:
        ref = parse(item)
        if ref not in out:
            out.append(ref)
    if len(out) > MAX_ANCHORS:
        raise UserError(f"at most {MAX_ANCHORS} anchors per memory.")
    return out


def inside(root: Path, path: str) -> bool:
    """Whether `path` (relative, already cleaned) resolves inside `root` in the working tree:
    a symlink on the way that leaves the repository makes it outside."""
    real_root = root.resolve()
    target = (root / path).resolve()
    return target == real_root or real_root in target.parents


def detect(content: str) -> list[AnchorRef]:
    """Candidate anchors written in the text (`billing/clock.py`, `src/app.py:40-58`, `billing/clock.py::Clock.now`);
    the caller keeps those that exist in the repository. Unsafe or malformed ones are skipped, not refused. A
    symbol written after its file cites the symbol: read as the whole file, any edit of the file made the memory
    stale (walk 23)."""
    found: list[AnchorRef] = []
    for m in _IN_TEXT.finditer(content):
        path = m.group(1).rstrip(".")
        if "/" not in path and not m.group(2) and not _FILE_EXT.search(path):
            continue
        try:
            clean = clean_path(path, path)
        except UserError:
            continue
        start = int(m.group(2)) if m.group(2) else None
        end = int(m.group(3)) if m.group(3) else start
        ref = AnchorRef(clean, start=start, end=end) if start and end and end >= start else AnchorRef(clean)
        if m.group(4) and len(m.group(4)) <= MAX_SYMBOL:
            ref = AnchorRef(clean, symbol=m.group(4))
        if ref not in found:
            found.append(ref)
    return found[:MAX_ANCHORS]

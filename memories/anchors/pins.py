"""Pinning one anchor and checking it against a commit (docs/contract.md §12). Pure: a Repo in, a Pin or a
Verdict out; the database side is memories.anchors.store (writing), .checks and .stale.

The cited text is compared after normalising whitespace (runs of spaces, tabs, newlines and blank
lines are one space), so re-indenting, re-wrapping blank lines or formatting elsewhere in the file
changes nothing; any change to the words of the cited code does."""

from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass
from functools import lru_cache

from yullu_core.errors import UserError

from . import symbols
from .refs import AnchorRef
from .repo import Repo

OK, MOVED, CHANGED, MISSING = "ok", "moved", "changed", "missing"
# A whole-file anchor is `changed` when less than this share of its (normalised, non-blank) lines
# survive: the file was rewritten, as git's own rename detection calls a file "the same" at 50%.
FILE_KEPT = 0.5
# ... or, in a small file, when any of its lines is gone: what a memory says of a file this short is most
# of the file (3 of payout_worker.ex's 7 lines, the dispute logic, removed left 57% and kept it `ok`).
# bench.anchors_files on flask's history: this catches 2-3x the real changes (5.6% -> 13.4%) with the
# same false alarms on untouched parts (0.1%) (docs/benchmarks.md "Whole-file anchors").
SMALL_FILE = 20


@dataclass(frozen=True)
class Pin:
    path: str
    symbol: str
    start: int | None  # the cited lines at the pinned commit (a symbol's too)
    end: int | None
    commit: str
    blob: str
    text_hash: str

    @property
    def whole_file(self) -> bool:
        return not self.symbol and self.start is None


@dataclass(frozen=True)
class Verdict:
    status: str
    path: str  # where the cited code is now (a rename changes it)
    start: int | None = None
    end: int | None = None


def normalise(text: str) -> str:
    return " ".join(text.split())


def digest(normalised: str) -> str:
    return hashlib.sha256(normalised.encode()).hexdigest()[:40]


def _lines(source: bytes) -> list[str]:
    return source.decode("utf-8", "replace").splitlines()


def span_text(source: bytes, start: int, end: int) -> str:
    return normalise("\n".join(_lines(source)[start - 1 : end]))


def _span(ref: AnchorRef | Pin, source: bytes) -> tuple[int, int] | None:
    """The lines the anchor cites in `source`: its symbol's, its range (if the file has them), or all."""
    if ref.symbol:
        return symbols.find(ref.path, source, ref.symbol)
    count = len(_lines(source))
    if ref.start is None:
        return (1, max(count, 1))
    end = ref.end or ref.start
    return (ref.start, end) if end <= count else None


def pin(repo: Repo, head: str, ref: AnchorRef) -> Pin:
    """Pin `ref` at `head` (a file not committed yet: its working-tree bytes). UserError when the
    file, symbol or lines are not there."""
    blob = repo.blob_id(head, ref.path)
    data = repo.read(blob) if blob else None
    if blob is None or data is None:
        local = repo.hash_file(ref.path)
        if local is None:
            raise UserError(f"anchor {str(ref)!r}: no such file in the repository.")
        blob, data = local
    if ref.symbol and not symbols.supports(ref.path):
        raise UserError(
            f"anchor {str(ref)!r}: symbols are understood in Python, Go, JavaScript and TypeScript; cite lines."
        )
    span = _span(ref, data)
    if span is None:
        what = f"no symbol {ref.symbol} in {ref.path}" if ref.symbol else f"{ref.path} has fewer lines"
        raise UserError(f"anchor {str(ref)!r}: {what}.")
    start, end = (None, None) if ref.start is None and not ref.symbol else span
    return Pin(ref.path, ref.symbol, start, end, head, blob, digest(span_text(data, *span)))


def check(repo: Repo, head: str, p: Pin) -> Verdict:
    """The pinned anchor `p` against commit `head` (docs/contract.md §12 statuses)."""
    path, renamed = p.path, False
    blob = repo.blob_id(head, path)
    if blob is None:
        moved_to = followed(repo, head, p)
        if moved_to is None:
            return Verdict(MISSING, p.path)
        path, renamed, blob = moved_to, True, repo.blob_id(head, moved_to)
    if blob == p.blob:  # the very same file: nothing to read
        return Verdict(MOVED if renamed else OK, path, p.start, p.end)
    data = repo.read(blob or "")
    if data is None:
        return Verdict(MISSING, p.path)
    if p.whole_file:
        return _check_file(repo, p, data, path, renamed)
    if p.symbol:
        span = symbols.find(path, data, p.symbol)
        if span is None:
            return Verdict(MISSING, path)
        if digest(span_text(data, *span)) != p.text_hash:
            return Verdict(CHANGED, path, *span)
        return Verdict(OK if span == (p.start, p.end) and not renamed else MOVED, path, *span)
    return _check_lines(repo, p, data, path, renamed)


# Past this many files added (or renamed) since the pin, the cited code is not searched for in them (a check
# stays cheap; the anchor says `missing`, or `changed` in the renamed file, as before the search).
MAX_ADDED_SEARCHED = 300


def followed(repo: Repo, head: str, p: Pin) -> str | None:
    """Where the file of `p`, gone from `head`, went: git's rename when that file still holds the cited symbol
    or lines (or the anchor is the whole file), else the one file added since the pin that holds them unchanged
    (code split off into a new module, or a file renamed with so much rewritten that no similarity pairs it),
    else git's rename (the cited code changed there) or None."""
    if not p.commit:
        return None
    moves = repo.moves(p.commit, head)
    renamed = moves.renamed.get(p.path)
    if p.whole_file or (renamed is not None and _holds(repo, head, p, renamed)):
        return renamed
    # A low rename threshold pairs a split file with one of its parts: the cited code may be in another,
    # new or itself the rename of another file.
    candidates = {*moves.added, *moves.renamed.values()} - {renamed}
    if len(candidates) > MAX_ADDED_SEARCHED:
        return renamed
    holding = [path for path in sorted(candidates) if _holds(repo, head, p, path)]
    return holding[0] if len(holding) == 1 else renamed


def _holds(repo: Repo, head: str, p: Pin, path: str) -> bool:
    if p.symbol and symbols.language_of(path) != symbols.language_of(p.path):
        return False
    data = repo.read(repo.blob_id(head, path) or "")
    if data is None:
        return False
    if p.symbol:
        # Most candidates do not name the symbol at all: skip parsing them (up to 300 files per anchor).
        if p.symbol.rsplit(".", 1)[-1].encode() not in data:
            return False
        span = symbols.find(path, data, p.symbol)
        return span is not None and digest(span_text(data, *span)) == p.text_hash
    assert p.start is not None and p.end is not None
    before = repo.read(p.blob)
    if before is None:
        return _find_by_hash(_lines(data), p.end - p.start + 1, p.text_hash) is not None
    wanted = span_text(before, p.start, p.end)
    return bool(wanted) and wanted.split()[0].encode() in data and _find_text(data, wanted) is not None


def _check_file(repo: Repo, p: Pin, data: bytes, path: str, renamed: bool) -> Verdict:
    status = MOVED if renamed else OK
    text = "\n".join(_lines(data))
    if digest(normalise(text)) == p.text_hash:
        return Verdict(status, path)
    before = repo.read(p.blob)
    if before is None:
        return Verdict(CHANGED, path)
    old = [normalise(line) for line in _lines(before) if line.strip()]
    new = {normalise(line) for line in _lines(data) if line.strip()}
    kept = sum(1 for line in old if line in new)
    return Verdict(CHANGED if file_changed(len(old), kept) else status, path)


def file_changed(lines: int, kept: int) -> bool:
    """Whether a whole-file anchor is `changed` when `kept` of the file's `lines` (normalised, non-blank) survive."""
    return kept < lines if lines <= SMALL_FILE else kept < FILE_KEPT * lines


def _check_lines(repo: Repo, p: Pin, data: bytes, path: str, renamed: bool) -> Verdict:
    assert p.start is not None and p.end is not None
    lines = _lines(data)
    if p.end <= len(lines) and digest(span_text(data, p.start, p.end)) == p.text_hash:
        return Verdict(MOVED if renamed else OK, path, p.start, p.end)
    before = repo.read(p.blob)
    found = (
        _find_text(data, span_text(before, p.start, p.end))
        if before is not None
        else _find_by_hash(lines, p.end - p.start + 1, p.text_hash)
    )
    if found is None:
        return Verdict(CHANGED, path, p.start, p.end)
    return Verdict(MOVED, path, *found)


@lru_cache(maxsize=16)
def _token_index(data: bytes) -> tuple[str, list[int], list[int]]:
    """The file as one normalised string, each token's offset in it and its line: built once per
    file version, however many of its anchors are searched."""
    tokens: list[str] = []
    token_line: list[int] = []
    for number, line in enumerate(_lines(data), start=1):
        for tok in line.split():
            tokens.append(tok)
            token_line.append(number)
    starts: list[int] = []
    offset = 0
    for tok in tokens:
        starts.append(offset)
        offset += len(tok) + 1
    return " ".join(tokens), starts, token_line


def _find_text(data: bytes, wanted: str) -> tuple[int, int] | None:
    """The lines of the first place where the normalised text `wanted` is, token for token, made of
    whole lines: a comment appended to a cited line, or code added before it on that line, is a change."""
    if not wanted:
        return None
    text, starts, token_line = _token_index(data)
    at = text.find(wanted)
    while at >= 0:
        first = bisect.bisect_left(starts, at)
        after = at + len(wanted)
        if first < len(starts) and starts[first] == at and (after == len(text) or text[after] == " "):
            last = bisect.bisect_right(starts, after - 1) - 1
            starts_line = first == 0 or token_line[first - 1] != token_line[first]
            ends_line = last == len(starts) - 1 or token_line[last + 1] != token_line[last]
            if starts_line and ends_line:
                return token_line[first], token_line[last]
        at = text.find(wanted, at + 1)
    return None


def _find_by_hash(lines: list[str], count: int, wanted: str) -> tuple[int, int] | None:
    """Without the pinned text (its commit is not in this clone): a window of the same length with the hash."""
    for start in range(1, len(lines) - count + 2):
        if digest(normalise("\n".join(lines[start - 1 : start - 1 + count]))) == wanted:
            return start, start + count - 1
    return None

"""Code anchors replayed over a real repository's history (docs/benchmarks.md, "code anchors").

Anchors functions, methods and line ranges of the Python files at an old commit, then walks the
first-parent history commit by commit. Whenever a commit changes a file holding anchors, each anchor
of that file is pinned at the commit before and checked at the commit (memories.anchors.pins, the
product's own code), and the verdict is compared with an independent ground truth: difflib's line
diff of the two versions says whether a non-whitespace change touched the cited lines. Then the
anchor follows its code (as a reviewer's "keep" re-pins it) and the walk goes on.

    python -m bench.anchors_replay --repo /path/to/clone --commits 600 --anchors 250

Reports: unrelated edits to the same file that kept the anchor ok/moved (target >= 95%), real edits
to the cited code flagged changed/missing (target 100%), false alarms per 100 commits, how often a
moved anchor's new lines are exactly the ground truth's. Needs no database.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from memories.anchors import pins
from memories.anchors.refs import AnchorRef
from memories.anchors.repo import Repo, open_repo


@dataclass
class Tracked:
    path: str
    symbol: str  # "" for a line range
    start: int
    end: int
    alive: bool = True


def first_parent_chain(repo: Repo, commits: int) -> list[str]:
    """The last `commits` + 1 first-parent commits, oldest first."""
    chain: list[str] = []
    c: pygit2.Commit | None = repo.git.head.peel(pygit2.Commit)
    while len(chain) <= commits and c is not None:
        chain.append(str(c.id))
        c = c.parents[0] if c.parents else None
    return chain[::-1]


def _defs(source: bytes) -> list[tuple[str, int, int]]:
    """(dotted name, first line, last line) of top-level functions and class methods."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.name, node.lineno, node.end_lineno or node.lineno))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.append((f"{node.name}.{item.name}", item.lineno, item.end_lineno or item.lineno))
    return out


def choose(repo: Repo, base: str, count: int, seed: int) -> list[Tracked]:
    """Half symbols, half line ranges (3-12 lines inside a function body), from the .py files at `base`."""
    rng = random.Random(seed)
    commit = repo.git.get(base)
    assert isinstance(commit, pygit2.Commit)
    found: list[Tracked] = []
    for path in _python_files(commit.tree, ""):
        data = repo.read(str(commit.tree[path].id)) or b""
        for name, start, end in _defs(data):
            found.append(Tracked(path, name, start, end))
            if end - start >= 4:
                a = rng.randint(start + 1, end - 2)
                found.append(Tracked(path, "", a, min(end, a + rng.randint(2, 11))))
    rng.shuffle(found)
    symbols = [t for t in found if t.symbol][: count // 2]
    lines = [t for t in found if not t.symbol][: count - len(symbols)]
    return symbols + lines


def _python_files(tree: object, prefix: str) -> list[str]:
    out = []
    for entry in tree:  # type: ignore[attr-defined]
        path = f"{prefix}{entry.name}"
        if entry.type_str == "tree" and not entry.name.startswith((".", "docs", "examples")):
            out += _python_files(entry, path + "/")
        elif entry.type_str == "blob" and path.endswith(".py") and "tests/" not in path:
            out.append(path)
    return out


def _norm(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def _overlaps(a1: int, a2: int, start: int, end: int) -> bool:
    """Whether the diff range [a1, a2) (0-based) touches lines start..end (1-based); an insertion
    (a1 == a2) counts when it is strictly inside."""
    return a1 < end and a2 > start - 1 if a2 > a1 else start - 1 < a1 < end


def truth(
    before: list[str], after: list[str], start: int, end: int, new_span: tuple[int, int] | None = None
) -> tuple[bool, tuple[int, int] | None]:
    """(whether a non-whitespace change touched lines start..end — or, for a symbol, its lines
    afterwards `new_span`, so a decorator added on top counts — and where the lines are afterwards)."""
    touched = False
    new_start = new_end = None
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        overlaps = _overlaps(i1, i2, start, end) or (new_span is not None and _overlaps(j1, j2, *new_span))
        if tag != "equal" and overlaps and _norm(before[i1:i2]) != _norm(after[j1:j2]):
            touched = True
        if tag == "equal":
            for k in range(i2 - i1):
                if i1 + k + 1 == start:
                    new_start = j1 + k + 1
                if i1 + k + 1 == end:
                    new_end = j1 + k + 1
    located = (new_start, new_end) if new_start and new_end else None
    return touched, located


def _trimmed(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """The span without its leading and trailing blank lines: they hold no code, and difflib pairs
    blank lines arbitrarily, so a neighbouring edit would seem to touch them."""
    while start < end and not lines[start - 1].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return start, end


def _symbol_span(lines: list[str], symbol: str) -> tuple[int, int] | None:
    """The symbol's lines with its decorators, by `ast` (independently of memories.anchors.symbols)."""
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return None
    body: list[ast.stmt] = tree.body
    node: ast.stmt | None = None
    for part in symbol.split("."):
        node = next(
            (
                n
                for n in body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == part
            ),
            None,
        )
        if node is None:
            return None
        body = node.body if isinstance(node, ast.ClassDef) else []
    assert node is not None
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return first, node.end_lineno or node.lineno


COUNTS: tuple[str, ...] = ("unrelated", "unrelated_kept", "real", "real_flagged", "renamed", "renamed_moved")
COUNTS += ("located", "located_exact", "checks", "alignment_only")


@dataclass
class Tally:
    """What a replay counted: verdicts against the diff's truth, examples of each mistake, check time."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    false_alarms: list[dict[str, object]] = field(default_factory=list)
    missed: list[dict[str, object]] = field(default_factory=list)
    check_s: float = 0.0


def replay(repo: Repo, chain: list[str], anchors: list[Tracked]) -> dict[str, object]:
    tally = Tally()
    for prev, cur in zip(chain, chain[1:], strict=False):
        for t in anchors:
            if t.alive:
                _step(repo, prev, cur, t, tally)
    return _summary(len(chain) - 1, anchors, tally)


def _step(repo: Repo, prev: str, cur: str, t: Tracked, tally: Tally) -> None:
    """One anchor across one commit: pin at `prev`, check at `cur`, score the verdict, follow the code."""
    old_blob = repo.blob_id(prev, t.path)
    new_blob = repo.blob_id(cur, t.path)
    if old_blob is None:
        t.alive = False
        return
    if new_blob == old_blob:
        return
    ref = AnchorRef(t.path, t.symbol, None if t.symbol else t.start, None if t.symbol else t.end)
    try:
        p = pins.pin(repo, prev, ref)
    except Exception:
        t.alive = False
        return
    began = time.perf_counter()
    verdict = pins.check(repo, cur, p)
    tally.check_s += time.perf_counter() - began
    tally.counts["checks"] += 1
    new_path = verdict.path if new_blob is None else t.path
    after_blob = repo.blob_id(cur, new_path)
    touched, located = _truth_of(repo, t, p, old_blob, new_blob, after_blob, tally)
    where: dict[str, object] = {"commit": cur[:10], "anchor": str(ref), "status": verdict.status}
    if new_blob is None and after_blob is not None:
        tally.counts["renamed"] += 1
        tally.counts["renamed_moved"] += verdict.status == pins.MOVED
    _score(tally, t, verdict, touched, located, where)
    _follow(t, verdict, new_path, after_blob, located)


def _truth_of(
    repo: Repo, t: Tracked, p: pins.Pin, old_blob: str, new_blob: str | None, after_blob: str | None, tally: Tally
) -> tuple[bool, tuple[int, int] | None]:
    """Whether the commit really touched the cited text (from the diff), and where it is now."""
    before = (repo.read(old_blob) or b"").decode("utf-8", "replace").splitlines()
    after = (repo.read(after_blob or "") or b"").decode("utf-8", "replace").splitlines()
    span = _trimmed(before, p.start or 1, p.end or len(before))
    new_span = _symbol_span(after, t.symbol) if t.symbol else None
    if new_blob is None and after_blob is None:
        touched, located = True, None  # deleted, not renamed
    else:
        touched, located = truth(before, after, *span, new_span=new_span)
    if touched and after_blob is not None:
        # difflib may pair repeated lines (blank lines, `return f`) across a neighbouring
        # deletion: then the diff "touches" the span while the cited text is unchanged.
        now = new_span if t.symbol else located
        if now is not None and _norm(before[span[0] - 1 : span[1]]) == _norm(after[now[0] - 1 : now[1]]):
            tally.counts["alignment_only"] += 1
            touched = False
    return touched, located


def _score(
    tally: Tally,
    t: Tracked,
    verdict: pins.Verdict,
    touched: bool,
    located: tuple[int, int] | None,
    where: dict[str, object],
) -> None:
    counts = tally.counts
    stale = verdict.status in (pins.CHANGED, pins.MISSING)
    if touched:
        counts["real"] += 1
        counts["real_flagged"] += stale
        if not stale:
            tally.missed.append(where)
        return
    counts["unrelated"] += 1
    counts["unrelated_kept"] += not stale
    if stale:
        tally.false_alarms.append(where)
    if not t.symbol and located and verdict.start is not None:
        counts["located"] += 1
        counts["located_exact"] += (verdict.start, verdict.end) == located


def _follow(
    t: Tracked, verdict: pins.Verdict, new_path: str, after_blob: str | None, located: tuple[int, int] | None
) -> None:
    """Follow the code, as a reviewer's "keep" would (re-pin where it is now)."""
    if verdict.status == pins.MISSING or after_blob is None:
        t.alive = False
        return
    t.path = new_path
    if t.symbol:
        return
    if located is not None:
        t.start, t.end = located
    elif verdict.start is not None and verdict.end is not None:
        t.start, t.end = verdict.start, verdict.end
    else:
        t.alive = False


def _summary(commits: int, anchors: list[Tracked], tally: Tally) -> dict[str, object]:
    counts = tally.counts
    return {
        "commits_replayed": commits,
        "anchors": len(anchors),
        "anchors_alive_at_end": sum(t.alive for t in anchors),
        **counts,
        "unrelated_kept_share": round(counts["unrelated_kept"] / max(counts["unrelated"], 1), 4),
        "real_flagged_share": round(counts["real_flagged"] / max(counts["real"], 1), 4),
        "false_alarms_per_100_commits": round(100 * len(tally.false_alarms) / max(commits, 1), 2),
        "moved_lines_exact_share": round(counts["located_exact"] / max(counts["located"], 1), 4),
        "check_ms_mean": round(1000 * tally.check_s / max(counts["checks"], 1), 3),
        "false_alarm_examples": tally.false_alarms[:10],
        "missed_examples": tally.missed[:10],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True, help="a local clone with a long history")
    parser.add_argument("--commits", type=int, default=600)
    parser.add_argument("--anchors", type=int, default=250)
    parser.add_argument("--seed", type=int, default=27)
    args = parser.parse_args()
    repo = open_repo(Path(args.repo))
    assert repo is not None, f"not a git repository: {args.repo}"
    chain = first_parent_chain(repo, args.commits)
    anchors = choose(repo, chain[0], args.anchors, args.seed)
    result = {"repo": args.repo, "base": chain[0], "head": chain[-1], **replay(repo, chain, anchors)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

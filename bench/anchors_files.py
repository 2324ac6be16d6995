"""Whole-file anchors replayed over a real repository's history (docs/benchmarks.md, "code anchors",
"whole-file anchors"): which rule should call a file `changed`?

A memory that names a file (no symbol, no lines) states something about some part of it, and nobody
says which. At every first-parent commit that edits a Python file (tests, docs and examples aside), the
file before and after is split into units (each top-level function and class method, plus the rest of
the module as one unit) and the ground truth is the share of its units whose non-whitespace text changed
or disappeared: the chance that the memory's part was touched. A rule that flags the edit catches that
share and falsely flags the rest; a rule that keeps it `ok` misses that share. Summed over all edits:

    caught  = sum of touched shares over flagged edits / sum of touched shares over all edits
    false   = sum of untouched shares over flagged edits / sum of untouched shares over all edits

Each rule sees what the product's check sees (memories.anchors.pins._check_file): the old file's
normalised non-blank lines and which of them survive in the new file.

    python -m bench.anchors_files --repo /path/to/clone --commits 600
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import pygit2

from bench.anchors_replay import _defs, _python_files, first_parent_chain
from memories.anchors import pins
from memories.anchors.repo import Repo, open_repo

# (old non-blank lines, of them surviving) -> changed?
RuleFn = Callable[[int, int], bool]
RULES: dict[str, RuleFn] = {
    "survive < 50% (before)": lambda n, kept: kept < 0.5 * n,
    "survive < 75%": lambda n, kept: kept < 0.75 * n,
    "survive < 90%": lambda n, kept: kept < 0.9 * n,
    "<= 20 lines: any line gone, else < 50%": lambda n, kept: kept < n if n <= 20 else kept < 0.5 * n,
    "<= 40 lines: any line gone, else < 50%": lambda n, kept: kept < n if n <= 40 else kept < 0.5 * n,
    "<= 40 lines: 2+ lines gone, else < 50%": lambda n, kept: n - kept >= 2 if n <= 40 else kept < 0.5 * n,
    "<= 20 lines: any line gone, else < 75%": lambda n, kept: kept < n if n <= 20 else kept < 0.75 * n,
    "<= 10 lines: any line gone, else < 75%": lambda n, kept: kept < n if n <= 10 else kept < 0.75 * n,
    "product now": lambda n, kept: pins.file_changed(n, kept),
}


def _units(source: bytes) -> dict[str, str]:
    """Each definition's normalised text by name, and the rest of the module under ""."""
    lines = source.decode("utf-8", "replace").splitlines()
    units: dict[str, str] = {}
    in_def = [False] * len(lines)
    for name, start, end in _defs(source):
        units[name] = pins.normalise("\n".join(lines[start - 1 : end]))
        for i in range(start - 1, end):
            in_def[i] = True
    units[""] = pins.normalise("\n".join(line for line, d in zip(lines, in_def, strict=True) if not d))
    return units


def touched_share(before: bytes, after: bytes) -> float:
    old, new = _units(before), _units(after)
    return sum(new.get(name) != text for name, text in old.items()) / len(old)


def survival(before: bytes, after: bytes) -> tuple[int, int]:
    """As the product counts: the old file's normalised non-blank lines, and how many are in the new file."""
    old = [pins.normalise(line) for line in before.decode("utf-8", "replace").splitlines() if line.strip()]
    new = {pins.normalise(line) for line in after.decode("utf-8", "replace").splitlines() if line.strip()}
    return len(old), sum(line in new for line in old)


def edits(repo: Repo, chain: list[str]) -> list[tuple[str, str, int, int, float]]:
    """(commit, path, old lines, surviving, touched share) of every edit to a Python file in `chain`."""
    out: list[tuple[str, str, int, int, float]] = []
    for prev, cur in zip(chain, chain[1:], strict=False):
        a, b = repo.git.get(prev), repo.git.get(cur)
        assert isinstance(a, pygit2.Commit) and isinstance(b, pygit2.Commit)
        for path in _python_files(b.tree, ""):
            old_id, new_id = repo.blob_id(prev, path), repo.blob_id(cur, path)
            if old_id is None or new_id is None or old_id == new_id:
                continue
            before, after = repo.read(old_id) or b"", repo.read(new_id) or b""
            if pins.normalise(before.decode("utf-8", "replace")) == pins.normalise(after.decode("utf-8", "replace")):
                continue  # whitespace only: every rule says ok, and so does the truth
            n, kept = survival(before, after)
            out.append((cur[:8], path, n, kept, touched_share(before, after)))
    return out


def score(rows: list[tuple[str, str, int, int, float]], rule: RuleFn) -> dict[str, float]:
    flagged = [(p, rule(n, kept)) for _, _, n, kept, p in rows]
    touched = sum(p for p, _ in flagged) or 1.0
    untouched = sum(1 - p for p, _ in flagged) or 1.0
    return {
        "caught": round(sum(p for p, f in flagged if f) / touched, 3),
        "false": round(sum(1 - p for p, f in flagged if f) / untouched, 3),
        "flagged_edits": sum(f for _, f in flagged),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True, help="a local clone with a long history")
    parser.add_argument("--commits", type=int, default=600)
    args = parser.parse_args()
    repo = open_repo(Path(args.repo))
    assert repo is not None, f"not a git repository: {args.repo}"
    rows = edits(repo, first_parent_chain(repo, args.commits))
    small = [r for r in rows if r[2] <= 20]
    result = {
        "repo": args.repo,
        "edits": len(rows),
        "small_file_edits (<= 20 lines)": len(small),
        "rules": {name: {"all": score(rows, fn), "small": score(small, fn)} for name, fn in RULES.items()},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

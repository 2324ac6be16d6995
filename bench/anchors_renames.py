"""Code anchors across renames and file splits, over a real repository's history (docs/benchmarks.md, "Renames").

Walks the first-parent history; at every commit (or every K-th, `--span`) that removes a Python file
(its path gone: deleted, renamed or split), anchors each top-level function and class method of the
removed file, and the file whole, at the commit before, and checks them at the commit with the product's
code (memories.anchors.pins), under each variant: git's rename similarity threshold (50 % is git's
default) with and without the search of added files for the cited symbol. The truth is independent of
both: a symbol lives on when exactly one Python file added by the commit defines the same dotted name
(its text the same, whitespace aside: `moved` is right; otherwise `changed` is, at that file); it is gone
when none does (`missing`). A whole file lives on in the one added file defining over half of its symbols.

    python -m bench.anchors_renames --repo /path/to/clone [--commits N] [--span K] [--out results.json]

`--span K` pins K commits before the check (a memory written a while ago: edits pile up after a rename).

Needs no database.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass

import pygit2

from bench.anchors_replay import _defs, first_parent_chain
from memories.anchors import pins
from memories.anchors import repo as repo_mod
from memories.anchors.refs import AnchorRef
from memories.anchors.repo import Repo, open_repo

VARIANTS = [(50, False), (50, True), (30, False), (30, True), (20, True)]


@dataclass
class Case:
    parent: str
    commit: str
    ref: AnchorRef
    truth_path: str | None  # where the code lives on (None: gone)
    truth_same: bool  # the symbol's text unchanged (symbols only)


def _py(tree: pygit2.Tree, repo: Repo, path: str) -> bytes:
    return repo.read(str(tree[path].id)) or b""


def _changes(repo: Repo, parent: pygit2.Commit, commit: pygit2.Commit) -> tuple[list[str], list[str]]:
    """(Python files whose path is gone, Python files added) between a commit and its parent, no rename pairing."""
    gone, added = [], []
    for delta in repo.git.diff(parent, commit).deltas:
        if delta.status == pygit2.enums.DeltaStatus.DELETED and delta.old_file.path.endswith(".py"):
            gone.append(delta.old_file.path)
        elif delta.status == pygit2.enums.DeltaStatus.ADDED and delta.new_file.path.endswith(".py"):
            added.append(delta.new_file.path)
    return gone, added


def _norm(source: bytes, start: int, end: int) -> str:
    return pins.normalise("\n".join(source.decode("utf-8", "replace").splitlines()[start - 1 : end]))


def cases_of(repo: Repo, parent_id: str, commit_id: str) -> list[Case]:
    parent, commit = repo.git.get(parent_id), repo.git.get(commit_id)
    assert isinstance(parent, pygit2.Commit) and isinstance(commit, pygit2.Commit)
    gone, added = _changes(repo, parent, commit)
    if not gone:
        return []
    added_defs = {path: {name: (a, b) for name, a, b in _defs(_py(commit.tree, repo, path))} for path in added}
    out: list[Case] = []
    for path in gone:
        data = _py(parent.tree, repo, path)
        defs = _defs(data)
        for name, start, end in defs:
            homes = [p for p, d in added_defs.items() if name in d]
            if len(homes) > 1:
                continue  # ambiguous: the truth cannot say which
            home = homes[0] if homes else None
            same = False
            if home is not None:
                a, b = added_defs[home][name]
                same = _norm(data, start, end) == _norm(_py(commit.tree, repo, home), a, b)
            out.append(Case(parent_id, commit_id, AnchorRef(path, symbol=name), home, same))
        names = {n for n, _, _ in defs}
        if names:
            share = {p: len(names & set(d)) / len(names) for p, d in added_defs.items()}
            best = [p for p, s in share.items() if s > 0.5]
            out.append(Case(parent_id, commit_id, AnchorRef(path), best[0] if len(best) == 1 else None, False))
    return out


def score(repo: Repo, cases: list[Case], threshold: int, search: bool) -> dict[str, object]:
    repo_mod.RENAME_THRESHOLD = threshold
    pins.MAX_ADDED_SEARCHED = 300 if search else -1
    tally: Counter[str] = Counter()
    for case in cases:
        kind = "symbol" if case.ref.symbol else "file"
        try:
            pinned = pins.pin(repo, case.parent, case.ref)
        except Exception:  # noqa: BLE001 - a file the product cannot pin (syntax it cannot parse) is no case
            tally[f"{kind}_unpinnable"] += 1
            continue
        verdict = pins.check(repo, case.commit, pinned)
        if case.truth_path is None:
            key = "gone"
            right = verdict.status == pins.MISSING
        elif kind == "symbol" and case.truth_same:
            key = "lives_on_unchanged"
            right = verdict.status in (pins.MOVED, pins.OK) and verdict.path == case.truth_path
        else:
            key = "lives_on_changed" if kind == "symbol" else "lives_on"
            right = verdict.path == case.truth_path and verdict.status != pins.MISSING
        tally[f"{kind}_{key}"] += 1
        tally[f"{kind}_{key}_right"] += int(right)
        tally[f"{kind}_{key}_said_{verdict.status}"] += 1
    return {"threshold": threshold, "search_added": search, **dict(sorted(tally.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True, help="a local clone (a bare one will do)")
    parser.add_argument("--commits", type=int, default=100_000, help="how far back along the first-parent line")
    parser.add_argument("--span", type=int, default=1, help="pin this many commits before the check (windows)")
    parser.add_argument("--out", help="write the figures here as JSON too")
    args = parser.parse_args()
    repo = open_repo(args.repo)
    assert repo is not None, f"no repository at {args.repo}"
    chain = first_parent_chain(repo, args.commits)
    ends = range(args.span, len(chain), args.span)
    cases = [c for i in ends for c in cases_of(repo, chain[i - args.span], chain[i])]
    results = {
        "repo": args.repo,
        "commits": len(chain) - 1,
        "span": args.span,
        "commits_removing_python_files": len({c.commit for c in cases}),
        "variants": [score(repo, cases, t, s) for t, s in VARIANTS],
    }
    print(json.dumps(results, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

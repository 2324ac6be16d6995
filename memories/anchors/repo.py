"""The repository on this machine, read through libgit2 (pygit2): in-process, so resolving HEAD and
a file's blob id take microseconds where a `git` subprocess takes a millisecond or two
(docs/decisions.md, "code anchors: git through pygit2")."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

import pygit2

# git's own default (50 %) calls a small file renamed with a few edits "deleted + added": a 9-line module
# moved and given a new import and a renamed helper is 40 % similar, and its anchors said `missing`
# (docs/benchmarks.md "Renames"). Lower pairs it; a false pair costs little (the cited text is still
# compared, so a wrong file says `changed`, stale as `missing` would have been).
RENAME_THRESHOLD = 30


@dataclass(frozen=True)
class Moves:
    """What became of the files of one commit by another: renames (old path → new path), and the files
    added that no rename claimed (where code split off a file went)."""

    renamed: dict[str, str]
    added: tuple[str, ...]


# (repository, old commit, new commit, threshold) → moves: commits never change, so this is never stale.
_moves: dict[tuple[str, str, str, int], Moves] = {}


class Repo:
    def __init__(self, root: Path, git: pygit2.Repository) -> None:
        self.root = root
        self.git = git

    def head(self) -> str | None:
        """HEAD's commit id; None in a repository with no commit yet."""
        try:
            return str(self.git.head.target)
        except (pygit2.GitError, KeyError):
            return None

    def _commit(self, commit: str) -> pygit2.Commit | None:
        try:
            obj = self.git.get(commit)
        except (ValueError, pygit2.GitError):
            return None
        return obj if isinstance(obj, pygit2.Commit) else None

    def has_commit(self, commit: str) -> bool:
        return bool(commit) and self._commit(commit) is not None

    def blob_id(self, commit: str, path: str) -> str | None:
        """The id of the file at `path` in `commit`; None when it is not a file there."""
        c = self._commit(commit)
        if c is None:
            return None
        try:
            entry = c.tree[path]
        except KeyError:
            return None
        return str(entry.id) if entry.type_str == "blob" else None

    def read(self, blob_id: str) -> bytes | None:
        if not blob_id:
            return None
        try:
            obj = self.git.get(blob_id)
        except (ValueError, pygit2.GitError):
            return None
        return obj.data if isinstance(obj, pygit2.Blob) else None

    def moves(self, old: str, new: str) -> Moves:
        """Renames (git's rename detection by content similarity, as `git diff -M30%`) and added files between
        two commits, computed once per pair; empty when either commit is unknown."""
        key = (str(self.root), old, new, RENAME_THRESHOLD)
        if key in _moves:
            return _moves[key]
        a, b = self._commit(old), self._commit(new)
        renamed: dict[str, str] = {}
        added: list[str] = []
        if a is not None and b is not None:
            diff = self.git.diff(a, b)
            diff.find_similar(pygit2.enums.DiffFind.FIND_RENAMES, rename_threshold=RENAME_THRESHOLD)
            for delta in diff.deltas:
                if delta.status == pygit2.enums.DeltaStatus.RENAMED:
                    renamed[str(delta.old_file.path)] = str(delta.new_file.path)
                elif delta.status == pygit2.enums.DeltaStatus.ADDED:
                    added.append(str(delta.new_file.path))
        if len(_moves) > 256:
            _moves.clear()
        _moves[key] = found = Moves(renamed, tuple(added))
        return found

    def hash_file(self, path: str) -> tuple[str, bytes] | None:
        """A working-tree file not committed yet: its would-be blob id and bytes."""
        target = self.root / path
        if not target.is_file():
            return None
        data = target.read_bytes()
        return str(pygit2.hash(data)), data


def open_repo(root: Path | str | None) -> Repo | None:
    """The repository at `root` (a checkout on this machine), or None when it cannot be read."""
    if root is None:
        return None
    try:
        git = pygit2.Repository(str(root))
    except (pygit2.GitError, OSError):
        return None
    return Repo(Path(root), git)


HUNK = re.compile(r"@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")


def unified_diff(
    before: bytes | None,
    after: bytes | None,
    old_name: str,
    new_name: str,
    context: int = 3,
    *,
    first_lines: tuple[int, int] = (1, 1),
) -> str:
    """A unified diff of two texts (the cited code then and now), for the Stale queue. `first_lines`: the
    file's line numbers of each text's first line, so a cited span's hunks say where in the file they are
    (`@@ -261,4 +261,7 @@`, not `@@ -1,4 +1,7 @@`: walk 10)."""
    # Lines without their ends: a cited span is joined without a final newline, and difflib would run the
    # last removed line and the first added one together ("-        return x+        return y").
    a = (before or b"").decode("utf-8", "replace").splitlines()
    b = (after or b"").decode("utf-8", "replace").splitlines()
    lines = difflib.unified_diff(a, b, f"a/{old_name}", f"b/{new_name}", n=context, lineterm="")
    return "".join(f"{_in_file(line, *first_lines)}\n" for line in lines)


def _in_file(line: str, old_first: int, new_first: int) -> str:
    if not (found := HUNK.fullmatch(line)):
        return line
    old, new = int(found[1]) + old_first - 1, int(found[3]) + new_first - 1
    return f"@@ -{old}{found[2]} +{new}{found[4]} @@"

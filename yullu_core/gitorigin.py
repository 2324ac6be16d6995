"""Which project a folder belongs to, from git alone (docs/contract.md §2): its repository's origin, else the
folder's name qualified by its path. Standard library only: the server's scoping
(memories.scope) and the assistant hooks (yullu_cli.hooks, which must not import Django) share it,
so a laptop talking to a team server names its project exactly as a local server would."""

from __future__ import annotations

import configparser
import contextlib
import hashlib
import os
import unicodedata
from pathlib import Path

PERSONAL_PREFIX = "~user"  # access.policy's: personal scopes, which a path may never name


def canonical_origin(url: str) -> str:
    """git@host:o/r.git, https://user:tok@host/o/r/, ssh://git@host:22/o/r → host[:port]/o/r."""
    url = url.strip().rstrip("/")
    if url.endswith(".git"):
        url = url[: -len(".git")]
    if "://" not in url:
        user_host, sep, path = url.partition(":")
        if sep and not user_host.startswith("/"):
            host = user_host.rsplit("@", 1)[-1]
            return f"{host}/{path.lstrip('/')}"
        return url
    rest = url.split("://", 1)[1]
    authority, _, path = rest.partition("/")
    host = authority.rsplit("@", 1)[-1]  # credentials are never kept
    return f"{host}/{path}" if path else host


def find_git_root(path: Path, stop: Path | None = None) -> Path | None:
    """Walk up to the folder holding `.git` (a directory, or a file for worktrees/submodules),
    no higher than `stop`."""
    for folder in [path, *path.parents]:
        if (folder / ".git").exists():
            return folder
        if folder == stop:
            break
    return None


def _git_dir(root: Path) -> Path:
    dot_git = root / ".git"
    if dot_git.is_file():
        text = dot_git.read_text(errors="replace").strip()
        if text.startswith("gitdir:"):
            gitdir = Path(text.split(":", 1)[1].strip())
            gitdir = gitdir if gitdir.is_absolute() else (root / gitdir).resolve()
            common = gitdir / "commondir"
            if common.is_file():
                return (gitdir / common.read_text().strip()).resolve()
            return gitdir
    return dot_git


def main_checkout(root: Path) -> Path:
    """The main working tree of `root` when `root` is a linked worktree (`git worktree add`: its `.git`
    is a file naming `<main>/.git/worktrees/<name>`) and that main checkout is there; else `root`. A
    worktree is a branch checked out beside the main one: the same project, whose known checkout (where
    writes without a cwd are logged and beat reconciles) should not follow whichever branch spoke last."""
    common = _git_dir(root)
    if common == root / ".git" or common.name != ".git":  # a plain checkout, or a worktree of a bare repository
        return root
    main = common.parent
    return main if common.is_dir() and main != root and main.is_dir() else root


def origin_url(root: Path) -> str | None:
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read(_git_dir(root) / "config", encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError, OSError):
        return None
    section = 'remote "origin"'
    if parser.has_section(section) and parser.has_option(section, "url"):
        return parser.get(section, "url").strip() or None
    return None


def folder_id(folder: Path) -> str:
    """Outside git: the folder's name qualified by a hash of its path (docs/contract.md §2), so two
    folders called `notes` do not share memories. `resolve` keeps an existing bare-name project."""
    name = folder.name or str(folder)
    return f"{name}@{hashlib.sha256(str(folder).encode()).hexdigest()[:8]}"


def path_id(project_id: str, path: Path) -> str:
    """A path never names a personal scope: a folder (or repo, or origin) called `~user` once mapped to
    the personal memories, and reconcile published them into that folder's log."""
    project_id = normalise_project_id(project_id)
    if project_id == PERSONAL_PREFIX or project_id.startswith(PERSONAL_PREFIX + ":"):
        return f"{project_id.replace('~', '_', 1)}@{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"
    return project_id


def normalise_project_id(project_id: str) -> str:
    """NFKC (full-width and compatibility letters become plain ones) without invisible format
    characters (zero-width, bidi controls): one spelling per id, whatever the client sent."""
    text = unicodedata.normalize("NFKC", project_id)
    return "".join(c for c in text if unicodedata.category(c) != "Cf").strip()


def project_id_of(path: str | os.PathLike[str]) -> str:
    """The project id of a folder, as memories.scope.resolve_path gives it (no allowed-root stop)."""
    folder = Path(path).expanduser()
    with contextlib.suppress(OSError):
        folder = folder.resolve()
    root = find_git_root(folder)
    if root is None:
        return path_id(folder_id(folder), folder)
    origin = origin_url(root)
    return path_id(canonical_origin(origin) if origin else root.name, root)

"""Project scoping (SPEC §2): explicit project_id → the caller's cwd → the server's cwd."""

from __future__ import annotations

import configparser
import contextlib
import os
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.db import connection
from django.utils import timezone

from access.policy import PERSONAL_PREFIX, is_personal, personal_project
from yullu_core.database import fetch_prepared
from yullu_core.errors import UserError

MAX_PROJECT_ID = 500
# Personal memories ("prefer pytest") live under a reserved project id per user, `~user:<user id>`
# (access.policy.personal_project): merged into every project's retrieval and context for their
# owner only, never written to a team log (SPEC §10, §11). USER_SCOPE is the ids' common prefix.
USER_SCOPE = PERSONAL_PREFIX


@dataclass(frozen=True)
class Scope:
    project_id: str
    git_root: Path | None


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


def find_git_root(path: Path) -> Path | None:
    """Walk up to the folder holding `.git` (a directory, or a file for worktrees/submodules)."""
    for folder in [path, *path.parents]:
        if (folder / ".git").exists():
            return folder
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


def resolve_path(path: str | os.PathLike[str]) -> Scope:
    folder = Path(path).expanduser()
    with contextlib.suppress(OSError):
        folder = folder.resolve()
    root = find_git_root(folder)
    if root is None:
        return Scope(folder.name or str(folder), None)
    origin = origin_url(root)
    return Scope(canonical_origin(origin) if origin else root.name, root)


def validate_project_id(project_id: str) -> str:
    project_id = project_id.strip()
    if not project_id:
        raise UserError("project_id must not be empty.")
    if len(project_id) > MAX_PROJECT_ID or re.search(r"[\x00-\x1f]", project_id):
        raise UserError(f"project_id must be at most {MAX_PROJECT_ID} printable characters.")
    return project_id


def resolve(project_id: str | None = None, cwd: str | None = None) -> Scope:
    """Resolve a scope and remember where its repo lives (project_locations)."""
    if project_id:
        project_id = validate_project_id(project_id)
        scope = Scope(project_id, None)
        if cwd:
            from_cwd = _resolve_cwd(cwd)
            if from_cwd.git_root is not None and from_cwd.project_id == project_id:
                scope = from_cwd
        if scope.git_root is None:
            scope = Scope(project_id, known_root(project_id))
        return scope
    if cwd:
        return _resolve_cwd(cwd)  # remembers the location
    scope = resolve_path(os.getcwd())
    if scope.git_root is not None:
        remember_location(scope)
    return scope


def _resolve_cwd(cwd: str) -> Scope:
    if "\x00" in cwd or len(cwd) > 4096:
        raise UserError("cwd must be a path of at most 4096 characters.")
    if not os.path.isabs(cwd):
        raise UserError("cwd must be an absolute path.")
    try:
        scope = resolve_path(cwd)
    except OSError as exc:  # unreadable, a name too long: the caller's path, not our failure
        raise UserError(f"cwd cannot be read ({exc.strerror or type(exc).__name__}).") from None
    if scope.git_root is not None:
        remember_location(scope)
    return scope


# `last_seen` (shown in the admin) is refreshed at most this often: every tool call with a cwd
# resolves its project, and rewriting an unchanged row each time was a write transaction (and a
# WAL flush) on the read path.
LAST_SEEN_GRANULARITY = timedelta(minutes=10)


def remember_location(scope: Scope) -> None:
    """Record where the project's repo lives. One indexed read when nothing changed."""
    from .models import ProjectLocation

    with connection.cursor() as cur:
        cur.execute(
            f"SELECT git_root, last_seen FROM {ProjectLocation._meta.db_table} WHERE project_id = %s",
            [scope.project_id],
        )
        row = cur.fetchone()
    now = timezone.now()
    if row and row[0] == str(scope.git_root) and now - row[1] < LAST_SEEN_GRANULARITY:
        return
    ProjectLocation.objects.update_or_create(
        project_id=scope.project_id, defaults={"git_root": str(scope.git_root), "last_seen": now}
    )


def project_of(project_id: str | None, cwd: str | None) -> str:
    """The project a read resolves to. Reads need only the id: with an explicit project_id and no
    cwd, where its repo lives (`known_root`, a query) is not looked up."""
    if project_id and not cwd:
        return validate_project_id(project_id)
    return resolve(project_id, cwd).project_id


def user_scope() -> Scope:
    """The acting user's personal scope."""
    return Scope(personal_project(), None)


def scope_for(scope: str | None, project_id: str | None, cwd: str | None) -> Scope:
    """The `scope` tool argument: "project" (default) resolves as usual, "user" is the personal scope."""
    if scope in (None, "", "project"):
        return resolve(project_id, cwd)
    if scope == "user":
        return user_scope()
    raise UserError("scope must be 'project' or 'user'.")


def known_root(project_id: str) -> Path | None:
    from .models import ProjectLocation

    if is_personal(project_id):
        return None  # the user scope has no repository, so nothing of it reaches a team log

    # Runs on every tool call: plain SQL costs a tenth of the ORM query (11 % of the web
    # process's CPU under load, docs/benchmarks.md), prepared once per connection (planning took
    # ten times its execution). project_id is unique: one plan fits every value.
    rows = fetch_prepared(f"SELECT git_root FROM {ProjectLocation._meta.db_table} WHERE project_id = %s", [project_id])
    if rows and Path(rows[0][0], ".git").exists():
        return Path(rows[0][0])
    return None

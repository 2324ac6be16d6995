"""Project scoping (docs/contract.md §2): explicit project_id → the caller's cwd → (stdio and the command line
only) the process's own folder.

A `cwd` is a path on the server's machine, sent by whoever holds a token, so it is confined
(issue 33): it must lie inside `[server].allowed_roots` (default: the user's home on a local
install; nothing on a team server until set), the answer outside them is the same whether the
path exists or is a repository, and a git root is only looked for inside the root. Reads never
record a location (beat reconciles every recorded one, writing `.yullu/logs` there). No path ever
names a personal scope. Project ids are NFKC-normalised without invisible characters, and a new id
that only imitates an existing one with look-alike letters is refused.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from access.policy import PERSONAL_PREFIX, is_personal, personal_project
from yullu_core.database import fetch_prepared
from yullu_core.errors import UserError
from yullu_core.gitorigin import (  # the parts a hook needs too (stdlib only); names kept here
    canonical_origin,
    find_git_root,
    folder_id,
    main_checkout,
    normalise_project_id,
    origin_url,
    path_id,
)
from yullu_core.paths import in_callers_folder
from yullu_core.text import refuse_id_control
from yullu_core.textnorm import fold

MAX_PROJECT_ID = 500
# Personal memories ("prefer pytest") live under a reserved project id per user, `~user:<user id>`
# (access.policy.personal_project): merged into every project's retrieval and context for their
# owner only, never written to a team log (docs/contract.md §10, §11). USER_SCOPE is the ids' common prefix.
USER_SCOPE = PERSONAL_PREFIX


@dataclass(frozen=True)
class Scope:
    project_id: str
    git_root: Path | None


def resolve_path(path: str | os.PathLike[str], stop: Path | None = None) -> Scope:
    """The project a folder belongs to (docs/contract.md §2), looking for its repository no higher than `stop`."""
    folder = Path(path).expanduser()
    with contextlib.suppress(OSError):
        folder = folder.resolve()
    root = find_git_root(folder, stop)
    if root is None:
        return Scope(path_id(folder_id(folder), folder), None)
    origin = origin_url(root)
    return Scope(path_id(canonical_origin(origin) if origin else root.name, root), root)


def validate_project_id(project_id: str) -> str:
    refuse_id_control(project_id)
    project_id = normalise_project_id(project_id)
    if not project_id:
        raise UserError("project_id must not be empty.")
    if len(project_id) > MAX_PROJECT_ID or re.search(r"[\x00-\x1f\x7f-\x9f]", project_id):
        raise UserError(f"project_id must be at most {MAX_PROJECT_ID} printable characters.")
    return project_id


class CwdRefused(UserError):
    """A well-formed cwd this server will not use: outside the roots, or missing. With an explicit
    project_id the cwd only says where the repository is, and is then ignored instead."""


NO_PROJECT = "name the project: pass cwd (the absolute path of your checkout) or project_id."
# An assistant told "pass project_id" on a team server must also learn what it is (walk 8: the skill and the
# instructions say cwd, and a guessed "envloader" would open a second project beside the team's).
NAMED_BY = (
    "pass project_id instead: the repository's origin without scheme, user and .git "
    "(`git remote get-url origin`; git@github.com:acme/app.git is github.com/acme/app)."
)
OUTSIDE_ROOTS = f"cwd is not inside a folder this server accepts ([server].allowed_roots); {NAMED_BY}"
NO_ROOTS = f"this server accepts no cwd until [server].allowed_roots is set; {NAMED_BY}"


def resolve(project_id: str | None = None, cwd: str | None = None, *, remember: bool = True) -> Scope:
    """Resolve a scope; with `remember` (writes), record where its repo lives (project_locations)."""
    if project_id:
        project_id = refuse_lookalike(validate_project_id(project_id))
        scope = Scope(project_id, None)
        if cwd:
            with contextlib.suppress(CwdRefused):
                from_cwd = _resolve_cwd(cwd, remember=remember)
                if from_cwd.git_root is not None and from_cwd.project_id == project_id:
                    scope = from_cwd
        if scope.git_root is None:
            scope = Scope(project_id, known_root(project_id))
        return scope
    if cwd:
        return _resolve_cwd(cwd, remember=remember)
    if not in_callers_folder():  # over HTTP the server's folder means nothing to a remote client
        raise UserError(NO_PROJECT)
    scope = resolve_path(os.getcwd())
    if scope.git_root is not None and remember:
        remember_location(scope)
    return scope


def _resolve_cwd(cwd: str, *, remember: bool) -> Scope:
    try:
        folder, root = confined(cwd)
        scope = resolve_path(folder, stop=root)
    except OSError as exc:  # unreadable, a name too long: the caller's path, not our failure
        raise UserError(f"cwd cannot be read ({exc.strerror or type(exc).__name__}).") from None
    if scope.git_root is None:
        scope = Scope(_existing_bare_name(folder, scope.project_id), None)
    scope = Scope(refuse_lookalike(scope.project_id), scope.git_root)
    if scope.git_root is not None and remember:
        remember_location(scope)
    return scope


def confined(cwd: str) -> tuple[Path, Path | None]:
    """The folder `cwd` names (symlinks followed) and the allowed root holding it. The same error for
    every path outside the roots, whether it exists or not; only inside them is a missing one named.
    A process running in its caller's folder (stdio, the command line) serves the machine's own user:
    no root applies."""
    if "\x00" in cwd or len(cwd) > 4096:
        raise UserError("cwd must be a path of at most 4096 characters.")
    if not os.path.isabs(cwd):
        raise UserError("cwd must be an absolute path.")
    folder = Path(os.path.normpath(cwd))
    with contextlib.suppress(OSError, RuntimeError):
        folder = folder.resolve()
    root = None
    if not in_callers_folder():
        roots = allowed_roots()
        if not roots:
            raise CwdRefused(NO_ROOTS)
        root = next((r for r in roots if folder == r or r in folder.parents), None)
        if root is None:
            raise CwdRefused(OUTSIDE_ROOTS)
    if not folder.is_dir():
        raise CwdRefused(f"cwd {cwd[:300]} does not exist or is not a folder; pass the absolute path of your checkout.")
    return folder, root


def location_allowed(path: Path) -> bool:
    """Whether a recorded repository lies inside `[server].allowed_roots` (beat reconciles only those)."""
    return any(path == r or r in path.parents for r in allowed_roots())


def allowed_roots() -> list[Path]:
    """`[server].allowed_roots`; when unset, the user's home on a local install and nothing on a team server."""
    configured = settings.YULLU["server"]["allowed_roots"]
    if not configured and not is_team_server():
        configured = [str(Path.home())]
    roots = []
    for raw in configured:
        root = Path(os.path.expanduser(raw))
        with contextlib.suppress(OSError, RuntimeError):
            root = root.resolve()
        roots.append(root)
    return roots


def is_team_server() -> bool:
    """A server other people reach (docs: "Running for a team")."""
    return team_server_reason() is not None


def team_server_reason() -> str | None:
    """Why this is a team server (the `yullu serve` banner says it), or None: it keeps its data in a PostgreSQL
    server of its own (DATABASE_URL), sits behind a trusted proxy, or listens beyond loopback."""
    server = settings.YULLU["server"]
    if getattr(settings, "DATABASE_URL", ""):
        return "DATABASE_URL is set"
    if server["trusted_proxies"]:
        return "[server].trusted_proxies is set"
    host = server["host"].strip("[]")
    if host == "localhost":
        return None
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False  # a host name: whoever resolves it may connect
    return None if loopback else f"listening on {host or 'every address'}"


def _existing_bare_name(folder: Path, qualified: str) -> str:
    """A folder outside git whose bare name already holds memories (from before ids were qualified)
    keeps that project, unless the qualified id has memories of its own."""
    from .models import Memory

    bare = normalise_project_id(folder.name)
    if not bare or is_personal(bare) or bare == qualified:
        return qualified
    if Memory.objects.filter(project_id=bare).exists() and not Memory.objects.filter(project_id=qualified).exists():
        return bare
    return qualified


def refuse_lookalike(project_id: str) -> str:
    """A new id that differs from an existing project's only by look-alike letters (a Cyrillic `а` for
    a Latin `a`, ...) is refused: two projects that read the same would be told apart by nobody."""
    skeleton = fold(project_id)
    if skeleton == project_id:
        return project_id  # nothing imitates anything (every ASCII id)
    from access.models import Project

    from .models import Memory

    if Memory.objects.filter(project_id=project_id).exists() or Project.objects.filter(project_id=project_id).exists():
        return project_id  # an existing project keeps working
    others = Project.objects.exclude(project_id=project_id).values_list("project_id", flat=True)
    if Memory.objects.filter(project_id=skeleton).exists() or any(fold(o) == skeleton for o in others.iterator()):
        raise UserError(
            f"project_id {project_id!r} imitates another project's name with look-alike characters; "
            "use the real name, or one that does not look like another project's."
        )
    return project_id


# `last_seen` (shown in the admin) is refreshed at most this often: every tool call with a cwd
# resolves its project, and rewriting an unchanged row each time was a write transaction (and a
# WAL flush) on the read path.
LAST_SEEN_GRANULARITY = timedelta(minutes=10)


def remember_location(scope: Scope) -> None:
    """Record where the project's repo lives: for a linked worktree, its main checkout (so a write without a
    cwd keeps going to the main checkout's log, docs/contract.md §2). One indexed read when nothing changed."""
    from .models import ProjectLocation

    if scope.git_root is not None:
        scope = Scope(scope.project_id, main_checkout(scope.git_root))

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
    cwd, where its repo lives (`known_root`, a query) is not looked up; a read records no location."""
    if project_id and not cwd:
        return validate_project_id(project_id)
    return resolve(project_id, cwd, remember=False).project_id


def user_scope() -> Scope:
    """The acting user's personal scope."""
    return Scope(personal_project(), None)


SCOPES = ("project", "user")


def clean_scope(scope: Any) -> str:
    """The `scope` argument of a store (MCP and REST alike): "project" (the default: None or empty) or "user"."""
    if scope in (None, ""):
        return "project"
    if scope not in SCOPES:
        raise UserError("scope must be 'project' or 'user'.")
    return str(scope)


def scope_for(scope: Any, project_id: str | None, cwd: str | None) -> Scope:
    """The `scope` tool argument: "project" (default) resolves as usual, "user" is the personal scope."""
    return user_scope() if clean_scope(scope) == "user" else resolve(project_id, cwd)


def project_known(project_id: str) -> bool:
    """Whether this server has seen `project_id`: a memory of it or a folder of it (a misspelt id has neither)."""
    from .models import Memory, ProjectLocation

    return (
        Memory.objects.filter(project_id=project_id).exists()
        or ProjectLocation.objects.filter(project_id=project_id).exists()
    )


def known_root(project_id: str) -> Path | None:
    if is_personal(project_id):
        return None  # the user scope has no repository, so nothing of it reaches a team log

    root = recorded_root(project_id)
    if root is not None and Path(root, ".git").exists():
        return Path(root)
    return None


def recorded_root(project_id: str) -> str | None:
    """The folder this machine last saw a checkout of `project_id` in (ProjectLocation), there or not."""
    from .models import ProjectLocation

    # Runs on every tool call: plain SQL costs a tenth of the ORM query (11 % of the web
    # process's CPU under load, docs/benchmarks.md), prepared once per connection (planning took
    # ten times its execution). project_id is unique: one plan fits every value.
    rows = fetch_prepared(f"SELECT git_root FROM {ProjectLocation._meta.db_table} WHERE project_id = %s", [project_id])
    return str(rows[0][0]) if rows else None

"""The one access check (docs/contract.md §11). Services call it at their entry points; every adapter (MCP,
REST, the admin, the hooks' endpoints, tasks) reaches it through them, so a new adapter cannot
forget it.

- `require(project_id, role)`: may the acting user do this on that project? A project the caller may
  not read answers exactly like one that does not exist (NotFound with the message the caller
  would get for a missing project or memory); a read-only token gets one clear sentence on any write.
- `visible_projects()` / `only_visible(queryset)`: what lists may show (None = everything).
- Personal memories live under `~user:<user id>`: their owner's only, on every transport.

Cost: a superuser (the single-user owner, the CLI, tasks) is answered from the actor alone, with
no query; anyone else costs one prepared, indexed statement per check (docs/benchmarks.md).
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Q, QuerySet

from yullu_core.database import fetch_prepared
from yullu_core.errors import NotFound, UserError
from yullu_core.gitorigin import PERSONAL_PREFIX

from .actor import SYSTEM, Actor, acting, actor_for_user  # acting: also for attribution (memories.write)
from .audit import record
from .models import ROLE_RANK, Grant, Project, Role

QS = TypeVar("QS", bound=QuerySet[Any])
READ, WRITE, ADMIN = Role.READ.value, Role.WRITE.value, Role.ADMIN.value
# Before issue 28 one shared pile, `~user`; now `~user:<user id>` (the prefix lives in yullu_core.gitorigin,
# which the hooks share: a folder may never name a personal scope).


class Forbidden(UserError):
    status = 403


class ReadOnlyToken(Forbidden):
    pass


READ_ONLY_MESSAGE = (
    "This token is read-only: it may retrieve, list and read, not store, change, rate or delete. "
    "Use a token without --read-only for writes (`yullu tokens create --user NAME`)."
)


def is_personal(project_id: str) -> bool:
    return project_id == PERSONAL_PREFIX or project_id.startswith(PERSONAL_PREFIX + ":")


def owner_id() -> int | None:
    """The install's owner: the bootstrap account `admin`, else the first active superuser."""
    rows = fetch_prepared(
        "SELECT id FROM auth_user WHERE is_active AND (username = 'admin' OR is_superuser) "
        "ORDER BY (username = 'admin') DESC, id LIMIT 1",
        [],
    )
    return rows[0][0] if rows else None


def owner_actor() -> Actor:
    """The install's owner as the actor, for what they do at a terminal (`yullu memories add` / `rm`): a memory the
    CLI stores names them in created_by, as one their token stores over MCP or REST does (round 24: the admin and
    `memories list` showed the CLI's memories as written by no one while the team log named the git user).
    The system until the owner exists (no `yullu serve` or `yullu token` yet)."""
    owner = owner_id()
    if owner is None:
        return SYSTEM
    return actor_for_user(get_user_model().objects.get(pk=owner))


def personal_project(actor: Actor | None = None) -> str:
    """The acting user's personal scope. The system (CLI, stdio) acts for the install's owner."""
    actor = actor or acting()
    user_id = actor.user_id if actor.user_id is not None else owner_id()
    return PERSONAL_PREFIX if user_id is None else f"{PERSONAL_PREFIX}:{user_id}"


def open_projects() -> bool:
    return bool(settings.YULLU.get("access", {}).get("open_projects", True))


_ROLE_SQL = (
    f"SELECT g.role FROM {Grant._meta.db_table} g JOIN {Project._meta.db_table} p ON p.id = g.project_id "
    "WHERE p.project_id = %s AND (g.user_id = %s OR g.group_id IN "
    "(SELECT group_id FROM auth_user_groups WHERE user_id = %s))"
)


def role_on(project_id: str, actor: Actor | None = None) -> str | None:
    """The caller's best role on the project, or None."""
    actor = actor or acting()
    if is_personal(project_id):
        return Role.ADMIN if project_id == personal_project(actor) else None
    if actor.is_superuser:
        return Role.ADMIN
    if actor.user_id is None:
        return None
    roles = [row[0] for row in fetch_prepared(_ROLE_SQL, [project_id, actor.user_id, actor.user_id])]
    return max(roles, key=lambda r: ROLE_RANK[Role(r)]) if roles else None


def hidden(project_id: str, actor: Actor | None = None) -> NotFound:
    """The same sentence for a project that does not exist and one the caller may not read. A team member
    is also told where a role comes from: on the walk a new teammate got "project 'github.com/acme/minipkg'
    not found" from inside its checkout, with no word of grants (walk 10). That depends on the caller only."""
    actor = actor or acting()
    if actor.is_superuser:
        return NotFound(f"project {project_id!r} not found")
    return NotFound(
        f"project {project_id!r} not found, or you have no role on it: one of its admins gives you one "
        f"(`yullu grant {actor.username or 'USER'} {project_id} read`)."
    )


def require(project_id: str, role: str, *, missing: UserError | None = None) -> str:
    """Raise unless the acting user may act on `project_id` with `role`; returns the role they have.
    `missing`: the error a caller gets for something absent (e.g. "memory 7 not found"), given
    instead when the project is hidden from them, so the two cannot be told apart."""
    actor = acting()
    need = ROLE_RANK[Role(role)]
    if need > ROLE_RANK[Role.READ] and actor.read_only:
        raise ReadOnlyToken(READ_ONLY_MESSAGE)
    have = role_on(project_id, actor)
    if have is None and need > ROLE_RANK[Role.READ] and _claim(project_id, actor):
        have = Role.ADMIN
    if have is None:
        raise missing or hidden(project_id, actor)
    if ROLE_RANK[Role(have)] < need:
        raise Forbidden(
            f"You have {have} access to project {project_id!r}; this needs {role}. "
            "Ask one of its admins for a grant (`yullu grant USER PROJECT ROLE`)."
        )
    if need > ROLE_RANK[Role.READ] and not is_personal(project_id) and actor.is_superuser:
        ensure_project(project_id, actor)
    return have


def sees_install_wide() -> bool:
    return acting().is_superuser


def require_install_wide(what: str) -> None:
    """What belongs to no project (users, tokens, the dream prompt): superusers only. `what` names the act
    ("managing users", "changing the dreaming prompt")."""
    if not acting().is_superuser:
        raise Forbidden(f"{what} is install-wide (it belongs to no project): only a superuser may do it.")


def can(project_id: str, role: str) -> bool:
    try:
        require(project_id, role)
    except UserError:
        return False
    return True


def ensure_project(project_id: str, actor: Actor | None = None) -> None:
    """The Project row of a project being written to (one statement; nothing when it exists)."""
    actor = actor or acting()
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {Project._meta.db_table} (project_id, created_at, created_by_id) "
            "VALUES (%s, now(), %s) ON CONFLICT (project_id) DO NOTHING",
            [project_id, actor.user_id],
        )


def _claim(project_id: str, actor: Actor) -> bool:
    """`[access].open_projects`: a user writing to a project nobody has created yet creates it and
    becomes its admin. False when the project exists (then only grants apply) or the mode is off."""
    if actor.user_id is None or is_personal(project_id) or not open_projects():
        return False
    with transaction.atomic():
        project, created = Project.objects.get_or_create(
            project_id=project_id, defaults={"created_by_id": actor.user_id}
        )
        if not created:
            return False
        Grant.objects.create(project=project, user_id=actor.user_id, role=Role.ADMIN)
    record("project.claim", project_id, {"role": Role.ADMIN})
    return True


_VISIBLE_SQL = (
    f"SELECT DISTINCT p.project_id FROM {Project._meta.db_table} p JOIN {Grant._meta.db_table} g "
    "ON g.project_id = p.id WHERE g.role = ANY(%s) AND (g.user_id = %s OR g.group_id IN "
    "(SELECT group_id FROM auth_user_groups WHERE user_id = %s))"
)


def visible_projects(actor: Actor | None = None, role: str = READ) -> frozenset[str] | None:
    """The project ids on which the caller has at least `role` (with their personal scope), or None
    for all of them."""
    actor = actor or acting()
    if actor.is_superuser:
        return None
    if actor.user_id is None:
        return frozenset()
    roles = [r for r, rank in ROLE_RANK.items() if rank >= ROLE_RANK[Role(role)]]
    with connection.cursor() as cur:
        cur.execute(_VISIBLE_SQL, [roles, actor.user_id, actor.user_id])
        # A grant on someone's personal scope opens nothing: it is its owner's only (services refuse one).
        ids = {row[0] for row in cur.fetchall() if not is_personal(row[0])}
    return frozenset({*ids, personal_project(actor)})


def only_visible(qs: QS, field: str = "project_id", role: str = READ) -> QS:
    """`qs` narrowed to the projects on which the caller has `role` (reading, by default). A
    superuser's personal scope is theirs alone too: other people's `~user:<id>` rows are left out."""
    actor = acting()
    visible = visible_projects(actor, role)
    if visible is None:
        mine = personal_project(actor)
        return qs.filter(~Q(**{f"{field}__startswith": PERSONAL_PREFIX}) | Q(**{field: mine}))
    return qs.filter(**{f"{field}__in": sorted(visible)})


def visible_or_all(project_ids: list[str]) -> list[str]:
    """Filter a list of project ids (e.g. the projects page, /metrics labels)."""
    actor = acting()
    visible = visible_projects(actor)
    mine = personal_project(actor)
    if visible is None:
        return [p for p in project_ids if not is_personal(p) or p == mine]
    return [p for p in project_ids if p in visible]

"""What every database command does first, shared by `yullu …` and the supervisor: set Django up
(migrating, and stopping again an embedded PostgreSQL only this command started), say a failure in
one sentence, and tell whether a `yullu serve` already runs on this YULLU_HOME."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from yullu_core.pids import pid_exists

if TYPE_CHECKING:
    from access.actor import Actor


def fail(message: str, code: int = 1) -> NoReturn:
    from yullu_core.text import escape_controls

    print(f"yullu: {escape_controls(message)}", file=sys.stderr)
    raise SystemExit(code)


def setup_django(migrate: bool = True) -> None:
    """Set Django up for a command that uses the database: bring the schema up to date first (so
    a command run before the first `make run` works), and stop again an embedded PostgreSQL that
    only this command started (so nothing is left running after it exits)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yullu_site.settings")
    not_on_a_team_servers_client()
    from yullu_core.config import load

    load()  # a broken config.toml is its sentence before anything is made: it said "creating the database" first
    import django

    started_here = migrate and _embedded_postgres_is_down()
    if started_here and (new := _new_cluster()) is not None:
        # Creating and migrating a new database took 5 s here and 46-56 s on a busy machine, in silence
        # before "brought the database up to date" (walk 9: `yullu token` before the first `make run`).
        print(f"yullu: creating the database in {new} (its first use: a few seconds)…", file=sys.stderr, flush=True)
    django.setup()
    from yullu_core.database import start_database

    start_database()  # importing the settings starts nothing (yullu_core/embedded_backend)
    if started_here:
        import atexit

        atexit.register(_stop_postgres_started_here)
    if migrate:
        from yullu_core.database import migrate_if_needed

        if migrated := migrate_if_needed():
            print(f"yullu: brought the database up to date{upgrade_summary(migrated)}.", file=sys.stderr)


def as_the_owner() -> contextlib.AbstractContextManager[Actor]:
    """Act as the install's owner for a command run at this machine's terminal (`yullu memories`, `import`,
    `dream`, `prune`): what it writes names them in created_by / updated_by and history, as what their token
    writes over MCP or REST does (round 25: `yullu import` and `dream` stored memories naming no one). Not
    `reconcile` nor `sync compact`: they apply and fold teammates' changes, which name their events' authors."""
    from access.actor import acting_as
    from access.policy import owner_actor

    return acting_as(owner_actor())


def not_on_a_team_servers_client() -> None:
    """A home that `yullu install --server URL` made a team server's client keeps no memories: every
    database command there created and filled an embedded PostgreSQL nobody reads (walk 10: `yullu memories
    list` said "0 shown" beside the team's four, `yullu reconcile` and `yullu dream` ran against it)."""
    from yullu_core.env import env_is_set

    if env_is_set("DATABASE_URL"):
        return  # a node of a team server, which uses the shared database
    from .hooks import yullu_home
    from .team_server import client_of

    if server := client_of(Path.home(), yullu_home()):
        fail(
            f"this install is a client of the team server {server} (`yullu install --server`), which keeps the "
            f"memories, so this command has no database here: use your assistant's tools or its admin "
            f"({server}/admin/); a server of this machine's own needs a YULLU_HOME of its own."
        )


def upgrade_summary(migrated: list[str]) -> str:
    """' (1 migration: app.0004_x)' after an upgrade; nothing for a new database (Django's first
    migration among them: every table is new, no news)."""
    if not migrated or "contenttypes.0001_initial" in migrated:
        return ""
    names = ", ".join(migrated[:3]) + (f" and {len(migrated) - 3} more" if len(migrated) > 3 else "")
    return f" ({len(migrated)} migration{'s' if len(migrated) > 1 else ''}: {names})"


def _new_cluster() -> Path | None:
    """The embedded cluster's folder when it does not exist yet (nothing ever ran in this home)."""
    from yullu_core import postgres as pg
    from yullu_core.paths import ensure_home

    pgdata: Path = pg.plan(ensure_home()).pgdata
    return None if (pgdata / "PG_VERSION").exists() else pgdata


def _embedded_postgres_is_down() -> bool:
    from yullu_core.env import env_is_set

    if env_is_set("DATABASE_URL"):
        return False
    from yullu_core import postgres as pg
    from yullu_core.paths import ensure_home

    return not pg.is_running(pg.plan(ensure_home()))


def _stop_postgres_started_here() -> None:
    from django.db import connections

    from yullu_core import postgres as pg
    from yullu_core.paths import ensure_home

    connections.close_all()
    home = ensure_home()
    if not server_running(home):  # a `yullu serve` that started meanwhile is using it now
        pg.stop(home)


def serving(pid: int) -> bool:
    """Whether `pid` runs a `yullu serve`. A pid file's pid is reused by another program after a reboot (or a
    container's restart, whose pids start again from 1): `yullu serve` then refused to start, "a server is already
    running for this YULLU_HOME (pid N)", naming a shell or a browser (chaos drill, round 24)."""
    import psutil

    if not pid_exists(pid):
        return False
    try:
        words = " ".join(psutil.Process(pid).cmdline())
    except psutil.AccessDenied:
        return True  # another user's process: cannot tell, so as before
    except psutil.Error:
        return False
    return "yullu" in words and "serve" in words


def server_running(home: Path) -> bool:
    """Whether a `yullu serve` (any role) is running on this YULLU_HOME."""
    for pidfile in (home / "run").glob("serve*.pid"):
        with contextlib.suppress(OSError, ValueError):
            pid = int(pidfile.read_text().strip() or "0")
            if pid and pid != os.getpid() and serving(pid):
                return True
    return False

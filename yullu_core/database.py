"""Which PostgreSQL we talk to: `DATABASE_URL` when set, else the embedded server."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from . import postgres as pg


class DatabaseUrlError(Exception):
    pass


def parse_database_url(url: str) -> dict[str, Any]:
    """postgres://user:pass@host:port/db?host=/socket/dir → Django DATABASES entry."""
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql", "postgis"):
        raise DatabaseUrlError(
            "DATABASE_URL must start with postgresql:// (only PostgreSQL with pgvector is supported)."
        )
    query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    name = unquote(parsed.path.lstrip("/")) or query.pop("dbname", "")
    if not name:
        raise DatabaseUrlError("DATABASE_URL must name a database, e.g. postgresql://user@host:5432/yullu.")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": query.pop("host", parsed.hostname or ""),
        "PORT": str(parsed.port or ""),
        "OPTIONS": query,
    }


def embedded_database(home: Path) -> dict[str, Any]:
    """The embedded server's entry, without starting it (yullu_core.embedded_backend does, on the
    process's first connection): where it will listen only depends on `home`."""
    info = pg.plan(home).conninfo()
    return {
        "ENGINE": "yullu_core.embedded_backend",
        "NAME": info["dbname"],
        "USER": info["user"],
        "PASSWORD": "",
        "HOST": info["host"],
        "PORT": "",
        "OPTIONS": {},
    }


_embedded_ensured = False
_embedded_lock = threading.Lock()  # the first connections of several threads start it once


def ensure_embedded(home: Path) -> None:
    """Start the embedded server of `home` unless this process already did or found it running.
    Once per process, as when the settings started it on import: a server that dies later is
    started again by `yullu serve` (its watch), not by whichever connection notices."""
    global _embedded_ensured
    if _embedded_ensured:
        return
    with _embedded_lock:
        if not _embedded_ensured:
            pg.ensure_running(home)
            _embedded_ensured = True


def start_database() -> None:
    """Start the embedded server now when the settings use it: the first step of every process
    that is about to use the database (`yullu` commands, manage.py, the ASGI app's start-up)."""
    from django.conf import settings

    if settings.DATABASE_KIND == "embedded":
        ensure_embedded(settings.YULLU_HOME)


def start_database_or_say(process: str, then: str) -> bool:
    """`start_database` for a web, worker or beat process: a database that does not answer or cannot be started
    right now is one line on stderr saying `then` (what the process does next), and False. Before, a web process
    restarted while PostgreSQL was stopped with SIGSTOP printed uvicorn's 50-line traceback above the supervisor's
    line, and a worker or beat Celery's 25 (the chaos drill)."""
    import psycopg

    from .failures import first_line

    try:
        start_database()
    except (pg.EmbeddedPostgresError, psycopg.OperationalError) as exc:
        why = first_line(exc) or type(exc).__name__
        print(f"yullu: the {process} process could not reach the embedded PostgreSQL at start ({why}); {then}",
              file=sys.stderr, flush=True)  # fmt: skip
        return False
    return True


def database_settings(database_url: str, home: Path) -> tuple[dict[str, Any], str]:
    """The DATABASES['default'] entry and its kind ('external' or 'embedded')."""
    if database_url:
        return parse_database_url(database_url), "external"
    return embedded_database(home), "embedded"


@contextmanager
def migration_lock() -> Iterator[None]:
    """Hold the migration lock on Django's connection (re-entrant within one session)."""
    from django.db import connection

    from .locks import LockKey

    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_lock(%s)", [LockKey.MIGRATE])
        try:
            yield
        finally:
            cur.execute("SELECT pg_advisory_unlock(%s)", [LockKey.MIGRATE])


def migrate_if_needed() -> list[str]:
    """Apply pending migrations under the migration lock (so processes starting together take
    turns). Returns the ones applied (`app.name`, in order; empty when none). Safe to call from
    every process and command."""
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    def pending() -> list[str]:
        executor = MigrationExecutor(connection)
        refuse_a_newer_schema(executor.loader)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        return [f"{migration.app_label}.{migration.name}" for migration, _backwards in plan]

    if not pending():
        return []
    with migration_lock():
        applied = pending()  # empty when another process migrated while we waited
        if applied:
            call_command("migrate", interactive=False, verbosity=0)
        return applied


class NewerSchemaError(Exception):
    """The database was brought up to date by a newer Yul'lu than this one."""


def refuse_a_newer_schema(loader: Any) -> None:
    """Stop when the database holds migrations of this code's apps that this code does not have: a newer
    version applied them (the user went back to an older commit or wheel). Walk 18 went back a week after
    an upgrade: the older site started, read, and answered every write "The database is unavailable right
    now; try again shortly" (a NOT NULL column it did not know). Apps this code lacks are not judged (a
    later version may drop an app and leave its rows)."""
    unknown = sorted(
        f"{app}.{name}"
        for app, name in loader.applied_migrations
        if app in loader.migrated_apps and (app, name) not in loader.graph.nodes
    )
    if unknown:
        names = ", ".join(unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
        raise NewerSchemaError(
            f"this database was brought up to date by a newer Yul'lu than this one ({len(unknown)} "
            f"migration{'s' if len(unknown) > 1 else ''} this version does not know: {names}), so this version "
            "cannot write to it: run the newer version again (check out its commit and `make run`, or install "
            "its wheel), or restore a copy of YULLU_HOME or a `yullu export json` file made before the upgrade; "
            "nothing was changed."
        )


def fetch_prepared(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Rows of a hot read, run as a server-side prepared statement on Django's connection (same
    transaction, same health check). PostgreSQL then plans it once per connection instead of on
    every call: planning the retrieve's small statements cost more than running them
    (docs/benchmarks.md, "SQL per operation"). Only for statements with no table or a unique-key
    lookup in a small table: a reused generic plan is chosen without the values, so a skewed filter
    (`project_id = %s`) could keep a plan that suits another project, and an `id = ANY(%s)` join
    planned on old statistics walked a whole table (the search's details query, taken back out).
    Django's ORM keeps its client-side binding; this bypasses its query log."""
    import psycopg
    from django.db import connection

    with connection.cursor():  # health check and connect, as Django does for any query
        pass
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cur:
        cur.execute(sql, params, prepare=True)
        return cur.fetchall()

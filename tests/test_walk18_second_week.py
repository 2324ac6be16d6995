"""Defects walk 18 (a user's second week, from a clean home) met, each as it was met: going back to the
commit of a week before after an upgrade, the older site started on the newer database, read, and
answered every write "The database is unavailable right now; try again shortly" (a NOT NULL column it
did not know), with nothing saying why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from tests.processes import product_env, run_cli
from yullu_core.database import NewerSchemaError, migrate_if_needed

pytestmark = pytest.mark.django_db(transaction=True)

FUTURE = ("memories", "9999_from_a_newer_yullu")


@pytest.fixture
def newer_schema() -> Iterator[None]:
    """The database as a newer version left it: one migration of this code's app that this code lacks."""
    with connection.cursor() as cur:
        cur.execute("INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, now())", FUTURE)
    try:
        yield
    finally:
        with connection.cursor() as cur:
            cur.execute("DELETE FROM django_migrations WHERE app = %s AND name = %s", FUTURE)


def test_a_database_a_newer_version_migrated_is_refused_in_one_sentence(newer_schema: None) -> None:
    with pytest.raises(NewerSchemaError, match=r"brought up to date by a newer Yul'lu .*memories\.9999_from_a_n"):
        migrate_if_needed()


def test_every_command_says_so_and_changes_nothing(newer_schema: None, tmp_path: Path) -> None:
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM django_migrations")
        before = cur.fetchone()
    for args in (["token"], ["memories", "add", "a fact written after going back", "--project", "acme/p"]):
        ran = run_cli(args, env, timeout=120)
        assert ran.returncode == 1, (args, ran.stdout, ran.stderr)
        lines = ran.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in ran.stderr, ran.stderr
        assert "newer Yul'lu than this one (1 migration this version does not know: memories.9999" in lines[0]
        assert "run the newer version again" in lines[0] and "nothing was changed" in lines[0]
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM django_migrations")
        assert cur.fetchone() == before
        cur.execute("SELECT count(*) FROM memories_memory")
        assert cur.fetchone() == (0,)


def test_the_same_database_without_the_newer_migration_still_starts() -> None:
    assert migrate_if_needed() == []

"""Upgrading a database made before the access app (issue 28): the schema is taken back to the last
migrations main had before it (no access tables, tokens in yullu_site's table without expiry or
read-only, one shared `~user` pile, no attribution columns), rows are written as that code wrote
them, then every migration runs forward. Every memory, token and setting is kept; the pile becomes
the owner's; each project gets its Project row."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from access.auth import user_for_token
from access.models import Project, hash_token
from memories.models import KeyValue, Memory

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE_ACCESS = [("access", None), ("yullu_site", "0002_broker_message"), ("memories", "0010_memory_held_reason")]
RAW = "yl_from-before-the-access-app"


def migrate(targets: list[tuple[str, str | None]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.fixture
def old_schema() -> Iterator[None]:
    migrate(BEFORE_ACCESS)
    try:
        yield
    finally:  # whatever happened, the next tests get today's schema
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_a_database_from_before_the_access_app_upgrades_with_everything_kept(old_schema: None) -> None:
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO auth_user (username, password, is_superuser, is_staff, is_active, first_name, last_name,"
            " email, date_joined) VALUES ('admin', '!', true, true, true, '', '', '', now()) RETURNING id"
        )
        admin_id = cur.fetchone()[0]
        cur.execute(
            "INSERT INTO yullu_site_apitoken (user_id, name, key_hash, created_at) VALUES (%s, 'default', %s, now())",
            [admin_id, hash_token(RAW)],
        )
        for project, content in [
            ("github.com/acme/app", "Deploys go through make ship."),
            ("github.com/acme/app", "The staging database is called stage-db."),
            ("github.com/acme/lib", "Releases are tagged vX.Y.Z."),
            ("~user", "Answer in British English."),
        ]:
            cur.execute(
                "INSERT INTO memories_memory (uuid, project_id, content, tags, created_at, updated_at,"
                " rating_comment, importance) VALUES (gen_random_uuid(), %s, %s, '{}', now(), now(), '', 'normal')",
                [project, content],
            )
        cur.execute("INSERT INTO memories_keyvalue (key, value) VALUES ('backfill:local', '42')")

    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    assert Memory.objects.count() == 4
    assert set(Memory.objects.values_list("project_id", flat=True)) == {
        "github.com/acme/app",
        "github.com/acme/lib",
        f"~user:{admin_id}",
    }, "the shared personal pile is the owner's now"
    assert set(Project.objects.values_list("project_id", flat=True)) == {"github.com/acme/app", "github.com/acme/lib"}
    user = user_for_token(RAW)
    assert user is not None and user.pk == admin_id, "the old token still works"
    assert KeyValue.objects.get(key="backfill:local").value == "42"

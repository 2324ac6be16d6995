"""The indexes that keep the admin's pages and a store fast at a million memories (issue 29,
migrations 0014-0018) must serve the queries the pages really run: each test captures a page's (or
a store's) SQL and asks PostgreSQL's planner which index it reads, with every other way priced out
(on these tiny tables the planner's choice among indexes is a coin toss: only the index under test
may be left able to answer). A change to a query that the index can no longer serve turns it red."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memories.models import Memory, MemoryEvent
from memories.scope import Scope
from memories.write import create
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db
A = Scope("acme/indexes", None)


def plan_of(run: Callable[[], Any], marker: str, *off: str) -> str:
    """The plan of the one query `run` sends whose SQL contains `marker`, with sequential scans and the
    plan kinds in `off` priced out."""
    with CaptureQueriesContext(connection) as ctx:
        run()
    found = [q["sql"] for q in ctx.captured_queries if marker in q["sql"]]
    assert len(found) == 1, found
    with connection.cursor() as cur:
        for kind in ("seqscan", *off):  # tiny tables: a seq scan would win anyway
            cur.execute(f"SET LOCAL enable_{kind} = off")
        cur.execute("EXPLAIN " + found[0])
        plan = "\n".join(row[0] for row in cur.fetchall())
        for kind in ("seqscan", *off):
            cur.execute(f"RESET enable_{kind}")
    return plan


def only_index(table: str, keep: str) -> None:
    """Every other index of `table` that could answer the query under test dropped inside the test's
    transaction (rolled back after), so the plan says whether `keep` can. Indexes behind a constraint
    (the primary key, unique columns) stay."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "JOIN pg_class t ON t.oid = x.indrelid WHERE t.relname = %s AND i.relname <> %s "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)",
            [table, keep],
        )
        others = [row[0] for row in cur.fetchall()]
        cur.execute(f"DROP INDEX {', '.join(others)}")


@pytest.fixture
def reviewer(client: Client, owner: Any, stub_embedder: StubServer) -> Client:
    owner.is_superuser = True
    owner.save()
    client.force_login(owner)
    for i in range(3):
        create.store_memory(A, f"Deploys go out on day {i} of the sprint", "process")
    return client


def test_the_review_queue_reads_unrated_memories_in_order(reviewer: Client) -> None:
    plan = plan_of(
        lambda: reviewer.get("/admin/memories/memory/review/"), 'ORDER BY "memories_memory"."created_at" DESC', "sort"
    )
    assert "memory_unrated_created" in plan and "Sort" not in plan


def test_the_memories_list_reads_the_newest_changes_in_order(reviewer: Client) -> None:
    plan = plan_of(
        lambda: reviewer.get("/admin/memories/memory/"), 'ORDER BY "memories_memory"."updated_at" DESC', "sort"
    )
    assert "memory_updated" in plan and "Sort" not in plan


def test_the_activity_chart_reads_the_index_alone(reviewer: Client) -> None:
    assert MemoryEvent.objects.exists()
    day = '"memories_memoryevent"."created_at" AT TIME ZONE'
    # A bitmap scan always reads the rows, and the other time indexes could answer too: priced out and
    # dropped (rolled back after), the index-only path shows it exists (on a large table, once
    # vacuumed, the planner takes it by itself).
    only_index("memories_memoryevent", "event_time_kind")
    plan = plan_of(lambda: reviewer.get("/admin/memories/memory/stats/"), day, "bitmapscan")
    assert "Index Only Scan using event_time_kind" in plan, plan


def test_a_stores_exact_text_check_reads_the_text_index(stub_embedder: StubServer) -> None:
    create.store_memory(A, "Releases are cut on Tuesdays", "process")
    only_index("memories_memory", "memory_content_hash")
    plan = plan_of(lambda: create.store_memory(A, "Hotfixes skip the release train"), "content = ANY(")
    assert "memory_content_hash" in plan


@pytest.mark.parametrize(
    ("url", "marker"),
    [
        ("/admin/memories/memory/stats/", 'AS "recalls"'),  # the top recalled memories
        ("/admin/memories/memory/projects/", 'COUNT(DISTINCT "memories_memoryevent"."recall_id")'),  # per project
    ],
)
def test_the_30_days_recalls_are_read_from_the_recall_index_alone(reviewer: Client, url: str, marker: str) -> None:
    memory = Memory.objects.filter(project_id=A.project_id).first()
    MemoryEvent.objects.create(kind="recalled", memory=memory, project_id=A.project_id, recall_id=uuid.uuid4())
    only_index("memories_memoryevent", "event_recalled_time")
    plan = plan_of(lambda: reviewer.get(url), marker, "bitmapscan")
    assert "Index Only Scan using event_recalled_time" in plan


@pytest.mark.parametrize(
    "url", ["/admin/memories/memory/review/?source=assistant", "/admin/memories/memory/?source=assistant"]
)
def test_a_list_filtered_by_source_sorts_instead_of_walking_the_index(reviewer: Client, url: str) -> None:
    """Read in index order, a source whose memories are few among the newest tested every memory
    (8.8 s at 1M): a list filtered by source is sorted after the filter (admin_queries)."""
    plan = plan_of(lambda: reviewer.get(url), "::interval) DESC")
    assert "Sort" in plan


def test_a_rare_source_is_looked_up_first_and_filtered_by_id(reviewer: Client) -> None:
    with CaptureQueriesContext(connection) as ctx:
        reviewer.get("/admin/memories/memory/review/?source=assistant")  # 3 memories: rare
    page = [q["sql"] for q in ctx.captured_queries if "::interval) DESC" in q["sql"]]
    assert len(page) == 1 and '"memories_memory"."id" IN (' in page[0] and "EXISTS" not in page[0]
    lookup = [q["sql"] for q in ctx.captured_queries if '("memories_memoryevent"."metadata" -> \'source\')' in q["sql"]]
    assert lookup
    only_index("memories_memoryevent", "event_created_source")
    with connection.cursor() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("EXPLAIN " + lookup[0])
        assert "event_created_source" in "\n".join(r[0] for r in cur.fetchall())
        cur.execute("RESET enable_seqscan")

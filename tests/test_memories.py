"""Write path, retrieval maths, recall log and embedder switching (real Postgres + pgvector)."""

from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from memories import lifecycle
from memories.embedding.embedders import get_embedder
from memories.embedding.vector_index import index_name
from memories.models import EventKind, Memory, MemoryEvent, MemoryVector, RecallFeedback, RejectedMemory, Usage
from memories.scope import Scope
from memories.search import bm25, candidates, queries, recall_log
from memories.write import create, edit, validation
from tests.stubs import StubServer
from yullu_core.errors import NotFound, Unavailable, UserError

pytestmark = pytest.mark.django_db
A = Scope("acme/app", None)
B = Scope("acme/other", None)


def test_create_update_delete_round_trip(stub_embedder: StubServer) -> None:
    m = create.store_memory(A, "  Deploys go through the release train  ", "PROCESS", ["ci", "ci", " release "]).memory
    assert (m.content, m.category, m.tags) == ("Deploys go through the release train", "process", ["ci", "release"])
    assert MemoryVector.objects.get(memory=m).embedder == "openai:stub-embed"
    updated = edit.update_memory(m.id, content="Deploys go out every Tuesday", category="")
    assert updated.category is None and updated.content == "Deploys go out every Tuesday"
    edit.delete_memory(m.id)
    assert not Memory.objects.filter(pk=m.id).exists()
    kinds = list(MemoryEvent.objects.order_by("id").values_list("kind", flat=True))
    assert kinds == ["created", "updated", "deleted"]


def test_an_unknown_category_is_refused_naming_the_five_and_empty_is_uncategorised(stub_embedder: StubServer) -> None:
    with pytest.raises(UserError, match="'opinion' is not a category; use one of process, decision, gotcha, domain"):
        create.store_memory(A, "x is y", "opinion")
    assert Memory.objects.count() == 0
    assert create.store_memory(A, "x is y", "").memory.category is None


@pytest.mark.parametrize("content", ["", "   ", None, 42, "a\x00b"])
def test_bad_content_is_refused_and_nothing_is_stored(stub_embedder: StubServer, content: Any) -> None:
    with pytest.raises(UserError):
        create.store_memory(A, content)
    assert Memory.objects.count() == 0


def test_oversized_content_is_refused_with_the_limit(stub_embedder: StubServer) -> None:
    limit = settings.YULLU["retrieval"]["max_content_chars"]
    with pytest.raises(UserError, match=f"limit is {limit}"):
        create.store_memory(A, "x" * (limit + 1))
    assert Memory.objects.count() == 0


def test_update_with_nothing_is_refused(stub_embedder: StubServer) -> None:
    m = create.store_memory(A, "fact").memory
    with pytest.raises(UserError, match="nothing to update"):
        edit.update_memory(m.id)


def test_unknown_ids_are_not_found() -> None:
    with pytest.raises(NotFound, match="memory 999999 not found"):
        edit.update_memory(999999, content="x")
    with pytest.raises(NotFound):
        edit.delete_memory(999999)


def test_a_failing_embedder_is_one_clear_error_and_writes_nothing(stub_embedder: StubServer) -> None:
    stub_embedder.embed_status = 500
    with pytest.raises(Unavailable, match="openai embedder"):
        create.store_memory(A, "will not be stored")
    assert Memory.objects.count() == 0
    assert Usage.objects.filter(ok=False).count() == 1


def test_remote_embeds_record_usage_rows(stub_embedder: StubServer) -> None:
    create.store_memories(A, [validation.NewMemory(f"fact number {i}") for i in range(5)])
    assert stub_embedder.embed_calls() == 1  # batched
    row = Usage.objects.get()
    assert (row.provider, row.kind, row.ok) == ("openai", "embed", True)
    assert row.input_tokens == 15


def test_a_priced_model_costs_its_tokens_and_an_unknown_model_costs_nothing(
    stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC §7: cost in USD microcents from a price table; unknown models cost 0.
    from memories.embedding import embedders

    create.store_memory(A, "fact embedded by a model the table does not list")
    unknown = Usage.objects.get()
    assert (unknown.model, unknown.cost_microcents) == ("stub-embed", 0) and unknown.input_tokens > 0
    embedding = {**settings.YULLU["embedding"], "model": "text-embedding-3-small"}  # $0.02 per 1M tokens
    monkeypatch.setitem(settings.YULLU, "embedding", embedding)
    embedders._cache.clear()
    create.store_memory(A, "fact embedded by a model of the price table")
    priced = Usage.objects.get(model="text-embedding-3-small")
    assert priced.input_tokens > 0 and priced.cost_microcents == priced.input_tokens * 2


def test_secrets_are_refused_before_anything_is_written(stub_embedder: StubServer) -> None:
    with pytest.raises(UserError, match="github-pat") as err:
        create.store_memory(A, "use ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 for CI")
    assert "ghp_" not in str(err.value)
    assert Memory.objects.count() == 0 and stub_embedder.embed_calls() == 0


def test_projects_are_isolated(stub_embedder: StubServer) -> None:
    create.store_memory(A, "vec:1,0,0 alpha fact")
    create.store_memory(B, "vec:1,0,0 beta fact")
    found = queries.search(A.project_id, "vec:1,0,0 alpha", min_similarity=0.0, log=False)
    assert [h["project_id"] for h in found.results] == ["acme/app"]


def test_similarity_is_cosine_for_exact_near_and_orthogonal_vectors(stub_embedder: StubServer) -> None:
    exact = create.store_memory(A, "vec:1,0,0 exact").memory
    near = create.store_memory(A, "vec:0.9,0.4,0 near").memory  # cosine 0.914: related, not a duplicate
    ortho = create.store_memory(A, "vec:0,1,0 orthogonal").memory
    found = queries.search(A.project_id, "vec:1,0,0 query", limit=5, min_similarity=0.0, mode="dense", log=False)
    sims = {h["id"]: h["similarity"] for h in found.results}
    assert sims[exact.id] == pytest.approx(1.0, abs=1e-4)
    assert sims[near.id] == pytest.approx(0.9 / (0.97**0.5), abs=1e-3)
    assert sims[ortho.id] == pytest.approx(0.0, abs=1e-4)
    assert [h["rank"] for h in found.results] == [1, 2, 3]
    assert [h["id"] for h in found.results] == [exact.id, near.id, ortho.id]


def test_the_floor_drops_weak_matches_and_can_drop_everything(stub_embedder: StubServer) -> None:
    create.store_memory(A, "vec:1,0,0 exact")
    create.store_memory(A, "vec:0,1,0 orthogonal")
    found = queries.search(A.project_id, "vec:1,0,0 query", min_similarity=0.5, mode="dense")
    assert len(found.results) == 1 and len(found.considered) == 1
    nothing = queries.search(A.project_id, "vec:0,0,1 query", min_similarity=0.99, mode="dense")
    assert nothing.results == []


def test_category_filter_is_an_or_and_excludes_uncategorised(stub_embedder: StubServer) -> None:
    # Distinct facts with equally close vectors (identical vectors would be one memory).
    create.store_memory(A, "vec:1,0.3,0 a", "gotcha")
    create.store_memory(A, "vec:1,0,0.3 b", "decision")
    create.store_memory(A, "vec:1,0,0,0.3 c")
    found = queries.search(
        A.project_id, "vec:1,0,0 q", categories=["gotcha", "decision", "bogus"], min_similarity=0.0, log=False
    )
    assert sorted(str(h["category"]) for h in found.results) == ["decision", "gotcha"]
    everything = queries.search(A.project_id, "vec:1,0,0 q", categories=["bogus"], min_similarity=0.0, log=False)
    assert len(everything.results) == 3


@pytest.mark.parametrize("query", ["ok", "Thanks!", "yes.", "continue", "  "])
def test_trivial_queries_skip_the_embedder(stub_embedder: StubServer, query: str) -> None:
    create.store_memory(A, "something")
    before = stub_embedder.embed_calls()
    assert queries.search(A.project_id, query).results == []
    assert stub_embedder.embed_calls() == before


def test_an_empty_project_skips_the_embedder(stub_embedder: StubServer) -> None:
    assert queries.search("nobody/here", "how do we deploy?").results == []
    assert stub_embedder.embed_calls() == 0


def test_recall_log_groups_recalled_and_considered(stub_embedder: StubServer) -> None:
    create.store_memory(A, "vec:1,0,0 exact")
    create.store_memory(A, "vec:0,1,0 orthogonal")
    found = queries.search(A.project_id, "vec:1,0,0 query", min_similarity=0.5)
    events = MemoryEvent.objects.filter(recall_id=found.recall_id)
    assert sorted(events.values_list("kind", flat=True)) == [EventKind.CONSIDERED, EventKind.RECALLED]
    recalled = events.get(kind=EventKind.RECALLED)
    assert recalled.metadata["query"] == "vec:1,0,0 query" and recalled.metadata["rank"] == 1
    preview = queries.search(A.project_id, "vec:1,0,0 query", min_similarity=0.5, log=False)
    assert preview.recall_id is None and MemoryEvent.objects.filter(kind=EventKind.RECALLED).count() == 1


def test_the_recall_log_keeps_a_pasted_secret_out_of_the_query_and_the_verdict(stub_embedder: StubServer) -> None:
    # The hook sends whole prompts; a token pasted into one must not be kept by the log nor by a verdict
    # copied from it (found on walk 7: the admin's Retrievals page showed it).
    memory = create.store_memory(A, "vec:1,0,0 deploys go through fly").memory
    token = "fo1_Zk8mQ2rT6vY9wB3nL5pX7sD1fG4hJ0kA2cE8uI"
    prompt = f"vec:1,0,0 I set FLY_API_TOKEN={token}, how do we deploy?"
    found = queries.search(A.project_id, prompt, min_similarity=0.5)
    logged = MemoryEvent.objects.get(recall_id=found.recall_id, kind=EventKind.RECALLED).metadata["query"]
    assert token not in logged and logged.startswith("vec:1,0,0 I set FLY_API_TOKEN=[REDACTED")
    assert logged.endswith("how do we deploy?")
    lifecycle.rate_recall(found.recall_id, memory.id, True)
    assert token not in RecallFeedback.objects.get().query


def test_keyword_search_finds_exact_terms(stub_embedder: StubServer) -> None:
    create.store_memory(A, "The flux capacitor config lives in settings/flux.toml")
    create.store_memory(A, "Unrelated text about lunch")
    found = queries.search(A.project_id, "where is the flux capacitor configured", mode="keyword", log=False)
    assert "flux" in found.results[0]["content"]
    assert len(found.results) == 1


def test_rating_keeps_six_to_ten_and_archives_one_to_five(stub_embedder: StubServer) -> None:
    keep = create.store_memory(A, "good fact").memory
    drop = create.store_memory(A, "bad fact", "gotcha", ["x"]).memory
    assert edit.rate_memory(keep.id, 8, "useful")["archived"] is False
    assert Memory.objects.get(pk=keep.id).rating == 8
    assert edit.rate_memory(drop.id, 3, "too vague")["archived"] is True
    assert not Memory.objects.filter(pk=drop.id).exists()
    rejected = RejectedMemory.objects.get()
    assert (rejected.content, rejected.rating, rejected.rating_comment, rejected.tags) == (
        "bad fact",
        3,
        "too vague",
        ["x"],
    )


@pytest.mark.parametrize("rating", [0, 11, "high", True])
def test_out_of_range_ratings_are_refused(stub_embedder: StubServer, rating: Any) -> None:
    m = create.store_memory(A, "fact").memory
    with pytest.raises(UserError, match="1 to 10"):
        edit.rate_memory(m.id, rating)


def test_a_large_project_is_searched_through_the_hnsw_index(stub_embedder: StubServer) -> None:
    # Just past the size below which the product scans exactly, so `_dense` takes the HNSW path.
    # A project no other test uses: project sizes are cached per process for a while.
    large = Scope("acme/large", None)
    n = candidates.EXACT_SCAN_MAX + 1
    many = [validation.NewMemory(f"vec:{i % 7},1,{i % 5} fact number {i}") for i in range(n)]
    create.store_memories(large, many, dedupe=False)  # distinct facts; skip the per-item duplicate search
    bm25.forget(large.project_id)  # project sizes are cached per process (60 s)
    name = index_name("openai:stub-embed", 8)
    sent: list[tuple[str, Any]] = []

    def capture(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        sent.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        found = queries.search(large.project_id, "vec:1,1,0 which fact?", log=False, min_similarity=0.0)
    assert found.results
    dense = [(sql, params) for sql, params in sent if "<=>" in sql and "ORDER BY" in sql]
    assert len(dense) == 1, [sql for sql, _ in sent]
    sql, params = dense[0]
    with connection.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [name])
        assert cur.fetchone()
        cur.execute("EXPLAIN " + sql, params)  # the product's own query, as it sent it
        plan = "\n".join(r[0] for r in cur.fetchall())
    assert name in plan, plan


def test_switching_embedder_keeps_data_and_backfills(stub_embedder: StubServer, monkeypatch: Any) -> None:
    from memories.tasks import backfill_embeddings

    create.store_memory(A, "The deploy key lives in the vault under ops/deploy")
    monkeypatch.setitem(settings.YULLU, "embedding", {**settings.YULLU["embedding"], "model": "stub-embed-2"})
    from memories.embedding import embedders

    embedders._cache.clear()
    assert get_embedder().id == "openai:stub-embed-2"
    # Not embedded for the new model yet: keyword search still finds it.
    found = queries.search(A.project_id, "where is the deploy key", log=False)
    assert len(found.results) == 1 and found.results[0]["similarity"] is None
    backfill_embeddings()
    assert set(MemoryVector.objects.values_list("embedder", flat=True)) == {"openai:stub-embed", "openai:stub-embed-2"}
    found = queries.search(A.project_id, "where is the deploy key", log=False, min_similarity=0.0)
    assert found.results[0]["similarity"] is not None


def test_a_memory_deleted_during_a_search_does_not_break_the_recall_log(stub_embedder: StubServer) -> None:
    """Inside a caller's transaction (this test's): the deferred FK would fail only at its commit."""
    _log_a_search_whose_memory_was_deleted(in_transaction=True)


@pytest.mark.django_db(transaction=True)
def test_a_memory_deleted_during_a_search_does_not_break_the_recall_log_in_autocommit(
    stub_embedder: StubServer,
) -> None:
    """As a request logs it (no transaction): the INSERT's own commit checks the FK."""
    _log_a_search_whose_memory_was_deleted(in_transaction=False)


def _log_a_search_whose_memory_was_deleted(in_transaction: bool) -> None:
    kept = create.store_memory(A, "vec:1,0,0 kept").memory
    gone = create.store_memory(A, "vec:0,1,0 gone").memory
    if in_transaction:  # a store that builds the vector index makes them immediate for the transaction
        with connection.cursor() as cur:
            cur.execute("SET CONSTRAINTS ALL DEFERRED")  # as Django declares its foreign keys
    result = candidates.SearchResult(project_id=A.project_id, recall_id="00000000-0000-4000-8000-000000000001")
    from memories.wire import hit_to_wire as hit_dict

    result.results = [hit_dict(kept, 0.9, 1), hit_dict(gone, 0.8, 2)]
    Memory.objects.filter(pk=gone.pk).delete()  # a concurrent delete between search and logging
    recall_log.log_recall(result, "q")
    logged = dict(MemoryEvent.objects.filter(kind="recalled").values_list("memory_uuid", "memory_id"))
    assert logged == {kept.uuid: kept.pk, gone.uuid: None}


def test_memories_of_a_strong_hits_session_rise_with_it(stub_embedder: StubServer) -> None:
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    items = [
        validation.NewMemory("vec:1,0,0 the strong hit", None, ["session:s1"], t0),
        validation.NewMemory("vec:0.5,0.866,0 said in the same session", None, ["session:s1"], t0 - timedelta(hours=2)),
        validation.NewMemory(
            "vec:0.5,0.866,0 said a second later, elsewhere", None, ["session:s2"], t0 + timedelta(seconds=1)
        ),
        validation.NewMemory("vec:0.5,0.866,0 said with no session", None, [], t0 - timedelta(hours=3)),
    ]
    create.store_memories(A, items, source="test", dedupe=False)  # three equal vectors on purpose
    found = queries.search(A.project_id, "vec:1,0,0 question", limit=4, min_similarity=0.0, mode="dense", log=False)
    order = [hit["content"].split(" ", 1)[1] for hit in found.results]
    # Without the session signal the three equal matches would be ordered by recency alone.
    assert order == [
        "the strong hit",
        "said in the same session",
        "said a second later, elsewhere",
        "said with no session",
    ]
    assert found.results[1]["similarity"] == pytest.approx(0.5, abs=1e-3)  # similarity stays the plain cosine


def test_a_strong_hits_neighbours_in_its_session_rise_above_the_rest_of_it(stub_embedder: StubServer) -> None:
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    texts = [
        "vec:0,0,1 first",
        "vec:1,0,0 the strong hit",
        "vec:0.5,0.866,0 said right after it",
        "vec:0,0,1 filler",
        "vec:0,0,1 more filler",
        "vec:0.55,0.835,0 said much later, a little closer in meaning",
    ]
    items = [validation.NewMemory(t, None, ["session:s1"], t0 + timedelta(minutes=i)) for i, t in enumerate(texts)]
    create.store_memories(A, items, source="test", dedupe=False)
    found = queries.search(A.project_id, "vec:1,0,0 question", limit=3, min_similarity=0.0, log=False)
    # Without the neighbour share the slightly closer one, further from the hit, would come first.
    assert [hit["content"].split(" ", 1)[1] for hit in found.results] == [
        "the strong hit",
        "said right after it",
        "said much later, a little closer in meaning",
    ]


def test_a_session_too_large_to_read_per_search_gets_no_neighbour_share(
    stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime, timedelta

    from memories.search import expansion

    t0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    texts = ["vec:1,0,0 the strong hit", "vec:0.5,0.866,0 said right after it", "vec:0,0,1 filler"]
    items = [validation.NewMemory(t, None, ["session:big"], t0 + timedelta(minutes=i)) for i, t in enumerate(texts)]
    create.store_memories(A, items, source="test", dedupe=False)
    assert len(expansion.session_places(A.project_id, ["session:big"])) == 3
    monkeypatch.setattr(expansion, "SESSION_PLACES_MAX", 2)
    assert expansion.session_places(A.project_id, ["session:big"]) == {}  # bounded: not read at all


def test_every_connection_searches_hnsw_with_iterative_scans() -> None:
    """Set per connection (settings.py), not per query: a project filter must not starve the index scan."""
    with connection.cursor() as cur:
        cur.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector")  # loads pgvector in this session
        cur.execute("SHOW hnsw.iterative_scan")
        assert cur.fetchone()[0] == "relaxed_order"
        cur.execute("SHOW hnsw.ef_search")
        assert cur.fetchone()[0] == str(queries.DENSE_CANDIDATES)


def test_a_search_loads_only_the_rows_it_shows_and_a_memory_deleted_meanwhile_gives_way_to_the_next() -> None:
    from django.test.utils import CaptureQueriesContext

    ids = [Memory.objects.create(project_id="rows/shown", content=f"fact {n}").pk for n in range(4)]
    ordered = [candidates.Candidate(mid, similarity=0.9) for mid in ids]
    with CaptureQueriesContext(connection) as ran:
        kept, rows = queries._rows(ordered, lambda c: True, 2)
    assert sorted(rows) == ids[:2] and len(ran.captured_queries) == 1  # not the other candidates' rows
    Memory.objects.filter(pk=ids[0]).delete()  # between the ranking and the row fetch
    kept, rows = queries._rows(ordered, lambda c: True, 2)
    assert [c.memory_id for c in kept] == ids[1:] and sorted(rows) == ids[1:3]
    result = candidates.SearchResult(project_id="rows/shown", recall_id=None)
    queries._apply_floor(result, kept, rows, lambda c: True, 2)
    assert [h["id"] for h in result.results] == ids[1:3]

"""A search reads each candidate's text once, with its times (candidates.details), and its later steps use that
read: the questions' share (asking_last), the gate's cross-encoder and the rewordings (issue 34, round
twenty-three: they each read memories_memory by id again). Real models and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.embedding.embedders import embed_query, get_embedder
from memories.scope import resolve
from memories.search import candidates, queries
from memories.write import create, edit

pytestmark = pytest.mark.django_db

DEPLOY = "The probe service deploys with make ship-it after the canary passes."
NOTES = "Release notes for the API are written in CHANGELOG.md before each release; product reviews the wording."
FACTS = [
    DEPLOY,
    NOTES,
    "We chose Postgres over MongoDB because billing needs multi-row transactions. Why not MySQL? Licences.",
    "Run the whole test suite with make test; it starts its own Postgres.",
    "Did anyone check the canary? Is the deploy green?\nIt was, on Monday!",
    "Secrets are stored in Vault under secret/larkspur/<env>; never commit them.",
]
ASKED = "how do we launch a new version"  # the gate passes DEPLOY and NOTES; "launch" rewords as "deploy"
# What asking_last computed in PostgreSQL before (round eight): the Python pattern must count the same.
ASKING_SQL = (
    "SELECT coalesce((SELECT sum(length(x[1])) FROM regexp_matches(%s, '([^.!?\\n]*\\?)', 'g') x), 0)"
    "::float8 / greatest(length(%s), 1)"
)


def _store(project: str) -> dict[str, int]:
    scope = resolve(project, None)
    return {text: create.store_memory(scope, text, "").memory.pk for text in FACTS}


def _ranked(project: str, text: str) -> list[candidates.Candidate]:
    embedder = get_embedder()
    return queries.rank(project, text, embed_query(embedder, text), embedder.id, [], "hybrid")


def test_each_candidate_carries_its_own_memorys_current_text() -> None:
    ids = _store("acme/reads")
    text = {pk: content for content, pk in ids.items()}
    ranked = _ranked("acme/reads", ASKED)
    assert len(ranked) == len(FACTS)
    assert {c.memory_id: c.content for c in ranked} == text  # each its own row, none another's
    edit.update_memory(ids[NOTES], content="Release notes live in docs/releases, one file a version.")
    again = {c.memory_id: c.content for c in _ranked("acme/reads", ASKED)}
    assert again[ids[NOTES]] == "Release notes live in docs/releases, one file a version."  # no text kept


@pytest.mark.parametrize(
    "content",
    [
        *("", "no question here.", "Why? Because.", "a?b?c", "line one?\nline two", "¿Qué? ok! fine?", "what.\n?"),
        *("??", "a.?b", "?!?", "tail without an end", "word " * 1600 + "?", ("why so " * 300 + ". ") * 4, FACTS[4]),
    ],
)
def test_the_share_of_questions_is_counted_as_postgresql_counted_it(content: str) -> None:
    with connection.cursor() as cur:
        cur.execute(ASKING_SQL, [content, content])
        assert queries.asking_share(content) == cur.fetchone()[0]


def test_a_search_reads_no_memory_text_by_id_after_its_candidates_and_answers_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same hits, in the same order, as the same search whose later steps read every text by id (a
    candidate without Candidate.content, as a caller's own candidates are)."""
    ids = _store("acme/once")
    with CaptureQueriesContext(connection) as ran:
        merged = queries.search("acme/once", ASKED, log=False)
    by_id = [q["sql"] for q in ran.captured_queries if "FROM memories_memory " in q["sql"] and "ANY(" in q["sql"]]
    shown = queries._HIT_SQL.split(" FROM")[0]  # the rows shown (queries.hit_rows), read once they are known
    by_id = [sql for sql in by_id if not sql.startswith(shown)]
    assert all(sql.lstrip().startswith("SELECT m.id, CASE WHEN") for sql in by_id), by_id  # only details' read
    vectors = [q["sql"] for q in ran.captured_queries if q["sql"].startswith("SELECT memory_id, vector")]
    assert len(vectors) == 1  # the rewordings' vectors, for the memories holding a synonym only

    rank = queries.rank

    def without_texts(*args: Any, **kwargs: Any) -> list[candidates.Candidate]:
        found = rank(*args, **kwargs)
        for c in found:
            c.content = None
        return found

    monkeypatch.setattr(queries, "rank", without_texts)
    by_id_read = queries.search("acme/once", ASKED, log=False)
    assert [h["id"] for h in merged.results][:2] == [ids[DEPLOY], ids[NOTES]]
    assert [(h["id"], h["similarity"]) for h in merged.results] == [
        (h["id"], h["similarity"]) for h in by_id_read.results
    ]
    assert [h["id"] for h in merged.considered] == [h["id"] for h in by_id_read.considered]

"""A long pasted prompt (logs, code) is read for its question (memories.search.focus): the memory
that answers the question comes back, and the cross-encoder judges a bounded number of clauses."""

from __future__ import annotations

import pytest

from memories.scope import resolve
from memories.search import focus, queries, rerank
from memories.write import create

QUESTION = "Can you tell me which command we use to put database schema changes on the production server?"
LOGS = "\n".join(
    f"2026-11-26T04:{i % 60:02d}:13.{i:03d}Z ERROR dunning-worker-{i % 7} [req=ab{i}f3] tax cache miss for "
    f"invoice {9000 + i}: psycopg.OperationalError: connection refused at /srv/ledger/billing/tax.py:{100 + i}"
    for i in range(150)
)
PASTE = f"Here's the output from the nightly job, it keeps failing:\n{LOGS}\n{QUESTION}"
FACTS = {
    "migrate": "Schema migrations reach production only through make migrate-prod, run from the bastion host.",
    "dunning": "The dunning worker retries failed card payments three times over nine days.",
    "tax": "Tax rates are cached per invoice for 24 hours; the tax cache is warmed at 03:00 UTC.",
    "pdf": "Invoice PDFs are rendered by the weasyprint service, never in the web process.",
}


def test_a_short_prompt_is_read_whole() -> None:
    prompt = "I want to ship the new refund endpoint, what's the deploy process for it and who signs off"
    assert focus.focus(prompt) == prompt


def test_a_paste_keeps_its_question_and_a_couple_of_log_lines() -> None:
    kept = focus.focus(PASTE).split("\n")
    assert kept[0].startswith("Here's the output") and kept[-1] == QUESTION
    assert len(kept) == 2 + focus.MAX_NOISE  # the first and the last log line say what failed
    assert len(focus.focus(PASTE).split()) <= focus.FOCUS_WORDS


def test_the_cross_encoder_judges_at_most_max_clauses_of_a_paste_the_question_among_them() -> None:
    parts = rerank.clauses(PASTE)
    assert len(parts) == focus.MAX_CLAUSES and QUESTION in parts


@pytest.mark.django_db(transaction=True)
def test_a_question_after_a_long_paste_finds_its_memory() -> None:
    scope = resolve("acme/ledger", None)
    ids = {key: create.store_memory(scope, text, "process").memory.id for key, text in FACTS.items()}
    found = queries.search(scope.project_id, PASTE, log=False)
    assert [h["id"] for h in found.results][:1] == [ids["migrate"]]


def test_a_paste_without_clause_breaks_keeps_its_start_and_its_end() -> None:
    blob = " ".join(f"tok{i}" for i in range(400)) + " where do we deploy from"
    kept = focus.focus(blob).split()
    assert len(kept) == focus.FOCUS_WORDS and kept[0] == "tok0" and kept[-5:] == ["where", "do", "we", "deploy", "from"]

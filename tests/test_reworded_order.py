"""What the gate passes comes back closest in meaning first (memories.search.queries.closest_first):
a memory the keyword half lifts by a shared word ("release" in a note about release notes) no longer
comes before the memory that answers the question in other words ("publish a new build" is a deploy),
through MCP, with the real models and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from memories.embedding.embedders import LocalEmbedder, get_embedder
from memories.scope import resolve
from memories.search import gates, queries, rerank, synonyms
from memories.search.candidates import Candidate
from memories.write import create, validation
from tests.mcp_client import ask_all, http_session, store_all

pytestmark = pytest.mark.django_db(transaction=True)

DEPLOY = "The probe service deploys with make ship-it after the canary passes."
NOTES = "Release notes for the API are written in CHANGELOG.md before each release; product reviews the wording."
FACTS = [
    DEPLOY,
    NOTES,
    "We chose Postgres over MongoDB because billing needs multi-row transactions.",
    "Run the whole test suite with make test; it starts its own Postgres.",
    "On-call rotates weekly on Mondays; the schedule lives in PagerDuty.",
    "Secrets are stored in Vault under secret/larkspur/<env>; never commit them.",
    "Feature flags are read from LaunchDarkly, not env vars, so product can toggle them without a deploy.",
    "Customer data must stay in the EU region eu-west-1.",
]
# Both memories pass the gate for each; the fused order put the release notes first.
ASKED = ["how do we launch a new version", "how is a new release of the service pushed out"]
NOTES_ASKED = "where are the release notes written"  # the note's own words: it stays first


def test_a_question_is_reworded_with_the_synonyms_a_memory_holds() -> None:
    question = "how do we launch a new version"
    found = synonyms.swaps(question)
    assert "how do we deploy a new version" in synonyms.rewordings(question, found, DEPLOY)
    assert synonyms.rewordings(question, found, FACTS[2]) == []  # holds no synonym of "launch"
    # "api keys" is one phrase: swapped whole, not as "api" and "keys"
    asked = "where do api keys live"
    assert synonyms.rewordings(asked, synonyms.swaps(asked), FACTS[5]) == [
        "where do secret live",
        "where do vault live",
    ]


def test_the_memory_closest_to_the_question_comes_first_through_mcp(live_server_url: str, owner_token: str) -> None:
    async def go() -> tuple[dict[str, int], dict[str, Any]]:
        async with http_session(live_server_url, owner_token) as s:
            ids = await store_all(s, FACTS, "acme/order")
            return ids, await ask_all(s, [*ASKED, NOTES_ASKED], "acme/order")

    ids, found = asyncio.run(go())
    for question in ASKED:
        err, answer = found[question]
        got = [hit["id"] for hit in answer["results"]]
        assert not err and ids[NOTES] in got, (question, answer)  # the gate passed both …
        assert got[0] == ids[DEPLOY], (question, answer)  # … and the deploy memory comes first
    err, answer = found[NOTES_ASKED]
    assert not err and answer["results"][0]["id"] == ids[NOTES], answer


def test_a_prompt_read_by_its_clauses_keeps_the_fused_order_and_embeds_no_rewording() -> None:
    """The hook's task-first prompts: their whole-prompt cosine is diluted by the task, and reordering
    them measured worse on a tuning set for ~5 ms more per prompt (docs/benchmarks.md, round eight)."""
    scope = resolve("acme/long", None)
    ids = {text: create.store_memory(scope, text, "").memory.pk for text in FACTS}
    prompt = "I am cutting the next build of the service today. How is a new release of the service pushed out?"
    assert len(rerank.clauses(queries.search_text(prompt))) == 2
    calls = LocalEmbedder.calls
    found = queries.search("acme/long", prompt, log=False)
    assert LocalEmbedder.calls == calls + 1  # the prompt's own vector, no rewording
    assert [hit["id"] for hit in found.results] == [ids[NOTES], ids[DEPLOY]]  # as fused, both passed


def test_a_memory_holding_every_word_of_the_question_keeps_its_lead() -> None:
    """Order alone (memories.search.queries.closest_first): the probe memory covers "what does the probe
    measure" whole and stays first; a closer memory in cosine that covers less comes first otherwise."""
    gate = gates.JUDGED[get_embedder().id]
    full = Candidate(1, similarity=0.38, coverage=1.0)
    closer = Candidate(2, similarity=0.57, coverage=0.41)
    passed = [full, closer]
    assert queries.closest_first("what does the probe measure", passed, lambda c: True, gate, get_embedder()) == passed
    full.coverage = 0.9
    assert queries.closest_first("what does the probe measure", passed, lambda c: True, gate, get_embedder()) == [
        closer,
        full,
    ]


def test_over_the_limit_the_first_memories_given_are_reworded_first() -> None:
    """Five rewordings, four embedded: the memory given first (the fused order's) is among them, whatever
    order the database returns the vectors in."""
    scope = resolve("acme/many", None)
    texts = [
        FACTS[5],  # secret, vault
        "Database passwords and credentials rotate monthly via the ops runbook.",  # credential, password
        "Service tokens and creds are issued by the platform team.",  # creds
    ]
    ids = [create.store_memory(scope, text, "").memory.pk for text in texts]
    question = "where do api keys live"
    assert sum(len(synonyms.rewordings(question, synonyms.swaps(question), t)) for t in texts) > queries.MAX_REWORDINGS
    best = queries.reworded_cosines(question, [ids[2], ids[0], ids[1]], get_embedder())
    assert ids[2] in best and ids[0] in best, best


@pytest.mark.parametrize("mode", ["setting", "all", "off"])
def test_the_models_judgement_orders_what_the_gate_passed(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """Set K, a tuning codebase (bench/data): "how do we deploy ledgerd" passes the gate for the ledger
    migrations memory, closer in cosine ("ledger"), and for the deploy memory; "who approves withdrawd
    changes" for the withdrawal flow and for the owner who approves. The cross-encoder's logit, weighed
    as the gate weighs it, puts the answer first: with `[retrieval] judged_order` (the two best, their
    evidence close: round eighteen) as with every passed memory judged (JUDGED_ORDER, round sixteen's
    study). Both are off by default for their cost under load; off, the closer one in cosine comes first."""
    monkeypatch.setattr(queries, "JUDGED_ORDER", mode == "all")
    retrieval = {**settings.YULLU["retrieval"], "judged_order": mode == "setting"}
    monkeypatch.setitem(settings.YULLU, "retrieval", retrieval)
    data = json.loads((Path(__file__).resolve().parents[1] / "bench/data/codebase_other_k.json").read_text())
    memories = {m["id"]: m for m in data["memories"]}
    scope = resolve("acme/ledger", None)
    items = [validation.NewMemory(m["content"], m["category"], [], None) for m in memories.values()]
    stored = create.store_memories(scope, items, source="test")
    pk = {s.memory.pk: mid for s, mid in zip(stored, memories, strict=True)}
    for question, answer, other in (
        ("how do we deploy ledgerd", "k01", "k09"),
        ("who approves withdrawd changes", "k05", "k17"),
    ):
        got = [pk[hit["id"]] for hit in queries.search("acme/ledger", question, log=False).results]
        first = other if mode == "off" else answer
        assert got[0] == first and {answer, other} <= set(got), (question, got)  # both passed; which first


def test_the_gates_own_judgements_order_what_it_passed_for_no_pair_more() -> None:
    """Issue 34, round twenty-four: when the gate had the model judge every memory it passed (none settled by
    cosine and coverage alone), its logits are in the judge's cache, and the gate's whole evidence orders them
    (w_cosine × cosine + w_coverage × coverage + w_logit × logit): the release notes, a little closer in cosine,
    come after the deploy memory the model reads as the answer, and no pair is run for it. When one of them
    was settled without the model, its logit is unknown and the order stays the first stage's."""
    gate = gates.JUDGED[get_embedder().id]
    question = "how do we deploy the service"
    notes = Candidate(10**9 + 1, similarity=0.40, coverage=0.0, content=NOTES)
    deploy = Candidate(10**9 + 2, similarity=0.38, coverage=0.0, content=DEPLOY)
    logits = gates.logits_of(question, [notes, deploy], gate.clauses)  # as the gate judged them
    assert gate.w_logit * (logits[deploy.memory_id] - logits[notes.memory_id]) > gate.w_cosine * 0.02
    for c in (notes, deploy):
        c.relevance = gate.probability(logits[c.memory_id], c)
    scored = rerank.judge.pairs_scored
    assert queries.closest_first(question, [notes, deploy], lambda c: True, gate, get_embedder()) == [deploy, notes]
    assert rerank.judge.pairs_scored == scored  # the gate's judgements, from the cache
    notes.relevance = None  # settled by cosine and coverage: no logit to weigh
    assert queries.closest_first(question, [notes, deploy], lambda c: True, gate, get_embedder()) == [notes, deploy]
    assert rerank.judge.pairs_scored == scored

"""A question asking for a person ("who do we go to about …", "who runs …") finds the memory naming the
owner or the lead, not a memory about the same thing that names nobody: "who" is a stopword to the keyword
half and the thesaurus, so expansion.JARGON spells the need out ("owner"). The real local
embedder and cross-encoder, through MCP on a live server (issue 34, round twenty)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memories.search import expansion
from tests.mcp_client import ask_all, http_session, store_all
from tests.test_retrieval_gate import FACTS

pytestmark = pytest.mark.django_db(transaction=True)

PAYOUTS_OWNER = "Nadia Haddad owns the payouts service and must approve any PR that touches the settlement batch."
SEARCH_LEAD = "Jonas Berg leads the search cluster; ask him before resizing the Elasticsearch nodes."
# The same subjects, naming nobody: without the hint these came first for the questions below.
ABOUT_THE_SAME = [
    "The Elasticsearch cluster runs six data nodes on r6g.2xlarge; resize them with terraform in infra/search, "
    "one node at a time.",
    "The settlement batch runs nightly at 02:00 UTC and pays merchants through Adyen; a failed run retries once.",
    "Payout amounts are integer cents; the payouts service rounds half-even when converting currencies.",
    "Search relevance tuning lives in search/ranking.yml; rebuild the index with make reindex after changing "
    "analyzers.",
]
WHO = {
    "who's in charge of sending merchants their money": PAYOUTS_OWNER,
    "who runs the search infrastructure": SEARCH_LEAD,
    "who do we go to about merchant payments": PAYOUTS_OWNER,
}
NOBODY_HERE = ["who wrote the art of computer programming", "who invented the linked list"]


def test_a_question_for_a_person_spells_out_the_owner() -> None:
    assert expansion.with_jargon("who runs the search infrastructure") == "who runs the search infrastructure (owner)"
    assert expansion.with_jargon("who do we go to about merchant payments").endswith("(owner)")
    # an approver is asked for in words a process memory also uses ("approve", "review"): left to the models
    assert expansion.with_jargon("who has to sign off on this") == "who has to sign off on this"
    # a question about someone outside the project, or no question for a person: unchanged
    for prompt in [*NOBODY_HERE, "who is the ceo of github", "whose turn is it", "how do we deploy"]:
        assert expansion.with_jargon(prompt) == prompt, prompt


@pytest.mark.slow
def test_asking_who_finds_the_owner_before_the_memory_about_the_same_thing(
    live_server_url: str, owner_token: str
) -> None:
    async def go() -> tuple[dict[str, int], dict[str, Any]]:
        async with http_session(live_server_url, owner_token) as s:
            ids = await store_all(s, [*FACTS, PAYOUTS_OWNER, SEARCH_LEAD, *ABOUT_THE_SAME], "acme/who")
            return ids, await ask_all(s, [*WHO, *NOBODY_HERE], "acme/who")

    ids, found = asyncio.run(go())
    for question, memory in WHO.items():
        err, answer = found[question]
        assert not err and answer["results"] and answer["results"][0]["id"] == ids[memory], (question, answer)
    for question in NOBODY_HERE:
        assert found[question] == (False, found[question][1]) and found[question][1]["results"] == [], question

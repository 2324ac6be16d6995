"""The relevance gate with the real default local embedder and the real cross-encoder: short natural
questions and long task-first prompts find the memory that answers them (even in a project of one
memory), unrelated prompts return nothing, and every tool and endpoint refuses an argument it does
not declare."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from django.test import Client

from memories.embedding.embedders import get_embedder
from memories.scope import resolve
from memories.search import gates, queries
from memories.write import create
from tests.mcp_client import ask_all, call, http_session, store_all

pytestmark = pytest.mark.django_db(transaction=True)


def hook_context(base_url: str, token: str, project_id: str, prompt: str, **fields: Any) -> str:
    """The block the prompt hook would inject for `prompt`: POST /api/context on a live server."""
    body = {"project_id": project_id, "query": prompt, **fields}
    answer = httpx.post(f"{base_url}/api/context", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["context"])


DEPLOY = "The probe service deploys with make ship-it after the canary passes."

# A handful of memory / question pairs in one small project, as an assistant would store and ask them.
GOLDEN = {
    "We chose Postgres over MongoDB because billing needs multi-row transactions.": ["why postgres", "why not mongo?"],
    "Run the whole test suite with make test; it starts its own Postgres.": ["how do I run the tests"],
    "On-call rotates weekly on Mondays; the schedule lives in PagerDuty.": ["who is on call"],
    "Celery workers must be restarted after changing settings.py; they do not reload code.": [
        "celery not picking up my change"
    ],
    "Secrets are stored in Vault under secret/larkspur/<env>; never commit them.": ["where are the secrets"],
}
HAIKU = "write a haiku about autumn"
UNRELATED = [HAIKU, "what's the weather like today", "who painted the mona lisa"]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# The first project-level complaint of issue 34: the deploy memory ranked first and nothing came back.
LONG_DEPLOY = "I want to ship the new refund endpoint, what's the deploy process"
FACTS = [
    DEPLOY,
    *GOLDEN,
    "Feature flags are read from LaunchDarkly, not env vars, so product can toggle them without a deploy.",
    "Commit messages use the imperative mood and reference the Jira ticket.",
    "Logs go to Loki via Promtail; we dropped the ELK stack because it cost too much to run.",
    "Customer data must stay in the EU region eu-west-1.",
]


def test_the_default_embedder_is_the_local_one_with_a_calibrated_judge() -> None:
    embedder = get_embedder()
    assert embedder.id == "local:all-MiniLM-L6-v2"
    assert isinstance(gates.gate_for(embedder.id), gates.Judged)
    assert gates.configured_floor() is None


@pytest.mark.slow
def test_a_long_task_first_prompt_brings_back_the_deploy_memory_through_mcp(
    live_server_url: str, owner_token: str
) -> None:
    async def go() -> tuple[dict[str, int], Any, Any]:
        async with http_session(live_server_url, owner_token) as s:
            ids = await store_all(s, FACTS, "acme/ten")
            asked = await ask_all(s, [LONG_DEPLOY, HAIKU], "acme/ten")
            return ids, asked[LONG_DEPLOY], asked[HAIKU]

    ids, (err, long), (haiku_err, haiku) = run(go())
    assert not err and long["results"] and long["results"][0]["id"] == ids[DEPLOY]
    assert not haiku_err and haiku["results"] == []


@pytest.mark.slow
def test_one_stored_memory_answers_how_do_we_deploy_through_mcp(live_server_url: str, owner_token: str) -> None:
    async def go() -> tuple[Any, Any, Any]:
        async with http_session(live_server_url, owner_token) as s:
            err, stored = await call(s, "store_memory", content=DEPLOY, category="process", project_id="acme/one")
            assert not err, stored
            asked = await call(s, "retrieve_memories", query="how do we deploy?", project_id="acme/one")
            alone = await call(s, "retrieve_memories", query="deploy", project_id="acme/one")
            unrelated = await call(s, "retrieve_memories", query="write a haiku about autumn", project_id="acme/one")
            return stored, (asked, alone), unrelated

    stored, answers, unrelated = run(go())
    for err, found in answers:
        assert not err and [hit["id"] for hit in found["results"]] == [stored["id"]]
    assert unrelated == (False, unrelated[1]) and unrelated[1]["results"] == []


# Shorthand that shares no word, and too little meaning for the models, with the memory it needs
# (issue 34: "push live", "db", "toggle", "pager"); memories.expansion.JARGON spells it out.
SHORTHAND = {
    "hw do i push the probe live": DEPLOY,
    "who's got the pager": "On-call rotates weekly on Mondays; the schedule lives in PagerDuty.",
}


@pytest.mark.slow
def test_shorthand_finds_the_memory_it_stands_for_through_mcp(live_server_url: str, owner_token: str) -> None:
    async def go() -> tuple[dict[str, int], dict[str, Any], Any]:
        async with http_session(live_server_url, owner_token) as s:
            ids = await store_all(s, FACTS, "acme/shorthand")
            found = await ask_all(s, list(SHORTHAND), "acme/shorthand")
            haiku = await call(s, "retrieve_memories", query="write a haiku about autumn", project_id="acme/shorthand")
            return ids, found, haiku

    ids, found, (_, haiku) = run(go())
    for question, memory in SHORTHAND.items():
        err, answer = found[question]
        assert not err and answer["results"] and answer["results"][0]["id"] == ids[memory], question
    assert haiku["results"] == []


# General questions that name one of the project's technologies (issue 34's fresh set: "is redis single
# threaded"): without asking.asks_in_general in the gate, each brought back the memory naming it.
GENERAL_ABOUT_OURS = [
    "postgres vs mysql",
    "what is loki",
    "explain how celery works",
    "recommend a good postgres gui for mac",
    "how to write a celery task",
    # a comparison or a product's abilities, asked in general (the second codebase nobody tuned on)
    "is celery better than rq",
    "postgres pros and cons",
    "does pagerduty support escalation by time of day",
    # a product's own behaviour and cost, asked as anyone would (round six)
    "how does celery handle retries by default",
    "does celery beat support timezones",
    "does vault kv v2 support versioning",
    "launchdarkly pricing",
]
OURS = {
    "what do we use loki for": (
        "Logs go to Loki via Promtail; we dropped the ELK stack because it cost too much to run."
    ),
    "why postgres": "We chose Postgres over MongoDB because billing needs multi-row transactions.",
    "celery not picking up my change": (
        "Celery workers must be restarted after changing settings.py; they do not reload code."
    ),
}


@pytest.mark.slow
def test_a_general_question_naming_a_project_technology_gets_nothing_through_mcp(
    live_server_url: str, owner_token: str
) -> None:
    async def go() -> tuple[dict[str, int], dict[str, Any]]:
        async with http_session(live_server_url, owner_token) as s:
            ids = await store_all(s, FACTS, "acme/general")
            return ids, await ask_all(s, [*GENERAL_ABOUT_OURS, *OURS], "acme/general")

    ids, found = run(go())
    for question in GENERAL_ABOUT_OURS:
        err, answer = found[question]
        assert not err and answer["results"] == [], question
    for question, memory in OURS.items():
        err, answer = found[question]
        assert not err and answer["results"] and answer["results"][0]["id"] == ids[memory], question


# Short general questions about a project technology in no wording asking.py knows: the question shares
# only the product's name with the memory (gates.Judged.w_entity, entities.py); the memory is returned
# when the question asks about it.
NAMED = [
    "We use Redis only as the Celery broker and cache; it is not a source of truth.",
    "Search over check results uses Postgres full-text search instead of Elasticsearch, to run one database fewer.",
]
ONLY_THE_NAME = [
    "is redis single threaded",
    "redis cluster max memory policy",
    "how does elasticsearch scoring work",
    "launchdarkly sdk offline mode",
    "pagerduty api rate limit",
]
ABOUT_THE_NAMED = {
    "where does redis fit in": NAMED[0],
    "why not elasticsearch": NAMED[1],
    "why launchdarkly instead of env vars": FACTS[6],
}


@pytest.mark.slow
def test_a_short_question_sharing_only_a_product_name_with_a_memory_gets_nothing_through_mcp(
    live_server_url: str, owner_token: str
) -> None:
    async def go() -> tuple[dict[str, int], dict[str, Any]]:
        async with http_session(live_server_url, owner_token) as s:
            ids = await store_all(s, [*FACTS, *NAMED], "acme/named")
            return ids, await ask_all(s, [*ONLY_THE_NAME, *ABOUT_THE_NAMED], "acme/named")

    ids, found = run(go())
    for question in ONLY_THE_NAME:
        err, answer = found[question]
        assert not err and answer["results"] == [], question
    for question, memory in ABOUT_THE_NAMED.items():
        err, answer = found[question]
        assert not err and answer["results"] and answer["results"][0]["id"] == ids[memory], question


LONG_GENERAL = [
    "explain how postgres indexes work, btree vs gin vs gist, with an example for each, "
    "im studying for a certification",
    "what is the difference between loki and elasticsearch as log stores? asking out of curiosity for a homelab",
    # a request for a new piece of code that names a project technology but asks nothing about the project
    "write me a celery task that retries with exponential backoff, and a couple of pytest tests for it",
    "can you write a promtail config for shipping nginx logs to loki for a small side project",
]


@pytest.mark.slow
def test_the_prompt_hook_injects_nothing_for_a_long_general_question_about_a_project_technology(
    live_server_url: str, owner_token: str
) -> None:
    scope = resolve("acme/hookgeneral", None)
    for fact in FACTS:
        create.store_memory(scope, fact, "process")

    def injected(prompt: str) -> str:
        return hook_context(live_server_url, owner_token, scope.project_id, prompt)

    assert "make ship-it" in injected(LONG_DEPLOY)
    for prompt in LONG_GENERAL:
        context = injected(prompt)
        assert "Postgres" not in context and "Loki" not in context and "Celery" not in context, prompt


def test_a_small_golden_set_is_answered_at_rank_one_and_unrelated_prompts_get_nothing() -> None:
    scope = resolve("acme/golden", None)
    ids = {content: create.store_memory(scope, content, "process").memory.id for content in GOLDEN}
    for content, questions in GOLDEN.items():
        for question in questions:
            found = queries.search(scope.project_id, question, log=False)
            assert found.results and found.results[0]["id"] == ids[content], question
    for prompt in UNRELATED:
        assert queries.search(scope.project_id, prompt, log=False).results == [], prompt


def test_min_similarity_replaces_the_gate_for_one_call(live_server_url: str, owner_token: str) -> None:
    async def go() -> tuple[Any, Any, Any]:
        async with http_session(live_server_url, owner_token) as s:
            await call(s, "store_memory", content=DEPLOY, project_id="acme/floor")
            args = {"query": "write a haiku about autumn", "project_id": "acme/floor"}
            gated = await call(s, "retrieve_memories", **args)
            everything = await call(s, "retrieve_memories", **args, min_similarity=0.0)
            too_high = await call(
                s, "retrieve_memories", query="how do we deploy?", project_id="acme/floor", min_similarity=1.0
            )
            return gated, everything, too_high

    gated, everything, too_high = run(go())
    assert gated[1]["results"] == []
    assert len(everything[1]["results"]) == 1
    assert too_high[1]["results"] == []


def test_the_callers_min_similarity_applies_to_user_scope_hits_too() -> None:
    from memories.scope import USER_SCOPE
    from memories.search.merged import search_merged

    create.store_memory(resolve(USER_SCOPE, None), DEPLOY, "process")
    create.store_memory(resolve("acme/mine", None), "Billing invoices are generated nightly.", "process")
    assert [h["content"] for h in search_merged("acme/mine", "how do we deploy?", log=False).results] == [DEPLOY]
    assert search_merged("acme/mine", "how do we deploy?", log=False, min_similarity=0.99).results == []
    unrelated = search_merged("acme/mine", "write a haiku about autumn", log=False, min_similarity=0.0).results
    assert DEPLOY in [h["content"] for h in unrelated]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("retrieve_memories", {"query": "deploy", "limt": 3}),
        ("retrieve_memories", {"query": "deploy", "categoires": ["process"]}),
        ("store_memory", {"content": "a fact", "catgory": "process"}),
        ("list_memories", {"limt": 3}),
        ("get_usage", {"verbose": True}),
        ("dream_now", {"sesion_id": "s1"}),
    ],
)
def test_an_unknown_tool_argument_is_an_error_naming_it(
    live_server_url: str, owner_token: str, tool: str, args: dict[str, Any]
) -> None:
    async def go() -> tuple[bool, Any]:
        async with http_session(live_server_url, owner_token) as s:
            return await call(s, tool, **args)

    err, message = run(go())
    bad = next(name for name in args if name not in {"query", "content"})
    assert err and f"unknown argument '{bad}'" in message
    from memories.models import Memory

    assert not Memory.objects.filter(content="a fact").exists()


def test_an_unknown_rest_field_is_a_400_naming_it(client: Client, owner_token: str) -> None:
    auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {owner_token}", "content_type": "application/json"}
    r = client.post("/api/memories/recall", {"query": "deploy", "project_id": "acme/r", "limt": 3}, **auth)
    assert r.status_code == 400 and "limt" in r.content.decode()
    r = client.post("/api/memories", {"content": "a fact", "project_id": "acme/r", "scpe": "user"}, **auth)
    assert r.status_code == 400 and "scpe" in r.content.decode()
    from memories.models import Memory

    assert not Memory.objects.filter(project_id="acme/r").exists()


def test_rest_recall_takes_a_min_similarity_override(client: Client, owner_token: str) -> None:
    create.store_memory(resolve("acme/rf", None), DEPLOY)
    auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {owner_token}", "content_type": "application/json"}
    body = {"query": "write a haiku about autumn", "project_id": "acme/rf"}
    assert client.post("/api/memories/recall", body, **auth).json()["results"] == []
    assert len(client.post("/api/memories/recall", {**body, "min_similarity": 0}, **auth).json()["results"]) == 1


def test_an_upgraded_config_holding_the_old_default_floor_gets_the_calibrated_gate(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.conf import settings

    from yullu_core.config import load

    old = tmp_path / "config.toml"
    old.write_text("[retrieval]\nmin_similarity = 0.45\n")  # what every config.toml said before the gate
    monkeypatch.setitem(settings.YULLU, "retrieval", load(old)["retrieval"])
    assert gates.configured_floor() is None
    chosen = tmp_path / "chosen.toml"
    chosen.write_text("[retrieval]\nmin_similarity = 0.3\n")
    monkeypatch.setitem(settings.YULLU, "retrieval", load(chosen)["retrieval"])
    assert gates.configured_floor() == 0.3


def test_store_memory_with_a_session_id_tags_the_session(
    live_server_url: str, owner_token: str, client: Client
) -> None:
    async def go() -> tuple[bool, Any]:
        async with http_session(live_server_url, owner_token) as s:
            return await call(
                s, "store_memory", content=DEPLOY, tags=["deploy"], session_id="chat-7", project_id="acme/sess"
            )

    from memories.models import Memory

    err, stored = run(go())
    assert not err and Memory.objects.get(pk=stored["id"]).tags == ["deploy", "session:chat-7"]
    auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {owner_token}", "content_type": "application/json"}
    body = {"content": "Billing invoices are generated nightly.", "project_id": "acme/sess", "session_id": "chat-7"}
    created = client.post("/api/memories", body, **auth).json()
    assert Memory.objects.get(pk=created["id"]).tags == ["session:chat-7"]


# A hint is a guess from one word: "why do …" hints at decisions, and a decision naming Celery is near
# enough to pass the gate, but the prompt needs the gotcha.
HINTED = [
    ("Celery workers must be restarted after changing settings.py; they do not reload code.", "gotcha"),
    ("We chose Celery with Redis as the broker over RabbitMQ because we already run Redis.", "decision"),
    ("We chose Postgres over MongoDB because billing needs multi-row transactions.", "decision"),
    (DEPLOY, "process"),
]
WHY_PROMPT = (
    "why do the celery workers still run the old code after my settings.py change? then fix the retry decorator"
)


@pytest.mark.slow
def test_the_prompt_hooks_hints_do_not_hide_the_memory_of_another_category(
    live_server_url: str, owner_token: str
) -> None:
    from yullu_cli.hooks import category_hints

    scope = resolve("acme/hinted", None)
    for fact, category in HINTED:
        create.store_memory(scope, fact, category)
    hints = category_hints(WHY_PROMPT)
    assert "decision" in hints and "gotcha" not in hints
    context = hook_context(live_server_url, owner_token, scope.project_id, WHY_PROMPT, prefer_categories=hints)
    assert "must be restarted" in context

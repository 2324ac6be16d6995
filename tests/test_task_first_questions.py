"""A long task-first prompt whose task is worded as a general request ("write a …", "explain …", "x vs
y") but which asks about the project in a sentence of its own (or, after "write a …", in a clause asking
about someone or something in particular) still brings back the memory that answers
it (asking.asks_in_general reads that sentence), while a general request stays general: the real local
embedder and cross-encoder, through the prompt hook's REST path on a live server."""

from __future__ import annotations

import pytest

from memories.scope import resolve
from memories.search import asking
from memories.write import create
from tests.test_retrieval_gate import FACTS, LONG_GENERAL, hook_context

pytestmark = pytest.mark.django_db(transaction=True)

# Task first, in general wording; the question about the project in a sentence of its own.
ASKED_AFTER_THE_TASK = {
    "write a small script that posts canary results to slack. how do i release the probe once it looks fine?": (
        "make ship-it"
    ),
    "write a python helper that reads feature flags for the billing page. where are the toggles actually read "
    "from?": "LaunchDarkly",
    "write a git hook that checks commit messages. what format do they need to follow?": "imperative mood",
    # the same question after a comma, or after "and tell me", asked in the first person
    "write a python helper that reads feature flags for the billing page, where do i read the toggles from?": (
        "LaunchDarkly"
    ),
    "write a slack bot that posts canary results and tell me how i release the probe once it looks fine": (
        "make ship-it"
    ),
}
# General wording throughout, a second sentence included: still general.
STILL_GENERAL = [
    "explain how postgres MVCC works. what is vacuum in general and why does it matter?",
    "write me a celery task that retries with exponential backoff. what are good defaults for the delay?",
]
# General wording, then a question of its own about nothing this project holds: read apart, and nothing found.
ELSEWHERE = [
    "explain how kafka consumer groups rebalance. why would a consumer get kicked out?",
    "write a bash script that tails nginx logs. how do I filter for 5xx only?",
]


def test_a_question_in_its_own_sentence_is_read_apart_from_the_task() -> None:
    for prompt in ASKED_AFTER_THE_TASK:
        assert not asking.asks_in_general(prompt), prompt
    for prompt in [*STILL_GENERAL, *LONG_GENERAL]:
        assert asking.asks_in_general(prompt), prompt
    # one sentence: its later clause asks in the first person (issue 34, round sixteen) ...
    assert not asking.asks_in_general("write a sql query for last month's orders, which db do i connect as?")
    # ... or about a thing named with "the", or about "they" (round seventeen) ...
    assert not asking.asks_in_general("write a unit test for the billing job, what should the invoice be tagged with")
    assert not asking.asks_in_general("write a checklist for the site techs, how do they get into the service menu")
    # ... but not a clause that points at nothing in particular (a relative clause after a request) ...
    assert asking.asks_in_general("help me write a polite email to my landlord, which has been broken for weeks")
    # ... nor a clause that asks in general, nor one after an explanation asked for
    assert asking.asks_in_general("write a react hook that debounces input, and when would you use throttle instead")
    assert asking.asks_in_general("explain how tls works, what does a browser check when i connect?")


@pytest.mark.slow
def test_the_hook_injects_the_answer_to_a_question_after_a_general_worded_task(
    live_server_url: str, owner_token: str
) -> None:
    scope = resolve("acme/taskfirst", None)
    for fact in FACTS:
        create.store_memory(scope, fact, "process")

    def injected(prompt: str) -> str:
        return hook_context(live_server_url, owner_token, scope.project_id, prompt)

    for prompt, answer in ASKED_AFTER_THE_TASK.items():
        assert answer in injected(prompt), prompt
    for prompt in [*STILL_GENERAL, *LONG_GENERAL, *ELSEWHERE]:
        assert injected(prompt) == "", prompt


# A long task whose wording alone reads as general ("x vs y", "write a …"), its question in a clause no rule
# reads as one: the task's wording weighs less than a general question's (asking.TASK_GENERALITY), so a
# memory that clearly answers it still comes back (issue 34, round nineteen).
MONEY = (
    "The rating engine computes premiums with BigDecimal and MathContext.DECIMAL64, never double: float rounding "
    "broke policy totals."
)
TASK_WORDED = {
    "implement monthly premium calculation for the new pet product in the rating engine, double vs BigDecimal "
    "doesnt matter much right? just need something quick for the demo": "BigDecimal",
}


def test_a_long_task_reads_less_general_than_a_general_question() -> None:
    for prompt in TASK_WORDED:
        assert asking.generality(prompt) == asking.TASK_GENERALITY, prompt
    # a short "x vs y" and a general question's own wording keep the full weight, a project question none
    assert asking.generality("grpc unary vs server streaming") == 1.0
    assert (
        asking.generality("explain how postgres MVCC works. what is vacuum in general and why does it matter?") == 1.0
    )
    for prompt in [*STILL_GENERAL, *LONG_GENERAL]:  # a request alone ("write me a celery task …"): still general
        assert asking.generality(prompt) > 0, prompt
    assert asking.generality("write a python helper for the billing page, where do i read the toggles from?") == 0.0


@pytest.mark.slow
def test_the_hook_injects_a_clear_answer_to_a_long_task_worded_in_general(
    live_server_url: str, owner_token: str
) -> None:
    scope = resolve("acme/taskworded", None)
    for fact in [*FACTS, MONEY]:
        create.store_memory(scope, fact, "process")
    for prompt, answer in TASK_WORDED.items():
        assert answer in hook_context(live_server_url, owner_token, scope.project_id, prompt), prompt
    for prompt in [*STILL_GENERAL, *LONG_GENERAL, *ELSEWHERE]:
        assert hook_context(live_server_url, owner_token, scope.project_id, prompt) == "", prompt

"""A long task-first prompt's answer whose whole-prompt cosine the task dilutes under the gate's floor is
still judged by the prompt's clauses and injected by the prompt hook (gates.Judged.clause_min_cosine),
with the real local embedder and cross-encoder, through the hook's REST path on a live server."""

from __future__ import annotations

import pytest

from memories.scope import resolve
from memories.search import gates
from memories.write import create
from tests.test_retrieval_gate import FACTS, LONG_GENERAL, hook_context

pytestmark = pytest.mark.django_db(transaction=True)

HOSTING = (
    "Production Postgres runs on Amazon RDS in eu-central-1, not a Heroku add-on, because the hospital "
    "contracts require a signed BAA."
)
# The question is one clause ("what's our setup and why?") after a task that shares no word with the memory.
QUESTIONNAIRE = (
    "security questionnaire from a hospital client asks where patient data is stored and who hosts the "
    "database. what's our setup and why? draft answers"
)


def test_the_clause_floor_is_under_the_whole_prompt_floor() -> None:
    gate = gates.JUDGED["local:all-MiniLM-L6-v2"]
    assert gate.clause_min_cosine < gate.min_cosine


@pytest.mark.slow
def test_the_hook_injects_the_answer_a_long_prompts_task_dilutes(live_server_url: str, owner_token: str) -> None:
    scope = resolve("acme/questionnaire", None)
    for fact in [*FACTS, HOSTING]:
        create.store_memory(scope, fact, "decision")

    def injected(prompt: str) -> str:
        return hook_context(live_server_url, owner_token, scope.project_id, prompt)

    assert "Amazon RDS" in injected(QUESTIONNAIRE)
    for prompt in LONG_GENERAL:  # long prompts with no answer here still get nothing from this project
        assert injected(prompt) == "", prompt

"""A memory written mostly as code has a low cosine with any question about it, so the gate's cosine floor
rejected it before the cross-encoder could read it: "deploy to prod" and "Deploy queuekeeper to GKE with
`make helm-release SVC=queuekeeper ENV=prod` …" (cosine 0.18, coverage 0.55). A candidate holding half the
question's telling words is judged whatever its cosine (gates.Judged.relief_coverage; issue 34 round
fourteen): the real local embedder and cross-encoder through the search path."""

from __future__ import annotations

import pytest

from memories.scope import resolve
from memories.search import queries
from memories.write import create

pytestmark = pytest.mark.django_db(transaction=True)

DEPLOY = (
    "Deploy queuekeeper to GKE with `make helm-release SVC=queuekeeper ENV=prod` from the release branch; it runs"
    " `helm upgrade --atomic`, so a failed rollout rolls itself back."
)
OTHERS = [
    "We picked ScyllaDB over Cassandra for match history because Cassandra's p99 reads hit 40ms during GC pauses.",
    "Redis lobby keys must use the hash tag `{lobby:<id>}` so every key of one lobby lands in the same cluster slot.",
    "Run the Go integration tests with `make test-int`, which starts Redis and Scylla from test/compose.yml.",
    "Priya Raman owns queuekeeper and must review any change to the bucketing logic.",
    "Lobby state lives in Redis, not Scylla, because lobbies live under 15 minutes and need pub/sub for ready checks.",
    "Protobuf fields are never renumbered or deleted; a removed field becomes `reserved` with the ticket in a comment.",
]


def test_a_memory_written_as_code_is_judged_and_found_and_unrelated_prompts_still_get_nothing() -> None:
    scope = resolve("acme/codeheavy", None)
    deploy = create.store_memory(scope, DEPLOY, "process").memory.id
    for text in OTHERS:
        create.store_memory(scope, text, "decision")
    found = queries.search(scope.project_id, "deploy to prod", log=False).results
    assert found and found[0]["id"] == deploy
    for prompt in ["write a haiku about autumn", "how do i make a good cup of coffee", "what is the capital of peru"]:
        assert queries.search(scope.project_id, prompt, log=False).results == [], prompt

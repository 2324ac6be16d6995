"""Schemathesis against our OpenAPI schema (`-m fuzz`): generated requests, valid and invalid, to
every REST operation over real HTTP. No 5xx, and every response matches what the schema says."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Err
from schemathesis.generation import GenerationMode

from memories.scope import Scope
from memories.write import create

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(transaction=True)]
# CI replays one fixed set of examples (a landing must not depend on luck); runs elsewhere explore.
IN_CI = bool(os.environ.get("CI"))


@pytest.fixture(autouse=True)
def _outside_the_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls without project_id/cwd resolve the server's working directory (docs/contract.md §2); keep it out
    of our repo."""
    monkeypatch.chdir(tmp_path)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def operations(url: str, token: str) -> list[Any]:
    schema = schemathesis.openapi.from_url(f"{url}/api/schema", headers={"Authorization": f"Bearer {token}"})
    found = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            raise result.err()
        found.append(result.ok())
    return found


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_operation_answers_within_its_schema(live_server_url: str, owner_token: str, mode: Any) -> None:
    for n in range(3):  # something to find, update, rate and delete
        create.store_memory(Scope("acme/fuzz", None), f"fuzz fact number {n}", "gotcha", ["fuzz"], source="test")
    ops = operations(live_server_url, owner_token)
    assert len(ops) >= 15, [op.label for op in ops]
    headers = {"Authorization": f"Bearer {owner_token}"}
    for op in ops:

        @given(case=op.as_strategy(generation_mode=mode))
        @settings(
            max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=IN_CI
        )
        def run(case: Any) -> None:
            case.call_and_validate(base_url=live_server_url, headers=headers, checks=CHECKS)

        try:
            run()
        except Exception as exc:
            raise AssertionError(f"{op.label}: {exc}") from exc

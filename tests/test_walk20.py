"""Walk 20: a new user's first hour, from a fresh clone with real Claude Code and Codex (docs/testing.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memories.scope import resolve
from memories.write import create
from memories.write.validation import NewMemory
from tests.processes import product_env, run_cli


@pytest.mark.django_db(transaction=True)
def test_a_short_list_says_how_many_memories_it_left_out(tmp_path: Path, keyword_only: None) -> None:
    """`yullu memories list --limit 3` said "3 shown" in a project of 20: nothing told the user there were more."""
    facts = [NewMemory(f"Service {i} listens on port {8000 + i} behind the gateway", "process") for i in range(5)]
    create.store_memories(resolve("acme/few", None), facts, source="cli")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))

    def header(*args: str) -> str:
        ran = run_cli(["memories", "list", "--project", "acme/few", *args], env)
        assert ran.returncode == 0, ran.stderr
        return ran.stdout.splitlines()[0]

    assert header("--limit", "3") == "acme/few: 3 of 5 shown"
    assert header() == "acme/few: 5 shown"
    assert header("--limit", "2", "--offset", "3") == "acme/few: 2 shown after the newest 3"
    assert header("--limit", "1", "--offset", "1") == "acme/few: 1 of 5 shown after the newest 1"

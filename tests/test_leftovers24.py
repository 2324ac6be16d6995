"""Round 24's left-overs (authors, turns and duplicates): each test was red before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from memories.models import Memory
from tests.processes import git_repo, product_env, run_cli

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_memory_the_cli_stores_names_the_owner_as_its_writer_as_their_tokens_stores_do(tmp_path: Path) -> None:
    # `yullu memories add` acted as the system: created_by null in the admin and `memories list`, while an MCP or
    # REST store with the owner's token said "admin" (and the team log named the git user for both).
    owner = get_user_model().objects.create_superuser("admin", password="x")
    repo = git_repo(tmp_path / "repo", "git@github.com:acme/cli24.git")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    add = ["memories", "add", "Releases are tagged from the release branch only.", "--cwd", str(repo), "--json"]
    out = run_cli(add, env)
    assert out.returncode == 0, out.stderr
    memory = Memory.objects.get(pk=json.loads(out.stdout)["id"])
    assert (memory.created_by_id, memory.updated_by_id) == (owner.pk, owner.pk)
    listed = json.loads(run_cli(["memories", "list", "--cwd", str(repo), "--json"], env).stdout)["memories"]
    assert [(m["created_by"], m["updated_by"]) for m in listed] == [("admin", "admin")]


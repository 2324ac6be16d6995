"""Round 25's left-overs (the CLI's writer, a clone's first call, bench load's dropped connection, update_memory's
reply): each test was red before its fix."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from memories.models import Memory, MemoryChange
from memories.scope import resolve
from memories.write import create
from tests.processes import git_repo, product_env, run_cli

pytestmark = pytest.mark.django_db(transaction=True)


# --- every CLI write acts as the install's owner -----------------------------------------------------------------
def _owner_and_repo(tmp_path: Path) -> tuple[int, Path, dict[str, str]]:
    owner = get_user_model().objects.create_superuser("admin", password="x")
    repo = git_repo(tmp_path / "repo", "git@github.com:acme/cli25.git")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    return owner.pk, repo, env


def test_a_memory_yullu_import_stores_names_the_owner(tmp_path: Path) -> None:
    # `yullu import` acted as the system: created_by null where `yullu memories add` (round 24) named the owner.
    owner, repo, env = _owner_and_repo(tmp_path)
    (repo / "CLAUDE.md").write_text("# Notes\n\n- Releases are tagged from the release branch only.\n")
    done = run_cli(["import", str(repo / "CLAUDE.md"), "--cwd", str(repo)], env)
    assert done.returncode == 0, done.stderr
    memory = Memory.objects.get()
    assert (memory.created_by_id, memory.updated_by_id) == (owner, owner)
    assert list(MemoryChange.objects.values_list("user_id", flat=True)) == [owner]


def test_a_memory_yullu_dream_stores_names_the_owner(tmp_path: Path) -> None:
    # A dream_now with the owner's token names them; `yullu dream` named no one.
    owner, repo, env = _owner_and_repo(tmp_path)
    answer = {"operations": [{"op": "create", "content": "Deploys run from the deploy branch only.",
                              "category": "process", "tags": [], "reasoning": "said twice"}]}  # fmt: skip
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(f"#!/bin/sh\ncat >/dev/null\necho '{json.dumps({'result': json.dumps(answer)})}'\n")
    claude.chmod(0o755)
    env = {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_")} | {
        "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"
    }
    from dreaming.models import SessionMessage

    project_id = resolve(None, str(repo)).project_id
    SessionMessage.objects.create(project_id=project_id, session_id="s1", role="user", content="we deploy from deploy")
    done = run_cli(["dream", "--cwd", str(repo)], env, timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout
    assert json.loads(done.stdout)["ops_created"] == 1, done.stdout
    memory = Memory.objects.get()
    assert (memory.created_by_id, memory.updated_by_id) == (owner, owner)


def test_yullu_prune_names_the_owner_in_history(tmp_path: Path) -> None:
    owner, repo, env = _owner_and_repo(tmp_path)
    create.store_memory(resolve(None, str(repo)), "The staging freeze lasts until Friday.")
    Memory.objects.update(expires_at=timezone.now() - timedelta(days=1))
    done = run_cli(["prune"], env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["expired"] == 1
    assert MemoryChange.objects.get(action="deleted").user_id == owner

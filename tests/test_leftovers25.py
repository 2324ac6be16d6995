"""Round 25's left-overs (the CLI's writer, a clone's first call, bench load's dropped connection, update_memory's
reply): each test was red before its fix."""

from __future__ import annotations

import argparse
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from memories.models import Memory, MemoryChange
from memories.scope import resolve
from memories.write import create
from tests.processes import git_repo, product_env, run_cli
from tests.stubs import StubServer
from tests.tcp_gate import TcpGate

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


# --- bench load when the server drops its connections -------------------------------------------------------------
def _load_args(url: str, **over: Any) -> argparse.Namespace:
    base: dict[str, Any] = dict(
        url=url, project="dropped-load", clients="2", mix="retrieve=50,store=50", prefill=0, seed=0, inject=0,
        duration=60.0, max_requests=1000, rate=0.0, schedule_seed=1, out=None,
    )  # fmt: skip
    return argparse.Namespace(**(base | over))


@pytest.mark.parametrize("rate", [0.0, 3.0], ids=["closed_loop", "paced"])
def test_bench_load_says_in_one_line_that_the_server_dropped_its_connections_and_keeps_what_it_measured(
    rate: float,
    live_server_url: str,
    owner_token: str,
    stub_embedder: StubServer,
    tmp_path: Path,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # MCP clients do not reconnect: a server that went away mid-level ended `yullu bench load` with a traceback
    # (an ExceptionGroup out of the SDK's task group), and the operations it had measured were lost.
    from bench import load

    port = int(live_server_url.rsplit(":", 1)[1])
    gate = TcpGate(("127.0.0.1", port))
    real_call = load.timed_call

    async def cut_after_four(session: Any, tool: str, args: dict[str, Any], *rest: Any) -> None:
        await real_call(session, tool, args, *rest)
        if sum(len(v) for v in stats_seen(rest).latency.values()) == 4:
            gate.cut()

    def stats_seen(rest: tuple[Any, ...]) -> Any:
        return rest[1]

    monkeypatch.setattr(load, "timed_call", cut_after_four)
    settings.YULLU_HOME = tmp_path
    (tmp_path / "token").write_text(owner_token)
    summary = load.main(_load_args(f"http://127.0.0.1:{gate.port}/mcp", rate=rate, clients="2,2"))
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    first, second = summary["levels"]
    assert first["requests"] >= 4  # what was measured before the drop is kept
    assert sum(first["errors"].values()) >= 1 and summary["errors"] >= 1
    assert first["dropped_sessions"] == 2 and second["dropped_sessions"] == 2, summary["levels"]
    dropped = [line for line in out.err.splitlines() if "dropped" in line]
    assert len(dropped) == 2, out.err  # one line a level


# --- a fresh clone's first call applies the team log ---------------------------------------------------------------
T1, T2 = "44444444-4444-4444-8444-444444444444", "55555555-5555-4555-8555-555555555555"


def test_a_fresh_clones_first_mcp_call_applies_its_team_log_and_later_calls_only_what_a_pull_brings(
    live_server_url: str,
    owner_token: str,
    stub_embedder: StubServer,
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Codex-only teammate (no session-start hook) recalled nothing of the committed log until a write, a
    # `yullu reconcile` or beat's tick after a write: reads record no location, so beat never knew the clone.
    import asyncio

    from sync import catchup
    from tests import team_log
    from tests.mcp_client import call, http_session

    team_log.teammate_event(repo, T1, 1, "create", content="vec:1,0,0 Releases are tagged from main.", tags=[])
    passes: list[str] = []
    real = catchup.reconcile_scope

    def counted(scope: Any) -> Any:
        passes.append(scope.project_id)
        return real(scope)

    monkeypatch.setattr(catchup, "reconcile_scope", counted)

    async def listed() -> list[str]:
        async with http_session(live_server_url, owner_token) as s:
            err, got = await call(s, "list_memories", cwd=str(repo))
            assert not err, got
            return [m["content"] for m in got["memories"]]

    assert asyncio.run(listed()) == ["vec:1,0,0 Releases are tagged from main."]
    assert len(passes) == 1, passes
    assert asyncio.run(listed()) == ["vec:1,0,0 Releases are tagged from main."]
    assert len(passes) == 1  # nothing new: no second pass
    team_log.teammate_event(repo, T2, 2, "create", content="vec:0,1,0 Migrations run before the deploy.", tags=[])
    assert sorted(asyncio.run(listed())) == [
        "vec:0,1,0 Migrations run before the deploy.",
        "vec:1,0,0 Releases are tagged from main.",
    ]
    assert len(passes) == 2
    from memories.models import ProjectLocation

    assert ProjectLocation.objects.filter(git_root=str(repo)).exists()  # beat keeps it applied from now on


def test_a_call_from_someone_who_may_not_read_the_project_applies_nothing(
    live_server_url: str, owner_token: str, stranger: Any, stub_embedder: StubServer, repo: Path
) -> None:
    # The log is applied as the system: only for a caller who may read the project, never on a stranger's call.
    import asyncio

    from access import services as access_services
    from memories.models import ProjectLocation
    from tests import team_log
    from tests.mcp_client import call, http_session

    team_log.teammate_event(repo, T1, 1, "create", content="vec:1,0,0 Releases are tagged from main.", tags=[])

    async def listed(token: str) -> None:
        async with http_session(live_server_url, token) as s:
            await call(s, "list_memories", cwd=str(repo))

    asyncio.run(listed(access_services.create_token(stranger, "laptop").raw))
    assert not Memory.objects.exists() and not ProjectLocation.objects.exists()
    asyncio.run(listed(owner_token))
    assert Memory.objects.count() == 1


def test_over_stdio_the_first_call_applies_the_log_of_the_folder_the_client_started_it_in(
    tmp_path: Path, stub_api: StubServer
) -> None:
    # Codex may run `yullu stdio` in the checkout: calls naming no project are about that folder (contract §2).
    import asyncio
    import sys

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests import team_log
    from tests.mcp_client import call
    from tests.processes import REPO, stub_env

    checkout = git_repo(tmp_path / "checkout", "git@github.com:acme/stdio-clone.git")
    team_log.teammate_event(checkout, T1, 1, "create", content="vec:1,0,0 Releases are tagged from main.", tags=[])
    # PYTHONPATH: this checkout's code, not whichever the virtualenv's editable install points at.
    env = product_env(tmp_path / "home", PYTHONPATH=str(REPO), **stub_env(stub_api.url))
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "yullu_cli.main", "stdio"], env=env, cwd=str(checkout)
    )

    async def go() -> list[str]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            err, listed = await call(s, "list_memories")
            assert not err, listed
            return [m["content"] for m in listed["memories"]]

    assert asyncio.run(go()) == ["vec:1,0,0 Releases are tagged from main."]

"""Walk 20: a new user's first hour, from a fresh clone with real Claude Code and Codex (docs/testing.md)."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from memories.models import Memory
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
    # review23: the tallies count rows the list never shows; an expired memory is not one left out
    Memory.objects.filter(pk=Memory.objects.filter(project_id="acme/few").order_by("id")[0].pk).update(
        expires_at=timezone.now() - timedelta(days=1)
    )
    assert header("--limit", "4") == "acme/few: 4 shown"
    assert header("--limit", "3") == "acme/few: 3 of 4 shown"


def test_a_second_install_leaves_a_registered_mcp_server_alone(tmp_path: Path) -> None:
    """`yullu install claude` again said "claude: registered the MCP server" each time (removing and adding it with
    two `claude` runs) where Codex said "already installed …; nothing changed". A changed entry is registered."""
    home, yhome, calls = tmp_path / "home", tmp_path / "yhome", tmp_path / "claude-calls"
    (tmp_path / "bin").mkdir()
    home.mkdir()
    yhome.mkdir()
    (yhome / "token").write_text("yl_testtoken\n")
    claude = tmp_path / "bin" / "claude"
    claude.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    claude.chmod(0o755)
    env = {
        **os.environ,
        "HOME": str(home),
        "YULLU_HOME": str(yhome),
        "YULLU_CONFIG": str(tmp_path / "config.toml"),
        "YULLU_PORT": "48999",
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
    }
    first = run_cli(["install", "claude"], env)
    assert first.returncode == 0 and "claude: registered the MCP server" in first.stdout, first.stdout + first.stderr
    entry = {"type": "http", "url": "http://127.0.0.1:48999/mcp", "headers": {"Authorization": "Bearer yl_testtoken"}}
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"yullu": entry}}))  # what `claude mcp add` keeps
    calls.unlink()
    again = run_cli(["install", "claude"], env)
    assert again.returncode == 0, again.stderr
    skill, settings = home / ".claude" / "skills" / "yullu" / "SKILL.md", home / ".claude" / "settings.json"
    said = f"claude: already installed in {skill}, {settings} and its MCP servers; nothing changed."
    assert again.stdout.splitlines()[0] == said, again.stdout
    assert not calls.exists()  # no `claude` run
    (yhome / "token").write_text("yl_newtoken\n")  # a rotated token: the entry is registered again
    rotated = run_cli(["install", "claude"], env)
    assert "claude: registered the MCP server" in rotated.stdout and "mcp add" in calls.read_text()

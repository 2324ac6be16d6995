"""Defects a third new-user walk met (fresh clone, clean home), each as it was met: `yullu install`
skipping a freshly installed Codex that had never run (no ~/.codex yet); the admin's Settings page
calling a blank reasoning.provider "MCP sampling" when blank picks a reasoner by itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.processes import product_env, run_cli

pytestmark = pytest.mark.django_db(transaction=True)


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_install_finds_a_codex_on_path_that_never_ran(tmp_path: Path) -> None:
    # `npm install -g @openai/codex` puts `codex` on PATH; ~/.codex appears only when it first runs.
    executable(tmp_path / "bin/codex", "#!/bin/sh\nexit 0\n")
    home = tmp_path / "home"
    home.mkdir()
    env = product_env(
        tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(home), PATH=f"{tmp_path / 'bin'}:/usr/bin:/bin"
    )
    ran = run_cli(["install", "--yes"], env)
    assert ran.returncode == 0, ran.stderr
    assert "[mcp_servers.yullu]" in (home / ".codex/config.toml").read_text(), ran.stdout
    assert not (home / ".claude").exists()  # no Claude Code here: nothing written for it


def test_the_settings_page_says_a_blank_reasoner_is_chosen_automatically(client: Client, owner: Any) -> None:
    # Blank = Anthropic with a key, else an installed claude/codex CLI (config.toml, README);
    # "sampling" is the choice that means MCP sampling only.
    client.force_login(owner)
    page = client.get("/admin/memories/memory/settings/").content.decode()
    assert '<option value="" selected>(blank: automatic)</option>' in page, page
    assert "(blank: MCP sampling)" not in page

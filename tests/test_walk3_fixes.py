"""Defects a third new-user walk met (fresh clone, clean home), each as it was met: `yullu install`
skipping a freshly installed Codex that had never run (no ~/.codex yet)."""

from __future__ import annotations

from pathlib import Path

import pytest

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

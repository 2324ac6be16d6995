"""The Claude Code plugin and marketplace in the repository (.claude-plugin/marketplace.json,
plugins/yullu/), checked with the real CLIs from npm (`make test` installs the pinned versions
into .venv/clis; see docs/testing.md): `claude plugin validate --strict` accepts both manifests,
`claude plugin marketplace add` + `claude plugin install` wire the MCP server to a running server
(`claude mcp list`: Connected), and Codex installs the same plugin from the same marketplace. The
plugin's skill and hooks are the installer's (one text, two ways to install)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.processes import REPO, product_env, run_cli
from yullu_cli.assistants import claude

PLUGIN = REPO / "plugins" / "yullu"
CLIS = Path(os.environ.get("YULLU_TEST_CLIS") or REPO / ".venv" / "clis" / "node_modules" / ".bin")

pytestmark = pytest.mark.django_db(transaction=True)


def cli(name: str) -> str:
    path = CLIS / name
    if not path.exists():
        message = f"{path} is missing: `make test` installs the assistant CLIs (npm install into .venv/clis)."
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return str(path)


def run(args: list[str], home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """A CLI with its own HOME (nothing of the user's), no telemetry or update checks."""
    quiet = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE"))}
    return subprocess.run(args, env={**base, **quiet, "HOME": str(home), **env}, capture_output=True, text=True,
                          timeout=180, cwd=home)  # fmt: skip


def test_the_plugins_skill_and_hooks_are_the_installers() -> None:
    assert (PLUGIN / "skills/yullu/SKILL.md").read_text() == claude.SKILL
    hooks = json.loads((PLUGIN / "hooks/hooks.json").read_text())["hooks"]
    commands = {event: group[0]["hooks"][0]["command"] for event, group in hooks.items()}
    assert commands == {event: f"yullu {verb} || true" for event, verb in claude.HOOKS.items()}
    server = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["yullu"]
    assert (
        server["type"] == "http" and server["url"].endswith("/mcp") and server["headersHelper"] == "yullu mcp-headers"
    )
    manifest = json.loads((PLUGIN / ".claude-plugin/plugin.json").read_text())
    market = json.loads((REPO / ".claude-plugin/marketplace.json").read_text())
    # The package's version follows git (setuptools-scm); the plugin's is its own, the same in both manifests.
    assert manifest["version"] == market["plugins"][0]["version"]


def test_claude_plugin_validate_accepts_the_plugin_and_the_marketplace(tmp_path: Path) -> None:
    claude = cli("claude")
    for path in (PLUGIN, REPO):
        done = run([claude, "plugin", "validate", "--strict", str(path)], tmp_path)
        assert done.returncode == 0 and "Validation passed" in done.stdout, done.stdout + done.stderr


def test_mcp_headers_prints_the_token_header_or_says_there_is_none(tmp_path: Path) -> None:
    entry = [sys.executable, "-m", "yullu_cli.main", "mcp-headers"]
    env = {**os.environ, "YULLU_HOME": str(tmp_path)}
    missing = subprocess.run(entry, env=env, capture_output=True, text=True, cwd=REPO)
    assert missing.returncode == 1 and missing.stdout == ""
    # One sentence naming the file it read and what to set: the token (`yullu token`) or YULLU_HOME.
    assert missing.stderr == (
        f"yullu: no API token in {tmp_path / 'token'}; run `yullu token` once to write it there, or set YULLU_HOME "
        "to the folder of the server you run (its `yullu serve` banner says where its token is).\n"
    )
    (tmp_path / "token").write_text("yl_secret\n")
    found = subprocess.run(entry, env=env, capture_output=True, text=True, cwd=REPO)
    assert json.loads(found.stdout) == {"Authorization": "Bearer yl_secret"}


def test_marketplace_add_and_install_connect_claude_code_to_a_running_server(
    hook_env: dict[str, str], tmp_path: Path
) -> None:
    claude = cli("claude")
    home = tmp_path / "clihome"
    home.mkdir()
    env = {**hook_env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{hook_env['PATH']}"}
    env.pop("HOME")
    added = run([claude, "plugin", "marketplace", "add", str(REPO)], home, **env)
    assert added.returncode == 0, added.stdout + added.stderr
    installed = run([claude, "plugin", "install", "yullu@yullu"], home, **env)
    assert installed.returncode == 0 and "Successfully installed" in installed.stdout, installed.stdout
    listed = run([claude, "mcp", "list"], home, **env)
    assert f"plugin:yullu:yullu: http://127.0.0.1:{env['YULLU_PORT']}/mcp (HTTP) - ✔ Connected" in listed.stdout, (
        listed.stdout + listed.stderr
    )
    # Without a token the same plugin cannot connect: the header comes from the token file.
    (Path(env["YULLU_HOME"]) / "token").unlink()
    refused = run([claude, "mcp", "list"], home, **env)
    assert "plugin:yullu:yullu" in refused.stdout and "✔ Connected" not in refused.stdout


def _claude_plugin_user(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A home whose Claude Code has the plugin yullu@yullu from this repository's marketplace, and the product's
    environment for it: a token, no server, the venv's `yullu` on PATH and no `claude`."""
    claude_cli = cli("claude")
    home = tmp_path / "clihome"
    (home / ".claude").mkdir(parents=True)
    assert run([claude_cli, "plugin", "marketplace", "add", str(REPO)], home).returncode == 0
    assert run([claude_cli, "plugin", "install", "yullu@yullu"], home).returncode == 0
    env = product_env(tmp_path / "yhome", HOME=str(home), YULLU_PORT="9", YULLU_EMBED_PROVIDER="none")
    (tmp_path / "yhome" / "token").write_text("yl_test\n")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin"
    return home, env


def _doctor_hooks(env: dict[str, str]) -> dict[str, Any]:
    checks = json.loads(run_cli(["doctor", "--json"], env, timeout=180).stdout)["checks"]
    return next(c for c in checks if c["check"] == "hooks")


def test_doctor_counts_the_plugins_hooks_and_says_when_they_would_run_twice(tmp_path: Path) -> None:
    """The plugin's hooks live in its installed copy, not in settings.json: doctor failed a plugin user
    and told them to run `yullu install` too, which the README forbids (each hook would run twice)."""
    _, env = _claude_plugin_user(tmp_path)
    hooks = _doctor_hooks(env)
    assert hooks["status"] == "ok" and hooks["detail"] == "installed: claude plugin yullu@yullu", hooks
    env["PATH"] = "/usr/bin:/bin"  # the plugin runs `yullu`: without it on PATH its hooks fail silently
    hooks = _doctor_hooks(env)
    assert hooks["status"] == "fail" and "`yullu` on PATH" in hooks["detail"] and "PATH" in hooks["fix"], hooks
    assert run_cli(["install", "claude"], env).returncode == 0
    hooks = _doctor_hooks(env)
    assert hooks["status"] == "fail" and "twice" in hooks["detail"], hooks
    assert hooks["fix"] == "keep one: `yullu uninstall claude` or `claude plugin uninstall yullu@yullu`"


def test_codex_installs_the_same_plugin_from_the_same_marketplace(tmp_path: Path) -> None:
    codex = cli("codex")
    home = tmp_path / "clihome"
    (home / ".codex").mkdir(parents=True)
    added = run([codex, "plugin", "marketplace", "add", str(REPO)], home)
    assert added.returncode == 0 and "Added marketplace `yullu`" in added.stdout, added.stdout + added.stderr
    installed = run([codex, "plugin", "add", "yullu@yullu"], home)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    skills = list((home / ".codex/plugins/cache/yullu/yullu").glob("*/skills/yullu/SKILL.md"))
    assert [s.read_text() for s in skills] == [claude.SKILL]


def test_install_leaves_claude_code_to_its_plugin_unless_named(tmp_path: Path) -> None:
    """Found on the walk: `yullu install --service` after `claude plugin install yullu@yullu` wrote the
    hooks into settings.json again without a word, so Claude Code ran each hook twice."""
    home, env = _claude_plugin_user(tmp_path)
    done = run_cli(["install"], env)
    assert done.returncode == 0 and "claude: skipped: the plugin yullu@yullu" in done.stderr + done.stdout, done
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert "hooks" not in settings and not (home / ".claude" / "skills" / "yullu").exists(), settings
    assert _doctor_hooks(env)["status"] == "ok"
    named = run_cli(["install", "claude"], env)
    assert "runs each hook twice" in named.stderr + named.stdout, named
    assert "hooks" in json.loads((home / ".claude" / "settings.json").read_text())
    # and uninstall names the plugin it leaves (its hooks keep running): it said nothing of it
    removed = run_cli(["uninstall", "claude"], env)
    said = removed.stdout + removed.stderr
    assert "kept: the Claude Code plugin yullu@yullu" in said and "`claude plugin uninstall yullu@yullu`" in said, said

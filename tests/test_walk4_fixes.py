"""Defects a fourth new-user walk met (fresh clone, clean home), each as it was met: `yullu uninstall`
saying the memories stay in "the embedded database" while, as root, that database lives in
/var/lib/yullu/clusters/<hash>, a folder nothing named; the Stale queue running the last removed line
of a cited span and the first added one together; `yullu doctor` calling a logged-out Claude Code or
Codex an ok reasoner."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from memories.anchors.repo import unified_diff
from tests.processes import product_env, run_cli
from yullu_cli import install
from yullu_core import postgres as pg


@pytest.mark.parametrize(
    ("cluster_dir", "said"),
    [
        # As root, a home other users cannot enter keeps its cluster in /var/lib/yullu/clusters/<hash>.
        ("var/lib/yullu/clusters/4e4a66c9473a", "the embedded database in {tmp}/var/lib/yullu/clusters/4e4a66c9473a"),
        ("yhome", "the embedded database"),
    ],
)
def test_uninstall_names_where_the_embedded_database_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cluster_dir: str, said: str
) -> None:
    yhome = tmp_path / "yhome"
    monkeypatch.setenv("YULLU_HOME", str(yhome))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    cluster = pg.plan(yhome)
    monkeypatch.setattr(pg, "plan", lambda home: dataclasses.replace(cluster, pgdata=tmp_path / cluster_dir / "pgdata"))
    kept = install._left_behind(tmp_path / "home", [], cursor=False)[0]
    assert kept.startswith(f"kept: your memories ({said.format(tmp=tmp_path)}), {yhome} (API token) and "), kept


def test_the_stale_queue_diff_keeps_a_removed_last_line_apart_from_the_added_one() -> None:
    # The Stale queue showed "-        return sorted(stops)+        return sorted(stops, key=…)" on one
    # line: a cited span is joined without a final newline (stale.diff), and so was its diff.
    before = b"    def solve(self, stops):\n        return sorted(stops)"
    after = b"    def solve(self, stops):\n        return sorted(stops, key=priority)"
    diff = unified_diff(before, after, "solver/vrp.py", "solver/vrp.py").splitlines()
    assert diff[-2:] == ["-        return sorted(stops)", "+        return sorted(stops, key=priority)"], diff
    assert diff[:2] == ["--- a/solver/vrp.py", "+++ b/solver/vrp.py"]


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


# What Claude Code 2.1.197 prints for `claude auth status` when nobody is logged in (exit status 1), and
# Codex 0.169.0 for `codex login status`; recorded from the real CLIs.
CLAUDE_LOGGED_OUT = '{\n  "loggedIn": false,\n  "authMethod": "none",\n  "apiProvider": "firstParty"\n}'
CODEX_LOGGED_OUT = "Not logged in"


@pytest.mark.parametrize(
    ("tool", "status_args", "said"),
    [("claude", "auth status", CLAUDE_LOGGED_OUT), ("codex", "login status", CODEX_LOGGED_OUT)],
)
def test_doctor_warns_when_the_cli_reasoner_is_logged_out(
    tmp_path: Path, tool: str, status_args: str, said: str
) -> None:
    # Found on the walk: `yullu doctor` said "ok reasoner cli:claude" while every dream pass failed with
    # "Not logged in"; the dashboard showed the failures only after a pass had run.
    script = f'#!/bin/sh\nif [ "$*" = "{status_args}" ]; then echo \'{said}\'; exit 1; fi\nexit 0\n'
    executable(tmp_path / "bin" / tool, script)
    env = product_env(
        tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"), YULLU_PORT="1",
        PATH=f"{tmp_path / 'bin'}:/usr/bin:/bin",
    )  # fmt: skip
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "YULLU_REASON_PROVIDER", "OPENAI_BASE_URL"):
        env.pop(key, None)
    report = json.loads(run_cli(["doctor", "--json"], env).stdout)
    check = next(c for c in report["checks"] if c["check"] == "reasoner")
    assert check["status"] == "warn", check
    assert check["detail"] == f"cli:{tool}: nobody is logged in to `{tool}`, so every dream pass fails"
    executable(tmp_path / "bin" / tool, "#!/bin/sh\necho '{\"loggedIn\": true}'\nexit 0\n")
    report = json.loads(run_cli(["doctor", "--json"], env).stdout)
    assert next(c for c in report["checks"] if c["check"] == "reasoner")["status"] == "ok"


def test_a_missing_extra_names_the_command_for_this_checkout() -> None:
    # Found on the walk: with [reasoning].provider = "openai" a `make run` checkout answered "pip install
    # 'yullu[openai]'", which looks for a package called yullu on PyPI instead of installing this one's extra.
    from yullu_core.errors import Unavailable, optional_module

    with pytest.raises(Unavailable) as raised:
        optional_module("yullu_no_such_module", "openai", "the openai reasoner")
    root = Path(__file__).resolve().parent.parent
    command = f"{sys.executable} -m pip install -e '{root}[openai]'"
    assert str(raised.value) == f"the openai reasoner needs the yullu_no_such_module package: {command}."


def test_a_missing_extra_names_the_installer_that_owns_an_installed_wheels_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found installing the wheel with pipx and uv: "pip install 'yullu[openai]'" ran the shell's pip, outside the
    # tool's venv, which looked for a package called yullu on PyPI.
    import importlib.metadata

    from yullu_core.errors import installed_extra

    declared = ["httpx~=0.28.1", 'openai~=3.54.0; extra == "openai"', 'onnx~=1.23.2; extra == "int8"']
    monkeypatch.setattr(importlib.metadata, "requires", lambda name: declared if name == "yullu" else None)
    assert installed_extra("openai", tmp_path) == f"{sys.executable} -m pip install 'yullu[openai]'"
    (tmp_path / "uv-receipt.toml").write_text("[tool]\n")
    assert installed_extra("openai", tmp_path).startswith("uv tool install --with 'openai~=3.54.0' <")
    (tmp_path / "pipx_metadata.json").write_text("{}")
    assert installed_extra("openai", tmp_path) == "pipx inject yullu 'openai~=3.54.0'"


@pytest.mark.django_db(transaction=True)
def test_an_mcp_client_is_told_the_database_is_unavailable(
    live_server_url: str, owner_token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found on the walk: while the embedded PostgreSQL restarted after a kill -9, the SDK client's calls
    # failed with "Server returned an error response"; the server's sentence was a body it does not read.
    import asyncio

    import psycopg

    from tests.mcp_client import http_session
    from yullu_site.mcp import http

    def leaves(group: BaseException) -> list[BaseException]:
        if isinstance(group, BaseExceptionGroup):
            return [leaf for e in group.exceptions for leaf in leaves(e)]
        return [group]

    async def down(*args: object) -> None:
        raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr(http, "check_token", down)

    async def go() -> str:
        try:
            async with http_session(live_server_url, owner_token):
                return "connected"
        except BaseException as raised:  # an MCPError, inside the transport's task group
            return " ".join(f"{type(e).__name__}: {e}" for e in leaves(raised))

    assert "MCPError: The database is unavailable right now; try again shortly." in asyncio.run(go())

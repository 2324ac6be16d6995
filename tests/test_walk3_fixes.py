"""Defects a third new-user walk met (fresh clone, clean home), each as it was met: `yullu install`
skipping a freshly installed Codex that had never run (no ~/.codex yet); the admin's Settings page
calling a blank reasoning.provider "MCP sampling" when blank picks a reasoner by itself; the prompt
hook silent for a checkout outside [server].allowed_roots (a repository in /tmp or /srv), and
nothing saying so: `yullu doctor` now warns when run from such a folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from memories.scope import resolve
from memories.write import create
from tests.processes import REPO, product_env, run_cli
from tests.stubs import StubServer
from yullu_core.tokens import count_tokens

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


def test_install_that_finds_no_assistant_says_so_and_exits_1(tmp_path: Path) -> None:
    # It printed the sentence and exited 0, as if it had wired something up (docs13).
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "bin").mkdir()  # a PATH with no claude or codex on it, whatever this machine has
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(home), PATH=str(tmp_path / "bin"))
    ran = run_cli(["install"], env)
    assert ran.returncode == 1 and "no assistant found" in ran.stderr, ran
    assert "yullu install claude|codex|cursor" in ran.stderr and list(home.iterdir()) == []


def test_the_settings_page_says_a_blank_reasoner_is_chosen_automatically(client: Client, owner: Any) -> None:
    # Blank = Anthropic with a key, else an installed claude/codex CLI (config.toml, README);
    # "sampling" is the choice that means MCP sampling only.
    client.force_login(owner)
    page = client.get("/admin/memories/memory/settings/").content.decode()
    assert '<option value="" selected>(blank: automatic)</option>' in page, page
    assert "(blank: MCP sampling)" not in page


def test_the_prompt_hook_names_the_project_itself_for_a_checkout_outside_the_allowed_roots(
    hook_env: dict[str, str], stub_embedder: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server accepts cwds in its home only; the checkout is elsewhere (the walk's was in /tmp).
    allowed = tmp_path / "home"
    monkeypatch.setitem(settings.YULLU, "server", {**settings.YULLU["server"], "allowed_roots": [str(allowed)]})
    checkout = tmp_path / "srv" / "ledger"
    checkout.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin", "https://github.com/acme/ledger.git"])
    project = resolve("github.com/acme/ledger", None)
    create.store_memory(project, "vec:1,0,0 Staging deploys go through make stage", "process")
    count_tokens("warm")  # the server (in this process) loads its tokenizer at start
    prompt = json.dumps({"prompt": "vec:1,0,0 how do we deploy to staging?", "cwd": str(checkout)})
    out = run_cli(["inject"], hook_env, prompt)
    assert out.returncode == 0 and "Staging deploys go through make stage" in out.stdout, out.stderr


@pytest.mark.parametrize(("roots", "status"), [("elsewhere", "warn"), ("", "ok")])
def test_doctor_warns_when_run_from_a_folder_the_server_refuses(tmp_path: Path, roots: str, status: str) -> None:
    allowed = str(tmp_path / roots) if roots else str(REPO)  # run_cli runs doctor in REPO
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", YULLU_PORT="1", YULLU_ALLOWED_ROOTS=allowed)
    ran = run_cli(["doctor", "--json"], env)
    folder = next(c for c in json.loads(ran.stdout)["checks"] if c["check"] == "folder")
    assert folder["status"] == status, folder
    if status == "warn":
        assert "outside [server].allowed_roots" in folder["detail"] and "YULLU_ALLOWED_ROOTS" in folder["fix"]


def test_doctor_does_not_judge_the_folder_for_a_team_server(tmp_path: Path) -> None:
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", YULLU_PORT="1",
                      YULLU_ALLOWED_ROOTS=str(tmp_path / "elsewhere"), YULLU_SERVER="http://127.0.0.1:1")  # fmt: skip
    ran = run_cli(["doctor", "--json"], env)
    folder = next(c for c in json.loads(ran.stdout)["checks"] if c["check"] == "folder")
    assert folder["status"] == "ok" and "team server" in folder["detail"], folder

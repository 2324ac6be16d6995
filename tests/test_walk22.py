"""Walk 22: a new user's first hour, every command with right and wrong arguments (docs/testing.md)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from access.services import MAX_TOKEN_DAYS
from memories.scope import resolve
from memories.write import create
from memories.write.validation import NewMemory
from sync.services import reconcile_folder
from tests.processes import product_env, run_cli
from yullu_cli.access_commands import TOKEN_DAYS
from yullu_core.errors import UserError


def _checkout(folder: Path, origin: str) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", origin], check=True)
    return folder


@pytest.mark.django_db(transaction=True)
def test_a_project_with_no_known_checkout_is_not_blamed_on_the_checkout_you_are_in(tmp_path: Path) -> None:
    """`yullu reconcile --project nope/never` in a checkout of another project said "<that checkout> is not inside
    a git repository": it is one, of another project. The message names what the folder is a checkout of."""
    kelp = _checkout(tmp_path / "kelp", "git@github.com:acme/kelp.git")
    with pytest.raises(UserError) as refused:
        reconcile_folder(str(kelp), "acme/never")
    message = str(refused.value)
    assert "not inside a git repository" not in message
    assert f"{kelp} is a checkout of github.com/acme/kelp, not of acme/never" in message
    assert "no checkout of acme/never is known" in message
    # outside any checkout the old sentence stays right
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UserError, match="is not inside a git repository and no checkout of acme/never is known"):
        reconcile_folder(str(plain), "acme/never")


def _client_config() -> dict[str, Any]:
    """The README's JSON for MCP clients other than Claude Code, Codex and Cursor."""
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.S) if "mcpServers" in b]
    assert blocks, "README.md shows no mcpServers JSON for a generic MCP client"
    return blocks[0]["mcpServers"]


@pytest.mark.django_db(transaction=True)
def test_the_readmes_json_for_other_mcp_clients_connects(live_server_url: str, owner_token: str) -> None:
    """The README promised "any MCP client" but showed only Claude Code's command line: a client configured from
    JSON (url + headers, or command + args) had nothing to copy. Its HTTP entry, with the token in place of `yl_…`
    and the test server's port, connects with the official SDK and lists the tools; its stdio entry runs `yullu
    stdio`."""
    servers = _client_config()
    http = servers["yullu"]
    port = live_server_url.rsplit(":", 1)[1]
    url = http["url"].replace(":47823/", f":{port}/")
    headers = {k: v.replace("yl_…", owner_token) for k, v in http["headers"].items()}

    async def tools() -> list[str]:
        client = create_mcp_http_client(headers=headers)
        async with (
            client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return [t.name for t in (await session.list_tools()).tools]

    assert "retrieve_memories" in asyncio.run(tools())
    stdio = servers["yullu-stdio"]
    assert Path(stdio["command"]).name == "yullu" and stdio["args"] == ["stdio"]


@pytest.mark.parametrize("days", ["abc", "0", "-3", "99999", "nan", "inf"])
def test_a_tokens_lifetime_that_is_no_number_of_days_is_a_usage_error_in_words(tmp_path: Path, days: str) -> None:
    """`yullu tokens create --expires-days abc` answered argparse's "invalid float value: 'abc'" (Python's words)
    and `--expires-days 0` exit 1 ("expires-days must be …", not the option's name), where every other mistyped
    value is a usage error naming the option in one sentence (exit 2, nothing done)."""
    env = product_env(tmp_path / "yhome", HOME=str(tmp_path / "home"))
    ran = run_cli(["tokens", "create", "--user", "alice", "--expires-days", days], env)
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.splitlines()[-1] == (
        f"yullu tokens create: error: argument --expires-days: must be a number of days more than 0 and at most "
        f"3650, not {days!r}"
    )
    assert "float" not in ran.stderr
    assert TOKEN_DAYS == MAX_TOKEN_DAYS


@pytest.mark.django_db
def test_the_graphs_project_picker_names_the_project_the_graph_shows(admin_client: Any) -> None:
    """The graph of a project with no memories (a link kept from before, a typo in the URL) drew nothing while its
    picker showed the first known project as chosen: the reviewer read "github.com/acme/kelp: 0 memories"."""
    create.store_memories(resolve("acme/kelp", None), [NewMemory("Invoices are numbered per tenant", "domain")])
    page = admin_client.get("/admin/memories/memory/graph/?project_id=acme/nope").content.decode()
    assert '<option value="acme/nope" selected>acme/nope (no memories)</option>' in page
    assert '<option value="acme/kelp" >acme/kelp</option>' in page
    known = admin_client.get("/admin/memories/memory/graph/?project_id=acme/kelp").content.decode()
    assert "no memories" not in known and '<option value="acme/kelp" selected>' in known


def test_a_search_typed_without_quotes_searches_the_words(tmp_path: Path) -> None:
    """`yullu memories search how do we deploy` was a usage error ("unrecognized arguments: do we deploy"): the
    first thing a person types at a terminal. The words are the query, as the quoted form's."""
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    stored = run_cli(["memories", "add", "Deploys go through make ship", "--project", "acme/words"], env)
    assert stored.returncode == 0, stored.stderr
    quoted = run_cli(["memories", "search", "how do we deploy", "--project", "acme/words", "--json"], env)
    words = run_cli(["memories", "search", "how", "do", "we", "deploy", "--project", "acme/words", "--json"], env)
    assert words.returncode == 0, words.stderr
    assert json.loads(words.stdout) == json.loads(quoted.stdout)


def test_a_personal_memory_is_said_to_be_yours_not_an_internal_scope_id(tmp_path: Path) -> None:
    """`yullu memories add … --user` said "stored #522 in ~user:1" (the scope's internal id), and took a --project
    given with it without a word (the memory is for every project all the same)."""
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    ran = run_cli(["memories", "add", "I prefer pytest over unittest", "--user"], env)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip().endswith("in your personal memories (every project, never shared)"), ran.stdout
    assert "~user" not in ran.stdout
    both = run_cli(["memories", "add", "I prefer tabs", "--user", "--project", "acme/app"], env)
    assert both.returncode == 2, both.stdout
    assert both.stderr.splitlines()[-1] == (
        "yullu memories add: error: argument --user: a personal memory is for every project; leave out --project"
    )

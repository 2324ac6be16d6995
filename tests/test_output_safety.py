"""Export and terminal output (issue 33 item 6): `--out` writes a regular file or a new path (0600),
never through a FIFO, symlink or device node; control, bidi and OSC 52 characters are escaped when
printed and refused on every write path; a query parameter an endpoint does not take is an error."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

from memories.models import Memory
from memories.scope import resolve
from memories.write import create
from sync.services import reconcile_scope
from tests.mcp_client import call, http_session
from tests.processes import git_repo, product_env, run_cli
from tests.stubs import StubServer
from yullu_core.errors import UserError

pytestmark = pytest.mark.django_db(transaction=True)
OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # writes "rm -rf ~" to the clipboard
HOSTILE = f"Deploy notes {OSC52}\x1b[2J\x9b31m \u202eexe.dab\u202c done"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u202c")


def cli_env(tmp_path: Path) -> dict[str, str]:
    return product_env(tmp_path / "home", YULLU_EMBED_PROVIDER="none")


def export(tmp_path: Path, out: Path | str) -> Any:
    return run_cli(["export", "json", "--project", "acme/out", "--out", str(out)], cli_env(tmp_path))


def assert_one_sentence(done: Any, *words: str) -> None:
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert all(w in done.stderr for w in words) and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_export_writes_a_private_regular_file_and_refuses_anything_else(tmp_path: Path) -> None:
    Memory.objects.create(project_id="acme/out", content="a personal fact worth keeping private")
    new = tmp_path / "new.jsonl"
    assert export(tmp_path, new).returncode == 0
    assert stat.S_IMODE(new.stat().st_mode) == 0o600 and "personal fact" in new.read_text()
    old = tmp_path / "old.jsonl"
    old.write_text("stale\n")
    old.chmod(0o644)
    assert export(tmp_path, old).returncode == 0
    assert stat.S_IMODE(old.stat().st_mode) == 0o600 and "personal fact" in old.read_text()

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert_one_sentence(export(tmp_path, fifo), "not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO: never replaced
    target = tmp_path / "victim"
    target.write_text("keep me\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert_one_sentence(export(tmp_path, link), "symlink")
    assert link.is_symlink() and target.read_text() == "keep me\n"
    assert_one_sentence(export(tmp_path, tmp_path), "is a folder")
    assert_one_sentence(export(tmp_path, tmp_path / "missing" / "x.jsonl"), "no such folder")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp file left


def test_a_device_node_is_refused_not_replaced(tmp_path: Path) -> None:
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("this machine may not create device nodes (no CAP_MKNOD)")
    Memory.objects.create(project_id="acme/out", content="a fact")  # an unknown --project is refused first
    assert_one_sentence(export(tmp_path, node), "not a regular file")
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_stored_escapes_are_printed_escaped(tmp_path: Path) -> None:
    """A row holding escapes (stored before the write rule, or by hand in the database)."""
    Memory.objects.create(project_id="acme/out", content=HOSTILE, tags=["t\x1b[31m"])
    env = cli_env(tmp_path)
    outputs = [
        run_cli(["memories", "list", "--project", "acme/out"], env),
        run_cli(["memories", "list", "--project", "acme/out", "--json"], env),
        run_cli(["memories", "show", str(Memory.objects.get().pk)], env),
        run_cli(["export", "agents-md", "--project", "acme/out"], env),
        run_cli(["export", "json", "--project", "acme/out"], env),
    ]
    for done in outputs:
        assert done.returncode == 0, done.stderr
        assert not any(c in done.stdout for c in RAW), repr(done.stdout)
        assert "Deploy notes" in done.stdout and "52;c;" in done.stdout  # shown, as visible escapes
    exported = [json.loads(line) for line in outputs[-1].stdout.splitlines()]
    assert exported[1]["content"] == HOSTILE  # the JSON escapes decode to the stored text


def test_control_and_bidi_characters_are_refused_on_every_write_path(
    tmp_path: Path, live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    headers = {"Authorization": f"Bearer {owner_token}"}
    r = httpx.post(
        f"{live_server_url}/api/memories",
        json={"content": HOSTILE, "project_id": "acme/w"},
        headers=headers,
        timeout=60,
    )
    assert r.status_code == 400 and "control or bidi" in r.json()["error"], r.text
    r = httpx.post(
        f"{live_server_url}/api/memories",
        json={"content": "fine", "tags": ["a\u202eb"], "project_id": "acme/w"},
        headers=headers,
        timeout=60,
    )
    assert r.status_code == 400 and "control or bidi" in r.json()["error"], r.text

    async def mcp_store() -> tuple[bool, Any]:
        async with http_session(live_server_url, owner_token) as s:
            return await call(s, "store_memory", content=HOSTILE, project_id="acme/w")

    is_error, text = asyncio.run(mcp_store())
    assert is_error and "control or bidi" in text
    repo = git_repo(tmp_path / "repo", "git@github.com:acme/escapes.git")
    (repo / ".yullu" / "logs").mkdir(parents=True)
    event = {"id": "10000000-0000-4000-8000-000000000001", "type": "create", "ts": "2026-06-01T00:00:00Z",
             "memory_id": "00000000-0000-4000-8000-000000000001", "content": HOSTILE}  # fmt: skip
    (repo / ".yullu" / "logs" / "teammate.json").write_text(json.dumps(event))
    result = reconcile_scope(resolve(None, str(repo)))
    assert [e["file"] for e in result["parse_errors"]] == ["teammate.json"]
    assert "control or bidi" in result["parse_errors"][0]["error"]
    with pytest.raises(UserError, match="control or bidi"):
        create.store_memory(resolve("acme/w", None), "admin and import use this path \x1b[0m")
    assert not Memory.objects.exists()


def test_a_query_parameter_an_endpoint_does_not_take_is_an_error_naming_it(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    create.store_memory(resolve("acme/one", None), "a fact of project one")
    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"}) as api:
        r = api.get("/api/memories", params={"project": "acme/one"})  # misspelt: must not list every project
        assert r.status_code == 400 and "project" in r.json()["error"].split(";")[0], r.text
        r = api.get("/api/stats", params={"project_id": "acme/one", "bogus": "1", "days": "7"})
        assert r.status_code == 400 and "bogus" in r.json()["error"] and "days" not in r.json()["error"].split(";")[0]
        assert api.get("/api/memories", params={"project_id": "acme/one", "limit": "5"}).status_code == 200
        assert api.get("/api/projects", params={"x": "1"}).status_code == 400

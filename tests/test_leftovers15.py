"""The last note's small leftovers (lane fixes15): each test is red without its fix."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from django.test import Client

from memories.models import Memory, MemoryChange
from memories.scope import Scope, resolve, user_scope
from memories.write import create
from sync.models import OutboxEvent
from tests.conftest import free_port
from tests.mcp_client import call, http_session
from tests.processes import is_ready, product_env, run_cli, spawn, stop, wait_until
from tests.stubs import StubServer
from yullu_site.models import Heartbeat

# --- 2. linking twice answers the existing link, writing nothing again ------------------------------------------


def _trail(project_id: str) -> tuple[int, int]:
    """History rows and sync events a project's writes have left so far."""
    return MemoryChange.objects.filter(project_id=project_id).count(), OutboxEvent.objects.count()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["related", "supersedes"])
def test_the_same_link_posted_again_answers_200_with_it_and_writes_nothing(
    live_server_url: str, owner_token: str, stub_embedder: StubServer, kind: str
) -> None:
    """REST answered 201 to every repeat. The link, its history rows and its event are written once; a repeat
    (with another note) answers 200 with the link as it was; the MCP tool answers that same link too."""
    project = f"acme/links-again-{kind}"
    old = create.store_memory(Scope(project, None), "vec:1,0,0 The API listens on port 8000", "process").memory
    new = create.store_memory(Scope(project, None), "vec:0,1,0 The API listens on port 9000", "process").memory
    http = httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"}, timeout=30)
    first = http.post(f"/api/memories/{new.pk}/links", json={"to": old.pk, "kind": kind, "note": "ports"})
    assert first.status_code == 201, first.text
    trail = _trail(project)
    again = http.post(f"/api/memories/{new.pk}/links", json={"to": old.pk, "kind": kind, "note": "other"})
    assert again.status_code == 200, again.text
    assert again.json() == first.json()  # the same link, its note unchanged
    assert _trail(project) == trail

    async def over_mcp() -> dict[str, object]:
        async with http_session(live_server_url, owner_token) as s:
            err, link = await call(s, "link_memories", from_id=new.pk, to_id=old.pk, kind=kind, note="mcp")
            assert not err, link
            return dict(link)

    assert asyncio.run(over_mcp()) == first.json()
    assert _trail(project) == trail


# --- 1. a port taken between the check and the bind ends `yullu serve` with one sentence -----------------------

HOLD_THE_PORT = (
    "import socket, sys, time; s = socket.create_server(('127.0.0.1', int(sys.argv[1]))); print('bound', flush=True);"
    "time.sleep(600)"
)


def _web_child(supervisor: subprocess.Popen[str]) -> bool:
    with_children = psutil.Process(supervisor.pid).children(recursive=True)
    return any("uvicorn" in " ".join(p.cmdline()) for p in with_children if p.is_running())


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_port_taken_after_the_check_stops_serve_with_who_took_it_not_a_restart_loop(tmp_path: Path) -> None:
    """The web process lost the race, died by SIGABRT, and the supervisor said "killed by SIGABRT;
    restarting it" until four quick exits ended everything with "its output above says why"."""
    port = free_port()
    env = product_env(tmp_path / "home", YULLU_PORT=str(port), YULLU_CONFIG=str(tmp_path / "config.toml"))
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        serve = spawn(["-m", "yullu_cli.main", "serve"], env, stdout=out, stderr=subprocess.STDOUT)
    holder = None
    try:
        wait_until(lambda: _web_child(serve), "the web process to start", alive=serve, output=log.read_text)
        # uvicorn imports Django and runs the lifespan before it binds: seconds, while this takes milliseconds.
        holder = spawn(["-c", HOLD_THE_PORT, str(port)], env, stdout=subprocess.PIPE)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "bound"
        serve.wait(timeout=240)
    finally:
        stop(serve)
        if holder is not None:
            stop(holder)
    output = log.read_text()
    assert serve.returncode == 1, output[-3000:]
    said = f"yullu: port {port} on 127.0.0.1 was taken by another process (pid {holder.pid}, python"
    assert said in output, output[-3000:]
    line = next(line for line in output.splitlines() if line.startswith(said))
    assert "`yullu serve --port N`" in line and line.endswith("; stopping everything."), line
    assert "restarting it" not in output and "killed by" not in output, output[-3000:]
    # Only the supervisor's sentence: uvicorn's bind error and the native abort after it ("terminate called
    # without an active exception") printed before it, and are now in the file it names (lane fixes16).
    last_words = tmp_path / "home" / "run" / "web-last-words.log"
    assert f"; the web process's last lines are in {last_words}; stopping everything." in line, line
    assert "address already in use" not in output and "terminate called" not in output, output[-3000:]
    assert "address already in use" in last_words.read_text()
    assert not list((tmp_path / "home" / "run").glob("serve*.pid")), "stopped and cleaned up"


# --- 3. uninstall on a clean home leaves it as it was -----------------------------------------------------------


def test_install_then_uninstall_on_a_clean_home_leaves_no_folder_behind(tmp_path: Path) -> None:
    """~/.claude, made by install for settings.json and the skill, stayed behind empty (install remembered the
    folders under it, not ~/.claude itself), and so did ~/.local/share/yullu, made for install's own records.
    A folder that held something before install stays, with what it held."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}  # no YULLU_HOME: the default one
    installed = run_cli(["install", "claude", "codex", "cursor"], env)
    assert installed.returncode == 0, installed.stderr
    assert (home / ".claude" / "settings.json").is_file() and (home / ".local" / "share" / "yullu").is_dir()
    removed = run_cli(["uninstall"], env)
    assert removed.returncode == 0, removed.stderr
    assert sorted(home.rglob("*")) == [], removed.stdout
    said = removed.stdout.splitlines()
    for folder in (".claude", ".local/share/yullu", ".local"):
        assert f"removed the empty folder {home / folder} (install created it)" in said, said
    assert not any("(API token)" in line for line in said), said  # the data folder it named is gone
    # ~/.cursor held a file of the user's before install: it and the folder stay
    (home / ".cursor").mkdir()
    (home / ".cursor" / "argv.json").write_text("{}\n")
    assert run_cli(["install", "claude", "cursor"], env).returncode == 0
    assert run_cli(["uninstall"], env).returncode == 0
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == [".cursor", ".cursor/argv.json"]


# --- 5. `yullu serve` prints the product's lines, not Celery's banners ------------------------------------------

CELERY_BANNERS = ("[queues]", ".> app:", "[config]", "celery beat v", "LocalTime -> ", "Configuration ->")


def _beats() -> int:
    row = Heartbeat.objects.filter(name="beat").first()
    return row.beats if row else 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_serve_prints_no_celery_banner_while_beat_and_the_worker_run(tmp_path: Path) -> None:
    """The worker's ASCII art and config dump and beat's banner (some 30 lines) came between the
    product's start-up lines. Beat → broker → worker is seen working (the heartbeat task ran)."""
    port = free_port()
    env = product_env(tmp_path / "home", YULLU_PORT=str(port), YULLU_EMBED_PROVIDER="none",
                      YULLU_HEARTBEAT_SECONDS="1", YULLU_CONFIG=str(tmp_path / "config.toml"))  # fmt: skip
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        serve = spawn(["-m", "yullu_cli.main", "serve"], env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: _beats() >= 2, "beat's heartbeat to run on the worker", alive=serve, output=log.read_text)
        wait_until(lambda: is_ready(f"http://127.0.0.1:{port}"), "the site", alive=serve, output=log.read_text)
    finally:
        stop(serve)
    output = log.read_text()
    assert serve.returncode == 0, output[-3000:]
    assert f"Yul'lu is starting on http://127.0.0.1:{port}" in output and "yullu: stopped." in output, output
    assert not [banner for banner in CELERY_BANNERS if banner in output], output


# --- 4. deleting a memory says its text stays in the team log until compaction --------------------------------


def _log_holding(repo: Path, text: str) -> list[str]:
    return sorted(p.name for p in (repo / ".yullu" / "logs").iterdir() if text in p.read_text())


@pytest.mark.django_db(transaction=True)
def test_deleting_a_memory_says_its_text_stays_in_the_log_and_the_command_that_removes_it(
    repo: Path, stub_embedder: StubServer, tmp_path: Path, client: Client, owner: Any
) -> None:
    """A secret that slipped past the scanner and was deleted stayed in .yullu/logs, and nothing said so: the
    CLI answered "deleted #N" and the admin its usual line. The command named removes it (SPEC §5: files are
    never rewritten, so deleting cannot)."""
    scope = resolve(None, str(repo))
    slipped = "the kiosk's staging login is written as marker-7f3a9 on the wiki"
    memory = create.store_memory(scope, slipped, "process").memory
    assert _log_holding(repo, "marker-7f3a9")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    removed = run_cli(["memories", "rm", str(memory.pk)], env)
    assert removed.returncode == 0 and removed.stdout.strip() == f"deleted #{memory.pk}", removed.stderr
    compact_it = f"`yullu sync compact --cwd {repo}`"
    assert removed.stderr.splitlines() == [
        f"yullu: #{memory.pk}'s text stays in the team event log of {repo} (and in git history once committed) "
        f"until {compact_it} replaces its files with a delete marker; if it held a secret, run that and commit, "
        "and rotate the secret if it was ever pushed."
    ], removed.stderr
    assert _log_holding(repo, "marker-7f3a9"), "still there, as said"
    compacted = run_cli(["sync", "compact", "--cwd", str(repo)], env)
    assert compacted.returncode == 0, compacted.stderr
    assert _log_holding(repo, "marker-7f3a9") == [], "the command it named removed the text"
    # The admin's delete says the same, for the deleted memory
    other = create.store_memory(scope, "the kiosk's other login is marker-b41c2 on the wiki", "process").memory
    client.force_login(owner)
    page = client.post(f"/admin/memories/memory/{other.pk}/delete/", {"post": "yes"}, follow=True)
    said = [str(m) for m in page.context["messages"]]
    assert f"The deleted memory's text stays in the team event log of {repo}" in " ".join(said), said
    assert not Memory.objects.filter(pk=other.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_deleting_a_personal_memory_says_nothing_of_a_log(stub_embedder: StubServer, tmp_path: Path) -> None:
    personal = create.store_memory(user_scope(), "I like my diffs with word colours", "style").memory
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    removed = run_cli(["memories", "rm", str(personal.pk)], env)
    assert removed.returncode == 0 and removed.stderr == "", removed.stderr

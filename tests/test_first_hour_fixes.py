"""Defects a new user met in the first hour (issue 31), each as they met it: logging in, the front
page, the dashboard's wording, `yullu dream` with a logged-out Claude Code, `install --service`
when the unit cannot be enabled, uninstall's empty folders, categories on every path, `memories
add -`, similar memories at the terminal, doctor against the running server, Celery's root warning."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from dreaming.services import record_messages
from memories.models import Memory, Usage
from memories.scope import Scope
from memories.write import create
from tests.mcp_client import call, http_session
from tests.processes import product_env, run_cli, spawn, stop, wait_until
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)

# What Claude Code 2.1.197 prints for `claude -p --output-format json` when nobody is logged in
# (exit status 1), recorded from the real CLI.
LOGGED_OUT = (
    '{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"duration_ms":877,'
    '"num_turns":1,"result":"Not logged in · Please run /login","stop_reason":"stop_sequence",'
    '"session_id":"962f494e-6ad0-452f-bb9c-bf75e834352c","total_cost_usd":0,"usage":{"input_tokens":0,'
    '"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}'
)


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"), **extra)


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


# --- the web site ------------------------------------------------------------------------------


def test_logging_in_at_admin_login_without_next_lands_on_the_admin(client: Client, django_user_model: Any) -> None:
    django_user_model.objects.create_superuser("ada", password="a-long-password-1")
    response = client.post("/admin/login/", {"username": "ada", "password": "a-long-password-1"})
    assert response.status_code == 302 and response["Location"] == "/admin/"


def test_the_front_page_sends_you_to_the_admin(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/admin/"


def test_one_failed_provider_call_is_said_in_the_singular(client: Client, owner: Any) -> None:
    Usage.objects.create(provider="openai", model="m", kind="embed", ok=False, error="timed out")
    client.force_login(owner)
    page = client.get("/admin/").content.decode()
    assert "1 provider call failed" in page and "1 provider calls" not in page


# --- dreaming with a logged-out Claude Code ----------------------------------------------------


def test_yullu_dream_with_a_logged_out_claude_exits_1_with_one_clear_sentence(tmp_path: Path) -> None:
    executable(tmp_path / "bin/claude", f"#!/bin/sh\ncat >/dev/null\necho '{LOGGED_OUT}'\nexit 1\n")
    record_messages("acme/dream-cli", "s1", [{"role": "user", "content": "we tag releases from main"}])
    env = env_for(tmp_path, PATH=f"{tmp_path / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin")
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "YULLU_REASON_PROVIDER", "OPENAI_BASE_URL"):
        env.pop(key, None)
    ran = run_cli(["dream", "--project-id", "acme/dream-cli"], env)
    assert ran.returncode == 1, ran.stdout
    last = ran.stderr.strip().splitlines()[-1]
    assert last.startswith("yullu: the dream pass failed: ") and "Not logged in · Please run /login" in last
    assert "/login" in last and '{"type"' not in last and "Traceback" not in ran.stderr


# --- install and uninstall ---------------------------------------------------------------------


def test_install_service_fails_when_the_unit_cannot_be_enabled(tmp_path: Path) -> None:
    # As the real one answers without a user bus: the symlink is made, then starting it fails.
    created = "Created symlink default.target.wants/yullu.service → yullu.service."
    failed = "echo 'Failed to connect to bus: No medium found' >&2; exit 1"
    systemctl = f"#!/bin/sh\n[ \"$2\" = enable ] && {{ echo '{created}' >&2; {failed}; }}\n"
    executable(tmp_path / "bin/systemctl", systemctl + "exit 0\n")
    (tmp_path / "home/.claude").mkdir(parents=True)
    env = env_for(tmp_path, PATH=f"{tmp_path / 'bin'}:/usr/bin:/bin")
    ran = run_cli(["install", "claude", "--service"], env)
    assert ran.returncode != 0
    assert "enable --now yullu.service` failed (Failed to connect to bus" in ran.stderr
    unit = (tmp_path / "home/.config/systemd/user/yullu.service").read_text()
    assert f'Environment="PATH={tmp_path / "bin"}:/usr/bin:/bin"' in unit  # the service finds what the shell finds


def test_uninstall_removes_the_folders_install_created_and_keeps_the_users(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".config").mkdir()
    (home / ".config/other-tool.toml").write_text("kept = true\n")
    env = env_for(tmp_path, PATH="/usr/bin:/bin")
    assert run_cli(["install", "claude", "cursor"], env).returncode == 0
    assert (home / ".claude/skills/yullu").is_dir() and (home / ".cursor").is_dir()
    ran = run_cli(["uninstall"], env)
    assert ran.returncode == 0, ran.stderr
    left = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    assert left == [".claude", ".config", ".config/other-tool.toml"], left


# --- categories, stdin and similar memories at the terminal --------------------------------------


def test_an_unknown_category_is_an_error_from_the_cli_and_mcp(
    tmp_path: Path, live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    ran = run_cli(
        ["memories", "add", "We use tabs", "--category", "convention", "--project", "acme/c"], env_for(tmp_path)
    )
    assert ran.returncode == 1
    five = "process, decision, gotcha, domain, style"
    near = "convention belongs in 'process' (how to do things: commands, layout, conventions)"
    assert (
        ran.stderr.strip() == f"yullu: 'convention' is not a category; use one of {five} (or leave it empty); {near}."
    )

    async def go() -> None:
        async with http_session(live_server_url, owner_token) as s:
            err, text = await call(s, "store_memory", content="We use tabs", category="convention", project_id="acme/c")
            assert err and text.startswith("'convention' is not a category")
            err, _ = await call(s, "store_memory", content="We use tabs", category="", project_id="acme/c")
            assert not err

    asyncio.run(go())
    assert list(Memory.objects.values_list("category", flat=True)) == [None]


def test_memories_add_dash_reads_the_fact_from_stdin(tmp_path: Path) -> None:
    fact = "Releases are cut from main\nby the release workflow."
    ran = run_cli(["memories", "add", "-", "--project", "acme/stdin", "--json"], env_for(tmp_path), stdin=fact)
    assert ran.returncode == 0, ran.stderr
    assert Memory.objects.get(pk=json.loads(ran.stdout)["id"]).content == fact


def test_memories_add_shows_similar_memories_at_the_terminal(tmp_path: Path, stub_api: StubServer) -> None:
    env = {**env_for(tmp_path), "YULLU_EMBED_PROVIDER": "openai", "YULLU_EMBED_MODEL": "stub-embed"}
    env |= {"OPENAI_API_KEY": "sk-test-not-real", "OPENAI_BASE_URL": stub_api.url}
    first = run_cli(["memories", "add", "vec:1,0,0 The API listens on port 8000", "--project", "acme/sim"], env)
    assert first.returncode == 0, first.stderr
    old = Memory.objects.get(project_id="acme/sim")
    second = run_cli(["memories", "add", "vec:1,0.3,0 The API listens on port 9000", "--project", "acme/sim"], env)
    assert second.returncode == 0, second.stderr
    lines = second.stdout.splitlines()
    assert lines[0].startswith("stored #") and "similar memories" in lines[1]
    assert lines[2].strip().startswith(f"#{old.pk} ") and "port 8000" in lines[2]


# --- doctor and the running server -------------------------------------------------------------


def test_doctor_warns_when_the_running_server_has_no_reasoner_this_shell_would_find(
    tmp_path: Path, live_server_url: str, settings: Any
) -> None:
    settings.YULLU = {**settings.YULLU, "reasoning": {**settings.YULLU["reasoning"], "provider": "", "cli": ""}}
    settings.YULLU = {**settings.YULLU, "anthropic": {"api_key": "", "base_url": ""}}
    os.environ["PATH"], path = "/nonexistent", os.environ["PATH"]  # the server's PATH: no claude
    try:
        executable(tmp_path / "bin/claude", "#!/bin/sh\nexit 0\n")
        env = env_for(tmp_path, YULLU_PORT=live_server_url.rsplit(":", 1)[1], PATH=f"{tmp_path / 'bin'}:/usr/bin:/bin")
        for key in ("ANTHROPIC_API_KEY", "YULLU_REASON_PROVIDER"):
            env.pop(key, None)
        report = json.loads(run_cli(["doctor", "--json"], env).stdout)
    finally:
        os.environ["PATH"] = path
    check = next(c for c in report["checks"] if c["check"] == "reasoner")
    assert check["status"] == "warn", check
    assert check["detail"] == "the running server uses none, this shell would use cli:claude"
    assert "install --service" in check["fix"]


# --- Celery ------------------------------------------------------------------------------------


def test_a_worker_started_as_root_prints_no_superuser_warning(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("Celery warns only when it runs as root (CI and these machines do)")
    env = env_for(tmp_path)
    log = tmp_path / "worker.log"
    with open(log, "w") as out:
        worker = spawn(["-m", "celery", "-A", "yullu_site", "worker", "--concurrency", "1", "--loglevel", "WARNING",
                        "-n", f"root-{tmp_path.name}@%h"], env, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        wait_until(lambda: "[queues]" in log.read_text(), "the worker banner", alive=worker, output=log.read_text)
    finally:
        stop(worker)
    assert "superuser privileges" not in log.read_text(), log.read_text()[:2000]


def test_a_store_through_services_still_accepts_every_known_category(stub_embedder: StubServer) -> None:
    for category in ("process", "decision", "gotcha", "domain", "style", "Style "):
        memory = create.store_memory(Scope("acme/cats", None), f"fact about {category}", category).memory
        assert memory.category == category.strip().lower()


# --- the dashboard on a phone --------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Any:
    from tests.test_admin_browser import CHROMIUM

    if not os.path.exists(CHROMIUM):
        message = f"{CHROMIUM} is missing: `make test` installs it as root (apt-get install chromium)."
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    from playwright.sync_api import sync_playwright

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's loop runs in this thread; the ORM calls are sync
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        yield browser
        browser.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


def test_on_a_390_px_phone_the_dashboard_tables_scroll_instead_of_being_cut_off(
    chromium: Any, live_server_url: str, django_user_model: Any, stub_embedder: StubServer
) -> None:
    django_user_model.objects.create_superuser("phone", password="a-long-password-1")
    for n in range(3):
        create.store_memory(Scope(f"github.com/a-rather-long-organisation-name/project-{n}", None), f"fact {n}")
    context = chromium.new_context(viewport={"width": 390, "height": 844}, base_url=live_server_url)
    tab = context.new_page()
    try:
        tab.goto("/admin/login/")  # no ?next=: where a person typing the URL lands
        tab.fill("input[name=username]", "phone")
        tab.fill("input[name=password]", "a-long-password-1")
        tab.click("button[type=submit]")
        tab.wait_for_url(f"{live_server_url}/admin/")
        tab.wait_for_load_state("networkidle")
        tables = tab.evaluate(
            """() => [...document.querySelectorAll('.y-table')].map(t => ({
                right: t.getBoundingClientRect().right, scroll: t.scrollWidth, client: t.clientWidth,
                overflow: getComputedStyle(t).overflowX}))"""
        )
    finally:
        context.close()
    assert tables, "the dashboard has tables"
    for table in tables:
        assert table["right"] <= 391, f"a table reaches past the screen's edge: {table}"
        assert table["scroll"] <= table["client"] or table["overflow"] in ("auto", "scroll"), table

"""Leftovers of the last stop (lane fixes11), each red without its fix."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from access.models import Grant, Project
from dreaming.models import DreamPass, DreamSchedule
from memories.anchors import checks, stale
from memories.models import Memory, MemoryAnchor
from memories.scope import resolve
from memories.write import create
from tests.conftest import free_port
from tests.mcp_client import call, http_session
from tests.processes import REPO, product_env, run_cli, spawn, stop, wait_until
from tests.test_anchors import checkout, rewrite  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def _nothing_made() -> bool:
    return not (Project.objects.exists() or DreamPass.objects.exists() or DreamSchedule.objects.exists())


def _dream_over_mcp(url: str, token: str, **args: Any) -> tuple[bool, Any]:
    async def ask() -> tuple[bool, Any]:
        async with http_session(url, token) as session:
            return await call(session, "dream_now", **args)

    return asyncio.run(ask())


def _dream_over_rest(url: str, token: str, **args: Any) -> httpx.Response:
    return httpx.post(f"{url}/api/dream", json=args, headers={"authorization": f"Bearer {token}"}, timeout=60)


@pytest.mark.parametrize("naming", ["cwd", "project_id"])
def test_dream_over_rest_and_mcp_refuses_what_the_cli_refuses_and_makes_nothing(
    naming: str, tmp_path: Path, live_server_url: str, owner_token: str
) -> None:
    """`yullu dream --cwd /tmp` was refused; POST /api/dream and dream_now with the same folder opened a
    pass, a schedule and a project row for it. Now the one check in dreaming.services refuses all three."""
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    args = {"cwd": str(outside)} if naming == "cwd" else {"project_id": "nobody/never"}
    said = f"{outside} is not inside a git repository" if naming == "cwd" else "project 'nobody/never' not found"

    over_rest = _dream_over_rest(live_server_url, owner_token, **args)
    assert over_rest.status_code == 404, over_rest.text
    assert over_rest.json()["error"].startswith(said), over_rest.text
    is_error, over_mcp = _dream_over_mcp(live_server_url, owner_token, **args)
    assert is_error and over_mcp == over_rest.json()["error"], over_mcp
    assert _nothing_made(), list(Project.objects.values_list("project_id", flat=True))


def test_dream_over_rest_and_mcp_in_a_checkout_still_runs(repo: Path, live_server_url: str, owner_token: str) -> None:
    over_rest = _dream_over_rest(live_server_url, owner_token, cwd=str(repo))
    assert over_rest.status_code == 200, over_rest.text
    is_error, over_mcp = _dream_over_mcp(live_server_url, owner_token, cwd=str(repo))
    assert not is_error and over_mcp["project_id"] == over_rest.json()["project_id"], over_mcp
    assert DreamPass.objects.filter(project_id=over_mcp["project_id"]).count() == 2


CONTROLS = ["\x07", "\n", "\t"]


def _grants_and_projects() -> tuple[list[str], int]:
    return sorted(Project.objects.values_list("project_id", flat=True)), Grant.objects.count()


@pytest.mark.parametrize("control", CONTROLS, ids=["bell", "newline", "tab"])
@pytest.mark.parametrize("typed", ["acme/app{}", "https://github.com/acme/app.git{}", "acme/a{}pp"])
def test_grant_refuses_a_control_character_in_the_project_in_one_sentence_and_changes_nothing(
    control: str, typed: str, tmp_path: Path, django_user_model: Any
) -> None:
    """`yullu grant ana $'acme/app\\x07' write` made a project `acme/app\\x07`, printed as acme/app."""
    django_user_model.objects.create_user("ana")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path))
    given = typed.format(control)
    before = _grants_and_projects()
    for args in (["grant", "ana", given, "write"], ["revoke-grant", "ana", given]):
        ran = run_cli(args, env)
        assert ran.returncode == 2, ran.stdout + ran.stderr
        said = ran.stderr.strip().splitlines()[-1]
        at = f"(\\x{ord(control):02x} at character {given.index(control) + 1})"
        assert said.endswith(f"argument project: holds a control character {at}; type it without"), ran.stderr
        assert _grants_and_projects() == before
    assert run_cli(["grant", "ana", typed.format(""), "write", "--create"], env).returncode == 0  # the id is fine


def test_rest_and_mcp_refuse_a_control_character_in_a_project_id_with_one_sentence(
    live_server_url: str, owner_token: str, django_user_model: Any
) -> None:
    """DRF trimmed a trailing newline off a grant's project_id, and the scope's rule trimmed it off every
    other project_id, before judging it: a pasted id with a newline was taken as another."""
    django_user_model.objects.create_user("ana")
    said = "project_id holds a control character (\\x0a at character 9); send it without."
    auth = {"authorization": f"Bearer {owner_token}"}
    for path, body in (
        ("/api/access/grants", {"user": "ana", "project_id": "acme/app\n", "role": "write"}),
        ("/api/access/grants/revoke", {"user": "ana", "project_id": "acme/app\n"}),
        ("/api/memories", {"project_id": "acme/app\n", "content": "We deploy from main on Tuesdays."}),
    ):
        answer = httpx.post(f"{live_server_url}{path}", json=body, headers=auth, timeout=60)
        assert (answer.status_code, answer.json()) == (400, {"error": said}), (path, answer.text)
    listed = httpx.get(f"{live_server_url}/api/memories", params={"project_id": "acme/app\n"}, headers=auth)
    assert (listed.status_code, listed.json()) == (400, {"error": said}), listed.text

    async def ask() -> tuple[bool, Any]:
        async with http_session(live_server_url, owner_token) as session:
            return await call(session, "store_memory", project_id="acme/app\n", content="We deploy on Tuesdays.")

    assert asyncio.run(ask()) == (True, said)
    assert _grants_and_projects() == ([], 0) and not Memory.objects.exists()


def test_cli_project_options_refuse_a_control_character_with_the_same_sentence(tmp_path: Path) -> None:
    """`export --project` said "not found", `import --project` refused every row on its own: now each
    says what is wrong once, exit 1, as `memories list --project` and the REST and MCP paths do. (A port of its
    own: `yullu dream` adds a line about a server running on the default one, e.g. the developer's `make run`.)"""
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path), YULLU_PORT=str(free_port()))
    exported = tmp_path / "all.jsonl"
    exported.write_text(
        json.dumps({"format": "yullu-memories", "version": 1}) + "\n"
        + json.dumps({"project_id": "acme/app", "content": "We deploy from main on Tuesdays."}) + "\n"
    )  # fmt: skip
    said = "yullu: project_id holds a control character (\\x0a at character 9); send it without."
    for args in (
        ["memories", "list", "--project", "acme/app\n"],
        ["export", "json", "--project", "acme/app\n"],
        ["import", str(exported), "--project", "acme/app\n"],
        ["dream", "--project-id", "acme/app\n"],
    ):
        ran = run_cli(args, env)
        assert (ran.returncode, ran.stderr.strip()) == (1, said), (args, ran.stdout + ran.stderr)
    assert not Memory.objects.exists() and not Project.objects.exists()


def test_the_team_servers_banner_says_team_mode_in_one_line(tmp_path: Path) -> None:
    """`yullu serve` with README's team settings (DATABASE_URL, `--role web`) printed a laptop's banner:
    nothing said tokens are per person, nor where to make them."""
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path))
    out = tmp_path / "serve.out"
    with out.open("w") as fh:
        serve = spawn(["-m", "yullu_cli.main", "serve", "--role", "web", "--port", str(free_port())], env,
                      stdout=fh, stderr=fh)  # fmt: skip
        try:
            wait_until(lambda: "Press Ctrl-C" in out.read_text(), "the banner", 180, serve, out.read_text)
        finally:
            stop(serve)
    said = [line for line in out.read_text().splitlines() if "team mode" in line]
    assert said == [
        "  team mode:  DATABASE_URL is set: every request needs a person's API token; create them with "
        "`yullu users add NAME` and `yullu tokens create --user NAME` (or the admin's API tokens page)"
    ], out.read_text()


@pytest.mark.parametrize(
    ("host", "proxies", "said"),
    [
        ("127.0.0.1", [], None),
        ("localhost", [], None),
        ("0.0.0.0", [], "listening on 0.0.0.0"),
        ("yullu.internal", [], "listening on yullu.internal"),
        ("127.0.0.1", ["10.0.0.1"], "[server].trusted_proxies is set"),
    ],
)
def test_team_mode_names_why_and_a_laptop_has_none(
    host: str, proxies: list[str], said: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.conf import settings

    from yullu_cli.banner import team_line

    monkeypatch.setattr(settings, "DATABASE_URL", "", raising=False)
    server = {**settings.YULLU["server"], "host": host, "trusted_proxies": proxies}
    monkeypatch.setitem(settings.YULLU, "server", server)
    line = team_line()
    assert (line is None) if said is None else (line or "").startswith(f"  team mode:  {said}: "), line


SCANNER_LOADED = """
import runpy, sys
sys.argv, code = ["yullu", *sys.argv[1:]], 0
try:
    runpy.run_module("yullu_cli.main", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
print("exit", code, "scanner", "memories.secrets" in sys.modules, file=sys.stderr)
"""


@pytest.mark.parametrize(
    ("args", "loaded"),
    [
        (["tokens", "list"], False),
        (["memories", "list", "--cwd", "{tmp}"], False),
        (["memories", "add", "the deploy key is ghp_" + "a1B2c3D4e5" * 3 + "a1B2c3", "--project", "acme/app"], True),
    ],
    ids=["tokens-list", "memories-list", "a-write"],
)
def test_the_secret_scanner_is_imported_by_a_write_only(args: list[str], loaded: bool, tmp_path: Path) -> None:
    """Its rules took ~0.5 s of every Django command's start (the admin's autodiscovery reached it through
    memories.write.validation, dreaming.services and sync.schema): now the first scan imports it."""
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path))
    # From the checkout (as run_cli): `-c` puts the folder it runs in first on sys.path, and elsewhere the
    # venv's editable install may name another checkout.
    given = [arg.format(tmp=tmp_path) for arg in args]
    ran = subprocess.run([sys.executable, "-c", SCANNER_LOADED, *given], env=env, capture_output=True, text=True,
                         timeout=120, cwd=REPO)  # fmt: skip
    said = ran.stderr.strip().splitlines()
    assert said[-1] == f"exit {int(loaded)} scanner {loaded}", ran.stdout + ran.stderr
    if loaded:  # the write is still scanned: refused, nothing stored
        assert said[-2].startswith("yullu: refused: the content contains a credential (github-pat)"), ran.stderr
        assert not Memory.objects.exists()


def test_the_stale_diff_of_a_line_range_shows_a_line_pushed_down_as_unchanged(
    checkout: Path,  # noqa: F811
    keyword_only: None,
) -> None:
    """Lines 8-9 cited (Clock.later), a comment put between them: the span is now 8-10. The diff read the
    pinned numbers (8-9) at HEAD, so its last line, only pushed down a line, showed as removed:
    `-        return self.now() + seconds`. It is context now, and the comment the one added line."""
    scope = resolve(None, str(checkout))
    stored = create.store_memory(scope, "Clock.later adds seconds to now", "domain", anchors=["app/clock.py:8-9"])
    later = "        return self.now() + seconds"
    rewrite(checkout, later, "        # seconds may be negative\n" + later)
    checks.check_project(stored.memory.project_id, checkout, force=True)
    (anchor,) = MemoryAnchor.objects.filter(memory=stored.memory)
    assert anchor.status == "changed"  # the cited text differs (contract §12); where it is is the diff's business
    body = [line for line in stale.diff(anchor).splitlines()[2:]]
    assert body == [
        "@@ -8,2 +8,3 @@",
        "     def later(self, seconds):",
        "+        # seconds may be negative",
        "         return self.now() + seconds",
    ], stale.diff(anchor)


@pytest.mark.parametrize(
    ("after", "span"),
    [
        (["x", "a", "b", "c", "y"], (2, 4)),  # untouched
        (["new", "x", "a", "b", "c", "y"], (3, 5)),  # pushed down by a line above
        (["x", "a", "b", "new", "c", "y"], (2, 5)),  # a line added inside: it joins the span, c stays c
        (["x", "a", "B", "c", "y"], (2, 4)),  # a line edited
        (["x", "a", "b", "y"], (2, 3)),  # its last line deleted
        (["x", "a", "b", "c", "new", "y"], (2, 4)),  # a line added just after: not the span's
        (["x", "y"], (2, 1)),  # all gone: nothing there now
    ],
    ids=["same", "pushed-down", "added-inside", "edited", "last-deleted", "added-after", "gone"],
)
def test_a_cited_span_is_followed_through_the_files_diff(after: list[str], span: tuple[int, int]) -> None:
    assert stale.follow(["x", "a", "b", "c", "y"], after, 2, 4) == span


def test_every_commands_help_says_what_it_does(tmp_path: Path) -> None:
    """`yullu token --help` (and prune, stdio, the hooks, every subcommand without a description) showed a
    usage line and -h only: what the command does was only in the list one level up."""
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path))
    for args, said in (
        (["token"], "Print the API token (alone on the last line)."),
        (["memories", "rm"], "Delete a memory by id."),
        (["grant"], "or its clone URL"),
    ):
        shown = run_cli([*args, "--help"], env)
        assert shown.returncode == 0 and said in " ".join(shown.stdout.split()), shown.stdout


def test_memories_show_and_rm_keep_to_the_project_named(tmp_path: Path, keyword_only: None) -> None:
    """`yullu memories rm 7 --project acme/app` took --project and ignored it: it deleted whichever project's
    memory 7 was. Now, as MCP's and REST's project_id, a memory of another project is "not found" there."""
    stored = create.store_memory(resolve("acme/one"), "Staging's database is wiped every night.", "gotcha")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path))
    for op in ("show", "rm"):
        ran = run_cli(["memories", op, str(stored.memory.pk), "--project", "acme/two"], env)
        assert (ran.returncode, ran.stderr.strip()) == (
            1,
            f"yullu: memory {stored.memory.pk} not found in project acme/two",
        ), ran.stdout + ran.stderr
    assert Memory.objects.filter(pk=stored.memory.pk).exists()
    ran = run_cli(["memories", "rm", str(stored.memory.pk), "--project", "acme/one"], env)
    assert ran.returncode == 0 and not Memory.objects.exists(), ran.stdout + ran.stderr

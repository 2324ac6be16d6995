"""Defects the fifth new-user walk met, each as it was met: `yullu import` of a CLAUDE.md holding a token
refused the row and redacted it in `errors`, but printed the token in clear in the summary's `review` list;
`yullu export json --project <a misspelt id>` wrote an empty export and exited 0 (agents-md says the project
is not found); the sixth walk: `yullu memories list --project <a misspelt id>` printed "0 shown" and exited 0,
and `yullu sync compact` / `yullu reconcile --cwd <not a repository>` asked to "pass --cwd" that was passed."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bench.secret_forms import ALNUM, chars
from memories.models import Memory
from tests.processes import git_repo, product_env, run_cli

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_import_that_refuses_a_secret_never_prints_it(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    token = "ghp_" + chars(ALNUM, 36)(random.Random(6))
    (repo / "CLAUDE.md").write_text(
        f"# Notes\n\n- For deploys the CI uses the token {token} from the vault.\n"
        "- Run mix format before every commit.\n"
    )
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    ran = run_cli(["import", str(repo)], env)
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    assert (summary["created"], summary["refused"]) == (1, 1), summary
    assert token not in ran.stdout and token not in ran.stderr
    assert any("[REDACTED" in row["content"] for row in summary["review"]), summary["review"]
    assert [m.content for m in Memory.objects.all()] == ["Run mix format before every commit."]


@pytest.mark.parametrize("fmt", ["json", "agents-md"])
def test_an_export_of_a_misspelt_project_says_it_was_not_found(tmp_path: Path, fmt: str) -> None:
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    assert (
        run_cli(["memories", "add", "Deploys go out from release branches.", "--project", "acme/shop"], env).returncode
        == 0
    )
    out = tmp_path / "export.out"
    ran = run_cli(["export", fmt, "--project", "acme/shpo", "--out", str(out)], env)
    assert ran.returncode == 1, ran.stdout
    assert "project 'acme/shpo' not found" in ran.stderr and "Traceback" not in ran.stderr
    assert not out.exists()
    # the project that is there still exports
    assert run_cli(["export", fmt, "--project", "acme/shop", "--out", str(out)], env).returncode == 0
    assert "Deploys go out from release branches." in out.read_text()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--port", "99999"], "--port: must be a whole number from 1 to 65535, not '99999'"),
        (["--port", "0"], "--port: must be a whole number from 1 to 65535, not '0'"),
        (["--workers", "0"], "--workers: must be a whole number from 1 to 256, not '0'"),
    ],
)
def test_serve_refuses_a_port_or_worker_count_out_of_range_before_starting(
    tmp_path: Path, args: list[str], says: str
) -> None:
    # Found on the walk: `yullu serve --port 99999` started, the banner said :99999 and uvicorn listened on
    # 34463 (the resolver wraps the number); `--port 0` silently meant the configured port.
    from tests.conftest import free_port

    home = tmp_path / "yhome"
    env = product_env(home, YULLU_EMBED_PROVIDER="none", YULLU_PORT=str(free_port()))
    ran = run_cli(["serve", *args], env, timeout=30)
    assert ran.returncode == 2 and says in ran.stderr and "Traceback" not in ran.stderr, ran.stderr
    assert not (home / "run" / "serve.pid").exists() and "starting" not in ran.stdout


@pytest.mark.parametrize("days", ["0", "nan", "4000", "99999999"])
def test_a_token_expiry_out_of_range_says_what_is_allowed(tmp_path: Path, days: str) -> None:
    # Found on the walk: `--expires-days 0` answered "must be between 0 and 3650", which 0 is.
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    assert run_cli(["users", "add", "alice"], env).returncode == 0
    ran = run_cli(["tokens", "create", "--user", "alice", "--expires-days", days], env)
    # walk 22: a usage error (exit 2) naming the option, as every other mistyped value
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    assert "argument --expires-days: must be a number of days more than 0 and at most 3650" in ran.stderr, ran.stderr
    assert f"not '{days}'" in ran.stderr, ran.stderr  # as typed: 99999999 was said "1e+08" (fixes10)


def test_the_readmes_claude_mcp_add_registers_the_server_for_every_project() -> None:
    # Found on the walk: the README's by-hand `claude mcp add`, run in the checkout as written, registered
    # the server for that folder only (Claude Code's default scope is "local"): `claude mcp list` in the
    # user's own repository showed nothing. The installer's command says `--scope user`.
    from tests.processes import REPO

    text = (REPO / "README.md").read_text()
    commands = [line for line in text.splitlines() if line.startswith("claude mcp add")]
    assert commands and all("--scope user" in line for line in commands), commands


def test_the_serve_banner_warns_when_nobody_is_logged_in_to_the_cli_reasoner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found on the walk: with `claude` on PATH and logged out, `yullu serve` said "dreaming: cli:claude" and
    # every dream pass then failed with "Not logged in" (doctor warned; the banner, which a user reads, did not).
    from dreaming import reasoners
    from tests.test_walk4_fixes import CLAUDE_LOGGED_OUT, executable
    from yullu_cli import banner

    claude = executable(tmp_path / "claude", f"#!/bin/sh\necho '{CLAUDE_LOGGED_OUT}'\nexit 1\n")
    monkeypatch.setattr(reasoners, "configured_reasoner", lambda: reasoners.CLIReasoner("claude", str(claude), ""))
    assert banner.reasoner_line() == (
        "  WARNING:    cli:claude: nobody is logged in to `claude`, so every dream pass fails: "
        "run `claude`, then /login; or set ANTHROPIC_API_KEY, or another [reasoning].provider."
    )
    executable(claude, "#!/bin/sh\necho '{\"loggedIn\": true}'\nexit 0\n")
    assert banner.reasoner_line() == "  dreaming:   cli:claude"


@pytest.mark.parametrize(
    ("provider", "says"),
    [
        ("anthropic", "the anthropic reasoner needs an API key: set ANTHROPIC_API_KEY"),
        ("openai", "the openai reasoner needs OPENAI_API_KEY, or [openai].base_url for a local server"),
    ],
)
def test_doctor_warns_when_the_chosen_api_reasoner_has_no_key(tmp_path: Path, provider: str, says: str) -> None:
    # Found on the walk: [reasoning].provider = "anthropic" (set in the admin's Settings) without a key was
    # "ok reasoner anthropic:…" in doctor, the dashboard and the banner; every dream pass failed.
    env = product_env(
        tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"), YULLU_PORT="1",
        YULLU_REASON_PROVIDER=provider,
    )  # fmt: skip
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        env.pop(key, None)
    report = json.loads(run_cli(["doctor", "--json"], env).stdout)
    check = next(c for c in report["checks"] if c["check"] == "reasoner")
    assert check["status"] == "warn" and says in check["detail"], check
    env["ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"] = "sk-test-not-a-real-key"
    report = json.loads(run_cli(["doctor", "--json"], env).stdout)
    assert next(c for c in report["checks"] if c["check"] == "reasoner")["status"] == "ok"


def test_memories_list_of_a_misspelt_project_says_it_was_not_found(tmp_path: Path) -> None:
    # It printed "acme/shpo: 0 shown" and exited 0, as if the project had no memories.
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    added = run_cli(["memories", "add", "Deploys go out from release branches.", "--project", "acme/shop"], env)
    assert added.returncode == 0, added.stderr
    ran = run_cli(["memories", "list", "--project", "acme/shpo"], env)
    assert ran.returncode == 1, ran.stdout
    assert "project 'acme/shpo' not found" in ran.stderr and "Traceback" not in ran.stderr
    listed = run_cli(["memories", "list", "--project", "acme/shop"], env)
    assert listed.returncode == 0 and "Deploys go out from release branches." in listed.stdout


@pytest.mark.parametrize("command", [["sync", "compact"], ["reconcile"]])
def test_a_cwd_outside_any_repository_is_named_not_asked_for(tmp_path: Path, command: list[str]) -> None:
    # "run inside the repository or pass --cwd" answered a --cwd that was passed.
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    ran = run_cli([*command, "--cwd", str(outside)], env)
    assert ran.returncode == 1, ran.stdout
    assert f"{outside} is not inside a git repository" in ran.stderr, ran.stderr
    assert "pass --cwd" not in ran.stderr and "Traceback" not in ran.stderr

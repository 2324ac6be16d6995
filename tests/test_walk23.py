"""Walk 23: a small team's first day, from fresh clones and clean homes (docs/testing.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from access import services
from access.models import ApiToken, Grant, Project
from tests.processes import git_repo, own_cluster, product_env, run_cli
from tests.test_walk19 import _folder_check
from yullu_cli.assistants import claude
from yullu_core.errors import UserError


@pytest.mark.parametrize("name", ["x" * 101, "x" * 500, "laptop\nrevoked", "tab\there"])
def test_a_token_name_the_column_cannot_hold_is_a_usage_error(tmp_path: Path, name: str) -> None:
    """`yullu tokens create --name <500 characters>` printed the token and listed its name cut to 100, without a
    word (walk 22's left-over); a newline in the name broke `yullu tokens list`'s one line a token."""
    env = product_env(tmp_path / "yhome", HOME=str(tmp_path / "home"))
    ran = run_cli(["tokens", "create", "--user", "alice", "--name", name], env)
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.splitlines()[-1].startswith("yullu tokens create: error: argument --name: a token's name ")
    assert "yl_" not in ran.stdout


@pytest.mark.django_db
def test_the_service_refuses_a_token_name_it_would_cut(django_user_model: Any) -> None:
    """The admin and REST forms hold the column's length; the service (the CLI's path) cut the name instead."""
    ben = django_user_model.objects.create_user("ben")
    with pytest.raises(UserError, match="a token's name must be at most 100 characters, not 500"):
        services.create_token(ben, "x" * 500)
    assert not ApiToken.objects.filter(user=ben).exists()
    assert services.create_token(ben, "  " + "y" * 100 + " ").token.name == "y" * 100  # trimmed, as before


@pytest.mark.django_db
def test_stats_of_a_project_nobody_has_used_is_not_found_not_zeros(client: Any, owner_token: str) -> None:
    """`GET /api/stats?project_id=<typo>` answered 200 with zeros (walk 22's left-over), where `yullu memories list
    --project <typo>` is an error: the owner could not tell a typo from an idle project."""
    auth = {"HTTP_AUTHORIZATION": f"Bearer {owner_token}"}
    stored = client.post(
        "/api/memories", {"project_id": "acme/app", "content": "Deploys go out on Tuesdays"}, "application/json", **auth
    )
    assert stored.status_code == 201, stored.content
    typo = client.get("/api/stats?project_id=acme/ap", **auth)
    assert typo.status_code == 404, typo.content
    assert typo.json()["error"].startswith("project 'acme/ap' not found")
    assert client.get("/api/stats?project_id=acme/app", **auth).json()["totals"]["memories"] == 1
    Project.objects.create(project_id="acme/new")  # made on purpose (`yullu grant … --create`): its zeros are news
    assert client.get("/api/stats?project_id=acme/new", **auth).json()["totals"]["memories"] == 0


def test_a_broken_config_is_its_sentence_before_any_database_is_made(tmp_path: Path) -> None:
    """`yullu memories list` (or `yullu token`) on a fresh home with a config.toml missing a `]` said "creating the
    database in …/pgdata (its first use: a few seconds)…" and made the home before the config's sentence (walk 22's
    left-over): the user fixed the file believing a database had been made."""
    with own_cluster("walk23-config-") as (base, env):
        Path(env["YULLU_CONFIG"]).write_text("[server\\nport = 1\\n")
        ran = run_cli(["memories", "list"], env)
        assert ran.returncode == 1, ran.stderr
        assert ran.stderr.strip().splitlines() == [
            f"yullu: {env['YULLU_CONFIG']}: not valid TOML (Expected ']' at the end of a table declaration (at line 1,"
            " column 8)); fix or delete the file."
        ]
        assert not Path(env["YULLU_HOME"]).exists() and not (base / "pg").exists()


@pytest.mark.django_db(transaction=True)
def test_doctor_does_not_say_a_revoked_token_may_read_the_folders_project(
    tmp_path: Path, live_server_url: str, django_user_model: Any
) -> None:
    """Walk 23: after `yullu tokens revoke`, Ben's doctor said "FAIL server … refuses this token (it was revoked …)"
    and, the next line, "ok folder … github.com/walk23/tinyapp, which your token may read"."""
    project = Project.objects.create(project_id="github.com/walk23/app")
    ben = django_user_model.objects.create_user("ben")
    token, raw = ApiToken.issue(ben, "laptop")
    Grant.objects.create(project=project, user=ben, role="write")
    env = product_env(tmp_path / "laptop", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    assert run_cli(["install", "claude", "--server", live_server_url, "--token", raw], env).returncode == 0
    repo = git_repo(tmp_path / "app", "git@github.com:walk23/app.git")
    assert "which your token may read" in str(_folder_check(env, repo)["detail"])

    services.revoke_token(token.pk)
    folder = _folder_check(env, repo)
    assert folder["status"] == "ok" and "this folder is github.com/walk23/app" in str(folder["detail"])
    assert "may read" not in str(folder["detail"]), folder


@pytest.mark.django_db
def test_the_admin_refuses_a_token_name_with_a_control_character_on_its_form(owner: Any) -> None:
    """The admin's add form passed a name holding a tab to the service, whose new refusal (a UserError in
    save_model) was a bare text page (400): the form says the rule's sentence, and no token is issued."""
    from django.test import Client

    alice = services.add_user("alice")
    client = Client()
    client.force_login(owner)
    page = client.post("/admin/access/apitoken/add/", {"user": alice.pk, "name": "ci\tlaptop"})
    assert page.status_code == 200, page.status_code
    assert "a token&#x27;s name holds a control character" in page.content.decode()
    assert not ApiToken.objects.filter(user=alice).exists()


@pytest.mark.django_db(transaction=True)
def test_doctor_says_the_install_owners_token_may_read_a_project_nobody_has_used_yet(
    tmp_path: Path, live_server_url: str, django_user_model: Any
) -> None:
    """Doctor asked GET /api/stats whether the token may read the folder's project; since stats of a project nobody
    has used is 404 (294cb06), the team's admin on a fresh repository was told "project … not found" and that the
    hooks are silent there, where the admin's hooks store and recall (a superuser may use any project)."""
    admin = django_user_model.objects.create_superuser("ann")
    _, raw = ApiToken.issue(admin, "laptop")
    env = product_env(tmp_path / "laptop", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    assert run_cli(["install", "claude", "--server", live_server_url, "--token", raw], env).returncode == 0
    repo = git_repo(tmp_path / "fresh", "git@github.com:walk23/fresh.git")
    folder = _folder_check(env, repo)
    assert folder["status"] == "ok", folder
    assert "github.com/walk23/fresh, which your token may read" in str(folder["detail"])


@pytest.mark.django_db(transaction=True)
def test_a_team_servers_client_is_told_to_name_the_project_not_its_folder(
    tmp_path: Path, live_server_url: str, django_user_model: Any
) -> None:
    """Walk 23: the skill and Codex's AGENTS.md said to pass `cwd`, which a team server refuses (it cannot read the
    laptop's folders): every session's first recall failed until the model formed a project_id from the error."""
    _, raw = ApiToken.issue(django_user_model.objects.create_user("ben"), "laptop")
    env = product_env(tmp_path / "laptop", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    (tmp_path / "home" / ".codex").mkdir()
    for target in ("claude", "codex"):
        ran = run_cli(["install", target, "--server", live_server_url, "--token", raw], env)
        assert ran.returncode == 0, ran.stderr
    skill = (tmp_path / "home" / ".claude" / "skills" / "yullu" / "SKILL.md").read_text()
    agents = (tmp_path / "home" / ".codex" / "AGENTS.md").read_text()
    for text in (skill, agents):
        assert "pass\n  `project_id` instead of `cwd`" in text and "github.com/acme/app" in text
    assert claude.skill_text() == claude.SKILL  # a local install (no --server) keeps the plugin's text

"""`yullu users|tokens|grant|revoke-grant` as whoever runs a team server types them, against a real
server: a token made at the terminal works at once, its grant decides what it sees, and each change
is in the audit trail (docs/contract.md §11)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from access.models import ApiToken, AuditEntry
from memories.scope import Scope
from memories.write import create
from tests.processes import product_env, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
P = "acme/cli-access"


def env_for(tmp_path: Path) -> dict[str, str]:
    return product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))


def ok(args: list[str], env: dict[str, str]) -> str:
    out = run_cli(args, env)
    assert out.returncode == 0, (args, out.stderr)
    return out.stdout


def test_users_tokens_and_grants_from_the_command_line(tmp_path: Path, live_server_url: str) -> None:
    env = env_for(tmp_path)
    create.store_memory(Scope(P, None), "Releases are cut from the main branch every Tuesday.", "process")
    added = ok(["users", "add", "alice"], env)
    assert "added user alice" in added and "yullu grant alice PROJECT write" in added  # the token alone is refused
    created = ok(
        ["tokens", "create", "--user", "alice", "--name", "laptop", "--read-only", "--expires-days", "30"], env
    )
    raw = created.strip().splitlines()[-1]
    assert raw.startswith("yl_") and " " not in raw, "the token alone on the last line"
    assert raw not in "".join(ApiToken.objects.values_list("key_hash", flat=True)), "stored hashed"

    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {raw}"}, timeout=60) as api:
        recall = {"project_id": P, "query": "when are releases cut"}
        assert api.post("/api/memories/recall", json=recall).status_code == 404, "no grant: like a missing project"
        assert "alice now has read on" in ok(["grant", "alice", P, "read"], env)
        assert api.post("/api/memories/recall", json=recall).json()["results"], "the grant applies at once"
        write = api.post("/api/memories", json={"project_id": P, "content": "Tags are signed."})
        assert write.status_code == 403 and "read-only" in write.json()["error"]

        listed = ok(["tokens", "list", "--user", "alice"], env)
        token_id = ApiToken.objects.get(user__username="alice").pk
        assert "laptop" in listed and "read-only" in listed and "expires" in listed and raw not in listed
        ok(["revoke-grant", "alice", P], env)
        assert api.post("/api/memories/recall", json=recall).status_code == 404
        assert f"revoked token {token_id}" in ok(["tokens", "revoke", str(token_id)], env)
        assert api.get("/api/projects").status_code == 401

    bad = run_cli(["grant", "nobody-here", P, "read"], env)
    assert bad.returncode == 1 and "no user named 'nobody-here'" in bad.stderr and "Traceback" not in bad.stderr
    actions = list(AuditEntry.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["user.add", "token.create", "grant.set", "grant.revoke", "token.revoke"]


def test_yullu_token_still_prints_the_owners_token(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    first = ok(["token"], env).strip().splitlines()[-1]
    assert first.startswith("yl_") and ok(["token"], env).strip().splitlines()[-1] == first


def test_hooks_for_a_team_server_name_the_project_as_the_server_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A team server cannot see a laptop's folders: with YULLU_SERVER the hooks send the project id,
    computed by the server's own rules; without it they send cwd as before."""
    from memories.scope import resolve_path
    from tests.processes import git_repo
    from yullu_cli import hooks

    repo = git_repo(tmp_path / "app", "git@github.com:acme/app.git")
    (repo / "src").mkdir()
    plain = tmp_path / "notes"
    plain.mkdir()
    for folder in (repo / "src", plain):
        monkeypatch.delenv("YULLU_SERVER", raising=False)
        assert hooks.where(str(folder)) == {"cwd": str(folder)}
        monkeypatch.setenv("YULLU_SERVER", "https://yullu.example.com")
        assert hooks.where(str(folder)) == {"project_id": resolve_path(folder).project_id}
    assert hooks.where(str(repo)) == {"project_id": "github.com/acme/app"}
    assert hooks.target() == ("yullu.example.com", "yullu.example.com", 443, "", True)

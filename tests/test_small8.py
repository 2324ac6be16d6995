"""Four things the eighth walk met on a team setup (a team server on one home; teammates' laptops ran
`yullu install --server URL --token T`): `yullu doctor` on a laptop created and migrated a local
embedded PostgreSQL the laptop never uses; the 401 sentence told a teammate whose team-server token was
revoked to "run `yullu token`", which prints the LOCAL site's token; revoking a token twice said "token
N not found"; `yullu serve` on a read-only home named `run/serve.pid` rather than the folder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.models import User

from access.models import ApiToken
from tests.conftest import free_port
from tests.processes import product_env, run_cli
from tests.test_first_hour import fresh_home, postgres_running_under  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_doctor_on_a_client_only_install_starts_and_creates_no_local_storage(
    fresh_home: dict[str, str],  # noqa: F811
    live_server_url: str,
    tmp_path: Path,
) -> None:
    _, raw = ApiToken.issue(User.objects.create_user("bob"), "laptop")
    base = Path(fresh_home["YULLU_HOME"]).parent
    laptop = {**fresh_home, "HOME": str(tmp_path / "home"), "YULLU_EMBED_PROVIDER": "none"}
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    assert run_cli(["install", "claude", "--server", live_server_url, "--token", raw], laptop).returncode == 0

    doctor = run_cli(["doctor"], laptop, timeout=180)
    assert f"ok    server    {live_server_url}/api/status ready" in doctor.stdout, doctor.stdout + doctor.stderr
    assert "database" not in doctor.stdout, "the laptop's storage is the team server's"
    assert not list(base.rglob("pgdata")), "no local cluster was created"
    assert not postgres_running_under(str(base))


def test_a_refused_token_is_told_where_a_new_one_comes_from_alike_for_revoked_and_unknown(
    live_server_url: str,
) -> None:
    token, raw = ApiToken.issue(User.objects.create_user("carol"), "laptop")
    token.delete()  # `yullu tokens revoke` on the team server
    answers = []
    with httpx.Client(base_url=live_server_url, timeout=60) as api:
        for sent in (raw, "yl_" + "x" * 40):
            auth = {"Authorization": f"Bearer {sent}"}
            answers.append(api.get("/api/projects", headers=auth))  # Django's check (access.auth)
            answers.append(api.post("/api/memories", headers=auth, json={"content": "x"}))  # the front gate
    said = {a.json()["error"] for a in answers}
    assert {a.status_code for a in answers} == {401} and len(said) == 1, said  # nothing tells them apart
    (sentence,) = said
    assert "ask its admin for a new one" in sentence and "yullu tokens create" in sentence
    assert "expired, revoked" in sentence and "own machine" in sentence


def test_revoking_a_token_twice_says_it_is_already_revoked(tmp_path: Path, live_server_url: str) -> None:
    token, raw = ApiToken.issue(User.objects.create_user("dave"), "laptop")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    first = run_cli(["tokens", "revoke", str(token.pk)], env)
    assert first.returncode == 0 and f"revoked token {token.pk} (dave / laptop)" in first.stdout, first.stderr
    again = run_cli(["tokens", "revoke", str(token.pk)], env)
    assert again.returncode == 0, again.stderr
    assert f"token {token.pk} (dave / laptop) was already revoked on " in again.stdout

    never = run_cli(["tokens", "revoke", str(token.pk + 1000)], env)
    assert never.returncode == 1 and f"token {token.pk + 1000} not found" in never.stderr

    admin_token, admin_raw = ApiToken.issue(User.objects.create_superuser("root-admin"), "ops")
    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {admin_raw}"}, timeout=60) as api:
        over_rest = api.delete(f"/api/access/tokens/{token.pk}")
    assert over_rest.status_code == 200, over_rest.text
    assert over_rest.json()["already_revoked"] is True and over_rest.json()["user"] == "dave"
    assert admin_token.pk != token.pk


def test_serve_on_a_read_only_home_names_the_folder_and_what_to_do(tmp_path: Path) -> None:
    home = tmp_path / "ro-home"
    (home / "run").mkdir(parents=True)
    env = product_env(home, YULLU_EMBED_PROVIDER="none")
    if subprocess.run(["mount", "--bind", str(home), str(home)], capture_output=True).returncode:
        pytest.skip("needs mount (root)")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(home)], check=True)
        ran = run_cli(["serve", "--port", str(free_port())], env, timeout=120)
    finally:
        subprocess.run(["umount", str(home)], check=False)
    assert ran.returncode == 1 and ran.stdout == "", ran.stdout + ran.stderr
    assert ran.stderr.splitlines() == [
        f"yullu: the data folder {home.resolve()} is on a read-only file system, and `yullu serve` writes there "
        "(its pid file, the database, logs): make it writable (remount it read-write, or fix its owner and mode), "
        "or set YULLU_HOME to a writable folder."
    ]

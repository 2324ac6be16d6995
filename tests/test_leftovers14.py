"""The last note's small leftovers (lane fixes14): each test is red without its fix."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from access import services as access_services
from access.actor import acting_as, actor_for_user
from access.models import AuditEntry, Grant, Project
from memories.scope import resolve
from memories.search import asking, expansion, queries
from memories.write import create
from tests.processes import own_cluster, product_env, run_cli, run_python, spawn, stop, wait_until
from yullu_core.errors import NotFound

# --- 5. a search reads the CHOICE pattern once per prompt -------------------------------------------------------


class CountingPattern:
    """asking.CHOICE, counting its searches."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.searched = pattern, 0

    def search(self, text: str) -> Any:
        self.searched += 1
        return self.pattern.search(text)


@pytest.mark.django_db(transaction=True)
def test_a_search_reads_whether_its_prompt_asks_about_a_choice_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """asking.asks_in_general and gates.judged_test each ran CHOICE on a short prompt, with the real local
    embedder and cross-encoder (the calibrated gate) through the search path."""
    scope = resolve("acme/choices", None)
    create.store_memory(scope, "We host on RDS rather than JawsDB: point-in-time restore and IAM auth.", "decision")
    create.store_memory(scope, "Pricing talks REST, not gRPC: the partner SDKs only speak JSON.", "decision")
    counting = CountingPattern(asking.CHOICE)
    monkeypatch.setattr(asking, "CHOICE", counting)
    for prompt in ("why rds instead of jawsdb", "why not grpc for pricing", "how do we host the database"):
        before = counting.searched
        found = queries.search(scope.project_id, prompt, log=False)
        assert counting.searched - before == 1, (prompt, counting.searched - before)
        if prompt.startswith("why"):
            assert found.results, prompt  # a question about the choice still finds it


def test_the_shorthands_words_name_no_choice() -> None:
    """The search reads CHOICE of the prompt as typed and gives the answer to the gate, which judges the text
    with the shorthand's words appended (expansion.with_jargon): the same answer only while none of those
    words makes a choice ("over", "not", "instead of")."""
    for _, words in expansion._JARGON:
        assert not asking.asks_about_a_choice(f"why postgres ({words})"), words


# --- 3. a worker or beat supervisor migrates the cluster it made anew -------------------------------------------

PENDING = (
    "from yullu_cli.django_setup import setup_django; setup_django(migrate=False); from django.db import connection;"
    "from django.db.migrations.executor import MigrationExecutor; e = MigrationExecutor(connection);"
    "print(len(e.migration_plan(e.loader.graph.leaf_nodes())))"
)
WHERE = "from yullu_core import paths, postgres as pg; print(pg.plan(paths.yullu_home()).pgdata)"


@pytest.mark.slow
@pytest.mark.parametrize("role", ["worker", "beat"])
def test_a_worker_or_beat_supervisor_migrates_the_cluster_it_made_anew(role: str) -> None:
    """Only the web role's supervisor migrated a cluster it started again on a deleted data folder: one with
    `--role worker` or `--role beat` on the machine's embedded server left it empty (every table missing)."""
    with own_cluster("yullu-role-", YULLU_SCHEDULER_TICK_SECONDS="3600") as (base, env):
        log = base / "serve.log"
        serve = None
        try:
            assert run_cli(["prune", "--dry-run"], env, timeout=300).returncode == 0  # a migrated database to start on
            with open(log, "wb") as out:
                serve = spawn(
                    ["-m", "yullu_cli.main", "serve", "--role", role], env, stdout=out, stderr=subprocess.STDOUT
                )

            def said() -> str:
                return log.read_text(errors="replace")

            wait_until(lambda: f"Yul'lu {role} started" in said(), f"the {role} to start", alive=serve, output=said)
            pgdata = Path(run_python(WHERE, env))
            wait_until(
                lambda: (pgdata / "postmaster.pid").exists(), "the embedded PostgreSQL", alive=serve, output=said
            )
            old = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
            shutil.rmtree(pgdata)
            wait_until(lambda: "is back (pid" in said(), "the cluster made anew", timeout=180, alive=serve, output=said)
            wait_until(lambda: run_python(PENDING, env) == "0", "no migration pending", alive=serve, output=said)
            # said once the migration has committed, so a moment after no migration shows pending (CI saw it not yet)
            up_to_date = "brought the new database up to date"
            wait_until(lambda: up_to_date in said(), "the supervisor's line", alive=serve, output=said)
            assert not old.is_running() or old.status() == psutil.STATUS_ZOMBIE
        finally:
            if serve is not None:
                stop(serve)


# --- 2. `yullu grant` on a mistyped project id -----------------------------------------------------------------

KNOWN = ("github.com/acme/app", "github.com/acme/api", "github.com/acme/billing")


def _projects() -> list[str]:
    return sorted(Project.objects.values_list("project_id", flat=True))


def _state() -> tuple[list[str], int, int]:
    return (
        sorted(Project.objects.values_list("project_id", flat=True)),
        Grant.objects.count(),
        AuditEntry.objects.count(),
    )


@pytest.mark.django_db(transaction=True)
def test_grant_refuses_an_unknown_project_naming_the_closest_unless_told_to_create_it(
    tmp_path: Path, live_server_url: str, owner_token: str, django_user_model: Any
) -> None:
    """`yullu grant ana github.com/acme/ap write` made a project github.com/acme/ap that no checkout names,
    and printed that ana now had write on it."""
    for project_id in KNOWN:
        Project.objects.create(project_id=project_id)
    django_user_model.objects.create_user("ana")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path))
    before = _state()
    said = (
        "no project 'github.com/acme/ap' is known here (closest: 'github.com/acme/app', 'github.com/acme/api'); "
        'to make a new project, create it: `yullu grant … --create`, "create": true over REST, or Add project in '
        "the admin."
    )
    for args in (["grant", "ana", "github.com/acme/ap", "write"], ["revoke-grant", "ana", "github.com/acme/ap"]):
        ran = run_cli(args, env)
        assert ran.returncode == 1, (args, ran.stdout, ran.stderr)
        expected = said if args[0] == "grant" else said.split(";")[0] + "."
        assert ran.stderr.strip().splitlines() == [f"yullu: {expected}"], ran.stderr
        assert _state() == before
    far = run_cli(["grant", "ana", "gitlab.com/zeta/unrelated", "write"], env)
    assert far.returncode == 1 and "no project 'gitlab.com/zeta/unrelated' is known here; to make" in far.stderr

    auth = {"authorization": f"Bearer {owner_token}"}
    body = {"user": "ana", "project_id": "github.com/acme/ap", "role": "write"}
    grants = f"{live_server_url}/api/access/grants"
    refused = httpx.post(grants, json=body, headers=auth, timeout=60)
    assert (refused.status_code, refused.json()) == (404, {"error": said}), refused.text
    listed = httpx.get(grants, params={"project_id": "github.com/acme/ap"}, headers=auth)
    assert listed.status_code == 404 and _state() == before, listed.text

    made = run_cli(["grant", "ana", "github.com/acme/ap", "write", "--create"], env)
    assert made.returncode == 0 and "ana now has write on github.com/acme/ap" in made.stdout, made.stderr
    created = httpx.post(grants, json={**body, "project_id": "acme/new", "create": True}, headers=auth, timeout=60)
    assert created.status_code == 201, created.text
    assert _projects() == sorted([*KNOWN, "github.com/acme/ap", "acme/new"])
    # A known project takes a grant as before, without --create.
    assert run_cli(["grant", "ana", "github.com/acme/billing", "read"], env).returncode == 0


@pytest.mark.django_db
def test_a_project_hidden_from_the_caller_is_refused_as_an_unknown_one(django_user_model: Any) -> None:
    """A project admin granting on a project they cannot see learns nothing of it: the same sentence as for a
    project that does not exist, and only their own projects are offered as the closest."""
    Project.objects.create(project_id="github.com/acme/secret")
    lead = access_services.add_user("lead")
    access_services.add_user("ana")
    access_services.grant("lead", "github.com/acme/secrets", "admin", create=True)
    with acting_as(actor_for_user(lead)):
        answers = []
        for project_id in ("github.com/acme/secret", "github.com/acme/secret2"):
            with pytest.raises(NotFound) as refused:
                access_services.grant("ana", project_id, "read")
            answers.append(str(refused.value).replace(repr(project_id), "ID"))
    assert answers[0] == answers[1] and "closest: 'github.com/acme/secrets')" in answers[0], answers
    assert not Grant.objects.filter(user__username="ana").exists()
    assert not Project.objects.filter(project_id="github.com/acme/secret2").exists()

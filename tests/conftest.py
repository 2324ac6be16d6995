"""Shared fixtures: personas, API tokens, a stub embedder and the real ASGI server on a loopback port."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.test import override_settings

from access.models import ApiToken
from memories.embedding import embedders, vector_index
from tests.processes import clusters_left_by, git_repo, wait_until
from tests.stubs import StubServer

# Servers started by tests (each with its own YULLU_HOME) share one ONNX export of the local model.
os.environ.setdefault("YULLU_MODEL_CACHE", str(settings.YULLU_HOME / "models"))

# Tests use temporary folders (tmp_path) as cwds: the suite allows them explicitly, here and, through
# the environment, in every server it starts; the product's default stays the user's home.
TEST_ROOTS = [tempfile.gettempdir(), str(Path.home())]
os.environ["YULLU_ALLOWED_ROOTS"] = os.pathsep.join(TEST_ROOTS)
settings.YULLU["server"]["allowed_roots"] = TEST_ROOTS


class FewRoundsPBKDF2(PBKDF2PasswordHasher):
    """Django's PBKDF2 hasher (the product's) with one round instead of a million.

    Most tests make a user (`owner`, `stranger`, personas): each password took 0.3-0.6 s of CPU,
    most of a database test's setup. The code path, the hash's format and algorithm name are
    the product's, so a server started by a test (with the product's hashers) checks these hashes
    too; the number of rounds is stored in each hash and no test is about it.
    """

    iterations = 1


# In place of the product's (one hasher per algorithm name: it is looked up by the hash's prefix);
# override_settings clears Django's cached hashers.
override_settings(
    PASSWORD_HASHERS=[
        "tests.conftest.FewRoundsPBKDF2",
        *(h for h in settings.PASSWORD_HASHERS if not h.endswith(".PBKDF2PasswordHasher")),
    ]
).enable()


WORKER_HOMES = "xdist"  # `pytest -n N` (`make test`): worker gwI's YULLU_HOME is $YULLU_HOME/xdist/gwI


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: list[Any]) -> None:
    """Each pytest-xdist worker gets its own YULLU_HOME, so its own embedded PostgreSQL, token and
    admin-password files, exactly what one process has alone (tests delete and rewrite the home's
    files, count the cluster's waiting locks, end its backends). The settings read YULLU_HOME when
    Django starts, before any conftest: execnet sets it in the worker's environment before that.
    The workers share one ONNX model cache (built under a lock)."""
    home = settings.YULLU_HOME
    for i, spec in enumerate(specs):  # execnet names them gw0, gw1, … in this order
        worker_home = home / WORKER_HOMES / f"gw{i}"
        worker_home.mkdir(parents=True, exist_ok=True)
        spec.env.update(YULLU_HOME=str(worker_home), YULLU_MODEL_CACHE=os.environ["YULLU_MODEL_CACHE"])


@pytest.fixture(autouse=True, scope="session")
def _no_clusters_left_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Remove the clusters this session's temporary homes left under YULLU_ROOT_PG_BASE.

    As root, a home other users cannot traverse (pytest's tmp_path is 0700) keeps its cluster in
    /var/lib/yullu/clusters, which outlives the deleted tmp folder: 66 clusters (7 GB) had piled up
    there on one machine and filled its disk. Only this session's (clusters_left_by): every other
    cluster that appeared meanwhile may be another session's, still in use.
    """
    yield
    for folder in clusters_left_by(tmp_path_factory.getbasetemp()):
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def _fresh_rate_limits() -> None:
    """Auth-failure counters live in process memory; each test starts with none."""
    from access import ratelimit

    ratelimit.reset()


@pytest.fixture(autouse=True)
def _no_disk_full_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that found the disk full is remembered in process memory for a minute, and /api/status of the
    in-process live server is not ready meanwhile: a test after one that translated a full disk saw doctor say
    'answers but is not ready' (test_walk8 after test_errors_said). Each test starts with none remembered."""
    from yullu_core import failures

    monkeypatch.setattr(failures, "_disk_full_at", None)


@pytest.fixture
def owner(django_user_model: Any) -> Any:
    return django_user_model.objects.create_superuser("owner", password="owner-pass-123")


@pytest.fixture
def owner_token(owner: Any) -> str:
    return ApiToken.issue(owner)[1]


@pytest.fixture
def stranger(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("stranger", password="stranger-pass-123")


@pytest.fixture
def repo_origin() -> str:
    """The `origin` remote of the `repo` fixture; a test module overrides this to name its own."""
    return "git@github.com:acme/app.git"


@pytest.fixture
def repo(tmp_path: Path, repo_origin: str) -> Path:
    """A git checkout (tmp_path/repo) with an origin remote: its project id is the origin's."""
    return git_repo(tmp_path / "repo", repo_origin)


@pytest.fixture
def hook_env(tmp_path: Path, live_server_url: str, owner_token: str) -> dict[str, str]:
    """Environment for `yullu <hook>` subprocesses talking to the live server as the owner."""
    home = tmp_path / "yhome"
    home.mkdir()
    (home / "token").write_text(owner_token + "\n")
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    port = live_server_url.rsplit(":", 1)[1]
    # A hook gives up after 1.5 s so it never holds up a prompt; a busy 2-core CI can take longer.
    return {**env, "YULLU_HOME": str(home), "YULLU_PORT": port, "HOME": str(tmp_path), "YULLU_HOOK_TIMEOUT": "60"}


@pytest.fixture
def stub_api() -> Iterator[StubServer]:
    with StubServer() as stub:
        yield stub


@pytest.fixture
def keyword_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No embedder: retrieval is keyword-only, so what a query finds does not depend on a model."""
    monkeypatch.setitem(settings.YULLU, "embedding", {**settings.YULLU["embedding"], "provider": "none"})
    embedders._cache.clear()
    vector_index.forget_cache()
    yield
    embedders._cache.clear()


@pytest.fixture
def stub_embedder(stub_api: StubServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[StubServer]:
    """Route embeddings to the local OpenAI-compatible stub (real openai client, real HTTP)."""
    monkeypatch.setitem(
        settings.YULLU, "embedding", {**settings.YULLU["embedding"], "provider": "openai", "model": "stub-embed"}
    )
    monkeypatch.setitem(settings.YULLU, "openai", {"api_key": "sk-test-not-real", "base_url": stub_api.url})
    embedders._cache.clear()
    vector_index.forget_cache()
    yield stub_api
    embedders._cache.clear()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    def __init__(self, app: Any = None) -> None:
        """The site's ASGI application, or `app`, under uvicorn in a thread."""
        import uvicorn

        from access.ratelimit import uvicorn_proxy_options
        from yullu_site.asgi import application

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        proxies = uvicorn_proxy_options(settings.YULLU["server"]["trusted_proxies"])  # as `yullu serve` runs it
        config = uvicorn.Config(
            app or application, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on", **proxies
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> None:
        self.thread.start()
        # Listening is enough here: the test embedder loads lazily, so /api/status may say "not ready".
        wait_until(lambda: self.server.started, "the in-process uvicorn to listen")

    def stop(self) -> None:
        from django.db import connection

        self.server.should_exit = True
        self.thread.join(timeout=10)
        # Worker threads of the server keep their own connections; end them so the test DB can be dropped.
        with connection.cursor() as cur:
            cur.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )


@pytest.fixture(scope="session")
def live_server_url(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    """The real ASGI app (Django + MCP) under uvicorn in a thread. Tests using it need transactional_db."""
    with django_db_blocker.unblock():
        server = LiveServer()
        server.start()
        yield server.url
        server.stop()

"""Start real product processes (Celery worker/beat, `yullu` commands) against the test database."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
from django.conf import settings
from django.db import connection

REPO = Path(__file__).resolve().parent.parent
STUB_KEY = "sk-test-not-real"
DEADLINE = 60.0  # seconds a test waits for something before it fails: generous, a loaded 2-core CI is slow

T = TypeVar("T")


def wait_until(
    check: Callable[[], T | None],
    what: str,
    timeout: float = DEADLINE,
    alive: subprocess.Popen[Any] | Sequence[subprocess.Popen[Any]] = (),
    output: Callable[[], str] = lambda: "",
) -> T:
    """Poll `check` until it returns something truthy and return that; fail after `timeout` seconds
    (or at once when a process in `alive` exits), saying what was awaited and the tail of `output`."""
    procs = [alive] if isinstance(alive, subprocess.Popen) else list(alive)
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        for proc in procs:
            if proc.poll() is not None:
                raise AssertionError(
                    f"{proc.args!r} exited ({proc.returncode}) while waiting for {what}\n{output()[-3000:]}"
                )
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{output()[-3000:]}")
        time.sleep(0.2)


def is_ready(url: str) -> bool:
    """The server at `url` answers /api/status with 200 and ready: true (503 means not ready)."""
    try:
        response = httpx.get(f"{url}/api/status", timeout=5)
        return response.status_code == 200 and response.json().get("ready") is True
    except (httpx.HTTPError, ValueError):
        return False


def wait_ready(
    url: str,
    proc: subprocess.Popen[Any] | None = None,
    timeout: float = 120,
    output: Callable[[], str] = lambda: "",
) -> None:
    """The one "server is ready" check of the suite: poll /api/status until it says ready."""
    wait_until(lambda: is_ready(url), f"{url} to be ready", timeout, alive=[proc] if proc else [], output=output)


def stub_env(url: str, reasoning: bool = False) -> dict[str, str]:
    """Environment pointing the product's embedder (and optionally its reasoner) at a StubServer."""
    env = {
        "YULLU_EMBED_PROVIDER": "openai",
        "YULLU_EMBED_MODEL": "stub-embed",
        "OPENAI_API_KEY": STUB_KEY,
        "OPENAI_BASE_URL": url,
    }
    if reasoning:
        env |= {"YULLU_REASON_PROVIDER": "openai", "YULLU_REASON_MODEL": "stub-chat"}
    return env


def run_cli(
    args: list[str], env: dict[str, str], stdin: str = "", timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`yullu ARGS` in a subprocess, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "yullu_cli.main", *args],
        input=stdin,
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# A test's git: its own HOME, no system config, a fixed author, `main` for a new repository, merges on pull.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    """`git ARGS` in `cwd` (also its HOME), asserted to succeed; its output."""
    out = subprocess.run(
        ["git", "-c", "pull.rebase=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(cwd), **GIT_ENV},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, f"git {' '.join(args)}: {out.stderr}"
    return out.stdout


def git_repo(path: Path, origin: str | None = None) -> Path:
    """A git repository at `path` (created if needed), with `origin` as its remote."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if origin:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", origin], check=True)
    return path


def test_database_url() -> str:
    db = settings.DATABASES["default"]
    name = connection.settings_dict["NAME"]
    host = db["HOST"]
    if host.startswith("/"):
        return f"postgresql://{db['USER']}@/{name}?host={host}"
    return f"postgresql://{db['USER']}:{db['PASSWORD']}@{host}:{db['PORT'] or 5432}/{name}"


def product_env(home: Path, **extra: str) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "YULLU_HOME": str(home),
        "DATABASE_URL": test_database_url(),
        "DJANGO_SETTINGS_MODULE": "yullu_site.settings",
        "YULLU_LOG_LEVEL": "warning",
        **extra,
    }


@contextlib.contextmanager
def own_cluster(prefix: str, **extra: str) -> Iterator[tuple[Path, dict[str, str]]]:
    """A throwaway folder and `own_cluster_env` in it; afterwards the home's embedded PostgreSQL is stopped (whoever
    started it) and the folder removed."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o755)  # as root, PostgreSQL's system user must reach the data folder
    env = own_cluster_env(base, **extra)
    try:
        yield base, env
    finally:
        stop_home = "from yullu_core import paths, postgres as pg; pg.stop(paths.yullu_home())"
        subprocess.run([sys.executable, "-c", stop_home], env=env, cwd=REPO, capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)


def up_database(home: Path, **fields: Any) -> Any:
    """The supervisor's view of a database that is up (yullu_cli.supervised.Database, no embedded cluster to look
    at), for `_on_exit`: its own class, so a field added to it is there too (a hand-made stand-in lacked `back_at`)."""
    from yullu_cli import supervised

    class Up(supervised.Database):
        def reachable(self) -> bool:
            return True

    return Up(home, None, owned=False, owner_role=False, **fields)


def own_cluster_env(base: Path, **extra: str) -> dict[str, str]:
    """The product's environment in a throwaway home under `base` with an embedded PostgreSQL of its own (not the
    test run's database or settings), no embedder and quiet logs: for a real `yullu serve` to start, break and stop."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "YULLU_", "DJANGO_", "CELERY_"))}
    return env | {"YULLU_HOME": str(base / "home"), "YULLU_CONFIG": str(base / "config.toml"),
                  "YULLU_ROOT_PG_BASE": str(base / "pg"), "YULLU_EMBED_PROVIDER": "none",
                  "YULLU_LOG_LEVEL": "warning"} | extra  # fmt: skip


def run_python(code: str, env: dict[str, str], timeout: float = 120) -> str:
    """What `python -c code` prints in `env` (from the repository), failing the test with its stderr if it fails."""
    ran = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
                         timeout=timeout)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    return ran.stdout.strip()


@contextlib.contextmanager
def silent_database_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A product environment whose DATABASE_URL reaches a server that takes the connection and says nothing
    (PostgreSQL stopped with SIGSTOP, as walks 7 and 14 froze it), for as long as the block runs."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        yield product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"),
                          DATABASE_URL=f"postgresql://yullu@127.0.0.1:{port}/yullu")  # fmt: skip


def spawn(args: list[str], env: dict[str, str], **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *args], env=env, cwd=REPO, start_new_session=True, text=True, **kwargs)


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def start_worker_and_beat(env: dict[str, str], tmp_path: Path) -> tuple[subprocess.Popen[str], subprocess.Popen[str]]:
    """A real Celery worker (concurrency 1) and beat on the product's settings."""
    worker = spawn(
        [
            "-m",
            "celery",
            "-A",
            "yullu_site",
            "worker",
            "--concurrency",
            "1",
            "--loglevel",
            "WARNING",
            "-n",
            f"test-{tmp_path.name}@%h",
        ],
        env,
    )
    beat = spawn(
        ["-m", "celery", "-A", "yullu_site", "beat", "--loglevel", "WARNING", "--pidfile", str(tmp_path / "beat.pid")],
        env,
    )
    return worker, beat


def clusters_left_by(base: Path) -> list[Path]:
    """The stopped clusters under YULLU_ROOT_PG_BASE of the homes in `base` (a test session's temporary
    folder; homes up to three folders down). Only those: other sessions on the machine share that
    folder, and one of theirs between initdb and its start, or stopped by a test, has no postmaster.pid."""
    from yullu_core import postgres

    clusters = postgres.ROOT_BASE / "clusters"
    homes = [p for pattern in ("*", "*/*", "*/*/*") for p in base.glob(pattern) if p.is_dir()]
    found = {postgres.plan(home).pgdata.parent for home in homes}
    running = {f for f in found if (f / "pgdata" / "postmaster.pid").exists()}
    return sorted(f for f in found - running if f.parent == clusters and f.is_dir())

"""`yullu serve`: migrate, bootstrap, then run uvicorn + a Celery worker + beat until Ctrl-C/SIGTERM.

Every child runs in its own process group so one signal stops it and its children.
The embedded Postgres is stopped on exit only if this command started it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .cli import fail, setup_django


def _pidfile_claim(path: Path) -> None:
    """Refuse to start twice on one $YULLU_HOME; a stale pid file (dead process) is replaced."""
    if path.exists():
        try:
            pid = int(path.read_text().strip() or "0")
        except ValueError:
            pid = 0
        if pid and pid != os.getpid() and _alive(pid):
            fail(f"a server is already running for this YULLU_HOME (pid {pid}); stop it first or set YULLU_HOME.")
    path.write_text(str(os.getpid()))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _spawn(cmd: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(cmd, env=env, start_new_session=True)


def _stop_all(children: list[subprocess.Popen[bytes]]) -> None:
    # SIGTERM to each main process: Celery then shuts its pool down warmly, uvicorn drains.
    for child in children:
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
    for child in children:  # anything a child left behind in its process group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)


def serve(port: int | None, workers: int = 1) -> None:
    from . import pg
    from .paths import ensure_home

    home = ensure_home()
    run_dir = home / "run"
    run_dir.mkdir(exist_ok=True)
    _pidfile_claim(run_dir / "serve.pid")
    pg_was_running = not os.environ.get("DATABASE_URL") and pg.is_running(pg.plan(home))

    setup_django()
    from django.conf import settings
    from django.core.management import call_command

    from .bootstrap import bootstrap

    call_command("migrate", interactive=False, verbosity=0)
    result = bootstrap()
    port = port or settings.YULLU["server"]["port"]
    host = settings.YULLU["server"]["host"]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "yullu_site.settings", "YULLU_HOME": str(home)}
    py = sys.executable
    children = [
        _spawn(
            [
                py,
                "-m",
                "uvicorn",
                "yullu_site.asgi:application",
                "--host",
                host,
                "--port",
                str(port),
                "--workers",
                str(workers),
                "--no-access-log",
                "--lifespan",
                "on",
            ],
            env,
        ),
        _spawn(
            [
                py,
                "-m",
                "celery",
                "-A",
                "yullu_site",
                "worker",
                "--loglevel",
                "WARNING",
                "--concurrency",
                "2",
                "-n",
                f"yullu-{port}@%h",
            ],
            env,
        ),
        _spawn(
            [
                py,
                "-m",
                "celery",
                "-A",
                "yullu_site",
                "beat",
                "--loglevel",
                "WARNING",
                "--pidfile",
                str(run_dir / "beat.pid"),
            ],
            env,
        ),
    ]
    _print_banner(host, port, result, settings)
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        while not stopping:
            if any(c.poll() is not None for c in children):
                print("yullu: a child process exited; stopping everything.", file=sys.stderr)
                break
            time.sleep(0.5)
    finally:
        print("yullu: stopping…", file=sys.stderr)
        _stop_all(children)
        (run_dir / "beat.pid").unlink(missing_ok=True)
        if settings.DATABASE_KIND == "embedded" and not pg_was_running:
            pg.stop(home)
        (run_dir / "serve.pid").unlink(missing_ok=True)


def _print_banner(host: str, port: int, result: object, settings: object) -> None:
    base = f"http://{host}:{port}"
    pw_file = result.admin_password_file  # type: ignore[attr-defined]
    lines = [
        "",
        f"Yul'lu is starting on {base}",
        f"  admin:      {base}/admin/  (user 'admin', password in {pw_file})",
        f"  MCP:        {base}/mcp",
        f"  API token:  {result.token_file}  (or run `yullu token`)",  # type: ignore[attr-defined]
        f"  status:     {base}/api/status",
        f"  data:       {settings.YULLU_HOME}",  # type: ignore[attr-defined]
    ]
    if result.admin_created:  # type: ignore[attr-defined]
        lines.append(f"  first run:  admin password is {pw_file.read_text().strip()}")
    lines.append("Press Ctrl-C to stop.")
    print("\n".join(lines), flush=True)

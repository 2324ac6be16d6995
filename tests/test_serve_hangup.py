"""`yullu serve` whose terminal closed (SIGHUP) stops as on Ctrl-C, with its clean-up.

Chaos drill, round 22: the hang-up killed the supervisor at once, its children with it, and left the embedded
PostgreSQL running with no owner; the next start had to adopt it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.processes import REPO, is_ready, own_cluster, run_python, wait_until

POSTMASTER = (
    "from yullu_core import paths, postgres as pg; print(pg.postmaster(pg.plan(paths.yullu_home())) is not None)"
)


@pytest.mark.slow
def test_a_hang_up_stops_serve_cleanly_with_its_embedded_postgres() -> None:
    port = free_port()
    with own_cluster("yullu-hup-", YULLU_PORT=str(port), YULLU_SCHEDULER_TICK_SECONDS="3600") as (base, env):
        log = base / "serve.log"
        with open(log, "wb") as out:
            serve = subprocess.Popen([sys.executable, "-m", "yullu_cli.main", "serve"], env=env, cwd=REPO,
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        try:
            wait_until(lambda: is_ready(f"http://127.0.0.1:{port}"), "the site to be ready", timeout=300, alive=serve)
            assert run_python(POSTMASTER, env) == "True"
            serve.send_signal(signal.SIGHUP)  # the supervisor alone, as a closed terminal's hang-up reaches it
            code = serve.wait(timeout=120)
            said = log.read_text(errors="replace")
            assert code == 0, said[-3000:]
            assert "yullu: stopped (the embedded PostgreSQL too)." in said, said[-3000:]
            assert run_python(POSTMASTER, env) == "False"  # its clean-up stopped the embedded PostgreSQL it started
        finally:
            if serve.poll() is None:
                os.killpg(serve.pid, signal.SIGKILL)


class _ClosedTerminal:
    """A stream on a terminal that went away: writes fail with EIO (or another error, to check it is kept)."""

    def __init__(self, fd: int, err: int) -> None:
        self.fd, self.err, self.tries = fd, err, 0

    def write(self, text: str) -> int:
        self.tries += 1
        raise OSError(self.err, os.strerror(self.err))

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        return self.fd


def test_a_write_to_a_closed_terminal_is_silence_but_other_errors_are_not(tmp_path: Path) -> None:
    """After the hang-up the supervisor still says its stop lines: to a closed terminal they failed with EIO."""
    from yullu_cli.output import _Guarded

    with open(tmp_path / "tty", "w") as handle:
        gone = _Guarded(_ClosedTerminal(handle.fileno(), 5))  # type: ignore[arg-type]  # EIO
        assert gone.write("yullu: stopping…\n") == len("yullu: stopping…\n")
        full = _Guarded(_ClosedTerminal(handle.fileno(), 28))  # type: ignore[arg-type]  # ENOSPC: not ours to hide
        with pytest.raises(OSError):
            full.write("x")

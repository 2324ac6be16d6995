"""`yullu serve` started again while the last one is still stopping waits for it instead of refusing.

Walk 19: right after Ctrl-C, `yullu serve` said "a server is already running" for the ~13 s the old one took to
stop its worker and its PostgreSQL, and the user had to guess when to try again. The stopping server leaves a
mark beside its pid file; a start that finds the pid file locked and the mark naming its holder waits."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from typing import IO, Any

import pytest

from tests.processes import wait_until
from yullu_cli import supervisor


def _held(path: Path, pid: str) -> IO[str]:
    """The pid file as a running server holds it (a lock per open file: this process can still be refused)."""
    fh = open(path, "a+")  # noqa: SIM115 - released by the test
    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    fh.write(pid)
    fh.flush()
    return fh


def test_a_start_waits_for_a_server_that_is_stopping_then_takes_the_home(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    pidfile = tmp_path / "serve.pid"
    old = _held(pidfile, "4242")
    (tmp_path / "serve.stopping").write_text("4242")
    got: dict[str, Any] = {}
    waiter = threading.Thread(target=lambda: got.setdefault("fh", supervisor._lock_the_file_at(pidfile)))
    waiter.start()
    said = ""

    def waiting() -> bool:
        nonlocal said
        said += capfd.readouterr().err
        return "(pid 4242) is stopping; starting once it has stopped" in said

    wait_until(waiting, "the start to say it waits")
    assert waiter.is_alive()  # waiting, not refused
    pidfile.unlink()  # the stopping server's clean-up, then its exit releases the lock
    old.close()
    waiter.join(timeout=60)
    assert not waiter.is_alive()
    assert os.path.samefile(got["fh"].fileno(), pidfile)  # the new pid file, locked by the new start
    got["fh"].close()


@pytest.mark.parametrize("mark", [None, "999"])
def test_a_running_server_or_a_stale_mark_still_refuses_at_once(tmp_path: Path, mark: str | None) -> None:
    """No mark (a server that runs), or a mark left by another pid (one killed while it stopped): refused."""
    pidfile = tmp_path / "serve.pid"
    held = _held(pidfile, "4242")
    if mark is not None:
        (tmp_path / "serve.stopping").write_text(mark)
    try:
        with pytest.raises(SystemExit):
            supervisor._lock_the_file_at(pidfile)
    finally:
        held.close()


def test_claiming_the_pid_file_removes_a_mark_left_by_a_server_killed_while_it_stopped(tmp_path: Path) -> None:
    (tmp_path / "serve.stopping").write_text("999")
    supervisor._pidfile_claim(tmp_path / "serve.pid")
    try:
        assert not (tmp_path / "serve.stopping").exists()
    finally:
        supervisor._claimed.pop().close()

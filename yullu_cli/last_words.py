"""The web process's stderr, passed on to the supervisor's as it comes, except its last words after
uvicorn's bind error: those wait until the supervisor knows why the process ended.

A web process that lost the port race (another process took the port between `yullu serve`'s check
and uvicorn's bind) logs the bind error and exits, aborted by a native thread still loading at exit
("terminate called without an active exception"). The supervisor says that in its own sentence
(yullu_cli.ports.taken_since), so those lines go to a file the sentence names instead of the terminal.
Any other ending gets them on the terminal, before the supervisor's line, as they would have been:
no other crash is hidden. Lines held longer than HOLD_S (the process lived on) are passed on then.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from pathlib import Path
from typing import IO

BIND_FAILED = b"error while attempting to bind on address"  # uvicorn's words (requirements.txt pins it)
HOLD_S = 10.0  # seconds the lines after a bind error wait for the process's end before they are passed on
FILE = "web-last-words.log"  # in $YULLU_HOME/run


class LastWords:
    """Reads `stream` (a child's stderr) in a thread and writes it to `out` line by line, holding the
    lines from a bind error on until `taken()` or `pass_on()` says where they go."""

    def __init__(self, stream: IO[bytes], out: IO[bytes] | None = None) -> None:
        self._out = out if out is not None else sys.stderr.buffer
        self._held: list[bytes] | None = None  # None: not holding
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._pump, args=(stream,), name="web-stderr", daemon=True)
        self._reader.start()

    def _pump(self, stream: IO[bytes]) -> None:
        with stream:
            for line in iter(stream.readline, b""):
                with self._lock:
                    if self._held is None and BIND_FAILED in line:
                        self._held = []
                        timer = threading.Timer(HOLD_S, self.pass_on)
                        timer.daemon = True
                        timer.start()
                    if self._held is not None:
                        self._held.append(line)
                    else:
                        self._write([line])

    def _write(self, lines: list[bytes]) -> None:
        # A terminal that went away must not stop the reading: the web process would block on a full pipe.
        with contextlib.suppress(OSError, ValueError):
            self._out.writelines(lines)
            self._out.flush()

    def _end(self) -> list[bytes]:
        """The lines held back, once the process's output has ended (its group was killed: briefly)."""
        self._reader.join(timeout=2.0)
        with self._lock:
            held, self._held = self._held or [], None
        return held

    def taken(self, run_dir: Path) -> Path | None:
        """The port was taken: the held lines go to run_dir's file, which is returned (None when nothing was
        held, or the file cannot be written: then they go to the terminal after all)."""
        held = self._end()
        if not held:
            return None
        path = run_dir / FILE
        try:
            path.write_bytes(b"".join(held))
        except OSError:
            self._write(held)
            return None
        return path

    def pass_on(self) -> None:
        """Any other ending (or a process that lived on): the held lines go to the terminal."""
        with self._lock:
            held, self._held = self._held or [], None
            if held:
                self._write(held)

    def finish(self) -> None:
        """The process ended for another reason than the port race: wait for its output, pass it all on."""
        self._reader.join(timeout=2.0)
        self.pass_on()

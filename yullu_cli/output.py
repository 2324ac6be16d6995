"""`yullu serve`'s own output, kept from ending the site when whoever reads it goes away.

`yullu serve | head`, or a log pipe whose reader dies (`| tee`, `| logger`): the supervisor's next line raised
BrokenPipeError and it ended there, without its clean-up (chaos drill: its children killed with it, the embedded
PostgreSQL left running with no owner). A stream guarded here, on its first broken pipe, points its file
descriptor at /dev/null: every later write of this process succeeds (logging's handlers hold the same descriptor),
and children started afterwards inherit /dev/null, not the dead pipe."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Any, TextIO


class _Guarded:
    """A text stream whose broken pipe is silence, not an exception."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            self._gone(exc)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self._gone(exc)

    def _gone(self, exc: OSError) -> None:
        """A broken pipe, or a terminal that closed (EIO: the stop after a hang-up still says its lines)."""
        if exc.errno not in (errno.EPIPE, errno.EIO):
            raise exc
        self._silence()

    def _silence(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()  # what was buffered goes to /dev/null now

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_output() -> None:
    """Guard this process's stdout and stderr (once)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _Guarded):
            setattr(sys, name, _Guarded(stream))

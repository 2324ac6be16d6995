"""Writing a file the user named (`--out`): a regular file or a new path, replaced atomically.

What is at the path is checked before writing and again just before the rename: a symlink, a
FIFO, a socket or a device node is refused (never replaced, never written through), a folder or
a missing parent folder is one sentence. The file is created with `mode` (an export of personal
memories is 0600) in the same folder, fsynced, then renamed over the path.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

from .errors import UserError

T = TypeVar("T")


def check_target(path: Path) -> None:
    """UserError unless `path` is a regular file or does not exist yet in an existing folder."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise UserError(f"{path.parent}: no such folder; create it first or choose another path.") from None
        return
    except NotADirectoryError:
        raise UserError(f"{path.parent}: not a folder; choose another path.") from None
    if stat.S_ISLNK(info.st_mode):
        raise UserError(f"{path} is a symlink; refusing to replace it. Write to a regular file or a new path.")
    if stat.S_ISDIR(info.st_mode):
        raise UserError(f"{path} is a folder; give a file name, e.g. {path / 'memories.jsonl'}.")
    if not stat.S_ISREG(info.st_mode):
        raise UserError(f"{path} is not a regular file (a FIFO, socket or device); refusing to replace it.")


def write_file(out: str, write: Callable[[IO[str]], T], mode: int) -> T:
    """Call `write` with a text file that becomes `out` (checked by `check_target`) when it returns."""
    path = Path(out).expanduser().absolute()
    check_target(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)  # whatever the umask
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            result = write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        check_target(path)  # nothing swapped in while we wrote
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return result

"""Where Yul'lu keeps its data. Everything lives under one home folder."""

import os
import secrets
from pathlib import Path

from .env import env_str


def yullu_home() -> Path:
    """`$YULLU_HOME`, else `$XDG_DATA_HOME/yullu`, else `~/.local/share/yullu`."""
    explicit = env_str("YULLU_HOME")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = env_str("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return (base / "yullu").resolve()


# Whether this process runs in its caller's folder: stdio and the command line do (a call naming no
# project uses that folder, docs/contract.md §2); the web server and workers do not (set by yullu_cli.main).
_in_callers_folder = False


def run_in_callers_folder() -> None:
    global _in_callers_folder
    _in_callers_folder = True


def in_callers_folder() -> bool:
    return _in_callers_folder


def ensure_home() -> Path:
    home = yullu_home()
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    return home


def _temp_file(path: Path, text: str, mode: int) -> Path:
    # A name unique to this process and call: several processes may start at once on a new home.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk: each failed start left one (round eight)
        raise
    return tmp


def write_private(path: Path, text: str) -> None:
    """Write a secret file atomically with mode 0600 (never world-readable, even briefly)."""
    tmp = _temp_file(path, text, 0o600)
    try:
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    os.chmod(path, 0o600)


def create_once(path: Path, text: str, mode: int = 0o600) -> str:
    """Create `path` with `text` unless it exists; return what the file holds. Safe when several
    processes race: exactly one version wins and nobody ever reads a half-written file. A file that
    exists is only read: every process start wrote a temp file first, so on a full disk every
    command and every restarted child of `yullu serve` failed, even those that store nothing (and on a
    read-only home, walk 8)."""
    if path.exists():
        return path.read_text()
    tmp = _temp_file(path, text, mode)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_text()

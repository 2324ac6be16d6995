"""Where Yul'lu keeps its data. Everything lives under one home folder."""

import os
import pwd
import secrets
import stat
from pathlib import Path

from .env import env_str
from .errors import UserError


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
    """The home folder, created if missing; one sentence (UserError) when it is a file, cannot be
    created, or cannot be entered by this user. Chaos drills round nine: a home of another user's,
    or chmod 000, was said as "<home>/secret_key: Permission denied." by every command, and a home
    that is a file as "<home>: File exists."."""
    home = yullu_home()
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.stat(os.path.join(home, "."))  # every file of the home is opened through the folder: may we enter it?
    except OSError as exc:
        raise UserError(_unusable_home(home, exc)) from None
    return home


def _unusable_home(home: Path, exc: OSError) -> str:
    fix = "or set YULLU_HOME to a folder of yours"
    try:
        info = home.stat()
    except OSError:
        return f"the data folder {home} cannot be created ({exc.strerror}); create it yourself, {fix}."
    if not stat.S_ISDIR(info.st_mode):
        return f"the data folder {home} is a file, not a folder; move that file away, {fix}."
    if isinstance(exc, PermissionError):
        owner = _user_name(info.st_uid)
        me = _user_name(os.geteuid())
        return (
            f"the data folder {home} cannot be opened by this user ({me}; it belongs to {owner}, mode "
            f"{stat.S_IMODE(info.st_mode):03o}); make it yours with: chown -R {me} {home} && chmod 700 {home}, {fix}."
        )
    return f"the data folder {home} cannot be opened ({exc.strerror}); {fix}."


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


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
        return _read(path)
    tmp = _temp_file(path, text, mode)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return _read(path)


def _read(path: Path) -> str:
    """A file's text; bytes that are not UTF-8 (a damaged file) read as U+FFFD for the caller to judge, not a
    UnicodeDecodeError out of every process that reads it (chaos round 25: the secret key)."""
    return path.read_bytes().decode(errors="replace")

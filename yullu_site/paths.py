"""Where Yul'lu keeps its data. Everything lives under one home folder."""

import os
from pathlib import Path


def yullu_home() -> Path:
    """`$YULLU_HOME`, else `$XDG_DATA_HOME/yullu`, else `~/.local/share/yullu`."""
    explicit = os.environ.get("YULLU_HOME", "").strip()
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return (base / "yullu").resolve()


def ensure_home() -> Path:
    home = yullu_home()
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    return home


def write_private(path: Path, text: str) -> None:
    """Write a secret file atomically with mode 0600 (never world-readable, even briefly)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    os.chmod(path, 0o600)

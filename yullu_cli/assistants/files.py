"""Writing an assistant's files the way every target does: idempotent, atomic, backed up first,
refusing a file that cannot be parsed; and the commands written into them, pinned to this install's
home and port."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from yullu_core.env import env_str

from ..hooks import hook_argv, server_port, yullu_home


class InstallError(Exception):
    pass


def yullu_bin() -> str:
    found = Path(sys.argv[0]).resolve() if Path(sys.argv[0]).name == "yullu" else None
    return str(found or shutil.which("yullu") or Path(sys.executable).parent / "yullu")


def say(message: str) -> None:
    print(message, flush=True)


def backup(path: Path, private: bool = False) -> None:
    if path.exists():
        copy = path.with_name(f"{path.name}.yullu-backup-{time.strftime('%Y%m%d%H%M%S')}")
        shutil.copy2(path, copy)
        if private:
            copy.chmod(0o600)  # the old file may hold an earlier token


def read_json(path: Path) -> dict[str, Any]:
    if not path.exists() or not path.read_text().strip():
        return {}
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix it by hand, nothing was changed.") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; nothing was changed.")
    return data


def write_if_changed(path: Path, text: str, private: bool = False) -> bool:
    """Write `text` atomically unless the file already holds it. `private`: the file holds the API
    token, so it (and its backup) is 0600 even if an earlier version was world-readable."""
    if path.exists() and path.read_text() == text:
        if private:
            path.chmod(0o600)
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    backup(path, private)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    tmp.replace(path)
    return True


def pinned_env() -> dict[str, str]:
    """The home and port this install is made for, set in every command it writes (hooks, Codex
    notify, the service), so a server on a non-default port or home is still the one they reach."""
    env = {"YULLU_HOME": str(yullu_home().resolve()), "YULLU_PORT": str(server_port())}
    if remote := env_str("YULLU_SERVER"):
        env["YULLU_SERVER"] = remote  # a team server (`yullu install --server URL`)
    return env


def hook_command(verb: str) -> str:
    """The hook's shell command, pinned to the server and data this install was made for, so a
    server on a non-default port or home is still found when the assistant runs the hook.
    `|| true`: if the checkout or venv moves away, Python exits 2 ("can't open file"), and Claude
    Code reads exit 2 as "block" (the prompt is dropped, a Stop hook keeps the agent going)."""
    env = " ".join(f"{name}={shlex.quote(value)}" for name, value in pinned_env().items())
    return f"{env} {shlex.join(hook_argv(verb))} || true"

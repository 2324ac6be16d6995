"""A team server as a laptop sees it: whether it takes this laptop's token, and which server the
installed hooks talk to. `yullu install --server` and `yullu doctor` ask; before, a revoked or mistyped
token was installed without a word and doctor said every check was ok, while every MCP call and hook
was refused (found on walk 8)."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

PINNED = re.compile(r"YULLU_SERVER=(\S+)")


def token_problem(server: str, token: str) -> str | None:
    """None when `server` takes `token` (one authenticated read); else one sentence saying why not.
    Raises OSError when the server cannot be reached."""
    try:
        _read(f"{server}/api/projects", token)
        return None
    except urllib.error.HTTPError as exc:
        if exc.code == 401:
            return f"{server} refuses this token ({_why_refused(exc.read())}): its admin makes a new one"
        return f"{server} answered {exc.code}: {_said(exc.read()).rstrip('.')}"


UNASKED = ""  # project_problem: the server could not judge the project (down, or refusing the token itself)


def project_problem(server: str, token: str, project_id: str) -> str | None:
    """None when `token` may read `project_id` on `server`; else the server's sentence (a project the
    token has no role on answers as one that does not exist). UNASKED ("") when the server could not judge it
    (down, or refusing the token itself): doctor's server line says why. Asked of the memory list, which needs the
    read role alone: stats of a project nobody has used yet is 404 since 294cb06, and the team's admin on a fresh
    repository was told the hooks are silent there."""
    query = urllib.parse.urlencode({"project_id": project_id, "limit": 1})
    try:
        _read(f"{server}/api/memories?{query}", token)
        return None
    except urllib.error.HTTPError as exc:
        return _said(exc.read()) if exc.code in (403, 404) else UNASKED
    except OSError:
        return UNASKED


def _read(url: str, token: str) -> None:
    """One authenticated GET of the team server (the URL the user named or install pinned); HTTPError for a refusal,
    OSError when it cannot be reached."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=10):  # noqa: S310 (the team server's own URL)
        pass


def _why_refused(body: bytes) -> str:
    """The server's reason when it knows one ("This API token was revoked on 2026-11-26 21:09 UTC. …"):
    doctor said "revoked, expired or mistyped" for a token the server had named as revoked (walk 10)."""
    if found := re.search(r"\b(was revoked|expired) on ([^.]+)", _said(body)):
        return f"it {found.group(1)} on {found.group(2)}"
    return "revoked, expired or mistyped"


def _said(body: bytes) -> str:
    """The server's own sentence (`{"error": …}`), else the start of what it sent; its control characters escaped
    (review 22: a server's answer printed as it came could drive the terminal doctor runs in)."""
    from yullu_core.text import escape_controls

    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        error = None
    said = str(error) if error else body[:120].decode("utf-8", "replace").strip() or "no reason given"
    return escape_controls(said)


def pinned_server(home: Path) -> str:
    """The team server `yullu install --server URL` pinned in the installed Claude Code hooks or Codex
    notify, else "" (doctor checks what the hooks talk to, though the shell has no YULLU_SERVER)."""
    for path in (home / ".claude" / "settings.json", home / ".codex" / "config.toml"):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        if (found := PINNED.search(text)) and "hook_entry.py" in text:
            return found.group(1).strip("\"',")
    return ""


def client_of(home: Path, data: Path) -> str:
    """The team server that the hooks `yullu install --server URL` wrote for the data folder `data`
    (YULLU_HOME) talk to, else "". Such a home keeps no memories: they are the server's."""
    wanted = str(data.expanduser().resolve())
    for env in _pinned_envs(home):
        if (server := env.get("YULLU_SERVER")) and env.get("YULLU_HOME") == wanted:
            return server
    return ""


def _pinned_envs(home: Path) -> Iterator[dict[str, str]]:
    """The NAME=value pairs in front of each installed hook: Claude Code's hook commands, Codex's notify."""
    try:
        settings = json.loads((home / ".claude" / "settings.json").read_text())
        hooks = settings.get("hooks", {}) if isinstance(settings, dict) else {}
        for groups in hooks.values() if isinstance(hooks, dict) else ():
            for group in groups if isinstance(groups, list) else ():
                for hook in group.get("hooks", []) if isinstance(group, dict) else ():
                    if isinstance(hook, dict) and "hook_entry.py" in str(hook.get("command", "")):
                        yield _assignments(shlex.split(str(hook["command"])))
    except (OSError, ValueError):
        pass
    try:
        notify = tomllib.loads((home / ".codex" / "config.toml").read_text()).get("notify")
    except (OSError, ValueError):
        return
    if isinstance(notify, list) and "hook_entry.py" in " ".join(map(str, notify)):
        yield _assignments([str(word) for word in notify[1:]])  # after `env`


def _assignments(words: list[str]) -> dict[str, str]:
    pairs = (word.partition("=") for word in words if re.fullmatch(r"[A-Z_]+=.*", word))
    return {name: value for name, _, value in pairs}

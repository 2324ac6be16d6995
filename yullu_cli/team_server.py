"""A team server as a laptop sees it: whether it takes this laptop's token, and which server the
installed hooks talk to. `yullu install --server` and `yullu doctor` ask; before, a revoked or mistyped
token was installed without a word and doctor said every check was ok, while every MCP call and hook
was refused (found on walk 8)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

PINNED = re.compile(r"YULLU_SERVER=(\S+)")


def token_problem(server: str, token: str) -> str | None:
    """None when `server` takes `token` (one authenticated read); else one sentence saying why not.
    Raises OSError when the server cannot be reached."""
    request = urllib.request.Request(
        f"{server}/api/projects", headers={"Authorization": f"Bearer {token}", "Accept": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10):  # noqa: S310 (the URL the user named)
            return None
    except urllib.error.HTTPError as exc:
        if exc.code == 401:
            return f"{server} refuses this token (revoked, expired or mistyped): its admin makes a new one"
        return f"{server} answered {exc.code}: {_said(exc.read()).rstrip('.')}"


def _said(body: bytes) -> str:
    """The server's own sentence (`{"error": …}`), else the start of what it sent."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        error = None
    return str(error) if error else body[:120].decode("utf-8", "replace").strip() or "no reason given"


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

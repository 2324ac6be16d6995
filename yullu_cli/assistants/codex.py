"""Codex: a marked section of `~/.codex/AGENTS.md` (the skill's text), `[mcp_servers.yullu]` and
`notify` in `~/.codex/config.toml`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..hooks import hook_argv, server_url, token
from .claude import skill_text
from .files import InstallError, pinned_env, say, write_if_changed

AGENTS_START = "<!-- yullu:start -->"
AGENTS_END = "<!-- yullu:end -->"


def agents_section() -> str:
    return f"{AGENTS_START}\n{skill_text().split('---', 2)[2].strip()}\n{AGENTS_END}\n"


def without_section(text: str) -> str:
    start, end = text.find(AGENTS_START), text.find(AGENTS_END)
    if start < 0 or end < 0:
        return text
    return (text[:start].rstrip("\n") + "\n" + text[end + len(AGENTS_END) :].lstrip("\n")).lstrip("\n")


def install_codex(home: Path) -> None:
    import tomlkit

    agents = home / ".codex" / "AGENTS.md"
    current = agents.read_text() if agents.exists() else ""
    base = without_section(current).rstrip("\n")
    wrote_agents = write_if_changed(agents, (base + "\n\n" if base else "") + agents_section())
    if wrote_agents:
        say(f"codex: wrote the yullu section of {agents}")
    path = home / ".codex" / "config.toml"
    text = path.read_text() if path.exists() else ""
    try:
        doc = tomlkit.parse(text)
    except Exception as exc:
        raise InstallError(f"{path} is not valid TOML ({exc}); fix it by hand, nothing was changed.") from None
    servers = doc.setdefault("mcp_servers", tomlkit.table(is_super_table=True))
    entry = tomlkit.table()
    entry["url"] = f"{server_url()}/mcp"
    entry["http_headers"] = {"Authorization": f"Bearer {token()}"}
    servers["yullu"] = entry
    notify = doc.get("notify")
    if notify is None or is_our_notify(notify):
        doc["notify"] = notify_command()
    else:
        say(f"codex: {path} already has a `notify` program; turns are not recorded (add `yullu codex-notify`).")
    if write_if_changed(path, tomlkit.dumps(doc), private=True):
        say(f"codex: added [mcp_servers.yullu] and notify → yullu codex-notify to {path}")
    elif not wrote_agents:  # a second install said nothing about Codex at all (walk 13)
        say(f"codex: already installed in {agents} and {path}; nothing changed.")


def notify_command() -> list[str]:
    """Codex runs `notify` as an argv list (no shell) with the turn's JSON appended; `env` pins
    the server and data this install was made for, like the Claude hooks."""
    return ["env", *(f"{name}={value}" for name, value in pinned_env().items()), *hook_argv("codex-notify")]


def is_our_notify(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and str(value[-1]) == "codex-notify"


def uninstall_codex(home: Path) -> bool:
    import tomlkit

    changed = False
    agents = home / ".codex" / "AGENTS.md"
    if agents.exists() and AGENTS_START in agents.read_text():
        write_if_changed(agents, without_section(agents.read_text()))
        say(f"codex: removed the yullu section of {agents}")
        changed = True
    path = home / ".codex" / "config.toml"
    if path.exists():
        removed = False
        doc = tomlkit.parse(path.read_text())
        servers = doc.get("mcp_servers")
        parts = []
        if servers is not None and "yullu" in servers:
            del servers["yullu"]
            if not servers:
                del doc["mcp_servers"]
            parts.append("[mcp_servers.yullu]")
        if is_our_notify(doc.get("notify")):
            del doc["notify"]
            parts.append("notify → yullu codex-notify")
        if parts:
            write_if_changed(path, tomlkit.dumps(doc), private=True)
            say(f"codex: removed {' and '.join(parts)} from {path}")
            removed = True
        changed = changed or removed
    return changed

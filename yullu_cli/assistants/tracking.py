"""What install changed, so uninstall can undo exactly that: each user file's bytes from before the
first install and what install wrote (a file still holding what we wrote gets its original back),
and the folders install created (removed again once empty)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..hooks import yullu_home
from .files import say

TARGET_FILES = {
    "claude": [".claude/settings.json"],
    "codex": [".codex/AGENTS.md", ".codex/config.toml"],
    "cursor": [".cursor/mcp.json"],
}


def state_file() -> Path:
    return yullu_home() / "install-state.json"


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return None


def _load_state() -> dict[str, dict[str, str | None]]:
    try:
        data = json.loads(state_file().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_state(state: dict[str, dict[str, str | None]]) -> None:
    path = state_file()
    if not state:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # copies of files that may hold tokens
    with os.fdopen(fd, "w") as fh:
        json.dump(state, fh)
    tmp.replace(path)


# Folders install may create, deepest first: uninstall removes those it created once they are empty. Every
# folder a written file's path makes counts, ~/.claude itself too (it was left behind empty on a clean home).
INSTALL_FOLDERS = (".claude/skills/yullu", ".claude/skills", ".claude", ".codex", ".cursor", ".config/systemd/user",
                   ".config/systemd", ".config", "Library/LaunchAgents", "Library")  # fmt: skip


def folders_file() -> Path:
    return yullu_home() / "install-folders.json"


def remembering_new_folders(home: Path, fn: Any) -> None:
    """Run `fn` and add the folders of INSTALL_FOLDERS it created to folders_file(), and the data folder
    with those above it that install makes to keep its records there (on a clean home, before any
    `yullu serve`: ~/.local/share/yullu, left behind empty by uninstall)."""
    existed = {rel for rel in INSTALL_FOLDERS if (home / rel).exists()}
    records = _missing_folders(folders_file().parent)
    try:
        fn()
    finally:
        made = {str(home / rel) for rel in INSTALL_FOLDERS if rel not in existed and (home / rel).is_dir()}
        made |= {str(folder) for folder in records}
        if made:
            known = set(_load_folders())
            folders_file().parent.mkdir(parents=True, exist_ok=True)
            folders_file().write_text(json.dumps(sorted(known | made)))


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and those above it that do not exist (yet)."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _load_folders() -> list[str]:
    try:
        return [str(f) for f in json.loads(folders_file().read_text())]
    except (OSError, ValueError, TypeError):
        return []


def remove_empty_folders() -> list[Path]:
    """Remove the folders install created that nothing else has filled since (deepest first); returns them. The record
    goes first, so the data folder holding it counts as empty when nothing else is there; the folders
    kept are remembered again only while that folder stays (writing it would make it anew)."""
    folders = _load_folders()
    folders_file().unlink(missing_ok=True)
    kept, removed = [], []
    for folder in sorted(folders, key=lambda f: f.count("/"), reverse=True):
        path = Path(folder)
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
            removed.append(path)
            say(f"removed the empty folder {path} (install created it)")
        elif path.is_dir():
            kept.append(folder)
    if kept and folders_file().parent.is_dir():
        folders_file().write_text(json.dumps(sorted(kept)))
    return removed


def tracked_install(home: Path, target: str, fn: Any) -> None:
    """Run one target's install, remembering each file's bytes from before the first install
    and what we wrote, so uninstall can put the original back exactly."""
    paths = [home / rel for rel in TARGET_FILES.get(target, [])]
    before = {p: _read(p) for p in paths}
    remembering_new_folders(home, fn)
    state = _load_state()
    for p in paths:
        after = _read(p)
        if after == before[p]:
            continue
        entry = state.setdefault(str(p), {"original": before[p]})
        entry["written"] = after
    _save_state(state)


def restore_untouched(home: Path, target: str) -> bool:
    """Give back the original bytes of every file of `target` that still holds exactly what
    install wrote (a file created by install is deleted). True when a file was given back."""
    state = _load_state()
    restored = False
    for rel in TARGET_FILES.get(target, []):
        p = home / rel
        entry = state.get(str(p))
        if entry is None:
            continue
        if _read(p) == entry.get("written"):
            original = entry.get("original")
            if original is None:
                p.unlink(missing_ok=True)
                say(f"{target}: deleted {p} (install created it)")
            else:
                tmp = p.with_name(p.name + ".tmp")
                tmp.write_bytes(original.encode("utf-8", "surrogateescape"))
                tmp.replace(p)
                say(f"{target}: restored {p} as it was before install")
            restored = True
        del state[str(p)]
    _save_state(state)
    return restored

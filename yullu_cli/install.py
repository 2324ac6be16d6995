"""`yullu install` / `yullu uninstall`: wire Yul'lu into Claude Code, Codex and Cursor.

Every edit is idempotent (re-running changes nothing), preserves the user's other
settings, writes a backup before changing an existing file, and refuses to touch a
file it cannot parse. Uninstall removes exactly what install added: a file nobody changed
since install gets its original bytes back (trailing newlines included), or is deleted when
install created it; a file edited since has just our parts taken out.

Here: the entry points and the stale-hook check that doctor and the banner use. What is written for
each assistant, and how it is undone: yullu_cli/assistants/.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

from yullu_core.env import env_is_set

from .assistants.claude import HOOKS, enabled_plugin, install_claude, is_ours, uninstall_claude
from .assistants.codex import install_codex, is_our_notify, uninstall_codex
from .assistants.cursor import install_cursor, uninstall_cursor
from .assistants.files import InstallError, say
from .assistants.service import install_service, service_file, uninstall_service
from .assistants.tracking import remembering_new_folders, remove_empty_folders, restore_untouched, tracked_install
from .hooks import token, yullu_home


def stale_hooks(home: Path) -> dict[str, list[str]]:
    """Files our installed hooks run that are gone (a moved checkout or venv), each with the hooks
    that run it. Such a hook fails silently (`|| true`), so doctor and the `yullu serve` banner
    say it."""
    import tomllib

    stale: dict[str, list[str]] = {}
    settings = home / ".claude" / "settings.json"
    try:
        hooks = json.loads(settings.read_text()).get("hooks") or {} if settings.exists() else {}
    except (ValueError, AttributeError, OSError):
        hooks = {}
    if not isinstance(hooks, dict):
        hooks = {}
    for event, verb in HOOKS.items():
        for group in hooks.get(event) or []:
            for hook in group.get("hooks") or []:
                command = str(hook.get("command", ""))
                if is_ours(command, verb) and (gone := _missing_file(command.removesuffix(" || true"))):
                    stale.setdefault(gone, []).append(f"claude {verb}")
    codex = home / ".codex" / "config.toml"
    try:
        notify = tomllib.loads(codex.read_text()).get("notify") if codex.exists() else None
    except (tomllib.TOMLDecodeError, OSError):
        notify = None
    if notify and is_our_notify(notify) and (gone := _missing_file(shlex.join(str(w) for w in notify))):
        stale.setdefault(gone, []).append("codex notify")
    return stale


def _missing_file(command: str) -> str | None:
    """The interpreter or hook entry a hook command runs, when it no longer exists."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for word in words:
        name = os.path.basename(word)
        if os.path.isabs(word) and (name == "hook_entry.py" or name.startswith("python")) and not os.path.exists(word):
            return word
    return None


def detect(home: Path) -> list[str]:
    """The assistants this machine has: their folder in the home, or their command on PATH (a freshly
    installed Codex makes ~/.codex only when it first runs, and install would skip it silently)."""
    found = (("claude", ".claude"), ("codex", ".codex"))
    return [t for t, folder in found if (home / folder).is_dir() or shutil.which(t)]


def install(targets: list[str], *, service: bool = False, assume_yes: bool = False) -> None:
    home = Path.home()
    chosen = targets or detect(home)
    if not chosen:
        nothing = (
            "no assistant found (no ~/.claude or ~/.codex, no claude or codex on PATH);"
            " name one: yullu install claude|codex|cursor"
        )
        if not service:  # nothing was done: a failure (README: exit 1 with one sentence), not a success
            raise SystemExit(f"yullu: {nothing}")
        say(nothing[0].upper() + nothing[1:])
    if not token():
        say("warning: no API token yet; run `yullu serve` (or `yullu token`) once, then install again.")
    chosen = _beside_the_plugin(home, chosen, named=bool(targets))
    try:
        for target in chosen:
            if target == "claude":
                tracked_install(home, target, lambda: install_claude(home))
            elif target == "codex":
                tracked_install(home, target, lambda: install_codex(home))
            elif target == "cursor":
                tracked_install(home, target, lambda: install_cursor(home))
        if service:
            remembering_new_folders(home, lambda: install_service(home))
    except InstallError as exc:
        raise SystemExit(f"yullu: {exc}") from None
    _note_a_folder_outside_the_roots()


def _note_a_folder_outside_the_roots() -> None:
    """Say so when the folder install runs in (usually the repository) is one this machine's server refuses
    as a `cwd`: outside [server].allowed_roots (the home by default) every MCP call from there fails. Walk 11
    installed from a checkout in /tmp: install said nothing, the first `store_memory` was refused, and only
    `yullu doctor` named the fix. (A team server's client names projects by id: nothing to say.)"""
    if env_is_set("YULLU_SERVER") or not token():
        return
    from yullu_core.config import ConfigError

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yullu_site.settings")
    import django

    try:
        django.setup()  # the settings and apps only (~1 s): nothing connects to the database
    except ConfigError:
        return  # `yullu doctor` and every database command name the config file's problem
    from .served_folder import served_folder

    inside, detail, fix = served_folder()
    if not inside:
        say(f"note: {detail}; {fix}.")


def _beside_the_plugin(home: Path, chosen: list[str], named: bool) -> list[str]:
    """`chosen` without Claude Code when its Yul'lu plugin is enabled and nobody named claude: the plugin
    brings the same hooks, MCP server and skill, and both would run each hook twice (README). Found on the
    walk: `yullu install --service` after installing the plugin wired the hooks again without a word."""
    plugin = enabled_plugin(home) if "claude" in chosen else None
    if plugin is None:
        return chosen
    fix = f"keep one: `yullu uninstall claude` or `claude plugin uninstall {plugin}`"
    if named:
        say(f"warning: the Claude Code plugin {plugin} is installed too, so Claude Code runs each hook twice; {fix}.")
        return chosen
    say(f"claude: skipped: the plugin {plugin} already brings the hooks, MCP server and skill "
        "(`yullu install claude` installs them anyway, and each hook would run twice).")  # fmt: skip
    return [t for t in chosen if t != "claude"]


def uninstall(targets: list[str]) -> None:
    """Remove what install added and say so line by line; then say what is left on purpose."""
    home = Path.home()
    removers = {"claude": uninstall_claude, "codex": uninstall_codex, "cursor": uninstall_cursor}
    removed_from = set()
    try:
        for target in targets or list(removers):
            restored = restore_untouched(home, target)
            if removers[target](home) or restored:
                removed_from.add(target)
            else:
                say(f"{target}: nothing of Yul'lu's found; nothing changed")
        if not targets:
            uninstall_service(home)
        gone = yullu_home() in remove_empty_folders()
    except InstallError as exc:
        raise SystemExit(f"yullu: {exc}") from None
    for line in _left_behind(home, targets, cursor="cursor" in removed_from, data_folder_gone=gone):
        say(line)


def _database() -> str:
    """Where the memories stay. As root, a home other users cannot enter keeps its embedded cluster in
    /var/lib/yullu/clusters/<hash>: deleting the home by hand would leave it there, unnamed."""
    if env_is_set("DATABASE_URL"):
        return "the database at DATABASE_URL"
    from yullu_core import postgres as pg

    try:
        pgdata = pg.plan(yullu_home()).pgdata
    except pg.EmbeddedPostgresError:
        return "the embedded database"
    if pgdata.is_relative_to(yullu_home()):
        return "the embedded database"
    return f"the embedded database in {pgdata.parent}"


def _left_behind(home: Path, targets: list[str], cursor: bool, data_folder_gone: bool = False) -> list[str]:
    """What uninstall leaves on purpose, so nobody has to guess. The config is named by its own path: by default
    it lives in the user config dir (~/.config/yullu), not in YULLU_HOME, so "YULLU_HOME (config, API token)"
    sent whoever deleted that folder looking for a config that was still there."""
    from yullu_core.config import config_path

    lines = [f"kept: your memories ({_database()}), {yullu_home()} (API token) and {config_path()} (config); "
             "delete them by hand if you want them gone"]  # fmt: skip
    if data_folder_gone:  # made by install for its records only, and removed again: no memories, no token
        lines = [f"kept: {config_path()} (config), if you wrote one; delete it by hand if you want it gone"]
    backups = [p for d in (".claude", ".codex", ".cursor") for p in (home / d).rglob("*.yullu-backup-*")]
    if backups:
        folders = ", ".join(sorted({str(home / p.relative_to(home).parts[0]) for p in backups}))
        copies = "copy" if len(backups) == 1 else "copies"
        lines.append(f"kept: {len(backups)} backup {copies} of your files (*.yullu-backup-*) under {folders}")
    service, _ = service_file(home)
    if targets and service.exists():
        lines.append(f"kept: the service {service} (`yullu uninstall` without targets removes it)")
    if cursor:
        lines.append("kept: any .cursor/rules/yullu.mdc you committed to a project (delete it there)")
    if (not targets or "claude" in targets) and (plugin := enabled_plugin(home)):
        # Found on the walk: uninstall said "claude: nothing of Yul'lu's found" while the plugin's hooks ran on.
        lines.append(f"kept: the Claude Code plugin {plugin} (install does not manage it): "
                     f"`claude plugin uninstall {plugin}` removes it")  # fmt: skip
    return lines

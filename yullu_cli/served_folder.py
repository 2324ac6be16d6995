"""Whether this machine's server serves assistants working in the current folder: `yullu doctor` checks it,
`yullu install` says so when it is not (both after Django's settings are loaded)."""

from __future__ import annotations

from pathlib import Path

from yullu_core.env import env_str


def served_folder() -> tuple[bool, str, str]:
    """Whether assistants working in this folder are served: the server refuses a cwd outside
    [server].allowed_roots (the home by default), so MCP calls from a checkout elsewhere fail."""
    team = env_str("YULLU_SERVER").rstrip("/")
    if team:  # the team server judges folders by its own roots; the hooks name the project to it
        return team_folder(team)
    from memories.scope import allowed_roots
    from yullu_core.config import config_path

    here, roots = Path.cwd().resolve(), allowed_roots()
    if any(here == root or root in here.parents for root in roots):
        return True, f"{here} is inside [server].allowed_roots", ""
    shown = ", ".join(str(root) for root in roots) or "none"
    detail = f"{here} is outside [server].allowed_roots ({shown}): assistants' MCP calls from here are refused"
    return False, detail, f"add it to [server].allowed_roots in {config_path()} (or YULLU_ALLOWED_ROOTS), restart"


def team_folder(team: str) -> tuple[bool, str, str]:
    """Whether the team server lets this token read the project of the checkout doctor runs in: the
    hooks name it, and a project the token has no role on (never granted, or the grant revoked) answers
    as one that does not exist, so every hook was silent while doctor said all was ok (walk 19)."""
    from yullu_core.gitorigin import find_git_root, project_id_of

    from .hooks import token
    from .team_server import UNASKED, project_problem

    talks = f"the hooks talk to the team server {team}, which names projects by their ids"
    if find_git_root(Path.cwd()) is None:
        return True, talks, ""
    project = project_id_of(Path.cwd())
    problem = project_problem(team, token(), project)
    if problem:
        detail = f"this folder is {project} on {team}, which answers: {problem}"
        return False, detail, "until you have a role on it, the hooks are silent in this folder"
    # a revoked token was said to read the project, under the server line saying it was revoked (walk 23)
    may = "" if problem == UNASKED else ", which your token may read"
    return True, f"{talks}; this folder is {project}{may}", ""


def unapplied_log() -> tuple[bool, str, str]:
    """Whether this machine applied the team log committed in the checkout doctor runs in. Reads never record
    where a checkout lives, so the log of a fresh clone (or what a pull just brought) waits for `yullu reconcile`,
    a session start there or beat's next tick, and assistants recall none of it meanwhile: in Bob's fresh clone
    doctor said "ok" to everything while `yullu memories list` said "0 shown" beside 24 committed files (walk 21)."""
    from memories.scope import resolve_path
    from sync.eventlog import list_names
    from sync.models import LedgerEntry
    from sync.outbox import resolve_folder

    scope = resolve_path(Path.cwd())
    if scope.git_root is None:
        return True, "not in a checkout", ""
    folder, _ = resolve_folder(scope.project_id, scope.git_root)
    names = set(list_names(folder)) if folder is not None and folder.is_dir() else set()
    if not names:
        return True, f"{scope.git_root} has no team log", ""
    waiting = len(names) - LedgerEntry.objects.filter(project_id=scope.project_id, name__in=names).count()
    if not waiting:
        return True, f"the {len(names)} files of {folder} are applied here", ""
    detail = f"{waiting} of the {len(names)} files of {folder} are not applied here: assistants recall nothing of them"
    return False, detail, "run `yullu reconcile` here (a Claude Code session starting here does it too)"

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
    from .team_server import project_problem

    talks = f"the hooks talk to the team server {team}, which names projects by their ids"
    if find_git_root(Path.cwd()) is None:
        return True, talks, ""
    project = project_id_of(Path.cwd())
    if problem := project_problem(team, token(), project):
        detail = f"this folder is {project} on {team}, which answers: {problem}"
        return False, detail, "until you have a role on it, the hooks are silent in this folder"
    return True, f"{talks}; this folder is {project}, which your token may read", ""

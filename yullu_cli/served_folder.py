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
        return True, f"the hooks talk to the team server {team}, which names projects by their ids", ""
    from memories.scope import allowed_roots
    from yullu_core.config import config_path

    here, roots = Path.cwd().resolve(), allowed_roots()
    if any(here == root or root in here.parents for root in roots):
        return True, f"{here} is inside [server].allowed_roots", ""
    shown = ", ".join(str(root) for root in roots) or "none"
    detail = f"{here} is outside [server].allowed_roots ({shown}): assistants' MCP calls from here are refused"
    return False, detail, f"add it to [server].allowed_roots in {config_path()} (or YULLU_ALLOWED_ROOTS), restart"

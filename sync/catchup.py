"""A checkout's team log applied when the MCP server first serves it (docs/contract.md §5).

Reads record no location, so beat never reconciled a checkout only read from: a Codex-only teammate (no
session-start hook) recalled nothing of their fresh clone's committed log until something was written there,
`yullu reconcile` ran, or beat's tick after such a write (round 25). Each tool call naming a checkout now looks
at its log folder first: one stat when the folder has not changed since this process last found it applied;
when it has (a clone, a pull, a write), a listing and one query; a reconcile only when a file is new. A
reconcile here records the checkout's location, so beat keeps it applied from then on.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from access import policy as access
from access.actor import SYSTEM, acting_as
from access.policy import is_personal
from memories.scope import Scope, remember_location, resolve
from yullu_core.errors import UserError

from .eventlog import list_names
from .models import LedgerEntry, ProjectSyncState
from .outbox import resolve_folder
from .services import ReconcileResult, listing_sha256, reconcile_scope

log = logging.getLogger(__name__)

# (project id, logs folder) -> the folder's mtime_ns when this process last found every file of it applied.
# A folder's mtime changes when a file is added, removed or renamed into it (git pull, checkout, our writes).
_applied_at: dict[tuple[str, str], int] = {}
# The same, by what a call names ((project_id, cwd) as given): its logs folder and that mtime, so a call whose
# folder has not changed costs one stat on the event loop, with no resolve, no query and no thread hop.
_settled: dict[tuple[str | None, str | None], tuple[Path, int]] = {}
_guard = threading.Lock()


def settled(project_id: str | None, cwd: str | None) -> bool:
    """Whether the checkout this call names had its log found applied, and its folder has not changed since."""
    known = _settled.get((project_id, cwd))
    if known is None:
        return False
    try:
        return known[0].stat().st_mtime_ns == known[1]
    except OSError:
        return False


def catch_up(project_id: str | None, cwd: str | None) -> ReconcileResult | None:
    """Apply the team log of the checkout a call names when a file of it is new here; None when nothing was
    new (or there is no checkout, no log, no role: the tool then answers as it would have)."""
    try:
        scope = resolve(project_id, cwd, remember=False)
    except UserError:
        return None  # the tool itself says what is wrong with its project or cwd
    if scope.git_root is None or is_personal(scope.project_id):
        return None
    folder, _ = resolve_folder(scope.project_id, scope.git_root)
    if folder is None:
        return None  # sync is off for the project
    try:
        mtime = folder.stat().st_mtime_ns
    except OSError:
        return None  # no log in this checkout
    key = (scope.project_id, str(folder))
    if _applied_at.get(key) == mtime:
        _settled[(project_id, cwd)] = (folder, mtime)
        return None
    if access.role_on(scope.project_id) is None:
        return None  # a project the caller may not read: not theirs to touch (nor to learn about)
    if _all_applied(scope.project_id, set(list_names(folder))):
        _applied_at[key], _settled[(project_id, cwd)] = mtime, (folder, mtime)
        return None
    with _guard, acting_as(SYSTEM):  # the files on this machine's disk, applied as beat applies them
        if _applied_at.get(key) == mtime:
            return None  # another call applied them while this one waited
        try:
            result = reconcile_scope(scope)
        except Exception:  # an embedder or disk down: beat tries again at its next tick, calls not on every call
            _done(scope, key, (project_id, cwd), folder, mtime)
            raise
        if not result.get("skipped"):  # a file left mid-merge waits for the folder to change, or for beat
            _done(scope, key, (project_id, cwd), folder, mtime)
    log.info("applied %s new file(s) of %s's team log at its first call", result["events_new"], scope.project_id)
    return result


def _done(scope: Scope, key: tuple[str, str], named: tuple[str | None, str | None], folder: Path, mtime: int) -> None:
    remember_location(scope)  # beat keeps it applied from now on
    _applied_at[key], _settled[named] = mtime, (folder, mtime)


def _all_applied(project_id: str, names: set[str]) -> bool:
    state = ProjectSyncState.objects.filter(project_id=project_id).values_list("listing_sha256", flat=True).first()
    if state == listing_sha256(names):
        return True  # the listing of the last complete pass: nothing arrived or left since
    return LedgerEntry.objects.filter(project_id=project_id, name__in=names).count() == len(names)

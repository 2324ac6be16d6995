"""The outbox: local changes become event files only after their transaction commits.

`on_change` (registered with memories.changes by SyncConfig.ready) runs inside the write's
transaction: it builds the events with the one schema (a refusal rolls the write back) and
inserts OutboxEvent rows. On commit, `flush()` writes those files and deletes the rows; a
crash between commit and file leaves the rows for the periodic sweep (`flush(older_than=…)`,
run by the reconcile tick) and for the next reconcile of the project. So a rolled-back write
never leaves a file, and a committed write always gets one (docs/contract.md §5).

Locks: a flush claims rows with `SELECT … FOR UPDATE SKIP LOCKED`, so the on-commit flush,
the sweep and a reconcile never write one row twice at once; writing a file twice is harmless
anyway (its name derives from the event, see eventlog.write_event).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pygit2
from django.conf import settings
from django.db import DatabaseError, InterfaceError, transaction
from django.db.models import Count, Min, QuerySet
from django.utils import timezone

from access.actor import acting
from access.people import username
from access.policy import owner_id
from memories.changes import AnnouncedChange
from memories.scope import is_personal, known_root, recorded_root
from memories.write import bulk_rows
from yullu_core.config import load_for_project
from yullu_core.env import env_float
from yullu_core.errors import UserError
from yullu_core.failures import first_line
from yullu_core.outage import REMIND_EVERY_S, Outage

from .eventlog import logs_dir, new_event, write_event, write_events
from .models import OutboxEvent, record_applied
from .schema import Event, EventError, content_sha256

log = logging.getLogger(__name__)
CORE_FIELDS = ("content", "tags", "category")
_warned: set[str] = set()
# The folder of an event whose project's checkout moved or was deleted since this machine last saw it:
# held here until a reconcile in the checkout's new place writes it there (adopt_held). Dropped instead,
# the edit never reached the log, and a teammate's next event for the memory silently undid it.
HELD = ""
SWEEP_AFTER = timedelta(seconds=30)  # older outbox rows lost their on-commit flush (a crash, the database gone)


def sync_config(project_id: str, git_root: Path | None) -> dict[str, Any]:
    cfg, _ = load_for_project(project_id, git_root, settings.YULLU)
    return cfg["sync"]


def resolve_folder(project_id: str, git_root: Path | None) -> tuple[Path | None, dict[str, Any]]:
    """The project's logs folder (None when sync is off or the repo is unknown) and its effective
    [sync] settings."""
    if is_personal(project_id):
        return None, {}  # personal memories are never written to a team log
    git_root = git_root or known_root(project_id)
    if git_root is None:
        return None, {}
    cfg = sync_config(project_id, git_root)
    return (logs_dir(git_root, cfg["dir"]) if cfg["enabled"] else None), cfg


def _had_checkout(project_id: str) -> bool:
    """This machine knew a checkout of the project (now moved or deleted). A project never seen in a
    checkout (a team server's) has none to wait for: its changes are not logged."""
    # known_root's prepared statement (cost only, issue 34 round twenty-four: the ORM's .exists() cost ~0.8 ms of CPU
    # on every store of a project without a checkout, a team server's, against ~0.1).
    return recorded_root(project_id) is not None


def _target(project_id: str, git_root: Path | None) -> tuple[str | None, bool]:
    """Where a change's events go (its logs folder; HELD while its checkout is gone; None: not logged)
    and whether vectors go with them."""
    if is_personal(project_id):
        return None, False  # personal memories are never written to a team log
    root = git_root or known_root(project_id)
    if root is not None:
        folder, cfg = resolve_folder(project_id, root)
        return (str(folder), bool(cfg["log_embeddings"])) if folder is not None else (None, False)
    if not _had_checkout(project_id):
        _warn_once(project_id, "no repository known for project %s: its changes are not written to an event log")
        return None, False
    cfg = sync_config(project_id, None)
    _warn_once(
        project_id,
        "the checkout of project %s is no longer where it was: its changes wait until a reconcile in the "
        "checkout's new place (`yullu reconcile --cwd DIR`) writes them to its event log",
    )
    return (HELD if cfg["enabled"] else None), bool(cfg["log_embeddings"])


def _warn_once(project_id: str, message: str) -> None:
    if project_id not in _warned:
        _warned.add(project_id)
        log.warning(message, project_id)


def adopt_held(project_id: str, folder: Path) -> int:
    """Give the project's held events (made while its checkout was gone) the logs folder of the
    checkout a reconcile runs in now; the reconcile's flush writes them before it folds."""
    return OutboxEvent.objects.filter(project_id=project_id, folder=HELD).update(folder=str(folder))


def embedding_event(memory_uuid: str, ts_ns: int, embedder: str, vector: Any, content: str) -> Event:
    return new_event(
        "embedding",
        memory_uuid,
        ts_ns,
        embedder=embedder,
        vector=[round(float(x), 7) for x in vector],
        content_sha256=content_sha256(content),
    )


@functools.lru_cache(maxsize=64)
def _git_user_name(root: str) -> str | None:
    """The checkout's `git config user.name` (its own, else the global one), read once per process
    per repository; never the email."""
    try:
        name = pygit2.Repository(root).config["user.name"]
    except (pygit2.GitError, KeyError, ValueError):
        return None
    return str(name).strip()[:150] or None


def _author(project_id: str, git_root: str | None) -> dict[str, str]:
    """The acting person's name for the event (docs/contract.md §11). The install's own owner (the
    single-user `admin`, or the CLI acting for them) is named by the checkout's git user.name, so a
    team's log tells Dana's changes from Sam's; a team-server user keeps their user name."""
    actor = acting()
    name = name_of(actor.user_id, project_id, git_root) if actor.user_id is not None or actor.is_system else None
    return {"author": name} if name else {}


def name_of(user_id: int | None, project_id: str, git_root: str | None) -> str | None:
    """The log's name for a user of this machine (None: the system): the owner's is the git user.name."""
    if user_id is None or user_id == owner_id():
        root = git_root or (str(r) if (r := known_root(project_id)) else None)
        if name := (_git_user_name(root) if root else None):
            return name
    return username(user_id)


def _first_writer(change: AnnouncedChange) -> AnnouncedChange:
    """An undone rejection's create names its first writer by `created_by` (docs/contract.md §5): a teammate's name
    as it is, a user of this machine as their events name them. Without it, a teammate folding the create after a
    compaction of the deleted memory (its history one `delete`) knew no writer (round 24)."""
    if "created_by_user" not in change.state:
        return change
    state = dict(change.state)
    user_id = state.pop("created_by_user")
    if user_id is not None and (name := name_of(user_id, change.project_id, change.git_root)):
        state["created_by"] = name
    return replace(change, state=state)


def events_for(change: AnnouncedChange, log_embeddings: bool, author: dict[str, str] | None = None) -> list[Event]:
    author = author or {}
    if change.kind == "delete":
        return [new_event("delete", change.memory_uuid, change.ts_ns, **author)]
    if change.kind == "create":
        fields = {k: v for k, v in change.state.items() if v is not None or k == "category"}
    else:
        fields = dict(change.state)  # update: a present None clears the field
    events = [new_event(change.kind, change.memory_uuid, change.ts_ns, **fields, **author)]
    if change.vector is not None and log_embeddings and "content" in change.state:
        embedder, vector = change.vector
        events.append(embedding_event(change.memory_uuid, change.ts_ns, embedder, vector, change.state["content"]))
    return events


def enqueue(rows: list[OutboxEvent]) -> None:
    """Queue `rows` (unsaved) in the current transaction, in one insert (COPY for many: an import's
    thousands of events); they are written when it commits."""
    if not rows:
        return
    ids = [r.pk for r in bulk_rows.insert(OutboxEvent, rows)]
    hooks = transaction.get_connection().run_on_commit
    pending = next((hook for _, hook, _ in hooks if isinstance(hook, _FlushOnCommit)), None)
    if pending is not None:  # one flush per transaction: a batch's files are written together
        pending.ids += ids
        return
    transaction.on_commit(_FlushOnCommit(ids), robust=True)


class _FlushOnCommit:
    """The on-commit flush of the rows a transaction queued. A transaction may queue several times (a
    store batch, then a supersede mark; an import's batches); one flush of all their rows writes their
    files with one sync (write_events) rather than two fsyncs per file (an import of 2,000 memories
    into a repository's project: 86/s with a flush per memory). A rolled-back savepoint drops the hook
    with its ids; ids of rows that are gone are simply not found by the flush."""

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids
        # Django names a robust hook that raised by its __qualname__, which an instance lacks: a flush
        # failing after the commit (the database gone mid-store) became an AttributeError, and the
        # client of a committed store got a 500 (found killing the postmaster under stores, walk 8).
        self.__qualname__ = "sync.outbox.flush"

    def __call__(self) -> None:
        try:
            flush(ids=self.ids)
        except (DatabaseError, InterfaceError) as exc:
            # The write is committed and its rows wait in the outbox: nothing is lost, so one line, not the
            # traceback Django logs for a robust hook that raised (walk 15: the postmaster killed under stores).
            log.warning(
                "sync: %d team-log event(s) of a committed write were not written to their files now (the database "
                "went away after the commit: %s); they wait in the outbox, and the reconcile tick's sweep writes "
                "them once they are %d s old (a tick every %g s).",
                len(self.ids), first_line(exc), SWEEP_AFTER.total_seconds(), env_float("YULLU_SCHEDULER_TICK_SECONDS"),
            )  # fmt: skip


def on_change(changes: Sequence[AnnouncedChange]) -> None:
    """memories.changes listener: runs inside the write's transaction. The changes of one call (a
    store batch, an import) are queued together: one insert, the folder and settings looked up once
    per project."""
    folders: dict[tuple[str, str | None], tuple[str | None, bool]] = {}
    authors: dict[tuple[str, str | None], dict[str, str]] = {}
    rows: list[OutboxEvent] = []
    for change in changes:
        key = (change.project_id, change.git_root)
        if key not in folders:
            folders[key] = _target(change.project_id, Path(change.git_root) if change.git_root else None)
        folder, log_embeddings = folders[key]
        if folder is None:
            continue
        if key not in authors:
            authors[key] = _author(change.project_id, change.git_root)
        rows += [
            OutboxEvent(project_id=change.project_id, memory_uuid=e.memory_id, folder=folder, payload=e.to_wire())
            for e in _events_or_refusal(change, log_embeddings, authors[key])
        ]
    enqueue(rows)


def _events_or_refusal(change: AnnouncedChange, log_embeddings: bool, author: dict[str, str]) -> list[Event]:
    """The change's events; a change the schema refuses rolls the write back with one sentence."""
    try:
        change = _first_writer(change)
        return events_for(change, log_embeddings, author)
    except EventError as exc:
        core = {k: v for k, v in change.state.items() if k in CORE_FIELDS}
        try:
            if core == change.state:
                raise
            events = events_for(replace(change, state=core), log_embeddings, author)
        except EventError:
            raise UserError(
                f"refused: this change cannot be written to the team log ({exc}); nothing was stored."
            ) from None
        # A lifecycle field the schema does not accept must not block the write itself.
        log.warning("memory %s: lifecycle fields left out of its sync event (%s)", change.memory_uuid, exc)
        return events


def flush(
    ids: list[int] | None = None, project_id: str | None = None, older_than: timedelta | None = None
) -> list[tuple[str, str, str]]:
    """Write pending events to disk and delete their rows. Returns (project_id, folder, name) per file."""
    written: list[tuple[str, str, str]] = []
    with transaction.atomic():
        rows = OutboxEvent.objects.select_for_update(skip_locked=True).exclude(folder=HELD).order_by("id")
        if ids is not None:
            rows = rows.filter(pk__in=ids)
        if project_id is not None:
            rows = rows.filter(project_id=project_id)
        if older_than is not None:
            rows = rows.filter(created_at__lt=timezone.now() - older_than)
        by_folder: dict[str, list[OutboxEvent]] = {}
        for row in rows:
            by_folder.setdefault(row.folder, []).append(row)
        done: list[int] = []
        ledger: dict[str, list[tuple[str, str, int | None]]] = {}
        for folder, group in by_folder.items():
            for row, name in _write_group(Path(folder), group):
                written.append((row.project_id, row.folder, name))
                done.append(row.pk)
                ledger.setdefault(row.project_id, []).append((name, str(row.memory_uuid), None))
        # Our own files are applied already: a reconcile of another checkout of the project (the main one,
        # when this was written in a worktree) must not publish the memory again under a new event id.
        for project_id, files in ledger.items():
            record_applied(project_id, files)
        OutboxEvent.objects.filter(pk__in=done).delete()
    return written


BULK_FROM = 16  # events of one folder written together (one sync) rather than fsynced one by one


def _write_group(folder: Path, rows: list[OutboxEvent]) -> list[tuple[OutboxEvent, str]]:
    """Each row's file, as (row, name); a row whose file could not be written is left out (kept for
    the sweep). Many rows (an import, a batch) pay for durability once (`write_events`: 2,000
    imported memories wrote 4,000 files with two fsyncs each); a store's two events keep their own
    fsyncs, as a machine-wide sync can cost more than that on a busy machine."""
    if len(rows) >= BULK_FROM:
        try:
            names = write_events(folder, [Event.model_validate(r.payload) for r in rows])
            return list(zip(rows, names, strict=True))
        except OSError as exc:  # a full disk, a read-only folder: row by row says which ones
            log.info("bulk write of %d sync events to %s failed (%s); writing them one by one", len(rows), folder, exc)
    out = []
    for row in rows:
        try:
            out.append((row, write_event(folder, Event.model_validate(row.payload))))
        except OSError as exc:
            _write_failures(row.folder).failed(exc)
    return out


_FAILURES: dict[str, Outage] = {}


def _write_failures(folder: str) -> Outage:
    """A log folder that cannot be written (its disk full, read-only), said as an outage is: one line at the first
    failure, a reminder with the count at most every 30 s. A chaos drill (round 24: a full .yullu/logs under two
    writers) logged one warning per event, 485 in 40 s; each event waits in the outbox for the sweep all the same."""
    if folder not in _FAILURES:
        what = f"could not write sync events to {folder} (kept for the next sweep)"
        _FAILURES[folder] = Outage(log, what=what, quiet_ends=REMIND_EVERY_S, counted="event")
    return _FAILURES[folder]


STUCK_AFTER = timedelta(minutes=5)  # the sweep runs every minute: older rows keep failing to be written


def stuck(
    rows: QuerySet[OutboxEvent] | None = None, older_than: timedelta = STUCK_AFTER
) -> list[tuple[str, int, datetime]]:
    """(folder, events, oldest) for each log folder whose committed events (of `rows`, else all)
    still wait to be written after `older_than`: a store into a full or read-only folder answers as
    stored and its events wait here for the sweep, which otherwise says so only in the worker's log."""
    found = (
        (OutboxEvent.objects.all() if rows is None else rows)
        .exclude(folder=HELD)
        .filter(created_at__lt=timezone.now() - older_than)
        .values("folder")
        .annotate(n=Count("id"), oldest=Min("created_at"))
        .order_by("oldest")
    )
    return [(r["folder"], r["n"], r["oldest"]) for r in found]


def folder_problem(folder: str) -> str:
    """Why events may not be written to `folder`, as far as looking at it tells (else "")."""
    path = Path(folder)
    if not path.is_dir():
        return "the folder is missing"
    if not os.access(path, os.W_OK):
        return "the folder is read-only"
    if shutil.disk_usage(path).free < 1 << 20:
        return "its file system is full"
    return ""


def pending_uuids(project_id: str) -> set[str]:
    return {str(u) for u in OutboxEvent.objects.filter(project_id=project_id).values_list("memory_uuid", flat=True)}

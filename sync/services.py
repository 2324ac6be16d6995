"""Reconcile (docs/contract.md §5): fold teammates' events into this machine's memories, publish local-only ones.

Idempotent, incremental and convergent:
- A file is new when it is not in the project's ledger (applied or bad), whatever its name.
  When the listing's sha256 equals the last complete pass's, the ledger is not even loaded.
- Each memory touched by a new file is re-folded from ALL its files (the ledger indexes
  files by memory uuid), so the result depends only on the set of files (sync.fold).
- A memory is applied (row written + its new files recorded in the ledger) in one
  transaction, with its row locked. A memory with a local change not yet in the log (an
  outbox row, or a row newer than its fold) is deferred: its files stay new, and the next
  pass folds them together with the local change's file.
- Embedding happens outside transactions; a logged vector is reused only when
  `[sync].reuse_embeddings` is on, its embedder id and dimension match ours, and it is of
  the current content.
Locks: a Postgres advisory lock per project, so two reconciles of one project never run at
once (the second reports `skipped`).

No file can block the log (docs/contract.md §5):
- An entry that cannot be ours (eventlog.scan), a file that breaks the schema, and a file naming
  a memory of another project are recorded as bad, never retried, and listed in every pass's
  `parse_errors` while they are in the log; the rest of the pass applies.
- A time later than this machine's clock plus `MAX_SKEW_NS` is read as that bound (listed in
  `clamped`), remembered in the ledger so the file keeps that time in every later fold: a
  teammate's wrong clock never makes an event win forever, and a local edit after it orders
  after it. Machines that first see such a file at different moments may order it differently
  against events made in between; events within the skew fold identically everywhere.
- Files this pass writes (embedding events, local-only memories) are written only after every
  memory of the pass is applied: a pass that fails writes nothing. The embedding event of a vector
  computed here is queued in the outbox in the transaction that stores the vector, so a pass killed
  after some batches committed still owes their events: the next flush (the sweep, or the next
  pass's first step) writes them. Before, they were lost for good: those memories were in the
  ledger with their vectors, so no later pass embedded them again.
"""

from __future__ import annotations

import hashlib
import logging
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict, get_type_hints

from django.db import transaction
from django.utils import timezone

from access import policy as access
from access.policy import is_personal
from memories.changes import memory_state
from memories.embedding import vector_index
from memories.embedding.embedders import Embedder, embeds, get_embedder
from memories.lifecycle import apply_remote_links
from memories.models import Memory, MemoryVector
from memories.scope import Scope, known_root, resolve, resolve_path
from memories.write import bulk_rows, remote
from yullu_core.errors import UserError
from yullu_core.locks import LockKey, advisory_lock
from yullu_core.metrics import count_reconcile
from yullu_core.timestamps import datetime_to_ns, format_ts, ns_to_datetime, parse_ts

from .eventlog import (
    EventLogError,
    event_filename,
    logs_dir,
    new_event,
    read_events,
    remove_stale_temps,
    scan,
    write_event,
)
from .fold import Folded, fold_all
from .models import LedgerEntry, LedgerStatus, OutboxEvent, ProjectSyncState, record_applied
from .outbox import adopt_held, embedding_event, flush, pending_uuids, sync_config
from .schema import Event

log = logging.getLogger(__name__)
APPLY_BATCH = 200  # memories per transaction: one commit (WAL flush) per batch, not per memory
RACE_WINDOW_NS = 10 * 10**9  # a local write committed while we listed is at most this much older
MAX_SKEW_NS = 5 * 60 * 10**9  # a teammate's clock may run this far ahead of ours before its times are clamped


class ReconcileResult(TypedDict, total=False):
    """What a reconcile answers (MCP reconcile_memories, POST /api/sync/reconcile, `yullu reconcile`)."""

    project_id: str
    events_scanned: int
    events_new: int
    created: int
    updated: int
    deleted: int
    embeddings_reused: int
    embeddings_computed: int
    local_only_logged: int
    parse_errors: list[dict[str, str]]
    clamped: list[dict[str, str]]
    no_event_dir: bool
    skipped: bool


# The counters every result starts at 0: the result's int fields, in their declared order.
COUNTERS = tuple(name for name, kind in get_type_hints(ReconcileResult).items() if kind is int)


def listing_sha256(names: set[str]) -> str:
    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()


def _datetime(value: str | None) -> datetime | None:
    return None if value is None else ns_to_datetime(parse_ts(value))


def embedder_dim(embedder: Embedder) -> int | None:
    row = MemoryVector.objects.filter(embedder=embedder.id).values_list("dim", flat=True).first()
    return int(row) if row else None


@count_reconcile
def reconcile_scope(scope: Scope) -> ReconcileResult:
    access.require(scope.project_id, access.WRITE)
    # Personal memories never reach a team log, whatever location a scope claims (issue 33).
    git_root = None if is_personal(scope.project_id) else scope.git_root or known_root(scope.project_id)
    # mypy cannot check TypedDict keys computed at run time; COUNTERS are ReconcileResult's int keys.
    base: ReconcileResult = {"project_id": scope.project_id, **dict.fromkeys(COUNTERS, 0)}  # type: ignore[typeddict-item]
    base |= {"parse_errors": [], "clamped": []}
    if git_root is None:
        return {**base, "no_event_dir": True}
    cfg = sync_config(scope.project_id, git_root)
    folder = logs_dir(git_root, cfg["dir"])
    with advisory_lock(LockKey.RECONCILE, scope.project_id) as got:
        if not got:
            return {**base, "skipped": True}
        return Reconcile(scope.project_id, folder, cfg, base).run()


@dataclass
class Reconcile:
    project_id: str
    folder: Path
    cfg: dict[str, Any]
    result: ReconcileResult
    written: list[tuple[str, str]] = field(default_factory=list)  # (file name, memory uuid) we wrote
    to_write: list[Event] = field(default_factory=list)  # written once every memory of the pass is applied
    embedding_events: dict[str, Event] = field(default_factory=dict)  # memory uuid -> the event of its new vector
    queued: list[int] = field(default_factory=list)  # outbox rows of those events, committed with their batch
    clamps: dict[str, int] = field(default_factory=dict)  # file name -> the latest time its events are read at
    deferred: int = 0
    started_ns: int = field(default_factory=time.time_ns)

    def run(self) -> ReconcileResult:
        adopt_held(self.project_id, self.folder)  # edits made while the checkout was elsewhere are logged here
        flush(project_id=self.project_id)  # our own committed changes reach the log first
        remove_stale_temps(self.folder)
        if not self.folder.is_dir():
            self.result["no_event_dir"] = True
        listing = scan(self.folder)
        names = listing.all_names
        self.result["events_scanned"] = len(names)
        new_names = self._new_names(names)
        self.result["events_new"] = len(new_names)
        refused = [{"file": n, "error": why} for n, why in sorted(listing.refused.items()) if n in new_names]
        new = read_events(self.folder, sorted(new_names - set(listing.refused)))
        # A file left mid-merge is listed, not recorded as bad: it is read again once resolved.
        unmerged = [e for e in new.parse_errors if e["file"] in new.unmerged]
        self.deferred += len(unmerged)
        self._record_bad(refused + [e for e in new.parse_errors if e["file"] not in new.unmerged])
        new_events = self._clamp_new(new.events)
        new_by_memory: dict[str, list[str]] = {}
        for name, event in new_events:
            files = new_by_memory.setdefault(str(event.memory_id), [])
            if name not in files:
                files.append(name)
        self._refuse_foreign(new_by_memory)
        new_events = [(n, e) for n, e in new_events if str(e.memory_id) in new_by_memory]
        self._apply(new_by_memory, new_events)
        self._publish_local_only(set(new_by_memory))
        self._write_files()
        self._record_written()
        self.result["parse_errors"] = self._bad_in(names) + unmerged
        if not self.deferred:
            listed = names | {n for n, _ in self.written}
            listed_sha = listing_sha256(listed)
            defaults: dict[str, Any] = {
                "listing_sha256": listed_sha,
                "reconciled_at": timezone.now(),
                "log_files": len(listed),
            }
            # The memory count only changes when files do, or is not known: compaction drops the state
            # (its snapshots are already in the ledger, so nothing is new), and a count of 0 made
            # doctor and the dashboard advise compacting a just-compacted log of N memories. Files our
            # own writes added are in the ledger already (outbox.flush), so a changed listing counts too.
            before = ProjectSyncState.objects.filter(project_id=self.project_id).values_list(
                "listing_sha256", flat=True
            )
            if new_names or self.written or list(before) != [listed_sha]:
                defaults["log_memories"] = self._logged_memories()
            ProjectSyncState.objects.update_or_create(project_id=self.project_id, defaults=defaults)
        return self.result

    def _logged_memories(self) -> int:
        return (
            LedgerEntry.objects.filter(project_id=self.project_id, status=LedgerStatus.APPLIED)
            .values("memory_uuid")
            .distinct()
            .count()
        )

    def _new_names(self, names: set[str]) -> set[str]:
        state = ProjectSyncState.objects.filter(project_id=self.project_id).first()
        if state and state.listing_sha256 == listing_sha256(names):
            return set()  # nothing arrived or left since the last complete pass
        known = set(LedgerEntry.objects.filter(project_id=self.project_id).values_list("name", flat=True))
        return names - known

    def _bad_in(self, names: set[str]) -> list[dict[str, str]]:
        """Every file of the log recorded as bad (now or in an earlier pass), once each."""
        bad = LedgerEntry.objects.filter(project_id=self.project_id, status=LedgerStatus.BAD).values_list(
            "name", "error"
        )
        return [{"file": n, "error": e} for n, e in sorted(bad) if n in names]

    def _clamp_new(self, events: list[tuple[str, Event]]) -> list[tuple[str, Event]]:
        """Times beyond our clock plus the skew are read as that bound (and recorded with the file)."""
        bound = self.started_ns + MAX_SKEW_NS
        for name, event in events:
            if event.ts_ns > bound or (event.created_at and parse_ts(event.created_at) > bound):
                if name not in self.clamps:
                    self.result["clamped"].append({"file": name, "ts": event.ts, "read_as": format_ts(bound)})
                self.clamps[name] = bound
        return [(n, clamp(e, self.clamps.get(n))) for n, e in events]

    def _refuse_foreign(self, new_by_memory: dict[str, list[str]]) -> None:
        """Files naming a memory that lives in another project are bad: never applied, never re-embedded."""
        foreign = set(
            str(u)
            for u in Memory.objects.filter(uuid__in=list(new_by_memory))
            .exclude(project_id=self.project_id)
            .values_list("uuid", flat=True)
        )
        errors = [
            {"file": n, "error": f"names memory {u}, which belongs to another project; not applied"}
            for u in sorted(foreign)
            for n in new_by_memory.pop(u)
        ]
        self._record_bad(errors)

    def _record_bad(self, errors: list[dict[str, str]]) -> None:
        LedgerEntry.objects.bulk_create(
            [
                LedgerEntry(project_id=self.project_id, name=e["file"], status=LedgerStatus.BAD, error=e["error"])
                for e in errors
            ],
            ignore_conflicts=True,
        )

    def _all_events(self, new_by_memory: dict[str, list[str]], new_events: list[tuple[str, Event]]) -> list[Event]:
        """The new events plus every earlier file of the memories they touch (at their recorded clamp)."""
        old_clamps = dict(
            LedgerEntry.objects.filter(
                project_id=self.project_id, status=LedgerStatus.APPLIED, memory_uuid__in=list(new_by_memory)
            ).values_list("name", "clamped_ns")
        )
        new_names = {n for n, _ in new_events}
        old = read_events(self.folder, sorted(set(old_clamps) - new_names))  # a file that went bad since is ignored
        return [e for _, e in new_events] + [
            clamp(e, old_clamps[n]) for n, e in old.events if str(e.memory_id) in new_by_memory
        ]

    def _apply(self, new_by_memory: dict[str, list[str]], new_events: list[tuple[str, Event]]) -> None:
        if not new_by_memory:
            return
        folded = fold_all(self._all_events(new_by_memory, new_events))
        embedder = get_embedder()
        vectors = self._vectors(folded, embedder)
        uuids = sorted(new_by_memory)
        dim = len(next(iter(vectors.values()))[1]) if vectors else 0  # a first reconcile has none stored yet
        with vector_index.paused_for_load(embedder.id, dim, len(vectors)) if dim else nullcontext():
            for start in range(0, len(uuids), APPLY_BATCH):
                with transaction.atomic():  # rows and their ledger entries commit together, a batch at a time
                    self._apply_batch(uuids[start : start + APPLY_BATCH], folded, vectors, new_by_memory)
        for uuid_ in uuids:  # after every memory of the pass exists: links name others
            f = folded[uuid_]
            if f.exists and (f.fields.get("supersedes") or f.fields.get("links")):
                apply_remote_links(self.project_id, uuid_, f.fields.get("supersedes"), f.fields.get("links"), f.author)

    def _vectors(self, folded: dict[str, Folded], embedder: Embedder) -> dict[str, tuple[str, list[float]]]:
        """Per memory that needs a vector of our embedder: a reused logged one or a fresh one."""
        rows = Memory.objects.filter(uuid__in=[u for u, f in folded.items() if f.exists])
        local, foreign = {}, set()
        for u, text, project_id in rows.values_list("uuid", "content", "project_id"):
            if project_id == self.project_id:
                local[str(u)] = text
            else:
                foreign.add(str(u))  # another project's memory (_apply_one leaves it alone): no vector, no event here
        alive = [u for u, f in folded.items() if f.exists and u not in foreign]
        have = {
            str(u)
            for u in MemoryVector.objects.filter(memory__uuid__in=alive, embedder=embedder.id).values_list(
                "memory__uuid", flat=True
            )
        }
        dim = embedder_dim(embedder)
        chosen: dict[str, tuple[str, list[float]]] = {}
        to_embed: list[str] = []
        for uuid_ in alive:
            content = folded[uuid_].content
            if uuid_ in local and local[uuid_] == content and uuid_ in have:
                continue  # already has our vector of this content
            logged = folded[uuid_].vector_for(embedder.id) if self.cfg["reuse_embeddings"] else None
            if logged is not None and (dim is None or len(logged) == dim):
                chosen[uuid_] = (embedder.id, logged)
                self.result["embeddings_reused"] += 1
            elif embeds(embedder):
                to_embed.append(uuid_)
        if to_embed:
            fresh = embedder.embed([folded[u].content or "" for u in to_embed])  # outside any transaction
            for uuid_, vec in zip(to_embed, fresh, strict=True):
                chosen[uuid_] = (embedder.id, [float(x) for x in vec])
                self.result["embeddings_computed"] += 1
                if self.cfg["log_embeddings"]:
                    ts = max(folded[uuid_].content_ns, folded[uuid_].updated_ns or 0)
                    event = embedding_event(uuid_, ts, embedder.id, vec, folded[uuid_].content or "")
                    self.embedding_events[uuid_] = event
        return chosen

    def _apply_batch(
        self,
        uuids: list[str],
        folded: dict[str, Folded],
        vectors: dict[str, tuple[str, list[float]]],
        new_by_memory: dict[str, list[str]],
    ) -> None:
        """Call inside the batch's transaction; locks the batch's existing rows. Memories this
        machine does not have yet (a first reconcile: nearly all) are inserted together."""
        rows = {str(m.uuid): m for m in Memory.objects.select_for_update().filter(uuid__in=uuids)}
        pending = {
            str(u)
            for u in OutboxEvent.objects.filter(project_id=self.project_id, memory_uuid__in=uuids).values_list(
                "memory_uuid", flat=True
            )
        }
        fresh: list[tuple[str, remote.RemoteState, tuple[str, list[float]] | None]] = []
        applied: list[str] = []
        for uuid_ in uuids:
            f, row = folded[uuid_], rows.get(uuid_)
            if row is None and uuid_ not in pending and f.exists and not f.deleted:
                fresh.append((uuid_, _remote_state(f), vectors.get(uuid_)))
                applied.append(uuid_)
            elif self._apply_one(uuid_, f, vectors.get(uuid_), row, uuid_ in pending):
                applied.append(uuid_)
        remote.create_remote_many(self.project_id, fresh)
        self.result["created"] += len(fresh)
        files = [(n, uuid_, self.clamps.get(n)) for uuid_ in applied for n in new_by_memory[uuid_]]
        record_applied(self.project_id, files)
        self._queue_embedding_events(applied)

    def _queue_embedding_events(self, applied: list[str]) -> None:
        """Inside the batch's transaction: the events of the vectors it stores, owed to the log from its commit."""
        events = [self.embedding_events[u] for u in applied if u in self.embedding_events]
        folder = str(self.folder)
        rows = [OutboxEvent(project_id=self.project_id, memory_uuid=e.memory_id, folder=folder, payload=e.to_wire())
                for e in events]  # fmt: skip
        self.queued += [row.pk for row in bulk_rows.insert(OutboxEvent, rows)] if rows else []

    def _apply_one(
        self, uuid_: str, folded: Folded, vector: tuple[str, list[float]] | None, row: Memory | None, pending: bool
    ) -> bool:
        """One memory that exists here or is deleted; False when deferred (its files stay new)."""
        if row is not None and row.project_id != self.project_id:  # moved there since _refuse_foreign
            log.warning("event files for memory %s name project %s; it belongs to another", uuid_, self.project_id)
            self.deferred += 1  # its files stay new: the next pass records them as bad
            return False
        if pending or self._deferred(folded, row):
            self.deferred += 1
            return False
        elif folded.deleted:
            self._count(remote.apply_remote_state(self.project_id, uuid_, None, memory=row, author=folded.author))
        elif folded.exists:
            state = _remote_state(folded)
            self._count(remote.apply_remote_state(self.project_id, uuid_, state, vector, memory=row))
        return True

    def _deferred(self, folded: Folded, row: Memory | None) -> bool:
        """A local change this fold does not contain yet (its event is still in the outbox — the
        caller checks that — or was written after our listing): leave the row as it is; its files
        are re-folded next pass."""
        if row is None or folded.updated_ns is None:
            return False
        row_ns = datetime_to_ns(row.updated_at)
        return row_ns > folded.updated_ns // 1000 * 1000 and row_ns >= self.started_ns - RACE_WINDOW_NS

    def _count(self, outcome: str) -> None:
        if outcome in ("created", "updated", "deleted"):
            # mypy does not narrow a str by `in` to these literal keys.
            self.result[outcome] += 1  # type: ignore[literal-required]

    def _write(self, event: Event) -> None:
        self.to_write.append(event)

    def _write_files(self) -> None:
        memory_of = {event_filename(e): str(e.memory_id) for e in self.embedding_events.values()}
        for _, _, name in flush(ids=self.queued) if self.queued else []:
            self.written.append((name, memory_of[name]))
        for event in self.to_write:
            try:
                self.written.append((write_event(self.folder, event), str(event.memory_id)))
            except EventLogError as exc:  # a name taken by other content: that one file is left out
                log.warning("reconcile of %s: %s", self.project_id, exc)

    def _publish_local_only(self, touched: set[str]) -> None:
        """Local rows that have no event in the log (e.g. stored before the repo was known) → `create`."""
        logged = LedgerEntry.objects.filter(project_id=self.project_id, memory_uuid__isnull=False).values("memory_uuid")
        rows = Memory.objects.filter(project_id=self.project_id).exclude(uuid__in=logged).order_by("created_at", "id")
        skip = touched | pending_uuids(self.project_id)
        embedder = get_embedder()
        for memory in rows:
            uuid_ = str(memory.uuid)
            if uuid_ in skip:
                continue
            ts = datetime_to_ns(memory.updated_at)
            state = {k: v for k, v in memory_state(memory).items() if v is not None or k == "category"}
            self._write(new_event("create", uuid_, ts, created_at=format_ts(datetime_to_ns(memory.created_at)),
                                   **state))  # fmt: skip
            vec = MemoryVector.objects.filter(memory=memory, embedder=embedder.id).values_list("vector", flat=True)
            if self.cfg["log_embeddings"] and vec:
                self._write(embedding_event(uuid_, ts, embedder.id, list(vec[0]), memory.content))
            self.result["local_only_logged"] += 1

    def _record_written(self) -> None:
        record_applied(self.project_id, [(n, u, None) for n, u in self.written])


def _remote_state(folded: Folded) -> remote.RemoteState:
    return remote.RemoteState(
        content=folded.content or "",
        tags=list(folded.fields["tags"] or []),
        category=folded.fields["category"],
        created_at=ns_to_datetime(folded.created_ns or 0),
        updated_at=ns_to_datetime(folded.updated_ns or 0),
        importance=folded.fields["importance"],
        expires_at=_datetime(folded.fields["expires_at"]),
        anchors=folded.fields["anchors"],
        author=folded.author,
        creator=folded.creator,
    )


def clamp(event: Event, bound: int | None) -> Event:
    """`event` with its times no later than `bound` (None: as it is)."""
    if bound is None:
        return event
    update = {}
    if event.ts_ns > bound:
        update["ts"] = format_ts(bound)
    if event.created_at and parse_ts(event.created_at) > bound:
        update["created_at"] = format_ts(bound)
    return event.model_copy(update=update) if update else event


def ledger_clamps(project_id: str) -> dict[str, int]:
    """The clamp recorded for each file of the project's log read with one (sync.compact folds with them)."""
    rows = LedgerEntry.objects.filter(project_id=project_id, clamped_ns__isnull=False).values_list("name", "clamped_ns")
    return {name: bound for name, bound in rows if bound is not None}


def checkout_of(scope: Scope, cwd: str | None) -> Path:
    """The git checkout of `scope` (the folder's, else the one last seen for its project). UserError saying
    what is wrong with `cwd` when there is none: it was passed, so "pass --cwd" would not help."""
    root = scope.git_root or known_root(scope.project_id)
    if root is not None:
        return root
    folder = f"{cwd} is" if cwd else "this folder is"
    # With --project naming another project, the folder may well be a checkout: of that other project (walk 22).
    other = resolve_path(cwd) if cwd else None
    if other is not None and other.git_root is not None:
        raise UserError(
            f"{folder} a checkout of {other.project_id}, not of {scope.project_id}, and no checkout of "
            f"{scope.project_id} is known; run it (or give --cwd) inside {scope.project_id}'s git checkout."
        )
    raise UserError(
        f"{folder} not inside a git repository and no checkout of {scope.project_id} is known; run it (or give "
        "--cwd) inside the project's git checkout."
    )


def reconcile_folder(cwd: str, project_id: str | None) -> ReconcileResult:
    """Reconcile the project of a folder (or of `project_id`) now, as `yullu reconcile` asks."""
    scope = resolve(project_id, cwd)
    checkout_of(scope, cwd)
    return reconcile_scope(scope)

"""`yullu sync compact`: fold a long event log into one snapshot per memory.

Each memory's files are replaced by what they fold to (sync.fold):
- a live memory → one `create` carrying every field, stamped with the memory's last change
  (so it orders exactly where that change did) and its first event's time in `created_at`,
  plus one `embedding` per embedder whose vector is of the current content (with its sha256);
- a deleted memory → one `delete` (a tombstone, so a teammate who still has it deletes it);
- a history with no content anywhere (orphan updates) is left as it is; bad files are left too.
Snapshot ids are derived from the folded state, so two teammates compacting the same log write
byte-identical files (git merges them cleanly), and compacting twice changes nothing.

A teammate who had applied some of the old files folds the snapshot to the same state; one who
had applied none gets the whole state from it. Safe whenever every teammate has pushed the events
they made before the compaction: an unpushed edit older than a snapshot would be ordered before
it and lose to it (per-field times are folded into the snapshot's one time). Edits made after
pulling the compaction are unaffected. Compact reconciles first; commit the result.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict

from memories.models import Memory
from memories.scope import Scope
from yullu_core.errors import UserError
from yullu_core.locks import LockKey, advisory_lock
from yullu_core.timestamps import format_ts

from .eventlog import event_filename, logs_dir, read_events, remove_stale_temps, write_events
from .fold import Folded, fold
from .models import LedgerEntry, ProjectSyncState
from .outbox import flush, name_of, sync_config
from .schema import Event, content_sha256
from .services import checkout_of, clamp, ledger_clamps, reconcile_scope

Names = tuple[str | None, str | None]  # (who wrote it, who changed it last)
NAMESPACE = uuid.UUID("5e1f0c0a-7c1b-4f5e-9d43-0b9a6a3c2d11")


class CompactResult(TypedDict):
    project_id: str
    files_before: int
    files_after: int
    memories: int
    tombstones: int
    left_alone: int
    dry_run: bool


def _known_names(project_id: str, root: str, by_memory: dict[str, list[tuple[str, Event]]]) -> dict[str, Names]:
    """Who this machine's rows say wrote and last changed each memory, for a fold that names no one: an older
    version's compaction wrote snapshots without created_by / updated_by, and a machine that had applied the
    history before still holds the names (reconcile leaves a row's writer as it is). Compacting here writes them
    back into the log, so teammates who joined since learn them (round 24)."""
    rows = Memory.objects.filter(project_id=project_id, uuid__in=list(by_memory)).values_list(
        "uuid", "created_by_id", "created_author", "updated_by_id", "updated_author"
    )

    def name(user_id: int | None, author: str) -> str | None:
        return author or (name_of(user_id, project_id, root) if user_id is not None else None)

    return {str(u): (name(cb, ca), name(ub, ua)) for u, cb, ca, ub, ua in rows}


def _with_known_names(folded: Folded, known: Names | None) -> Folded:
    if folded.deleted or known is None or (folded.creator and folded.author):
        return folded
    return replace(folded, creator=folded.creator or known[0], author=folded.author or known[1])


def _snapshot(memory_uuid: str, folded: Folded) -> list[Event]:
    ts = folded.updated_ns or 0
    base = {"memory_id": memory_uuid, "ts": format_ts(ts)}
    fields: dict[str, Any] = {k: v for k, v in folded.fields.items() if v is not None or k == "category"}
    # Who wrote it and who changed it last, as the history named them (the admin and get_memory show both).
    # Not as `author`: an older peer takes a create's author for its writer, and would credit the last editor
    # (review 23); with these two fields it sees no author, as before snapshots kept them.
    authors = {k: v for k, v in (("created_by", folded.creator), ("updated_by", folded.author)) if v}
    if folded.deleted:  # a delete's author is who deleted it, for every version
        authors = {"author": folded.author} if folded.author else {}
    # The id depends only on the state, so compacting a compacted log (or the same log twice) is a fixpoint;
    # the authors count only when named, so a log compacted before they were kept keeps its snapshot ids.
    state = json.dumps([memory_uuid, ts, folded.created_ns, folded.deleted, fields], sort_keys=True)
    snap_id = uuid.uuid5(NAMESPACE, state + (json.dumps(authors, sort_keys=True) if authors else ""))
    if folded.deleted:
        return [Event.model_validate({**base, **authors, "id": str(snap_id), "type": "delete"})]
    created_at = format_ts(folded.created_ns or ts)
    create = Event.model_validate(
        {**base, **fields, **authors, "id": str(snap_id), "type": "create", "created_at": created_at}
    )
    events = [create]
    for embedder in sorted(folded.vectors):
        vector = folded.vector_for(embedder)
        if vector is not None:
            event_id = uuid.uuid5(NAMESPACE, f"{snap_id}:{embedder}")
            events.append(
                Event.model_validate(
                    {
                        **base,
                        "id": str(event_id),
                        "type": "embedding",
                        "embedder": embedder,
                        "vector": vector,
                        "content_sha256": content_sha256(folded.content or ""),
                    }  # fmt: skip
                )
            )
    return events


def compact(scope: Scope, dry_run: bool = False, cwd: str | None = None) -> CompactResult:
    git_root = checkout_of(scope, cwd)
    folder = logs_dir(git_root, sync_config(scope.project_id, git_root)["dir"])
    if not dry_run:
        reconcile_scope(Scope(scope.project_id, git_root))  # apply teammates' files before replacing them
    with advisory_lock(LockKey.RECONCILE, scope.project_id) as got:
        if not got:
            raise UserError("a reconcile of this project is running; try again in a moment.")
        return _compact(scope.project_id, folder, dry_run, str(git_root))


def _compact(project_id: str, folder: Path, dry_run: bool, git_root: str) -> CompactResult:
    flush(project_id=project_id)
    if not dry_run:
        remove_stale_temps(folder)  # a compaction killed while linking left one per snapshot
    read = read_events(folder)
    by_memory: dict[str, list[tuple[str, Event]]] = {}
    for name, event in read.events:
        by_memory.setdefault(str(event.memory_id), []).append((name, event))
    files_before = len({n for n, _ in read.events}) + len(read.parse_errors)
    result = CompactResult(project_id=project_id, files_before=files_before, files_after=0, memories=0,
                           tombstones=0, left_alone=0, dry_run=dry_run)  # fmt: skip
    keep: set[str] = {e["file"] for e in read.parse_errors}
    clamps = ledger_clamps(project_id)  # a teammate's future times, as reconcile read them
    known = _known_names(project_id, git_root, by_memory)
    writes: list[tuple[str, Event]] = []
    remove: set[str] = set()
    for memory_uuid, pairs in by_memory.items():
        folded = fold([clamp(e, clamps.get(n)) for n, e in pairs])
        names = {n for n, _ in pairs}
        if folded.content is None and not folded.deleted:
            result["left_alone"] += 1
            keep |= names
            continue
        snapshot = _snapshot(memory_uuid, _with_known_names(folded, known.get(memory_uuid)))
        result["tombstones" if folded.deleted else "memories"] += 1
        new_names = {event_filename(e) for e in snapshot}
        writes += [(event_filename(e), e) for e in snapshot]
        keep |= new_names
        remove |= names - new_names
    result["files_after"] = len(keep)
    if dry_run:
        return result
    write_events(folder, [event for _, event in writes])  # all snapshots are on disk before any old file goes
    for name in remove:
        (folder / name).unlink(missing_ok=True)
    # Snapshots stay new to our ledger: the next reconcile folds them once (a no-op when we were current).
    LedgerEntry.objects.filter(project_id=project_id, name__in=remove).delete()
    ProjectSyncState.objects.filter(project_id=project_id).delete()  # the listing changed
    return result

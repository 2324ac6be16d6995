"""Sync bookkeeping: the outbox of local changes waiting to become event files, and the
per-project ledger of event files already applied (or recorded as bad)."""

from __future__ import annotations

from django.db import connection, models
from django.utils import timezone


class OutboxEvent(models.Model):
    """An event a committed local write owes to the log. Inserted in the write's transaction;
    written to disk on commit (or by the periodic sweep after a crash), then deleted."""

    project_id = models.CharField(max_length=500)
    memory_uuid = models.UUIDField()
    folder = models.CharField(max_length=4000)  # the project's logs folder at write time
    payload = models.JSONField()  # the event, as written to the file
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["project_id", "memory_uuid"], name="outbox_project_memory")]


class LedgerStatus(models.TextChoices):
    APPLIED = "applied"
    BAD = "bad"


class LedgerEntry(models.Model):
    """One event file of a project's log that this machine has folded in (or found bad).

    Every file not in the ledger is new, whatever its name (docs/contract.md §5). `memory_uuid` finds all
    of a memory's files again when a new event for it arrives, so it is re-folded from all."""

    project_id = models.CharField(max_length=500)
    name = models.CharField(max_length=255)
    status = models.CharField(max_length=10, choices=LedgerStatus.choices)
    memory_uuid = models.UUIDField(null=True)
    error = models.TextField(blank=True, default="")
    # The latest time this file's events are read at: set when its `ts` was beyond our clock plus the
    # allowed skew the first time we saw it (sync.services MAX_SKEW_NS), so every later fold agrees.
    clamped_ns = models.BigIntegerField(null=True)
    recorded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "ledger entries"
        constraints = [models.UniqueConstraint(fields=["project_id", "name"], name="ledger_one_row_per_file")]
        indexes = [models.Index(fields=["project_id", "memory_uuid"], name="ledger_project_memory")]


def record_applied(project_id: str, files: list[tuple[str, str, int | None]]) -> None:
    """Ledger rows for applied files, (name, memory uuid, clamp), in one statement; a file already
    recorded is left as it is. Every file this machine writes is entered too (a reconcile's and the
    outbox's): its state is already ours, and a memory with a file is never published again as local-only.
    (bulk_create adapted every value in Python: two rows per memory of a first reconcile.)"""
    if not files:
        return
    names, uuids, clamps = (list(column) for column in zip(*files, strict=True))
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {LedgerEntry._meta.db_table} "
            "(project_id, name, status, memory_uuid, clamped_ns, error, recorded_at) "
            "SELECT %s, name, %s, memory_uuid, clamped_ns, '', now() "
            "FROM unnest(%s::text[], %s::uuid[], %s::bigint[]) AS f(name, memory_uuid, clamped_ns) "
            "ON CONFLICT DO NOTHING",
            [project_id, LedgerStatus.APPLIED, names, uuids, clamps],
        )


class ProjectSyncState(models.Model):
    """What the last complete reconcile of a project saw: a sha256 over its log's file names
    (files are never rewritten, so the names address the content) and when it ran."""

    project_id = models.CharField(max_length=500, primary_key=True)
    listing_sha256 = models.CharField(max_length=64, blank=True, default="")
    reconciled_at = models.DateTimeField(null=True)
    # The log's size at that pass, for the "compaction would help" advice (sync.hygiene): counted
    # when the files are listed anyway, so the dashboard and doctor never list a large folder.
    log_files = models.PositiveIntegerField(default=0, db_default=0)
    log_memories = models.PositiveIntegerField(default=0, db_default=0)

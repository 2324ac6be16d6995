"""Memories, their per-embedder vectors, the recall/activity log, usage and small metadata."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex, HashIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models.fields.json import KeyTransform
from django.utils import timezone
from pgvector.django import VectorField


class Category(models.TextChoices):
    PROCESS = "process", "process"
    DECISION = "decision", "decision"
    GOTCHA = "gotcha", "gotcha"
    DOMAIN = "domain", "domain"
    STYLE = "style", "style"


CATEGORIES = tuple(c.value for c in Category)


class Importance(models.TextChoices):
    LOW = "low", "low"
    NORMAL = "normal", "normal"
    HIGH = "high", "high"


IMPORTANCES = tuple(i.value for i in Importance)

# Memories of one conversation carry this tag (plus the session id); retrieval lets them lend each
# other rank (queries.fuse). Dreaming adds it to what it extracts; a client may pass its session_id.
# Declared here because the write side and the read side (memories.search.queries) both need it.
SESSION_TAG = "session:"


# What "current" means, in plain SQL, for probes that skip the ORM's query building (cost only:
# memories.write.nearby._has_current, docs/benchmarks.md round nineteen): `%(now)s` is the caller's clock.
# It must select exactly the rows of MemoryQuerySet.current() below; change both together
# (tests/test_leftovers18.py builds a row in every lifecycle state and compares the two).
CURRENT_WHERE = "superseded_by_id IS NULL AND held_reason = '' AND (expires_at IS NULL OR expires_at > %(now)s)"


class MemoryQuerySet(models.QuerySet["Memory"]):
    def current(self) -> MemoryQuerySet:
        """What default retrieval, listings and context see: neither superseded, expired nor held for review.
        Spelled in SQL as CURRENT_WHERE above."""
        return self.filter(superseded_by__isnull=True, held_reason="").exclude(expires_at__lte=timezone.now())


class Memory(models.Model):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project_id = models.CharField(max_length=500)
    content = models.TextField()
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    category = models.CharField(max_length=20, choices=Category.choices, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    rating = models.PositiveSmallIntegerField(null=True, blank=True)
    rating_comment = models.TextField(blank=True, default="")
    # db_default too: rows written by raw SQL (tools, older code) get a value as well.
    importance = models.CharField(
        max_length=10, choices=Importance.choices, default=Importance.NORMAL, db_default=Importance.NORMAL
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    # Who stored and who last changed it (docs/contract.md §11); null: the system (dreaming, a teammate's
    # event, the CLI).
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Set when a newer memory replaces this one: kept for history, out of default retrieval.
    superseded_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="supersedes"
    )
    # A teammate's display name (their sync event's `author`, docs/contract.md §11) when the log, not a user of this
    # machine, created it / last changed it: there is no user row for them, and created_by / updated_by alone showed
    # null (walk 17). Empty for local writes; the wire's created_by / updated_by fall back to these.
    created_author = models.CharField(max_length=150, blank=True, default="", db_default="")
    updated_author = models.CharField(max_length=150, blank=True, default="", db_default="")
    # Why a memory is held for review (its text instructs the assistant: memories.write.poisoning); a held
    # memory is stored but never retrieved or injected until a person approves it in the admin.
    held_reason = models.CharField(max_length=300, blank=True, default="", db_default="")
    # Full-text search lives beside the row so keyword and vector search share one transaction.
    search = models.GeneratedField(
        expression=SearchVector("content", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    objects = MemoryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "memories"
        indexes = [
            GinIndex(fields=["search"], name="memory_search_gin"),
            GinIndex(fields=["tags"], name="memory_tags_gin"),  # a session's memories (queries)
            models.Index(fields=["project_id", "-updated_at"], name="memory_project_updated"),
            models.Index(fields=["project_id", "rating"], name="memory_project_rating"),
            # a question's date window (expansion.nearest_in_windows): a range read, not a scan of the project
            models.Index(fields=["project_id", "created_at"], name="memory_project_created"),
            # The review queue, newest unrated first across projects: read in order and stopped at a
            # page, with the visibility filter checked per row (no project prefix to pin).
            models.Index(
                fields=["-created_at", "-id"], name="memory_unrated_created", condition=models.Q(rating__isnull=True)
            ),
            # The memories list, newest change first across projects (the admin's default order): read
            # in order and stopped at a page instead of sorting every visible memory (0.35-0.43 s at 1M).
            models.Index(fields=["-updated_at", "-id"], name="memory_updated"),
            # A store's exact-text duplicate check (memories.write.nearby): without it the check read
            # every row of the project (28 ms of a store at 100k memories in one project). A hash index,
            # as a B-tree refuses entries over a third of a page and a memory holds up to 8,000 chars.
            HashIndex(fields=["content"], name="memory_content_hash"),
        ]

    def __str__(self) -> str:
        return self.content[:80]


class MemoryVector(models.Model):
    """One vector per (memory, embedder id). HNSW indexes are partial, one per embedder
    (created at run time by `memories.embedding.vector_index.ensure_index`), on `vector::vector(dim)`."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="vectors")
    project_id = models.CharField(max_length=500)
    embedder = models.CharField(max_length=200)
    dim = models.PositiveIntegerField()
    vector = VectorField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["memory", "embedder"], name="one_vector_per_embedder")]
        indexes = [models.Index(fields=["embedder", "project_id"], name="vector_embedder_project")]


class MemoryTally(models.Model):
    """Memories per (project, category), kept by triggers on memories_memory (migration 0013): every
    write adds a signed row here in its own transaction (COPY, reconcile, import, delete, expiry and
    raw SQL alike), and `memories.tallies` sums them. Delta rows, not one counter per key, so
    concurrent writers never wait on a shared row; `tallies.fold` merges them now and then."""

    project_id = models.CharField(max_length=500)
    category = models.CharField(max_length=20, null=True)
    memories = models.BigIntegerField()
    unrated = models.BigIntegerField()


class VectorTally(models.Model):
    """Vectors per (project, embedder), kept like MemoryTally by triggers on memories_memoryvector."""

    project_id = models.CharField(max_length=500)
    embedder = models.CharField(max_length=200)
    vectors = models.BigIntegerField()


class ProjectLocation(models.Model):
    project_id = models.CharField(max_length=500, unique=True)
    git_root = models.CharField(max_length=4000)
    last_seen = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.project_id} → {self.git_root}"


class ArchiveReason(models.TextChoices):
    REJECTED = "rejected"  # rated 1–5 by a reviewer: an anti-example for dreaming
    EXPIRED = "expired"  # its ttl ran out: pruned, not a judgement on its quality


class RejectedMemory(models.Model):
    """Archived memories: rated 1–5 (kept as anti-examples for dreaming) or expired (pruned)."""

    uuid = models.UUIDField()
    project_id = models.CharField(max_length=500)
    content = models.TextField()
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    category = models.CharField(max_length=20, null=True, blank=True)
    rating = models.PositiveSmallIntegerField(null=True, blank=True)
    rating_comment = models.TextField(blank=True, default="")
    reason = models.CharField(
        max_length=20, choices=ArchiveReason.choices, default=ArchiveReason.REJECTED, db_default=ArchiveReason.REJECTED
    )
    rejected_at = models.DateTimeField(default=timezone.now)
    # What undoing a rejection gives back besides the text (memories.write.edit.restore_rejected): null /
    # empty on rows archived before these were kept.
    importance = models.CharField(max_length=10, choices=Importance.choices, null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    anchors = models.JSONField(default=list, blank=True)  # the code it cited, as pinned (anchors.store's wire form)
    # Where it came from, so an undone rejection gives the memory back as it was, not as made now by the
    # restorer from the admin (review 19): its creation time, who first wrote it (a user of this machine or a
    # teammate's name from the log), the channel of its create event (`dream`, `mcp`, `reconcile`...) and what
    # memories.origins said of it then (label, url, session, why). Null / empty on rows archived before 0022:
    # those restore as before (now, by the restorer, via the admin).
    created_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_author = models.CharField(max_length=150, blank=True, default="", db_default="")
    source = models.CharField(max_length=20, blank=True, default="", db_default="")
    origin = models.JSONField(default=dict, blank=True)
    # The memory's updated_at (its last event's time) when archived: its delete event was stamped after it, and
    # a restore's create event must come after that delete, also when a teammate's clock ran ahead (0025).
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "rejected memory"
        verbose_name_plural = "rejected memories"
        indexes = [models.Index(fields=["project_id", "-rejected_at"], name="rejected_project_time")]


class EventKind(models.TextChoices):
    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"
    RECALLED = "recalled"
    CONSIDERED = "considered"


class MemoryEvent(models.Model):
    """Activity and recall log. `metadata` for recalls: recall_id, query, similarity, rank."""

    kind = models.CharField(max_length=20, choices=EventKind.choices)
    memory = models.ForeignKey(Memory, on_delete=models.SET_NULL, null=True, blank=True, related_name="events")
    memory_uuid = models.UUIDField(null=True)
    project_id = models.CharField(max_length=500)
    recall_id = models.UUIDField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["kind", "-created_at"], name="event_kind_time"),
            models.Index(fields=["recall_id"], name="event_recall"),
            models.Index(fields=["project_id", "-created_at"], name="event_project_time"),
            # The 30 days' activity per day and kind (stats, dashboard) read from the index alone: the
            # rows' pages were 320 of its 370 ms at 1M memories (docs/benchmarks.md).
            models.Index(fields=["created_at"], include=["kind", "project_id"], name="event_time_kind"),
            # Who wrote a memory (the admin's source filter, search.admin_queries.source_filter): the
            # create events of one source without reading every create event.
            models.Index(
                KeyTransform("source", "metadata"),
                "memory",
                name="event_created_source",
                condition=models.Q(kind="created"),
            ),
            # The 30 days' recalls (the top recalled memories, recalls per project) read from the index
            # alone: a cold recall log cost 0.2 s of heap reads per query at 1M memories.
            models.Index(
                fields=["created_at"],
                include=["project_id", "memory_id", "recall_id"],
                name="event_recalled_time",
                condition=models.Q(kind="recalled"),
            ),
            # The recall log newest first (admin Retrievals page): only rows of a search carry a recall_id.
            models.Index(
                fields=["-created_at", "-id"], name="event_recall_time", condition=models.Q(recall_id__isnull=False)
            ),
        ]


class Usage(models.Model):
    """One row per direct provider call (embed or reason). Cost in USD microcents (1 USD = 10^8)."""

    provider = models.CharField(max_length=50)
    model = models.CharField(max_length=200)
    kind = models.CharField(max_length=20)  # "embed" | "reason"
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_microcents = models.BigIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    ok = models.BooleanField(default=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "usage"
        indexes = [models.Index(fields=["-created_at"], name="usage_time")]


class KeyValue(models.Model):
    """Small key/value store (backfill progress). Named `Meta` until migration 0006: a model with
    the name of Django's inner `class Meta` only confused readers."""

    key = models.CharField(max_length=500, primary_key=True)
    value = models.TextField()

    class Meta:
        verbose_name = "key/value entry"
        verbose_name_plural = "key/value entries"


class Term(models.Model):
    """BM25 postings: one row per (memory, lexeme). Written only by the `memories_term_sync`
    trigger (migration 0003), like an index; deleted with their memory."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+", db_index=False)
    project_id = models.CharField(max_length=500)
    lexeme = models.TextField()
    tf = models.IntegerField()
    dl = models.IntegerField()


class LinkKind(models.TextChoices):
    SUPERSEDES = "supersedes"
    CONTRADICTS = "contradicts"
    RELATED = "related"


class MemoryLink(models.Model):
    """A typed edge between two memories of one project. Open `contradicts` links (resolved_at
    null) are the conflicts queue. `source` says who wrote it (mcp, rest, admin, dream, sync)."""

    from_memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="links_out")
    to_memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="links_in")
    kind = models.CharField(max_length=20, choices=LinkKind.choices)
    project_id = models.CharField(max_length=500)
    source = models.CharField(max_length=20, default="api")
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=40, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["from_memory", "to_memory", "kind"], name="one_link_per_kind"),
            models.CheckConstraint(condition=~models.Q(from_memory=models.F("to_memory")), name="no_self_link"),
        ]
        indexes = [models.Index(fields=["project_id", "kind", "resolved_at"], name="link_project_kind")]

    def __str__(self) -> str:
        return f"{self.from_memory_id} {self.kind} {self.to_memory_id}"


class MemoryChange(models.Model):
    """History: one row per change to a memory, with who (source), what (action) and the fields
    before and after. Local only: never synced. Kept after the memory is deleted (memory null)."""

    memory = models.ForeignKey(Memory, on_delete=models.SET_NULL, null=True, blank=True, related_name="history")
    memory_uuid = models.UUIDField()
    project_id = models.CharField(max_length=500)
    action = models.CharField(max_length=30)
    source = models.CharField(max_length=20)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # The person (ratings, review actions and conflict resolutions are history rows too); null: the system.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # A teammate's change applied from the event log: the event's `author` (a display name; no user
    # row here names them). Empty for local changes (`user` says who) and for events without one.
    author = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        indexes = [
            models.Index(fields=["memory_uuid", "created_at"], name="change_memory_time"),
            models.Index(fields=["project_id", "-created_at"], name="change_project_time"),
            # The memory changes page, newest first across projects (admin: the trail of every change), read
            # in order and stopped at a page rather than sorting every history row.
            models.Index(fields=["-created_at", "-id"], name="change_time"),
        ]


class RecallFeedback(models.Model):
    """A verdict on one recalled memory: useful or not for that recall's query. Local only.
    `query` is copied from the recall log so ranking can ask "unhelpful for queries like this?"."""

    recall_id = models.UUIDField()
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="feedback")
    project_id = models.CharField(max_length=500)
    query = models.TextField(blank=True, default="")
    useful = models.BooleanField()
    comment = models.TextField(blank=True, default="")
    source = models.CharField(max_length=20, default="api")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The query's vector (by the embedder active when rated): ranking compares new queries with it.
    query_embedder = models.CharField(max_length=200, blank=True, default="")
    query_vector = VectorField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["recall_id", "memory"], name="one_verdict_per_recall")]
        indexes = [models.Index(fields=["project_id", "memory"], name="feedback_project_memory")]


class AnchorStatus(models.TextChoices):
    """docs/contract.md §12. `changed` and `missing` make the memory stale."""

    OK = "ok"
    MOVED = "moved"
    CHANGED = "changed"
    MISSING = "missing"


STALE_STATUSES = (AnchorStatus.CHANGED.value, AnchorStatus.MISSING.value)


class MemoryAnchor(models.Model):
    """A piece of code a memory cites (docs/contract.md §12): a file, a symbol in it or a line range, pinned to
    the commit, blob and normalised-text hash it had when written. `status` is the last check's
    verdict against the repository's HEAD `checked_head`; `current_*` say where the cited text is now
    (a rename or other lines). Pin fields are empty when no checkout was readable at write time."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="anchors")
    project_id = models.CharField(max_length=500)
    path = models.CharField(max_length=1000)
    symbol = models.CharField(max_length=300, blank=True, default="")
    line_start = models.PositiveIntegerField(null=True, blank=True)
    line_end = models.PositiveIntegerField(null=True, blank=True)
    commit = models.CharField(max_length=64, blank=True, default="")
    blob = models.CharField(max_length=64, blank=True, default="")
    text_hash = models.CharField(max_length=64, blank=True, default="")
    status = models.CharField(max_length=10, choices=AnchorStatus.choices, blank=True, default="")
    current_path = models.CharField(max_length=1000, blank=True, default="")
    current_start = models.PositiveIntegerField(null=True, blank=True)
    current_end = models.PositiveIntegerField(null=True, blank=True)
    checked_head = models.CharField(max_length=64, blank=True, default="")
    checked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["memory"], name="anchor_memory"),
            models.Index(fields=["project_id", "status"], name="anchor_project_status"),
        ]

    def __str__(self) -> str:
        return self.path + (f"::{self.symbol}" if self.symbol else "")

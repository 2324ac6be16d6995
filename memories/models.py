"""Memories, their per-embedder vectors, the recall/activity log, usage and small metadata."""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.utils import timezone
from pgvector.django import VectorField


class Category(models.TextChoices):
    PROCESS = "process", "process"
    DECISION = "decision", "decision"
    GOTCHA = "gotcha", "gotcha"
    DOMAIN = "domain", "domain"
    STYLE = "style", "style"


CATEGORIES = tuple(c.value for c in Category)


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
    # Full-text search lives beside the row so keyword and vector search share one transaction.
    search = models.GeneratedField(
        expression=SearchVector("content", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        verbose_name_plural = "memories"
        indexes = [
            GinIndex(fields=["search"], name="memory_search_gin"),
            models.Index(fields=["project_id", "-updated_at"], name="memory_project_updated"),
            models.Index(fields=["project_id", "rating"], name="memory_project_rating"),
        ]

    def __str__(self) -> str:
        return self.content[:80]


class MemoryVector(models.Model):
    """One vector per (memory, embedder id). HNSW indexes are partial, one per embedder
    (created at run time by `memories.vector_index.ensure_index`), on `vector::vector(dim)`."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="vectors")
    project_id = models.CharField(max_length=500)
    embedder = models.CharField(max_length=200)
    dim = models.PositiveIntegerField()
    vector = VectorField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["memory", "embedder"], name="one_vector_per_embedder")]
        indexes = [models.Index(fields=["embedder", "project_id"], name="vector_embedder_project")]


class ProjectLocation(models.Model):
    project_id = models.CharField(max_length=500, unique=True)
    git_root = models.CharField(max_length=4000)
    last_seen = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.project_id} → {self.git_root}"


class RejectedMemory(models.Model):
    """Memories rated 1–5: kept as anti-examples for dreaming, removed from recall."""

    uuid = models.UUIDField()
    project_id = models.CharField(max_length=500)
    content = models.TextField()
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    category = models.CharField(max_length=20, null=True, blank=True)
    rating = models.PositiveSmallIntegerField()
    rating_comment = models.TextField(blank=True, default="")
    rejected_at = models.DateTimeField(default=timezone.now)

    class Meta:
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


class Meta(models.Model):
    """Small key/value store (sync watermarks, backfill progress)."""

    key = models.CharField(max_length=500, primary_key=True)
    value = models.TextField()

    class Meta:
        verbose_name = "meta value"


class Term(models.Model):
    """BM25 postings: one row per (memory, lexeme). Written only by the `memories_term_sync`
    trigger (migration 0003), like an index; deleted with their memory."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+", db_index=False)
    project_id = models.CharField(max_length=500)
    lexeme = models.TextField()
    tf = models.IntegerField()
    dl = models.IntegerField()

"""The local conversation buffer and dream-pass history. Raw messages never leave this database."""

from django.db import models
from django.utils import timezone

from yullu_core.locks import LockKey, held


class SessionMessage(models.Model):
    project_id = models.CharField(max_length=500)
    session_id = models.CharField(max_length=200)
    role = models.CharField(max_length=10, choices=[("user", "user"), ("assistant", "assistant")])
    content = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["project_id", "session_id", "id"], name="msg_project_session"),
            models.Index(fields=["project_id", "-created_at"], name="msg_project_time"),
        ]


class ConsumedTurn(models.Model):
    """A turn a dream pass read, as a digest of its role and text only (the text itself is deleted with the turn).
    PreCompact sends a session's whole transcript, so turns a finished pass consumed came back to the buffer and
    were dreamed again (walk 21); record_messages skips a turn whose digest is here. Pruned with the buffer."""

    project_id = models.CharField(max_length=500)
    session_id = models.CharField(max_length=200)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project_id", "session_id", "digest"], name="consumed_turn_unique")
        ]
        indexes = [models.Index(fields=["created_at"], name="consumed_turn_time")]


class DreamPass(models.Model):
    project_id = models.CharField(max_length=500)
    trigger = models.CharField(max_length=20, default="manual")  # manual | interval | idle
    reasoner = models.CharField(max_length=100, blank=True, default="")
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    phase = models.CharField(max_length=30, default="starting")
    sessions_total = models.PositiveIntegerField(default=0)
    sessions_processed = models.PositiveIntegerField(default=0)
    messages_processed = models.PositiveIntegerField(default=0)
    ops_created = models.PositiveIntegerField(default=0)
    ops_updated = models.PositiveIntegerField(default=0)
    ops_deleted = models.PositiveIntegerField(default=0)
    ops_skipped = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name = "dream pass"
        verbose_name_plural = "dream passes"
        indexes = [models.Index(fields=["project_id", "-started_at"], name="dream_project_time")]

    def __str__(self) -> str:
        return f"Dream pass {self.pk} · {self.project_id} · {self.started_at:%Y-%m-%d %H:%M}"

    @property
    def failed(self) -> bool:
        return self.phase == "failed"

    @property
    def running(self) -> bool:
        """Unfinished and its project's dream lock held: a pass whose process died leaves its row
        unfinished (until the project's next pass marks it failed) and takes the lock with it."""
        return self.finished_at is None and held(LockKey.DREAM, self.project_id)


class DreamPrompt(models.Model):
    """The extraction prompt, editable in the admin. No row = the built-in default."""

    text = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)


class DreamSchedule(models.Model):
    """Per-project dreaming schedule; blank values fall back to [dreaming] in config.toml."""

    project_id = models.CharField(max_length=500, unique=True)
    enabled = models.BooleanField(default=True)
    interval_seconds = models.PositiveIntegerField(null=True, blank=True)
    on_idle_seconds = models.PositiveIntegerField(null=True, blank=True)
    last_pass_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.project_id


class DreamOp(models.Model):
    """One operation a reasoner proposed in a pass, and what became of it (for review in the admin)."""

    dream_pass = models.ForeignKey(DreamPass, on_delete=models.CASCADE, related_name="ops")
    session_id = models.CharField(max_length=200, blank=True, default="")
    op = models.CharField(max_length=20)  # create | update | delete | whatever the reasoner sent
    memory_uuid = models.CharField(max_length=64, blank=True, default="")
    content = models.TextField(blank=True, default="")
    category = models.CharField(max_length=40, blank=True, default="")
    reasoning = models.TextField(blank=True, default="")
    outcome = models.CharField(max_length=20)  # pending | created | updated | deleted | skipped | …
    detail = models.TextField(blank=True, default="")  # why it was skipped, or which memory it merged into
    # The operation as the reasoner sent it, kept only while it is pending (dreaming.operations.pend).
    payload = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "dream operation"

    def __str__(self) -> str:
        return f"{self.op} → {self.outcome}"

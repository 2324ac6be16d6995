"""Site-wide rows: API tokens and task heartbeats."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models

TOKEN_PREFIX = "yl_"


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiToken(models.Model):
    """A bearer token for /api and /mcp. Only its SHA-256 is stored."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, default="default")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user} / {self.name}"

    @classmethod
    def issue(cls, user: models.Model, name: str = "default") -> tuple[ApiToken, str]:
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        return cls.objects.create(user=user, name=name, key_hash=hash_token(raw)), raw


class Heartbeat(models.Model):
    """Proves beat → broker → worker works: the heartbeat task bumps `beats`."""

    name = models.CharField(max_length=50, unique=True)
    beats = models.PositiveIntegerField(default=0)
    last_beat_at = models.DateTimeField(null=True)


class BrokerMessage(models.Model):
    """One queued Celery message of the default broker (yullu_site/broker.py). `owner` is the
    backend pid of the connection that took it; a row is deleted when its task is acknowledged."""

    queue = models.CharField(max_length=200)
    payload = models.TextField()
    created_at = models.DateTimeField()
    owner = models.IntegerField(null=True)
    taken_at = models.DateTimeField(null=True)

    class Meta:
        indexes = [
            models.Index(fields=["queue", "id"], name="broker_waiting", condition=models.Q(owner__isnull=True)),
            models.Index(fields=["owner"], name="broker_taken", condition=models.Q(owner__isnull=False)),
        ]

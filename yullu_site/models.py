"""Site-wide rows: task heartbeats and the default broker's queue (API tokens: access.models)."""

from __future__ import annotations

from django.db import models


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

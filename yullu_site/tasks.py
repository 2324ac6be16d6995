from celery import shared_task
from django.db.models import F
from django.utils import timezone

from .models import Heartbeat


@shared_task(name="yullu_site.tasks.heartbeat", ignore_result=True)
def heartbeat() -> None:
    """Bump the heartbeat row; the status page and tests read it to see beat → worker works."""
    row, _ = Heartbeat.objects.get_or_create(name="beat")
    Heartbeat.objects.filter(pk=row.pk).update(beats=F("beats") + 1, last_beat_at=timezone.now())

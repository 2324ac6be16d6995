"""Beat → broker (the PostgreSQL queue table, the default) → worker, with real processes."""

import time
from pathlib import Path

import pytest

from tests.processes import product_env, start_worker_and_beat, stop
from yullu_site.models import BrokerMessage, Heartbeat


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_beat_scheduled_task_runs_on_a_real_worker(tmp_path: Path) -> None:
    env = product_env(tmp_path / "home", YULLU_HEARTBEAT_SECONDS="1", YULLU_SCHEDULER_TICK_SECONDS="3600")
    worker, beat = start_worker_and_beat(env, tmp_path)
    try:
        deadline = time.monotonic() + 90
        beats = 0
        while time.monotonic() < deadline:
            row = Heartbeat.objects.filter(name="beat").first()
            beats = row.beats if row else 0
            if beats >= 2:
                break
            assert worker.poll() is None, "worker died"
            assert beat.poll() is None, "beat died"
            time.sleep(0.5)
        assert beats >= 2
    finally:
        stop(beat)
        stop(worker)
    # Acknowledged messages are deleted; a warm shutdown hands back what the worker had taken.
    assert not BrokerMessage.objects.filter(owner__isnull=False).exists()

"""A task through the configured broker (the PostgreSQL queue table, the default) to a real worker,
and beat → broker → worker, with real processes."""

from pathlib import Path

import pytest

from tests.processes import product_env, spawn, start_worker_and_beat, stop, wait_until
from yullu_site.models import BrokerMessage, Heartbeat
from yullu_site.tasks import heartbeat


def beats() -> int:
    row = Heartbeat.objects.filter(name="beat").first()
    return row.beats if row else 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_task_sent_through_the_configured_broker_runs_on_a_real_worker(tmp_path: Path) -> None:
    # (only this test's message: a task another test's server process queued into the shared test database after
    # that test's flush is not this test's; CI of round 25 found five such rows)
    before = set(BrokerMessage.objects.values_list("pk", flat=True))
    heartbeat.delay()  # from this process, through the broker the settings configure
    queued = list(BrokerMessage.objects.exclude(pk__in=before).values_list("pk", "payload"))
    assert len(queued) == 1 and "yullu_site.tasks.heartbeat" in queued[0][1]
    ours = queued[0][0]
    env = product_env(tmp_path / "home")
    worker = spawn(["-m", "celery", "-A", "yullu_site", "worker", "--concurrency", "1", "--loglevel", "WARNING",
                    "-n", f"direct-{tmp_path.name}@%h"], env)  # fmt: skip
    try:
        wait_until(lambda: beats() >= 1, "the worker to run the queued task", alive=worker)
        # Acknowledged late: the row goes once the task has run.
        wait_until(
            lambda: not BrokerMessage.objects.filter(pk=ours).exists(), "the message to be acknowledged", alive=worker
        )
    finally:
        stop(worker)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_beat_scheduled_task_runs_on_a_real_worker(tmp_path: Path) -> None:
    env = product_env(tmp_path / "home", YULLU_HEARTBEAT_SECONDS="1", YULLU_SCHEDULER_TICK_SECONDS="3600")
    worker, beat = start_worker_and_beat(env, tmp_path)
    try:
        wait_until(lambda: beats() >= 2, "two heartbeats from beat through the worker", alive=[worker, beat])
    finally:
        stop(beat)
        stop(worker)
    # Acknowledged messages are deleted; a warm shutdown hands back what the worker had taken.
    assert not BrokerMessage.objects.filter(owner__isnull=False).exists()

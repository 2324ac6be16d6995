from celery import shared_task


@shared_task(ignore_result=True)
def reconcile_due() -> None:
    """Reconcile every known project whose log changed (filled in by the sync issue)."""


@shared_task(ignore_result=True)
def reconcile_all_known() -> None:
    """Start-up reconcile of every known project location."""

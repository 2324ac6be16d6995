from celery import shared_task


@shared_task(ignore_result=True)
def dream_due() -> None:
    """Run dream passes for projects that are due (filled in by the dreaming issue)."""

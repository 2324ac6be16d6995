from django.apps import AppConfig


class YulluSiteConfig(AppConfig):
    name = "yullu_site"
    verbose_name = "Yul'lu site"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from yullu_core import outage

        from . import celery  # noqa: F401  (binds @shared_task to our Celery app)

        # A new connection is the database answering: it ends the web's outage line (yullu_core.outage).
        connection_created.connect(outage.connected, dispatch_uid="yullu-outage-over")

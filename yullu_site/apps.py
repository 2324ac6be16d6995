from django.apps import AppConfig


class YulluSiteConfig(AppConfig):
    name = "yullu_site"
    verbose_name = "Yul'lu site"

    def ready(self) -> None:
        from . import celery  # noqa: F401  (binds @shared_task to our Celery app)

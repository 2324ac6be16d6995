"""Yul'lu: persistent, searchable memory for AI coding assistants."""

__version__ = "0.1.0"

from .celery import app as celery_app  # noqa: E402  (Celery must load with Django)

__all__ = ["celery_app", "__version__"]

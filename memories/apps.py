from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        # The recall log keeps queries with their secrets cut out; the scanner lives with the write path,
        # which search may not import (memories.search.recall_log.redact).
        from .search import recall_log
        from .write import secrets

        recall_log.redact = secrets.redact

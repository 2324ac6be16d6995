from django.apps import AppConfig


class SyncConfig(AppConfig):
    name = "sync"
    verbose_name = "Team sync"

    def ready(self) -> None:
        from memories.changes import register_listener

        from .outbox import on_change

        register_listener(on_change)  # every memory write queues its event in the outbox

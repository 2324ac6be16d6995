"""Django's PostgreSQL backend, starting the embedded server on a process's first connection.

Importing the settings starts nothing (a type check, `manage.py check` on a fresh clone); a process
that uses the database starts the server when it first asks for connection parameters: Django's
own connections, and the broker's, the token check's and the supervisor's, which are built from
them. `yullu` commands, manage.py and the ASGI app start it before anything else
(yullu_core.database.start_database), as the settings used to."""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import base

from yullu_core.database import ensure_embedded


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict[str, Any]:
        from django.conf import settings

        ensure_embedded(settings.YULLU_HOME)
        return super().get_connection_params()

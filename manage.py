#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yullu_site.settings")
    import atexit

    from yullu_cli.django_setup import _embedded_postgres_is_down, _stop_postgres_started_here
    from yullu_cli.main import run_guarded

    if _embedded_postgres_is_down():  # like `yullu` commands: stop again a PostgreSQL only this command started
        atexit.register(_stop_postgres_started_here)
    run_guarded(lambda: _run(sys.argv))


def _run(argv: list[str]) -> None:
    from django.core.management import execute_from_command_line

    from yullu_core.database import start_database

    # The embedded PostgreSQL first, as `yullu` commands start it (dbshell reads the settings, not a connection).
    start_database()
    execute_from_command_line(argv)


if __name__ == "__main__":
    main()

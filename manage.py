#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yullu_site.settings")
    from django.core.management import execute_from_command_line

    from yullu_site.cli import run_guarded

    run_guarded(lambda: execute_from_command_line(sys.argv))


if __name__ == "__main__":
    main()

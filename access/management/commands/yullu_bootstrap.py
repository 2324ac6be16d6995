from django.core.management.base import BaseCommand

from access.bootstrap import bootstrap


class Command(BaseCommand):
    help = "Create the admin account and API token on first run (idempotent)."

    def handle(self, *args: object, **options: object) -> None:
        result = bootstrap()
        if result.admin_created:
            self.stdout.write(f"created admin account; password in {result.admin_password_file}")
        if result.token_created:
            self.stdout.write(f"issued API token; stored in {result.token_file}")

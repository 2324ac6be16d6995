# Issue 29, the admin at a million memories: the review queue's order over every unrated memory, and
# the activity chart's 30 days read from an index alone. Plain CREATE INDEX in the migration's
# transaction (see 0012 for why not CONCURRENTLY): writes wait for the build, once.

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0013_tallies"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                condition=models.Q(("rating__isnull", True)),
                fields=["-created_at", "-id"],
                name="memory_unrated_created",
            ),
        ),
        migrations.AddIndex(
            model_name="memoryevent",
            index=models.Index(fields=["created_at"], include=("kind", "project_id"), name="event_time_kind"),
        ),
    ]

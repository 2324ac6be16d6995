# The recall log newest first, for the admin's Retrievals page (issue 29). Built concurrently: on
# a large install the log holds millions of rows and a plain CREATE INDEX would block searches'
# recall-log inserts while it runs.

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memories", "0011_attribution"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="memoryevent",
            index=models.Index(
                condition=models.Q(("recall_id__isnull", False)), fields=["-created_at", "-id"], name="event_recall_time"
            ),
        ),
    ]

# The recall log newest first, for the admin's Retrievals page (issue 29). A plain CREATE INDEX in
# the migration's transaction, not CONCURRENTLY: processes starting together take turns on the
# migration lock (yullu_core.database), and a concurrent build waits for every older transaction,
# including a process waiting for that lock, which PostgreSQL ends as a deadlock. Building it
# blocks writes to the recall log for its duration (seconds at millions of rows), once.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0011_attribution"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memoryevent",
            index=models.Index(
                condition=models.Q(("recall_id__isnull", False)), fields=["-created_at", "-id"], name="event_recall_time"
            ),
        ),
    ]

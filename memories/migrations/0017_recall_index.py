# Issue 29, the dashboard at a million memories: the 30 days' recalls read from a partial index
# alone. Built in the migration's transaction (see 0012).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0016_memory_list_index"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memoryevent",
            index=models.Index(
                condition=models.Q(("kind", "recalled")),
                fields=["created_at"],
                include=("project_id", "memory_id", "recall_id"),
                name="event_recalled_time",
            ),
        ),
    ]

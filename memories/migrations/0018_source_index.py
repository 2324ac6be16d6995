# Issue 29, the admin's source filter at a million memories: the create events of one source read
# from an index. Built in the migration's transaction (see 0012).

import django.db.models.fields.json
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0017_recall_index"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memoryevent",
            index=models.Index(
                django.db.models.fields.json.KeyTransform("source", "metadata"),
                models.F("memory"),
                condition=models.Q(("kind", "created")),
                name="event_created_source",
            ),
        ),
    ]

# A session's memories are found by their `session:<id>` tag at every search (queries.W_NEIGHBOUR).

import django.contrib.postgres.indexes
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0006_rename_meta_keyvalue"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(fields=["tags"], name="memory_tags_gin"),
        ),
    ]

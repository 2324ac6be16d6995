# Issue 29, a store at a million memories: the exact-text duplicate check by a hash index on the
# text instead of a read of the whole project. Built in the migration's transaction (see 0012).

import django.contrib.postgres.indexes
from django.conf import settings
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0014_admin_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.HashIndex(fields=["content"], name="memory_content_hash"),
        ),
    ]

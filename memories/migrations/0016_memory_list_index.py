# Issue 29, the admin at a million memories: the memories list's default order (newest change first
# across every visible project) read from an index. Built in the migration's transaction (see 0012).

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0015_content_hash_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["-updated_at", "-id"], name="memory_updated"),
        ),
    ]

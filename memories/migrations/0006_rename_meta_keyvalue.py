# The key/value model was called `Meta`, the name of Django's inner options class: renamed, rows kept.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0005_alter_rejectedmemory_options"),
    ]

    operations = [
        migrations.RenameModel(old_name="Meta", new_name="KeyValue"),
        migrations.AlterModelOptions(
            name="keyvalue",
            options={"verbose_name": "key/value entry", "verbose_name_plural": "key/value entries"},
        ),
    ]

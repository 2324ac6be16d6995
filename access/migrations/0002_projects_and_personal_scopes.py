# Data (issue 28): a Project row for every project id any table holds, and the one shared personal
# pile (`~user`) handed to the install's owner (`~user:<owner id>`: the bootstrap account `admin`,
# else the first superuser). Nothing else changes: memories, tokens and settings are kept as they are.

from django.db import migrations

PERSONAL = "~user"


def _tables(apps):
    """(table, column) of every model of the other apps that has a project_id column."""
    for model in apps.get_models():
        if model._meta.app_label == "access" or not model._meta.managed or model._meta.proxy:
            continue
        for field in model._meta.local_fields:
            if field.name == "project_id" and field.get_internal_type() == "CharField":
                yield model._meta.db_table, field.column


def forwards(apps, schema_editor):
    tables = sorted(set(_tables(apps)))
    User = apps.get_model("auth", "User")
    owner = (
        User.objects.filter(is_active=True, username="admin").first()
        or User.objects.filter(is_active=True, is_superuser=True).order_by("id").first()
    )
    with schema_editor.connection.cursor() as cur:
        if owner is not None:
            for table, column in tables:
                cur.execute(
                    f'UPDATE "{table}" SET "{column}" = %s WHERE "{column}" = %s', [f"{PERSONAL}:{owner.pk}", PERSONAL]
                )
        for table, column in tables:
            cur.execute(
                f'INSERT INTO access_project (project_id, created_at) SELECT DISTINCT "{column}", now() FROM "{table}" '
                f"WHERE \"{column}\" <> '' AND \"{column}\" NOT LIKE '~user%%' ON CONFLICT (project_id) DO NOTHING"
            )


class Migration(migrations.Migration):

    dependencies = [
        ("access", "0001_initial"),
        ("memories", "0008_memory_project_created"),
        ("dreaming", "0003_alter_dreampass_options_dreamop"),
        ("sync", "0001_initial"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]

# Who wrote a memory is read from the row alone (memories.authors, review 19): Memory.created_by (a user of this
# machine) or created_author (a teammate's name, migration 0021). Memories written before 0021 have neither for a
# teammate's memory, and some older ones no created_by: both are filled in from the history's first "created" row
# (its event author, else its user), where the row has neither. One statement each; nothing is overwritten.

from django.db import migrations

FIRST_CREATED = """
    SELECT DISTINCT ON (memory_id) memory_id, author, user_id
    FROM memories_memorychange
    WHERE action = 'created' AND memory_id IS NOT NULL
    ORDER BY memory_id, created_at, id
"""

BACKFILL_AUTHOR = f"""
UPDATE memories_memory m SET created_author = c.author
FROM ({FIRST_CREATED}) c
WHERE c.memory_id = m.id AND m.created_author = '' AND m.created_by_id IS NULL AND c.author <> ''
"""

BACKFILL_USER = f"""
UPDATE memories_memory m SET created_by_id = c.user_id
FROM ({FIRST_CREATED}) c
WHERE c.memory_id = m.id AND m.created_author = '' AND m.created_by_id IS NULL AND c.user_id IS NOT NULL
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0022_rejected_keeps_provenance"),
    ]

    operations = [
        migrations.RunSQL(BACKFILL_AUTHOR, migrations.RunSQL.noop),
        migrations.RunSQL(BACKFILL_USER, migrations.RunSQL.noop),
    ]

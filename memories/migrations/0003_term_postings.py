"""Per-memory term postings for BM25 (lexeme, term frequency, document length).

Kept by a trigger in step with the generated `search` column, like an index: scoring a
query then reads only the postings of its terms instead of unnesting every matching
row's tsvector (docs/decisions.md, "Keyword search").
"""

import django.db.models.deletion
from django.db import migrations, models

SQL = """
CREATE INDEX memories_term_project_lexeme ON memories_term (project_id, lexeme) INCLUDE (memory_id, tf, dl);
CREATE INDEX memories_term_memory ON memories_term (memory_id);

CREATE FUNCTION memories_term_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.search IS NOT DISTINCT FROM OLD.search AND NEW.project_id = OLD.project_id THEN
            RETURN NEW;
        END IF;
        DELETE FROM memories_term WHERE memory_id = OLD.id;
    END IF;
    INSERT INTO memories_term (memory_id, project_id, lexeme, tf, dl)
    SELECT NEW.id, NEW.project_id, u.lexeme, coalesce(array_length(u.positions, 1), 1),
           greatest(length(NEW.search), 1)
    FROM unnest(NEW.search) AS u;
    RETURN NEW;
END $$;

CREATE TRIGGER memories_term_sync AFTER INSERT OR UPDATE OF content, project_id ON memories_memory
    FOR EACH ROW EXECUTE FUNCTION memories_term_sync();

INSERT INTO memories_term (memory_id, project_id, lexeme, tf, dl)
SELECT m.id, m.project_id, u.lexeme, coalesce(array_length(u.positions, 1), 1), greatest(length(m.search), 1)
FROM memories_memory m, unnest(m.search) AS u;
"""

REVERSE = """
DROP TRIGGER IF EXISTS memories_term_sync ON memories_memory;
DROP FUNCTION IF EXISTS memories_term_sync();
DROP INDEX IF EXISTS memories_term_project_lexeme;
DROP INDEX IF EXISTS memories_term_memory;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0002_initial")]
    operations = [
        migrations.CreateModel(
            name="Term",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("project_id", models.CharField(max_length=500)),
                ("lexeme", models.TextField()),
                ("tf", models.IntegerField()),
                ("dl", models.IntegerField()),
                (
                    "memory",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="memories.memory",
                    ),
                ),
            ],
        ),
        migrations.RunSQL(SQL, REVERSE),
    ]

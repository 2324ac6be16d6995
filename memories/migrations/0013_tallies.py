# Counts that the admin's dashboard, stats, projects and review pages read instead of counting a
# million rows (issue 29): memories per (project, category) with how many are unrated, and vectors
# per (project, embedder). Triggers keep them, so every path that writes memories (a store, COPY by
# reconcile and import, deletes, expiry, ratings, raw SQL) keeps them true in its own transaction.
#
# INSERT and DELETE are statement triggers over the transition table: a COPY of 5,000 memories adds
# one row per (project, category) it touched, not 5,000. UPDATE is a row trigger whose WHEN clause
# skips the function unless the project, the category or rated/unrated changed (PostgreSQL allows no
# transition table on a trigger limited to columns, and most updates touch none of the three).
# Each write appends signed rows (no shared counter row to wait on); memories.tallies sums and folds.
#
# The first fill counts the tables once under a SHARE lock (writes wait, reads do not), so no write
# slips between the count and the triggers: about a second a million memories.

from django.db import migrations, models

TRIGGERS = """
CREATE FUNCTION memories_tally_memory_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memories_memorytally (project_id, category, memories, unrated)
  SELECT project_id, category, count(*), count(*) FILTER (WHERE rating IS NULL) FROM tally_new GROUP BY 1, 2;
  RETURN NULL;
END $$;

CREATE FUNCTION memories_tally_memory_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memories_memorytally (project_id, category, memories, unrated)
  SELECT project_id, category, -count(*), -count(*) FILTER (WHERE rating IS NULL) FROM tally_old GROUP BY 1, 2;
  RETURN NULL;
END $$;

CREATE FUNCTION memories_tally_memory_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memories_memorytally (project_id, category, memories, unrated) VALUES
    (OLD.project_id, OLD.category, -1, -(OLD.rating IS NULL)::int),
    (NEW.project_id, NEW.category, 1, (NEW.rating IS NULL)::int);
  RETURN NULL;
END $$;

CREATE FUNCTION memories_tally_memory_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM memories_memorytally;
  RETURN NULL;
END $$;

CREATE TRIGGER tally_memory_insert AFTER INSERT ON memories_memory
  REFERENCING NEW TABLE AS tally_new FOR EACH STATEMENT EXECUTE FUNCTION memories_tally_memory_insert();
CREATE TRIGGER tally_memory_delete AFTER DELETE ON memories_memory
  REFERENCING OLD TABLE AS tally_old FOR EACH STATEMENT EXECUTE FUNCTION memories_tally_memory_delete();
CREATE TRIGGER tally_memory_update AFTER UPDATE ON memories_memory FOR EACH ROW
  WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.category IS DISTINCT FROM NEW.category
        OR (OLD.rating IS NULL) <> (NEW.rating IS NULL))
  EXECUTE FUNCTION memories_tally_memory_update();
CREATE TRIGGER tally_memory_truncate AFTER TRUNCATE ON memories_memory
  FOR EACH STATEMENT EXECUTE FUNCTION memories_tally_memory_truncate();

CREATE FUNCTION memories_tally_vector_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memories_vectortally (project_id, embedder, vectors)
  SELECT project_id, embedder, count(*) FROM tally_new GROUP BY 1, 2;
  RETURN NULL;
END $$;

CREATE FUNCTION memories_tally_vector_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memories_vectortally (project_id, embedder, vectors)
  SELECT project_id, embedder, -count(*) FROM tally_old GROUP BY 1, 2;
  RETURN NULL;
END $$;

CREATE FUNCTION memories_tally_vector_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memories_vectortally (project_id, embedder, vectors) VALUES
    (OLD.project_id, OLD.embedder, -1), (NEW.project_id, NEW.embedder, 1);
  RETURN NULL;
END $$;

CREATE FUNCTION memories_tally_vector_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM memories_vectortally;
  RETURN NULL;
END $$;

CREATE TRIGGER tally_vector_insert AFTER INSERT ON memories_memoryvector
  REFERENCING NEW TABLE AS tally_new FOR EACH STATEMENT EXECUTE FUNCTION memories_tally_vector_insert();
CREATE TRIGGER tally_vector_delete AFTER DELETE ON memories_memoryvector
  REFERENCING OLD TABLE AS tally_old FOR EACH STATEMENT EXECUTE FUNCTION memories_tally_vector_delete();
CREATE TRIGGER tally_vector_update AFTER UPDATE ON memories_memoryvector FOR EACH ROW
  WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.embedder IS DISTINCT FROM NEW.embedder)
  EXECUTE FUNCTION memories_tally_vector_update();
CREATE TRIGGER tally_vector_truncate AFTER TRUNCATE ON memories_memoryvector
  FOR EACH STATEMENT EXECUTE FUNCTION memories_tally_vector_truncate();

LOCK TABLE memories_memory, memories_memoryvector IN SHARE MODE;
INSERT INTO memories_memorytally (project_id, category, memories, unrated)
  SELECT project_id, category, count(*), count(*) FILTER (WHERE rating IS NULL) FROM memories_memory GROUP BY 1, 2;
INSERT INTO memories_vectortally (project_id, embedder, vectors)
  SELECT project_id, embedder, count(*) FROM memories_memoryvector GROUP BY 1, 2;
"""

DROP = """
DROP TRIGGER tally_memory_insert ON memories_memory;
DROP TRIGGER tally_memory_delete ON memories_memory;
DROP TRIGGER tally_memory_update ON memories_memory;
DROP TRIGGER tally_memory_truncate ON memories_memory;
DROP TRIGGER tally_vector_insert ON memories_memoryvector;
DROP TRIGGER tally_vector_delete ON memories_memoryvector;
DROP TRIGGER tally_vector_update ON memories_memoryvector;
DROP TRIGGER tally_vector_truncate ON memories_memoryvector;
DROP FUNCTION memories_tally_memory_insert, memories_tally_memory_delete, memories_tally_memory_update,
  memories_tally_memory_truncate, memories_tally_vector_insert, memories_tally_vector_delete,
  memories_tally_vector_update, memories_tally_vector_truncate;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0012_recall_log_time_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="MemoryTally",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("project_id", models.CharField(max_length=500)),
                ("category", models.CharField(max_length=20, null=True)),
                ("memories", models.BigIntegerField()),
                ("unrated", models.BigIntegerField()),
            ],
        ),
        migrations.CreateModel(
            name="VectorTally",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("project_id", models.CharField(max_length=500)),
                ("embedder", models.CharField(max_length=200)),
                ("vectors", models.BigIntegerField()),
            ],
        ),
        migrations.RunSQL(TRIGGERS, DROP),
    ]

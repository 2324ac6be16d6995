"""Many rows in one COPY: a teammate's first reconcile and an import write thousands of memories.

Django's bulk_create builds one INSERT whose every value is adapted and quoted in Python: for a
reconcile of 5,000 memories that took more CPU than PostgreSQL spent inserting them (profile in
docs/benchmarks.md). COPY sends the rows as psycopg formats them (its C row formatter), and vectors
go in pgvector's binary form instead of 384 decimal numbers each.

Rows are model instances built as for `save()` (field defaults applied); call inside the write's
transaction. Primary keys are taken from the table's sequence first, so the instances come back
saved (pk set), as bulk_create returns them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
from django.db import connection, models
from django.utils import timezone
from pgvector import Vector
from psycopg.types.json import Jsonb

from ..embedding.vector_index import built_after_load
from ..models import MemoryVector

M = TypeVar("M", bound=models.Model)


def _json(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value, dumps=json.dumps)


def reserve_ids(model: type[models.Model], count: int) -> list[int]:
    """`count` fresh primary keys of `model`'s table, in one round trip."""
    table = model._meta.db_table
    with connection.cursor() as cur:
        cur.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", [table, count])
        return [row[0] for row in cur.fetchall()]


COPY_FROM = 20  # rows; fewer go in one INSERT (a COPY costs one more round trip, for the keys)


def insert(model: type[M], objs: Sequence[M], written: Sequence[dict[str, Any] | None] = ()) -> list[M]:
    """Insert `objs` (unsaved instances of `model`), each getting its primary key, as bulk_create does:
    a few in one INSERT, many by COPY. `written`, one per obj: attname → value the row is written
    with instead of the instance's (which keeps its own)."""
    if len(objs) < COPY_FROM and not any(written):
        return model._default_manager.bulk_create(objs)
    copy_instances(model, objs, written)
    return list(objs)


def insert_together(*batches: Sequence[models.Model]) -> None:
    """Insert each batch (unsaved instances of one model each, a few rows) in one statement for all of them,
    the later batches' INSERTs in WITH clauses, each value as the ORM's bulk_create writes it (the field's
    `pre_save` and `get_db_prep_save`). The instances get no keys: for rows nothing reads back (a store's
    history and activity rows). Cost only (issue 34, round twenty-six): two bulk_creates took 1.5 ms of a
    store's CPU, mostly the ORM compiling them, and a round trip each."""
    inserts: list[str] = []
    params: list[Any] = []
    for objs in batches:
        if not objs:
            continue
        model = type(objs[0])
        fields = [f for f in model._meta.concrete_fields if not f.primary_key and not f.generated]
        columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)
        row = "(" + ", ".join(["%s"] * len(fields)) + ")"
        inserts.append(f"INSERT INTO {model._meta.db_table} ({columns}) VALUES {', '.join([row] * len(objs))}")
        params += [f.get_db_prep_save(f.pre_save(obj, True), connection) for obj in objs for f in fields]
    if not inserts:
        return
    *first, last = inserts
    with_clause = ", ".join(f"w{n} AS ({sql})" for n, sql in enumerate(first))
    with connection.cursor() as cur:
        cur.execute(f"WITH {with_clause} {last}" if first else last, params)


def copy_instances(
    model: type[models.Model], objs: Sequence[models.Model], written: Sequence[dict[str, Any] | None] = ()
) -> None:
    """Insert `objs` (unsaved instances of `model`) with one COPY; each gets its primary key. `written`
    as for `insert`."""
    if not objs:
        return
    for obj, pk in zip(objs, reserve_ids(model, len(objs)), strict=True):
        obj.pk = pk
        obj._state.adding, obj._state.db = False, connection.alias
    fields = [f for f in model._meta.concrete_fields if not f.generated]
    json_fields = {f.attname for f in fields if isinstance(f, models.JSONField)}
    position = {f.attname: n for n, f in enumerate(fields)}
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)
    sql = f"COPY {model._meta.db_table} ({columns}) FROM STDIN"
    with connection.cursor() as cur, cur.cursor.copy(sql) as copy:
        for n, obj in enumerate(objs):
            values = [getattr(obj, f.attname) for f in fields]
            for attname, value in (written[n] or {}).items() if written else ():
                values[position[attname]] = value
            copy.write_row([_json(v) if f.attname in json_fields else v for f, v in zip(fields, values, strict=True)])


def insert_vectors(rows: Sequence[tuple[int, str, str, Sequence[float] | np.ndarray]]) -> None:
    """Insert (memory id, project id, embedder id, vector) rows of MemoryVector: a few in one INSERT,
    many by one binary COPY, the vector in pgvector's binary form (its `Vector.to_binary`) sent as
    raw bytes."""
    if len(rows) < COPY_FROM:  # one plain INSERT (insert_together): nothing reads their keys back
        insert_together(
            [
                MemoryVector(memory_id=m, project_id=p, embedder=e, dim=len(v), vector=np.asarray(v, dtype=np.float32))
                for m, p, e, v in rows
            ]
        )
        return
    kinds = {(e, len(v)) for _, _, e, v in rows}
    if len(kinds) == 1:  # one embedder: a large load into a small index builds it afterwards
        [(embedder_id, dim)] = kinds
        with built_after_load(embedder_id, dim, len(rows)):
            _copy_vectors(rows)
    else:
        _copy_vectors(rows)


def _copy_vectors(rows: Sequence[tuple[int, str, str, Sequence[float] | np.ndarray]]) -> None:
    table, now = MemoryVector._meta.db_table, timezone.now()
    sql = f"COPY {table} (memory_id, project_id, embedder, dim, vector, created_at) FROM STDIN (FORMAT BINARY)"
    with connection.cursor() as cur, cur.cursor.copy(sql) as copy:
        copy.set_types(["int8", "text", "text", "int4", "bytea", "timestamptz"])  # bytea: the bytes as they are
        for memory_id, project_id, embedder_id, vector in rows:
            values = np.asarray(vector, dtype=np.float32)
            copy.write_row((memory_id, project_id, embedder_id, len(values), Vector(values).to_binary(), now))

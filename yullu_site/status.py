"""Readiness: is the database, the broker and the embedder usable? No secrets here."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from yullu_core.failures import disk_status

from . import __version__


def database_status() -> dict[str, Any]:
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cur.fetchone()
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:  # any failure means "not usable"; say why without a traceback
        return {"ok": False, "kind": settings.DATABASE_KIND, "error": type(exc).__name__}
    return {
        "ok": row is not None and not pending,
        "kind": settings.DATABASE_KIND,
        "pgvector": row[0] if row else None,
        "pending_migrations": len(pending),
    }


def broker_status() -> dict[str, Any]:
    url = settings.CELERY_BROKER_URL
    if url.startswith("yullupg://"):
        from .broker import table_ready

        try:  # the queue table is all this broker needs (the database itself is checked above)
            return {"ok": table_ready(), "kind": "postgres"}
        except Exception as exc:
            return {"ok": False, "kind": "postgres", "error": type(exc).__name__}
    from .celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:
        return {"ok": False, "kind": url.split("://")[0], "error": type(exc).__name__}
    return {"ok": True, "kind": url.split("://")[0]}


def status() -> dict[str, Any]:
    from dreaming.reasoners import reasoner_status
    from memories.embedders import embedder_status

    db = database_status()
    broker = broker_status()
    embedder = embedder_status()
    disk = disk_status(settings.YULLU_HOME)  # the embedded database, the logs and the queue live there
    return {
        "ready": bool(db["ok"] and broker["ok"] and embedder["ok"] and disk["ok"]),
        "version": __version__,
        "database": db,
        "broker": broker,
        "embedder": embedder,
        "disk": disk,
        # Not part of "ready": the server works without one, but background dreaming does not.
        "reasoner": reasoner_status(),
    }

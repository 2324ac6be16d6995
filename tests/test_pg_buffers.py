"""The embedded PostgreSQL's shared buffers: sized to the machine by default (a store's duplicate
check at a million memories read its index from disk with 512 MB, docs/benchmarks.md), with
autoprewarm loaded, and a start that falls back to 512 MB where the memory cannot be mapped."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
from django.db import connection

from yullu_core import postgres as pg

GB = 2**30


@pytest.mark.parametrize(
    ("total", "expected"), [(1 * GB, "512MB"), (8 * GB, "2048MB"), (24 * GB, "6144MB"), (128 * GB, "8192MB")]
)
def test_auto_is_a_quarter_of_the_memory_within_bounds(
    monkeypatch: pytest.MonkeyPatch, total: int, expected: str
) -> None:
    monkeypatch.setenv("YULLU_PG_SHARED_BUFFERS", "auto")
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(total=total))
    assert pg.shared_buffers() == expected


def test_a_size_given_is_used_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YULLU_PG_SHARED_BUFFERS", "1GB")
    assert pg.shared_buffers() == "1GB"


@pytest.mark.django_db
def test_the_running_server_has_the_sized_buffers_and_autoprewarm() -> None:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_size_bytes(current_setting('shared_buffers')), pg_size_bytes(%s)", [pg.shared_buffers()])
        running, wanted = cur.fetchone()
        cur.execute("SELECT current_setting('shared_preload_libraries')")
        libraries = cur.fetchone()[0]
    assert running == wanted
    assert "pg_prewarm" in libraries.split(",")


def test_buffers_that_cannot_be_mapped_fall_back_to_512mb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real server asked for more shared memory than the machine can map (as in a small container)."""
    monkeypatch.setenv("YULLU_PG_SHARED_BUFFERS", "auto")
    monkeypatch.setattr(pg, "CEILING_MB", 2**20)  # 1 TB: more than this machine can map
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(total=2**50))
    home = tmp_path / "home"
    home.mkdir()
    try:
        cluster = pg.ensure_running(home)
        log = (cluster.pgdata / "server.log").read_text()
        assert "could not map anonymous shared memory" in log  # the first start really failed
        show = ["psql", "-h", str(cluster.socket_dir), "-U", "postgres", "-Atc", "SHOW shared_buffers"]
        result = pg._run(cluster, show)
        assert result.stdout.strip() == "512MB", result
    finally:
        pg.stop(home)


def test_a_size_given_that_cannot_be_mapped_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only `auto` falls back: a size someone chose is not silently replaced."""
    monkeypatch.setenv("YULLU_PG_SHARED_BUFFERS", "1TB")
    home = tmp_path / "home"
    home.mkdir()
    try:
        with pytest.raises(pg.EmbeddedPostgresError, match="could not map anonymous shared memory"):
            pg.ensure_running(home)
    finally:
        pg.stop(home)

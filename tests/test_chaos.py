"""Faults the chaos drills found (docs/reliability.md, "Chaos drills"): an event-log folder on a
full file system, and the temp files a writer that died leaves behind."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client

from memories.models import Memory
from memories.scope import Scope
from sync.eventlog import STALE_TEMP_S, list_names
from sync.models import OutboxEvent
from sync.outbox import flush
from sync.services import reconcile_scope

pytestmark = pytest.mark.django_db(transaction=True)


def temps(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


@pytest.fixture
def full_log(repo: Path) -> Iterator[Path]:
    """The repository's event-log folder on a real 64 KiB file system, filled to the last block."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root (CI runs as root)")
    folder = repo / ".yullu" / "logs"
    folder.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", str(folder)], check=True)
    try:
        with open(folder / "filler", "wb", buffering=0) as fh, pytest.raises(OSError):
            while True:
                fh.write(b"x" * 4096)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def test_a_store_into_a_full_log_folder_leaves_no_temp_file_and_is_written_once_there_is_room(
    client: Client, owner_token: str, repo: Path, full_log: Path
) -> None:
    body = {"content": "the nightly export runs at 02:00 UTC", "cwd": str(repo)}
    auth = {"Authorization": f"Bearer {owner_token}"}
    r = client.post("/api/memories", body, content_type="application/json", headers=auth)
    assert r.status_code == 201, r.content  # committed; its events wait in the outbox for room
    memory = Memory.objects.get(pk=r.json()["id"])
    assert OutboxEvent.objects.filter(memory_uuid=memory.uuid).exists()
    assert temps(full_log) == [], "a failed write left its temp file (it kept the disk full)"
    assert list_names(full_log) == []
    (full_log / "filler").unlink()
    flush()  # the sweep of the reconcile tick
    assert not OutboxEvent.objects.filter(memory_uuid=memory.uuid).exists()
    assert len(list_names(full_log)) >= 1 and temps(full_log) == []


def test_a_reconcile_removes_the_temp_files_a_dead_writer_left(repo: Path) -> None:
    folder = repo / ".yullu" / "logs"
    folder.mkdir(parents=True)
    stale = folder / ".20260601T041213.364878000Z-abcf29d8.json.4242.tmp"
    fresh = folder / ".20260601T041213.364878000Z-0badc0de.json.4243.tmp"
    for temp in (stale, fresh):
        temp.write_text('{"id": "half a')
    old = time.time() - STALE_TEMP_S - 60
    os.utime(stale, (old, old))
    result = reconcile_scope(Scope("github.com/acme/app", repo))
    assert result["parse_errors"] == []
    assert not stale.exists(), "left by a writer killed between its write and its link"
    assert fresh.exists(), "a writer may be between its write and its link right now"

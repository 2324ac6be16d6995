"""Walk 17: what a sceptical user found from the seats the earlier walks did not take (a normal user,
a team of two sharing one log)."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memories.models import Memory
from memories.scope import resolve
from memories.transfer.importer import import_path
from memories.write import create
from sync.eventlog import new_event, read_events, write_event
from sync.services import reconcile_scope
from tests.stubs import StubServer
from yullu_core import postgres as pg

IMPORTED = "0b5a1c1e-0000-4000-8000-000000000099"


@pytest.mark.django_db(transaction=True)
def test_an_imported_future_time_is_read_as_now_so_a_teammates_later_edit_still_wins(
    repo: Path, stub_embedder: StubServer, tmp_path: Path
) -> None:
    """A `yullu export json` file from a machine whose clock said 2099: its times were kept, the memory's
    sync event was dated 2099, and a teammate's edit an hour later lost to it here for ever, while it won
    on the teammate's machine (which clamps a teammate's future event): one log, two different memories."""
    scope = resolve(None, str(repo))
    create.store_memory(scope, "vec:0,1,0 Run make test before pushing", "process")  # the checkout is known
    row = {
        "uuid": IMPORTED,
        "project_id": scope.project_id,
        "content": "vec:1,0,0 The test matrix runs Python 3.9 to 3.14",
        "category": "process",
        "created_at": "2099-06-01T00:00:00+00:00",
        "updated_at": "2099-06-01T00:00:00+00:00",
        "expires_at": "2099-07-01T00:00:00+00:00",  # an expiry is a future time by nature: kept
    }
    header = {"format": "yullu-memories", "version": 1, "project_id": scope.project_id, "count": 1}
    path = tmp_path / "future.jsonl"
    path.write_text(f"{json.dumps(header)}\n{json.dumps(row)}\n")

    assert import_path(path).created == 1

    now = datetime.now(UTC)
    memory = Memory.objects.get(uuid=IMPORTED)
    assert memory.created_at <= now and memory.updated_at <= now
    assert memory.expires_at is not None and memory.expires_at.year == 2099
    logs = repo / ".yullu" / "logs"
    ours = [e for _, e in read_events(logs).events if str(e.memory_id) == IMPORTED]
    assert ours and all(e.ts_ns <= time.time_ns() for e in ours), [e.ts for e in ours]

    later = "The test matrix runs Python 3.10 to 3.14 (3.9 dropped)"
    write_event(logs, new_event("update", IMPORTED, ts_ns=time.time_ns() + 1_000_000_000, content=later))
    reconcile_scope(scope)
    assert Memory.objects.get(uuid=IMPORTED).content == later


def test_the_embedded_postgresql_starts_in_a_home_whose_path_holds_a_space() -> None:
    """`YULLU_HOME="$HOME/Library/Application Support/yullu"` (or a home folder named "John Smith"): pg_ctl
    hands its -o options to a shell, so the socket folder was split in two and every start failed with
    'postgres: invalid argument: "Support/yullu/pgdata"'. A folder others may pass through, so that as root
    too (the cluster runs as yullu-pg) the data folder, and the socket in it, keeps the space."""
    base = Path(tempfile.mkdtemp(prefix="walk17 Application Support "))
    base.chmod(0o755)
    home = base / "yullu"
    home.mkdir()
    try:
        cluster = pg.ensure_running(home)
        assert " " in str(cluster.socket_dir)
        result = pg._run(cluster, ["psql", "-h", str(cluster.socket_dir), "-U", "postgres", "-Atc", "SELECT 1"])
        assert result.stdout.strip() == "1", result
    finally:
        pg.stop(home)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.django_db(transaction=True)
def test_a_huge_refused_row_is_scanned_only_as_far_as_a_memory_may_hold(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Walk 17: the report line of a refused row redacted the whole row, and the scan's cost grows faster than
    the text (a 50 MB line of "x x x …" took 50 s and 527 MB to refuse). The real redaction runs, on at most
    max_content_chars characters; a secret at the row's start is still redacted in the report."""
    from memories.transfer import importer
    from memories.write import validation

    scanned: list[int] = []
    real = importer.redact

    def spy(text: str) -> str:
        scanned.append(len(text))
        return real(text)

    monkeypatch.setattr(importer, "redact", spy)
    scope = resolve(None, str(repo))
    header = {"format": "yullu-memories", "version": 1, "project_id": scope.project_id, "count": 2}
    huge = {"uuid": IMPORTED, "project_id": scope.project_id, "content": "x " * 100_000, "category": "process"}
    key = "ghp_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0dF3hJ6"
    secret = {"project_id": scope.project_id, "content": f"token {key} " + "y " * 50_000, "category": "process"}
    path = tmp_path / "huge.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (header, huge, secret)) + "\n")

    result = import_path(path)

    assert result.created == 0 and result.refused == 2
    assert scanned and max(scanned) <= validation.max_content_chars(), scanned
    assert key not in " ".join(result.errors) and "REDACTED" in result.errors[1], result.errors
    assert not Memory.objects.exists()

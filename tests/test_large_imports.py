"""An import of more rows than one batch (memories.write.load_index): each later batch checks its
duplicates in memory, against what the project held and the file's earlier batches, with the
vector index paused for the whole import. What it finds, keeps and refuses must be what the
batch-by-batch check through the index decided."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.db import connection

from memories.embedding import vector_index
from memories.embedding.embedders import get_embedder
from memories.models import Memory, MemoryVector
from memories.search.candidates import nearest_many
from memories.transfer import importer
from memories.transfer.importer import import_path
from memories.write import create
from tests.stubs import DIM, StubServer

pytestmark = pytest.mark.django_db(transaction=True)
BATCH = 4  # rows a batch, at a test's scale


def axis(n: int) -> list[float]:
    """A unit vector of its own: rows given different axes are far apart (cosine 0)."""
    return [1.0 if k == n % DIM else 0.0 for k in range(DIM)]


def tilted(n: int) -> list[float]:
    """A vector at cosine ~0.995 to axis(n): above the stub embedder's duplicate threshold (0.95)."""
    v = np.asarray(axis(n)) + 0.1 * np.asarray(axis(n + 1))
    return list(v / np.linalg.norm(v))


def mix(a: int, b: int) -> list[float]:
    """Between two axes: cosine 0.71 to each, 0.5 to another mix sharing one of them."""
    return list((np.asarray(axis(a)) + np.asarray(axis(b))) / np.sqrt(2))


# Thirteen rows, batches of four. Each repeat comes in a later batch than what it repeats. Texts
# without literals are the same fact at any cosine over the threshold (the one-fact guard only
# tells apart texts that differ in a literal or in a word or two).
ROWS: list[tuple[str, list[float]]] = [
    ("Deploys go out on Tuesdays", axis(0)),
    ("The API listens on port 8080", axis(1)),
    ("Staging resets every night", axis(2)),
    ("Logs go to Loki", axis(3)),
    ("The queue is drained before a release", axis(4)),
    ("Backups are kept for 30 days", axis(5)),
    ("The API listens on port 8081", axis(1)),  # as near as can be to row 1, but a changed literal: a new fact
    ("Metrics are scraped every 15s", axis(6)),
    ("Deploys go out on Tuesdays.", tilted(0)),  # row 0 again, another text, by cosine: a repeat
    ("Staging resets every night", mix(3, 4)),  # row 2's text again: a repeat, whatever its vector
    ("The cache is warmed at boot.", tilted(7)),  # what the project may hold before the import
    ("Feature flags live in Unleash", mix(5, 6)),
    ("Backups are kept for 30 days!", tilted(5)),  # row 5 again, by cosine, sharing its literal: a repeat
]
REPEATS = {8, 9, 12}
HELD = "The cache is warmed at boot"


def export_file(path: Path, rows: list[tuple[str, list[float]]]) -> Path:
    """A `yullu export json --vectors` file of `rows` (no uuids: each gets one derived from its text)."""
    embedder = get_embedder()
    with path.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"format": "yullu-memories", "version": 1, "project_id": None, "vectors": True}) + "\n")
        for n, (content, vector) in enumerate(rows):
            record = {
                "project_id": "acme/export",
                "content": content,
                "created_at": f"2026-01-{n + 1:02d}T03:04:05+00:00",
                "updated_at": "2026-02-01T00:00:00+00:00",
                "rating": n % 10 + 1,
                "importance": "high" if n % 3 else "normal",
                "vectors": {embedder.id: vector},
            }
            fh.write(json.dumps(record) + "\n")
    return path


@pytest.fixture
def small_batches(stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch) -> StubServer:
    monkeypatch.setattr(importer, "BATCH", BATCH)
    monkeypatch.setattr(vector_index, "BUILD_AFTER_FROM", BATCH)  # the pause, at a test's size
    return stub_embedder


def index_oid(name: str) -> int | None:
    with connection.cursor() as cur:
        cur.execute("SELECT to_regclass(%s)::oid", [name])
        return cur.fetchone()[0]


def contents(project_id: str) -> list[str]:
    return sorted(Memory.objects.filter(project_id=project_id).values_list("content", flat=True))


def held_before(tmp_path: Path, project: str) -> None:
    """The project already holds HELD (imported alone: one row, one batch), on row 10's axis."""
    assert import_path(export_file(tmp_path / "held.jsonl", [(HELD, axis(7))]), project=project).created == 1


def test_a_large_import_finds_repeats_across_its_batches_and_of_what_the_project_held(
    small_batches: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = "acme/large-import"
    held_before(tmp_path, project)
    name = vector_index.index_name(get_embedder().id, DIM)
    during: list[int | None] = []
    real = importer._write_batch

    def watched(*args: Any, **kwargs: Any) -> None:
        during.append(index_oid(name))
        real(*args, **kwargs)

    monkeypatch.setattr(importer, "_write_batch", watched)

    result = import_path(export_file(tmp_path / "export.jsonl", ROWS), project=project)

    # HELD was there before; rows 8, 9 and 12 repeat earlier rows of the file (found on the walk: all four
    # were reported as "already there").
    assert (result.created, result.skipped, result.repeated, result.refused) == (9, 1, 3, 0)
    kept = [c for n, (c, _) in enumerate(ROWS) if n not in REPEATS | {10}]
    assert contents(project) == sorted([HELD, *kept])
    assert len(during) == 4 and set(during) == {None}  # no index while the batches went in
    # Built once after the import; it answers as the exact scan does.
    assert index_oid(name) is not None
    probes = [np.asarray(v, dtype=np.float32) for v in MemoryVector.objects.values_list("vector", flat=True)]
    assert nearest_many(project, get_embedder().id, probes, 3, exact=False) == nearest_many(
        project, get_embedder().id, probes, 3, exact=True
    )


def test_a_large_import_decides_as_one_batch_through_the_index_does(
    stub_embedder: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same file into two projects that held the same memory: in batches of four (checked in
    memory) and in one batch (through the database), the same rows are kept with the same fields."""
    export = export_file(tmp_path / "export.jsonl", ROWS)
    for project in ("acme/one-batch", "acme/many-batches"):
        held_before(tmp_path, project)
    whole = import_path(export, project="acme/one-batch")
    monkeypatch.setattr(importer, "BATCH", BATCH)
    batched = import_path(export, project="acme/many-batches")

    assert (batched.created, batched.skipped, batched.repeated) == (whole.created, whole.skipped, whole.repeated)
    assert (whole.created, whole.skipped, whole.repeated) == (9, 1, 3)
    fields = ("content", "category", "tags", "importance", "held_reason", "created_at", "updated_at", "rating")
    assert sorted(Memory.objects.filter(project_id="acme/many-batches").values_list(*fields)) == sorted(
        Memory.objects.filter(project_id="acme/one-batch").values_list(*fields)
    )


def test_a_large_import_again_adds_nothing(small_batches: StubServer, tmp_path: Path) -> None:
    export = export_file(tmp_path / "export.jsonl", ROWS)
    assert import_path(export, project="acme/again").created == 10

    again = import_path(export, project="acme/again")

    assert (again.created, again.skipped, again.repeated, again.refused) == (0, len(ROWS), 0, 0)
    assert Memory.objects.filter(project_id="acme/again").count() == 10


def test_a_large_import_of_the_same_facts_retold_finds_them_among_the_projects_memories(
    small_batches: StubServer, tmp_path: Path
) -> None:
    """Every row's text changed (so its uuid, derived from it, too) but not its words: each is found
    by cosine among what the first import left, which the second reads from the project."""
    import_path(export_file(tmp_path / "first.jsonl", ROWS), project="acme/retold")
    # (Row 9 left out: the first import kept its text with row 2's vector, so retold with its own it
    # is a new text far from every memory.)
    retold = [(c.rstrip(".!") + "!", v) for n, (c, v) in enumerate(ROWS) if n != 9]

    result = import_path(export_file(tmp_path / "second.jsonl", retold), project="acme/retold")

    assert (result.created, result.skipped) == (0, len(retold))
    assert Memory.objects.filter(project_id="acme/retold").count() == 10


def test_a_failed_batch_of_a_large_import_leaves_nothing_and_the_index_is_built(
    small_batches: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = "acme/failing-large-import"
    export = export_file(tmp_path / "export.jsonl", ROWS)
    name = vector_index.index_name(get_embedder().id, DIM)
    calls: list[int] = []
    real = create.record_created

    def failing(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the disk went away")
        real(*args, **kwargs)

    monkeypatch.setattr(create, "record_created", failing)  # in the second batch, after its rows and vectors
    with pytest.raises(RuntimeError):
        import_path(export, project=project)

    assert contents(project) == sorted(c for c, _ in ROWS[:BATCH])  # the first batch committed, the second nothing
    assert MemoryVector.objects.filter(project_id=project).count() == BATCH
    assert index_oid(name) is not None  # built again after the failed import

    monkeypatch.setattr(create, "record_created", real)
    rest = import_path(export, project=project)
    # Rows 0-3 are there, 8 and 9 repeat two of them; 12 repeats row 5, which this import made.
    assert (rest.created, rest.skipped, rest.repeated) == (10 - BATCH, BATCH + 2, 1)
    assert Memory.objects.filter(project_id=project).count() == 10

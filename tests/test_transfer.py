"""`yullu export json` and `yullu import` as a user runs them: round trip, idempotence, the Go
Yul'lu database and the MCP memory server's JSONL."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memories.models import Memory
from memories.scope import resolve
from memories.write import create, edit
from tests.processes import REPO, product_env, run_cli
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)


def snapshot(project_id: str) -> list[tuple[Any, ...]]:
    return sorted(
        Memory.objects.filter(project_id=project_id).values_list(
            "uuid", "content", "category", "tags", "rating", "rating_comment", "created_at", "updated_at"
        )
    )


def cli_env(tmp_path: Path) -> dict[str, str]:
    return product_env(tmp_path / "home", YULLU_EMBED_PROVIDER="none")


def test_export_then_import_twice_gives_the_same_memories_with_the_same_categories(
    stub_embedder: StubServer, tmp_path: Path
) -> None:
    scope = resolve("acme/transfer", None)
    create.store_memory(scope, "Run make test before pushing", "process", ["ci"])
    kept = create.store_memory(scope, "We chose Postgres for pgvector", "decision", ["db", "search"]).memory
    create.store_memory(scope, "Loose note without a category")
    edit.rate_memory(kept.id, 8, "useful")
    create.store_memory(resolve("acme/other", None), "Another project's memory", "gotcha")
    before = snapshot("acme/transfer")
    env = cli_env(tmp_path)
    out = tmp_path / "export.jsonl"

    done = run_cli(["export", "json", "--project", "acme/transfer", "--out", str(out)], env)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["format"] == "yullu-memories" and lines[0]["version"] == 1 and lines[0]["count"] == 3
    assert {"uuid", "category", "tags", "rating", "rating_comment", "created_at", "updated_at"} <= set(lines[1])

    Memory.objects.all().delete()  # a fresh server
    for round_ in (1, 2):
        done = run_cli(["import", str(out)], env)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert (result["created"], result["skipped"]) == ((3, 0) if round_ == 1 else (0, 3))
    assert snapshot("acme/transfer") == before
    assert not Memory.objects.filter(project_id="acme/other").exists()


def test_import_reads_the_go_yullu_database(tmp_path: Path) -> None:
    db = tmp_path / "yullu.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE memories (id INTEGER PRIMARY KEY, uuid TEXT, project_id TEXT, content TEXT, tags_json TEXT,"
            " created_at DATETIME, updated_at DATETIME, category TEXT, rating INTEGER, rating_comment TEXT)"
        )
        conn.executemany(
            "INSERT INTO memories (uuid, project_id, content, tags_json, created_at, updated_at, category, rating,"
            " rating_comment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    "0b9f3c1e-3b1a-4c55-9d7e-1f2a3b4c5d6e",
                    "github.com/acme/go",
                    "Builds use go build -tags sqlite_fts5",
                    '["build", "go"]',
                    "2025-03-01 10:00:00",
                    "2025-03-02 11:00:00",
                    "process",
                    9,
                    "spot on",
                ),
                (
                    None,
                    "github.com/acme/go",
                    "Never commit the .yullu/db folder",
                    "[]",
                    1740823200,
                    None,
                    "gotcha",
                    None,
                    None,
                ),
                (
                    None,
                    "github.com/acme/go",
                    "token=ghp_" + "Zq8kP2mw4Xk9mP2vL8qR4tZ77bN3cD5eF6gH",
                    "[]",
                    None,
                    None,
                    None,
                    None,
                    None,
                ),
            ],
        )
    env = cli_env(tmp_path)
    for round_ in (1, 2):
        done = run_cli(["import", str(db)], env)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["format"] == "go-sqlite" and result["refused"] == 1, result
        assert result["created"] == (2 if round_ == 1 else 0)
    build = Memory.objects.get(uuid="0b9f3c1e-3b1a-4c55-9d7e-1f2a3b4c5d6e")
    assert (build.category, build.tags, build.rating, build.rating_comment) == (
        "process",
        ["build", "go"],
        9,
        "spot on",
    )
    assert build.created_at.year == 2025 and build.updated_at.day == 2
    assert Memory.objects.get(content__startswith="Never commit").category == "gotcha"
    assert not Memory.objects.filter(content__contains="ghp_").exists(), "secrets are refused on import too"


def test_import_reads_the_mcp_memory_servers_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "memory.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"type": "entity", "name": "Billing", "entityType": "service", "observations": ["Owns invoices"]},
                {"type": "relation", "from": "Billing", "to": "Ledger", "relationType": "writes_to"},
            ]
        )
        + "\n"
    )
    env = cli_env(tmp_path)
    for round_ in (1, 2):
        done = run_cli(["import", str(path), "--project", "acme/mcpmem"], env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["created"] == (2 if round_ == 1 else 0)
    contents = set(Memory.objects.filter(project_id="acme/mcpmem").values_list("content", flat=True))
    assert contents == {"Billing (service): Owns invoices", "Billing writes to Ledger"}


def test_an_unknown_file_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\n")
    done = run_cli(["import", str(path)], cli_env(tmp_path))
    assert done.returncode == 1 and "not a format yullu can import" in done.stderr
    assert "Traceback" not in done.stderr


def test_export_piped_into_head_stops_quietly_without_a_traceback(stub_embedder: StubServer, tmp_path: Path) -> None:
    scope = resolve("acme/piped", None)
    for n in range(24):  # ~150 kB of JSON: more than a pipe holds, so the export is still writing when head leaves
        create.store_memory(scope, f"Fact {n}: " + f"the cache key for shard {n} is cart-{n}. " * 160)
    proc = subprocess.Popen(
        [sys.executable, "-m", "yullu_cli.main", "export", "json", "--project", "acme/piped", "--out", "-"],
        env=cli_env(tmp_path),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert json.loads(proc.stdout.readline())["format"] == "yullu-memories"
    proc.stdout.close()  # what `| head -1` does
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) == 141  # as a shell reports a command SIGPIPE stopped
    assert stderr == "", stderr  # it said "yullu: Broken pipe." (found on the walk)


def test_import_checks_every_row_first_and_refuses_the_bad_ones_whole(tmp_path: Path) -> None:
    header: dict[str, Any] = {"format": "yullu-memories", "version": 1, "project_id": None, "count": 7}
    good: dict[str, Any] = {
        "project_id": "acme/rows",
        "content": "A good row",
        "category": "process",
        "tags": ["ok"],
        "rating": 7,
    }
    bad: dict[str, dict[str, Any]] = {
        "importance": {"content": "Bad importance", "importance": "urgent"},
        "rating": {"content": "Negative rating", "rating": -3},
        "huge created_at": {"content": "Far future", "created_at": 1e20},
        "huge updated_at": {"content": "Year 99999", "updated_at": "99999-01-01T00:00:00Z"},
        "tags": {"content": "Tags not a list", "tags": "a,b"},
        "category": {"content": "Unknown category", "category": "architecture"},
    }
    rows = [header, good] + [{"project_id": "acme/rows", **row} for row in bad.values()]
    rows.append({"project_id": "acme/rows", "content": "Another good row", "updated_at": "2026-01-02T03:04:05Z"})
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = run_cli(["import", str(path)], cli_env(tmp_path))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    result = json.loads(done.stdout)
    assert (result["created"], result["refused"]) == (2, len(bad)), result
    for row in bad.values():
        assert any(row["content"] in e for e in result["errors"]), (row, result["errors"])
    assert sorted(Memory.objects.values_list("content", flat=True)) == ["A good row", "Another good row"]
    assert Memory.objects.get(content="A good row").rating == 7


def test_an_export_imported_into_another_project_on_the_same_server_is_copied_once(
    stub_embedder: StubServer, tmp_path: Path
) -> None:
    """`import --project` of another project's export: the rows are new there (uuids name one memory
    across projects, so keeping them skipped every row), again is idempotent, links follow the copy."""
    from memories.transfer.export import export_json
    from memories.transfer.importer import import_path

    scope = resolve("acme/source", None)
    old = create.store_memory(scope, "vec:1,0,0 The api listens on port 8080", "domain").memory
    create.store_memory(scope, "vec:0,1,0 Run make test before pushing", "process")
    new = edit.update_memory(old.pk, content="vec:1,0,0 The api listens on port 9090", supersede=True)
    out = tmp_path / "export.jsonl"
    with out.open("w", encoding="utf-8") as fh:
        export_json("acme/source", fh)
    before = snapshot("acme/source")

    first = import_path(out, project="acme/copy")
    again = import_path(out, project="acme/copy")

    assert (first.created, first.skipped) == (3, 0)
    assert (again.created, again.skipped) == (0, 3)
    assert snapshot("acme/source") == before  # the source project is untouched
    copy = {m.content: m for m in Memory.objects.filter(project_id="acme/copy")}
    assert copy[old.content].superseded_by == copy[new.content]  # the link points within the copy
    assert not {m.uuid for m in copy.values()} & {m.uuid for m in Memory.objects.filter(project_id="acme/source")}

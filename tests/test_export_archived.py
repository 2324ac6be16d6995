"""A `yullu export json` file holds the archived memories too (rejected by a reviewer, or expired), and `yullu
import` writes them back: a home restored from an export keeps the reviewer's rejections, which dreaming reads as
anti-examples (walk 18: an export and import lost 4 of 53 rows)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memories.models import Memory, RejectedMemory
from memories.scope import resolve
from memories.write import create, edit
from tests.processes import product_env, run_cli
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)
PROJECT = "acme/archived"


def archived_rows() -> list[tuple[Any, ...]]:
    return sorted(
        RejectedMemory.objects.filter(project_id=PROJECT).values_list(
            "uuid", "content", "category", "tags", "rating", "rating_comment", "reason", "rejected_at", "created_at"
        )
    )


def export(tmp_path: Path, env: dict[str, str]) -> Path:
    out = tmp_path / "export.jsonl"
    done = run_cli(["export", "json", "--project", PROJECT, "--out", str(out)], env)
    assert done.returncode == 0, done.stderr
    return out


def imported(path: Path, env: dict[str, str]) -> dict[str, Any]:
    done = run_cli(["import", str(path)], env)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_a_rejected_memory_survives_an_export_and_import(stub_embedder: StubServer, tmp_path: Path) -> None:
    scope = resolve(PROJECT, None)
    create.store_memory(scope, "Run make test before pushing", "process", ["ci"])
    wrong = create.store_memory(scope, "We deploy on Fridays after lunch", "process", ["deploy"]).memory
    edit.rate_memory(wrong.id, 2, "we never deploy on Fridays")
    before = archived_rows()
    env = product_env(tmp_path / "home", YULLU_EMBED_PROVIDER="none")
    out = export(tmp_path, env)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["version"] == 2 and lines[0]["count"] == 1 and lines[0]["archived"] == 1
    assert lines[-1]["archived"]["content"] == "We deploy on Fridays after lunch"

    Memory.objects.all().delete()  # a fresh server
    RejectedMemory.objects.all().delete()
    first = imported(out, env)
    assert (first["created"], first["archived"], first["refused"]) == (1, 1, 0), first
    assert archived_rows() == before  # its uuid, rating, comment, reason and times as they were
    again = imported(out, env)
    assert (again["created"], again["archived"], again["skipped"]) == (0, 0, 2), again
    assert archived_rows() == before


def test_an_import_counts_its_archived_rows_as_read(stub_embedder: StubServer, tmp_path: Path) -> None:
    """Walk 20: importing an export again said `"read": 13, "skipped": 14` (the archived row skipped but not read),
    and the stderr line, printed before the archived rows, said 13 already there."""
    scope = resolve(PROJECT, None)
    create.store_memory(scope, "Run make test before pushing", "process", ["ci"])
    wrong = create.store_memory(scope, "We deploy on Fridays after lunch", "process", ["deploy"]).memory
    edit.rate_memory(wrong.id, 2, "we never deploy on Fridays")
    env = product_env(tmp_path / "home", YULLU_EMBED_PROVIDER="none")
    out = export(tmp_path, env)
    Memory.objects.all().delete()  # a fresh server
    RejectedMemory.objects.all().delete()
    first = run_cli(["import", str(out)], env)
    assert json.loads(first.stdout)["read"] == 2
    assert first.stderr.splitlines()[-1].startswith("read 2: 1 new, 0 already there, 0 repeated within the file, ")
    assert first.stderr.splitlines()[-1].endswith(", 1 archived memory written back")
    again = run_cli(["import", str(out)], env)
    summary = json.loads(again.stdout)
    assert (summary["read"], summary["skipped"]) == (2, 2), summary
    assert again.stderr.splitlines()[-1] == "read 2: 0 new, 2 already there, 0 repeated within the file, 0 refused"


def test_without_archived_memories_the_file_stays_version_one(stub_embedder: StubServer, tmp_path: Path) -> None:
    create.store_memory(resolve(PROJECT, None), "Run make test before pushing", "process", ["ci"])
    env = product_env(tmp_path / "home", YULLU_EMBED_PROVIDER="none")
    header = json.loads(export(tmp_path, env).read_text().splitlines()[0])
    assert (header["version"], header["archived"]) == (1, 0)  # an older yullu still reads it


def test_a_bad_or_secret_archived_row_is_refused_and_the_rest_imported(tmp_path: Path) -> None:
    header = {"format": "yullu-memories", "version": 2, "count": 1, "archived": 3}
    good = {"uuid": "7f0c3a52-7a0e-4f4e-9a57-0c8f3f0f9d11", "project_id": PROJECT, "content": "A rejected idea"}
    rows = [
        header,
        {"uuid": "8a0c3a52-7a0e-4f4e-9a57-0c8f3f0f9d11", "project_id": PROJECT, "content": "A live memory"},
        {"archived": good | {"rating": 3, "reason": "rejected"}},
        {"archived": good | {"uuid": "not-a-uuid"}},
        {
            "archived": good
            | {
                "uuid": "9b0c3a52-7a0e-4f4e-9a57-0c8f3f0f9d11",
                "content": "token ghp_8f3kQ2xLm9Wv7TpZr4Yb2NcQ8sT6uV0wX1yZ",
            }
        },
    ]
    path = tmp_path / "hand.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    env = product_env(tmp_path / "home", YULLU_EMBED_PROVIDER="none")
    result = imported(path, env)
    assert (result["created"], result["archived"], result["refused"]) == (1, 1, 2), result
    assert [e.split(" (")[0] for e in result["errors"]] == ["line 4", "line 5"]
    assert "ghp_" not in json.dumps(result)  # a refused secret is never echoed
    assert list(RejectedMemory.objects.values_list("content", "rating")) == [("A rejected idea", 3)]


def test_a_newer_format_is_refused_in_one_sentence(tmp_path: Path) -> None:
    path = tmp_path / "future.jsonl"
    path.write_text(json.dumps({"format": "yullu-memories", "version": 3}) + "\n")
    done = run_cli(["import", str(path)], product_env(tmp_path / "home", YULLU_EMBED_PROVIDER="none"))
    assert done.returncode != 0 and "format version 3; this yullu reads up to 2" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_imported_archived_rows_origin_keeps_no_script_link_for_the_review_queue(
    stub_embedder: StubServer, tmp_path: Path, client: Any, owner: Any
) -> None:
    """An origin from a file was kept as it came: restored, the review queue linked its label to the file's url, so
    a 'javascript:' url ran in the reviewer's session when clicked. Now only a path on this site is kept."""
    header = {"format": "yullu-memories", "version": 2, "count": 0, "archived": 2}
    bad = {"label": "dream pass 7", "url": "javascript:alert(document.cookie)", "why": "said twice", "x": [1]}
    rows = [
        header,
        {"archived": {"uuid": "7f0c3a52-7a0e-4f4e-9a57-0c8f3f0f9d11", "project_id": PROJECT, "content": "Ship on "
                      "Mondays only", "rating": 2, "origin": bad}},  # fmt: skip
        {"archived": {"uuid": "8f0c3a52-7a0e-4f4e-9a57-0c8f3f0f9d11", "project_id": PROJECT, "content": "Tag every "
                      "release", "origin": {"label": "dream pass 8", "url": "/admin/dreaming/dreampass/8/change/"}}},
    ]  # fmt: skip
    path = tmp_path / "hand.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = imported(path, product_env(tmp_path / "home", YULLU_EMBED_PROVIDER="none"))
    assert (result["archived"], result["refused"]) == (2, 0), result
    kept = dict(RejectedMemory.objects.values_list("content", "origin"))
    assert kept["Ship on Mondays only"] == {"label": "dream pass 7", "why": "said twice"}
    assert kept["Tag every release"]["url"] == "/admin/dreaming/dreampass/8/change/"

    for row in RejectedMemory.objects.all():
        edit.restore_rejected(row.pk)
    client.force_login(owner)
    page = client.get("/admin/memories/memory/review/").content.decode()
    assert "dream pass 7" in page and "javascript:" not in page
    assert 'href="/admin/dreaming/dreampass/8/change/"' in page

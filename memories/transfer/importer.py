"""`yullu export json` and `yullu import`: memories as versioned JSON Lines, and imports from that
format, the original Go Yul'lu SQLite database and the official MCP memory server's JSONL.

Imports go through the write path (`create.store_memories`: validation, secret scan, sync
events) and are idempotent: a memory keeps its uuid (formats without one get a uuid derived from
project and content; one imported with `--project` into another project than its export's gets one
derived from that project and its uuid), and a uuid or an identical content already there is skipped.
The summary counts rows that repeat what was there before the import (`skipped`, "already there") apart
from rows that repeat an earlier row of the same file (`repeated`).

Every field of a row is validated before the row is written (`_valid`: content, project, tags,
category, times, rating, importance and the other carried-over fields): a bad row is refused and
reported with its reason, never half-written, and the rows around it are imported.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import sqlite3
import uuid
from array import array
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.template.defaultfilters import pluralize

from yullu_core.errors import UserError
from yullu_core.failures import DiskFull, translate

from ..anchors import store as anchor_store
from ..embedding import vector_index
from ..embedding.embedders import embeds, get_embedder
from ..models import Memory
from ..scope import resolve, validate_project_id
from ..secrets import find_secret, redact
from ..write import create, validation
from ..write.load_index import LoadIndex
from . import archived, assistant_memory
from .export import FORMAT, SKIP_FIELDS
from .placing import FUTURE_FIELDS, derived_uuid, relocated_uuid
from .placing import not_after as _not_after
from .placing import placed as _placed
from .placing import read_time as _time

BATCH = 2_000  # rows per write: one embedding call, one duplicate query, one insert each


# --- reading the three formats ----------------------------------------------------------


@dataclass
class Row:
    project_id: str
    content: str
    category: str | None = None
    tags: list[str] = field(default_factory=list)
    uuid: str | None = None
    created_at: Any = None  # as read; a datetime once `_valid` has checked it
    extra: dict[str, Any] = field(default_factory=dict)  # rating, updated_at, lifecycle fields …
    vectors: dict[str, Any] = field(default_factory=dict)  # embedder id → vector (`export --vectors`)
    moved: bool = False  # imported into another project than the one it was exported from (`--project`)


def detect(path: Path) -> str:
    with path.open("rb") as fh:
        head = fh.read(16)
    if head.startswith(b"SQLite format 3"):
        return "go-sqlite"
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                first = json.loads(line)
            except ValueError:
                break
            if isinstance(first, dict) and first.get("format") == FORMAT:
                return "yullu-jsonl"
            if isinstance(first, dict) and first.get("type") in ("entity", "relation"):
                return "mcp-memory-jsonl"
            break
    raise UserError(
        f"{path}: not a format yullu can import (a `yullu export json` file, the Go Yul'lu SQLite "
        "database, or the MCP memory server's memory.jsonl)."
    )


def read_yullu(path: Path, project: str | None, held: list[tuple[int, Any]] | None = None) -> Iterator[Row]:
    """The file's memories as rows; its archived memories (format version 2) are put in `held` with their line."""
    with path.open(encoding="utf-8") as fh:
        header = json.loads(fh.readline())
        if header.get("version", 0) > archived.ARCHIVED_VERSION:
            raise UserError(
                f"{path} is format version {header['version']}; this yullu reads up to {archived.ARCHIVED_VERSION}."
            )
        for n, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                raise UserError(f"{path}:{n}: not valid JSON; nothing after line {n - 1} was imported.") from None
            if isinstance(rec, dict) and archived.KEY in rec:
                if held is not None:
                    held.append((n, rec[archived.KEY]))
                continue
            known = {"uuid", "project_id", "content", "category", "tags", "created_at", "vectors"}
            target, uid, moved = _placed(project, str(rec.get("project_id") or ""), rec.get("uuid"))
            yield Row(
                project_id=target,
                content=rec.get("content"),
                category=rec.get("category"),
                tags=rec.get("tags") or [],
                uuid=uid,
                moved=moved,
                created_at=rec.get("created_at"),
                extra={k: v for k, v in rec.items() if k not in known},
                vectors=rec.get("vectors") if isinstance(rec.get("vectors"), dict) else {},
            )


def read_go_sqlite(path: Path, project: str | None) -> Iterator[Row]:
    """The original program's `memories(id, uuid, project_id, content, tags_json, created_at,
    updated_at, category, rating, rating_comment)`; older databases lack the later columns."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
        if not {"content", "project_id"} <= columns:
            raise UserError(f"{path}: has no memories table with content and project_id; is it a Yul'lu database?")
        for r in conn.execute("SELECT * FROM memories ORDER BY id"):
            row = dict(r)
            try:
                tags = json.loads(row.get("tags_json") or "[]")
            except ValueError:
                tags = []
            extra = {k: row.get(k) for k in ("rating", "rating_comment") if row.get(k) is not None}
            if row.get("updated_at"):
                extra["updated_at"] = row["updated_at"]
            target, uid, moved = _placed(project, str(row["project_id"] or ""), row.get("uuid"))
            yield Row(
                project_id=target,
                content=row["content"],
                category=row.get("category"),
                tags=tags if isinstance(tags, list) else [],
                uuid=uid,
                moved=moved,
                created_at=row.get("created_at"),
                extra=extra,
            )
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{path}: cannot read the SQLite database ({exc}).") from None
    finally:
        conn.close()


def read_mcp_memory(path: Path, project: str) -> Iterator[Row]:
    """The official MCP memory server's knowledge graph: each observation of an entity becomes
    one memory ("<name> (<entityType>): <observation>"), each relation one memory."""
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if not isinstance(rec, dict):
                continue
            if rec.get("type") == "entity":
                name, kind = str(rec.get("name", "")).strip(), str(rec.get("entityType", "")).strip()
                for observation in rec.get("observations") or []:
                    text = f"{name} ({kind}): {observation}" if kind else f"{name}: {observation}"
                    yield Row(project, text, "domain", [t for t in ("mcp-memory", kind[:100]) if t])
            elif rec.get("type") == "relation":
                text = f"{rec.get('from', '')} {str(rec.get('relationType', '')).replace('_', ' ')} {rec.get('to', '')}"
                yield Row(project, text.strip(), "domain", ["mcp-memory", "relation"])


# --- writing ----------------------------------------------------------------------------


@dataclass
class ImportResult:
    format: str
    read: int = 0
    created: int = 0
    skipped: int = 0  # the same as (or a near-duplicate of) a memory that was there before the import
    repeated: int = 0  # the same as (or a near-duplicate of) an earlier row of the file
    refused: int = 0
    archived: int = 0  # archived memories (rejected or expired) written back, from a file of format version 2
    errors: list[str] = field(default_factory=list)
    # Assistant memory files only: each fact read with the category guessed for it, for review.
    review: list[dict[str, str | None]] = field(default_factory=list)


@functools.cache  # the model's fields; looked up for every row
def _settable() -> dict[str, Any]:
    """Fields an import carries over beside what the write path sets (ratings, times, lifecycle)."""
    fixed = {"uuid", "project_id", "content", "category", "tags", "created_at"}
    return {f.name: f for f in Memory._meta.concrete_fields if f.name not in fixed | SKIP_FIELDS}


def _carried(row: Row) -> dict[str, Any]:
    """What the write path does not set and the export carries (times, ratings, lifecycle fields,
    checked and converted by _valid), attname → value: written with the insert itself. An UPDATE
    after it wrote a new version of every row and of all its index entries (a tenth of an import)."""
    settable = _settable()
    carried: dict[str, Any] = {}
    for key, value in row.extra.items():
        f = settable.get(key)
        if f is not None and value is not None and not f.is_relation:
            carried[f.attname] = value
    if not carried.get("held_reason"):
        # An export's empty hold must not release what the write path holds here: a file edited to
        # say `"held_reason": ""` would otherwise put an instruction to the assistant straight into
        # every context. A reason it carries keeps the memory held.
        carried.pop("held_reason", None)
    return carried


def _restore_fields(created: list[tuple[Memory, Row, dict[str, Any]]]) -> None:
    """The instances take the values their rows were written with (`_carried`); links between
    imported memories by uuid."""
    settable = _settable()
    links: list[tuple[Memory, str, str]] = []
    for memory, row, carried in created:
        for attname, value in carried.items():
            setattr(memory, attname, value)
        for key, value in row.extra.items():
            f = settable.get(key)
            if (
                f is not None and value is not None and f.is_relation
            ):  # a link to another row of the file: moved with it
                links.append(
                    (memory, f.name, relocated_uuid(memory.project_id, str(value)) if row.moved else str(value))
                )
    if not links:
        return
    with transaction.atomic():
        targets = Memory.objects.in_bulk([t for _, _, t in links], field_name="uuid")
        for memory, name, target in links:
            other = targets.get(target) or targets.get(uuid.UUID(target)) if _is_uuid(target) else None
            if other is not None:
                setattr(memory, name, other)
                memory.save(update_fields=[name])


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _valid(row: Row, result: ImportResult) -> bool:
    """Check (and convert) every field the write will use; a bad row is refused with its reason."""
    try:
        _check(row)
    except (UserError, ValueError, ValidationError) as exc:
        result.refused += 1
        reason = " ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        if len(result.errors) < 20:
            # redacted: a row refused for a secret must not print the secret in the report. Only as much as a
            # memory may hold is read: the scan's cost grows faster than the text (walk 17: one 50 MB line of
            # "x x x …" took 50 s to refuse), and a secret starting in the 60 characters shown lies within it.
            shown = redact(str(row.content)[: validation.max_content_chars()])[:60]
            result.errors.append(f"row {result.read} {shown!r}: {reason}")
        return False
    return True


def _check(row: Row) -> None:
    validation.clean_content(row.content)
    if not row.project_id:
        raise UserError("no project: pass --project")
    validate_project_id(row.project_id)
    row.tags = validation.clean_tags(row.tags)
    validation.refuse_secrets(str(row.content), *row.tags, row.project_id)
    row.category = validation.clean_category(row.category)  # an unknown category is an error naming the five
    now = datetime.now(UTC)
    row.created_at = _not_after(_time(row.created_at), now)
    settable = _settable()
    for key, value in list(row.extra.items()):
        f = settable.get(key)
        if f is None or value is None or f.is_relation:
            continue  # unknown keys are ignored; links are resolved by uuid after the write
        if f.get_internal_type() == "DateTimeField":
            row.extra[key] = _time(value) if key in FUTURE_FIELDS else _not_after(_time(value), now)
        elif key == "rating":
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10:
                raise UserError(f"rating must be a whole number from 1 to 10, not {str(value)[:20]!r}.")
        else:
            row.extra[key] = f.clean(value, None)  # type, length and choices (importance) as the model has them


def _vector(row: Row, embedder_id: str) -> list[float] | None:
    """The row's vector of our model, if the export carried one (else the import embeds it)."""
    vector = row.vectors.get(embedder_id)
    if not isinstance(vector, list):
        return None
    try:  # every component a number (bools count, as isinstance says): checked in C, not per item
        array("d", vector)
    except (TypeError, OverflowError):
        return None
    return vector


@dataclass
class _Load:
    """An import of more rows than one batch: each project's in-memory duplicate check across its batches
    (`LoadIndex`), made at the project's first batch when the project holds no more memories than the
    file has rows (else its memories stay searched through the index, as a single batch's are)."""

    rows: int  # the file's rows, counted before the import
    projects: dict[str, LoadIndex | None] = field(default_factory=dict)

    def index(self, project_id: str) -> LoadIndex | None:
        if project_id not in self.projects:
            held = Memory.objects.filter(project_id=project_id)[: self.rows + 1].count()
            self.projects[project_id] = LoadIndex(project_id, get_embedder().id) if held <= self.rows else None
        return self.projects[project_id]


def _write_batch(
    rows: list[Row], result: ImportResult, load: _Load | None = None, made: set[int] | None = None
) -> None:
    """`made`: the ids of the memories this import created so far (added to here): a row repeating one
    of them repeats an earlier row of the file, not something that was there before."""
    made = set() if made is None else made
    for project_id in sorted({r.project_id for r in rows}):
        group = [r for r in rows if r.project_id == project_id]
        for r in group:
            r.uuid = str(r.uuid) if r.uuid else derived_uuid(project_id, r.content)
        # uuid / content -> the memory holding it (None: an earlier row of this batch)
        seen_uuids: dict[str | None, int | None] = {
            str(u): pk for u, pk in Memory.objects.filter(uuid__in=[r.uuid for r in group]).values_list("uuid", "pk")
        }
        seen_content: dict[str, int | None] = dict(
            Memory.objects.filter(project_id=project_id, content__in=[r.content.strip() for r in group]).values_list(
                "content", "pk"
            )
        )
        fresh: list[Row] = []
        for r in group:
            if r.uuid in seen_uuids or r.content.strip() in seen_content:
                holder = seen_uuids[r.uuid] if r.uuid in seen_uuids else seen_content[r.content.strip()]
                _count_repeat(result, holder is None or holder in made)
                continue
            seen_uuids[r.uuid] = None
            seen_content[r.content.strip()] = None
            fresh.append(r)
        if not fresh:
            continue
        model = get_embedder().id
        items = [
            validation.NewMemory(
                r.content, r.category, r.tags, r.created_at, uuid=r.uuid, vector=_vector(r, model), carried=_carried(r)
            )
            for r in fresh
        ]
        stored = create.store_memories(
            resolve(project_id, None), items, source="import", load=load.index(project_id) if load else None
        )
        kept = [(s.memory, r, i.carried or {}) for s, r, i in zip(stored, fresh, items, strict=True) if s.created]
        _restore_fields(kept)
        for memory, row, _ in kept:  # code anchors keep the pins they had where they were exported
            if anchors := anchor_store.clean_wire(row.extra.get("anchors")):
                anchor_store.from_wire(memory, anchors)
        result.created += len(kept)
        made.update(m.pk for m, _, _ in kept)
        for s in stored:  # near-duplicates: of a memory already there, or of one an earlier row made
            if not s.created:
                _count_repeat(result, s.memory.pk in made)


def _count_repeat(result: ImportResult, of_the_file: bool) -> None:
    if of_the_file:
        result.repeated += 1
    else:
        result.skipped += 1


def import_rows(
    rows: Iterable[Row], result: ImportResult, progress: IO[str] | None = None, expected: int = 0
) -> ImportResult:
    """Write `rows` in batches of BATCH, each all or nothing. `expected` (the rows a file holds, counted
    first): an import of more than one batch checks its duplicates in memory across batches, and one
    larger than the vector index holds pauses the index for the whole import (`_paused`)."""
    batch: list[Row] = []
    load = _Load(expected) if expected > BATCH else None
    made: set[int] = set()  # the memories this import created: what a later row may repeat
    first = True
    with _no_cycle_collection(), ExitStack() as stack:
        for row in rows:
            result.read += 1
            if not isinstance(row.content, str):
                row.content = ""
            if _valid(row, result):
                batch.append(row)
            if len(batch) >= BATCH:
                if load is not None and first:
                    stack.enter_context(_paused(batch, expected))
                first = False
                _write_or_explain(batch, result, load, made)
                batch = []
                _progress(progress, result)
        if batch:
            _write_or_explain(batch, result, load, made)
    return result


def _write_or_explain(batch: list[Row], result: ImportResult, load: _Load | None, made: set[int]) -> None:
    """`_write_batch`; a full disk after earlier batches were stored says what was kept. ("The disk is
    full, so nothing was stored" came right after progress lines saying 12,000 rows were: round eight.)"""
    try:
        _write_batch(batch, result, load, made)
    except Exception as exc:
        said = translate(exc)
        if not isinstance(said, DiskFull) or not (result.created or result.skipped):
            raise
        raise DiskFull(
            f"The disk is full: the import stopped after storing {result.created} new memories, and the "
            f"{len(batch)} rows it was writing were not stored. Free some space on the server and run the same "
            "import again: the rows already there are skipped."
        ) from None


def _paused(batch: list[Row], rows: int) -> contextlib.AbstractContextManager[None]:
    """The vector index dropped for the whole import and built once after it, when the file has at
    least as many rows as the index holds (`vector_index.paused_for_load`): the batches after the
    first inserted their vectors into the HNSW graph one by one, about three times the cost of
    building it (docs/benchmarks.md). Searches meanwhile scan the vectors exactly."""
    model = get_embedder()
    if not embeds(model):
        return contextlib.nullcontext()
    given = next((v for r in batch if (v := _vector(r, model.id)) is not None), None)
    dim = len(given) if given is not None else len(model.embed(["dimension"])[0])
    return vector_index.paused_for_load(model.id, dim, rows)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while an import reads and writes (only `yullu import` runs
    one, in its own process): the rows, vectors and model instances it allocates set off full
    collections that walked the whole heap (Django, the embedding model), 90 ms of an import of
    2,000 memories with vectors, and found no cycles to free (gc.collect() after such an import: 0).
    Reference counting frees the rows as before; the collector runs again when the import ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _progress(out: IO[str] | None, result: ImportResult, done: bool = False) -> None:
    if out is None:
        return
    line = (
        f"read {result.read}: {result.created} new, {result.skipped} already there, "
        f"{result.repeated} repeated within the file, {result.refused} refused"
    ) + (
        f", {result.archived} archived memor{pluralize(result.archived, 'y,ies')} written back"
        if result.archived
        else ""
    )
    if out.isatty():
        out.write("\r" + line + ("\n" if done else ""))
    elif done or result.read % 1000 < BATCH:
        out.write(line + "\n")
    out.flush()


def import_path(
    path: Path, project: str | None = None, cwd: str | None = None, progress: IO[str] | None = None
) -> ImportResult:
    """Import a file or folder in any of the formats `detect` knows; `progress` (the command line's
    standard error) gets a line per batch."""
    if project:  # once, up front: a bad --project was each row's error, and rows skipped, not one sentence
        validate_project_id(project)
    if assistant_memory.is_assistant_source(path) and path.exists():
        return import_assistant_memory(path, project, cwd, progress)
    if not path.is_file():
        raise UserError(f"{path}: no such file or folder.")
    kind = detect(path)
    result = ImportResult(format=kind)
    expected = 0  # the MCP memory server's lines hold any number of facts: not counted
    held: list[tuple[int, Any]] = []  # the file's archived memories, written after its memories
    if kind == "yullu-jsonl":
        rows, expected = read_yullu(path, project, held), _lines(path) - 1
    elif kind == "go-sqlite":
        rows, expected = read_go_sqlite(path, project), _sqlite_rows(path)
    else:
        rows = read_mcp_memory(path, project or resolve(None, cwd).project_id)
    import_rows(rows, result, progress=progress, expected=expected)
    archived.restore(held, project, result)
    _progress(progress, result, done=True)  # after the archived rows: the last line adds up as the summary does
    return result


def _lines(path: Path) -> int:
    """Lines of a file, counted in 1 MB blocks (0.15 s for 240 MB: 50,000 rows with vectors)."""
    count = 0
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            count += block.count(b"\n")
    return count


def _sqlite_rows(path: Path) -> int:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    except sqlite3.DatabaseError:
        return 0  # read_go_sqlite says what is wrong with it


def import_assistant_memory(
    path: Path, project: str | None, cwd: str | None, progress: IO[str] | None = None
) -> ImportResult:
    """Claude Code auto memory, CLAUDE.md / AGENTS.md, Cursor rules, Copilot instructions
    (memories.transfer.assistant_memory). The project: --project, else the folder imported when it is a
    repository (not a Claude memory folder), else --cwd."""
    where = str(path) if path.is_dir() and path.name != "memory" else cwd
    project_id = project or resolve(None, where).project_id
    result = ImportResult(format="assistant-memory")
    rows = []
    for file, kind, category, fact in assistant_memory.read(path):
        rows.append(Row(project_id=project_id, content=fact, category=category, tags=[f"from:{kind}"]))
        # redacted as the errors are: a fact refused for a secret is listed here too (found on the walk). Only
        # then: find_secret's verdict is kept, so the write path's check of the row costs no second scan.
        shown = redact(fact) if find_secret(fact) else fact
        result.review.append({"file": str(file), "category": category, "content": shown[:120]})
    if not rows:
        expected = "CLAUDE.md, AGENTS.md, .cursor/rules/*.mdc, .github/copilot-instructions.md or Claude Code's memory"
        raise UserError(f"{path}: no facts found (expected Markdown lists or paragraphs: {expected}).")
    import_rows(rows, result, progress=progress)
    _progress(progress, result, done=True)
    return result

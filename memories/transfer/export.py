"""Exports: every memory as versioned JSON Lines (`yullu export json`, read back by
memories.transfer.importer) and a project's current memories grouped by category as Markdown
(`yullu export agents-md`). Writing them to a file or the terminal is the command line's part."""

from __future__ import annotations

import json
from typing import IO, Any

from django.utils import timezone

from yullu_core.text import json_safe

from ..anchors import store as anchor_store
from ..models import CATEGORIES, Memory, MemoryAnchor, MemoryVector
from . import archived

FORMAT = "yullu-memories"
VERSION = 1  # a file of memories only; one holding archived memories too is archived.ARCHIVED_VERSION
# Fields every version writes; others (lifecycle fields added later) are exported generically.
# A teammate's name (created_author / updated_author) is this machine's record of the log, as created_by is a user
# of it: neither travels in a file.
SKIP_FIELDS = {"id", "search", "created_author", "updated_author"}
TITLES = {
    "process": "How we work",
    "decision": "Decisions",
    "gotcha": "Gotchas",
    "domain": "Domain",
    "style": "Style",
    None: "Other notes",
}


def render_agents_md(project_id: str) -> str:
    # Current facts only: a superseded or expired memory would tell a reader the old command.
    memories = list(Memory.objects.current().filter(project_id=project_id).order_by("category", "created_at", "id"))
    lines = [f"# Project memory: {project_id}", "", "Exported from Yul'lu. Each line is one durable fact.", ""]
    for category in [*CATEGORIES, None]:
        group = [m for m in memories if m.category == category]
        if not group:
            continue
        lines += [f"## {TITLES[category]}", ""]
        lines += [f"- {' '.join(m.content.split())}" for m in group]
        lines.append("")
    if not memories:
        lines.append("_No memories yet._")
    return "\n".join(lines).rstrip("\n") + "\n"


def _value(memory: Memory, f: Any) -> Any:
    if f.is_relation:  # links to other memories travel as their uuid
        related = getattr(memory, f.name)
        return str(related.uuid) if related is not None and hasattr(related, "uuid") else None
    return archived.plain(getattr(memory, f.attname))


def memory_record(
    memory: Memory, vectors: bool = False, held: tuple[dict[str, Any], list[Any]] | None = None
) -> dict[str, Any]:
    """`held`: the memory's vectors (embedder → vector) and anchor rows, read for many memories at once."""
    record = {f.name: _value(memory, f) for f in Memory._meta.concrete_fields if f.name not in SKIP_FIELDS}
    anchors = anchor_store.to_wire(held[1]) if held else anchor_store.wire_of(memory)
    if anchors:
        record["anchors"] = anchors  # code anchors with their pins (docs/contract.md §12)
    if vectors:
        found = held[0] if held else {v.embedder: v.vector for v in MemoryVector.objects.filter(memory=memory)}
        record["vectors"] = {embedder: [round(float(x), 7) for x in vector] for embedder, vector in found.items()}
    return record


CHUNK = 500  # memories whose vectors and anchors are read in one query each (one query a memory: 95 s for 10,000)


def export_json(project_id: str | None, out: IO[str], *, vectors: bool = False) -> int:
    """Every memory (or one project's), then every archived one (rejected or expired: `archived`): returns how
    many memories were written."""
    qs = Memory.objects.order_by("project_id", "created_at", "id")
    if project_id:
        qs = qs.filter(project_id=project_id)
    n_archived = archived.archived_rows(project_id).count()
    header = {
        "format": FORMAT,
        "version": archived.ARCHIVED_VERSION if n_archived else VERSION,
        "exported_at": timezone.now().isoformat(),
        "project_id": project_id,
        "count": qs.count(),
        "archived": n_archived,
        "vectors": vectors,
    }
    out.write(json_safe(json.dumps(header, ensure_ascii=False)) + "\n")
    n = 0
    chunk: list[Memory] = []
    for memory in qs.iterator(chunk_size=CHUNK):
        chunk.append(memory)
        if len(chunk) == CHUNK:
            n += _write_chunk(chunk, out, vectors)
            chunk = []
    n += _write_chunk(chunk, out, vectors)
    for record in archived.records(project_id):
        out.write(json_safe(json.dumps(record, ensure_ascii=False)) + "\n")
    return n


def _write_chunk(chunk: list[Memory], out: IO[str], vectors: bool) -> int:
    ids = [m.pk for m in chunk]
    found: dict[int, dict[str, Any]] = {pk: {} for pk in ids}
    if vectors:
        for memory_id, embedder, vector in (
            MemoryVector.objects.filter(memory_id__in=ids).order_by("id").values_list("memory_id", "embedder", "vector")
        ):
            found[memory_id][embedder] = vector
    anchors: dict[int, list[Any]] = {pk: [] for pk in ids}
    for anchor in MemoryAnchor.objects.filter(memory_id__in=ids).order_by("id"):
        anchors[anchor.memory_id].append(anchor)
    for memory in chunk:  # control and bidi characters as JSON escapes: safe in a terminal
        record = memory_record(memory, vectors, (found[memory.pk], anchors[memory.pk]))
        out.write(json_safe(json.dumps(record, ensure_ascii=False)) + "\n")
    return len(chunk)

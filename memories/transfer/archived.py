"""Archived memories (rejected by a reviewer, or expired) in a `yullu export json` file, and back.

A restore from an export must keep the reviewer's rejections: dreaming reads them as anti-examples, and without
them a rebuilt home proposes what was rejected again (walk 18: an export and import lost 4 of 53 rows). They are
written after the memories, one `{"archived": {…}}` line each, and such a file's header says format version 2: a
reader of version 1 refuses the file in one sentence instead of importing them as live memories. A file without
archived rows stays version 1.

They are this machine's review records, as they were before the export: an import writes no sync event for them
(a teammate's log already holds the delete that archived each)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Protocol

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from yullu_core.errors import UserError

from .. import origins
from ..models import Memory, RejectedMemory
from ..scope import validate_project_id
from ..write import validation
from .placing import not_after, placed, read_time


class Tally(Protocol):
    """What an import counts (importer.ImportResult)."""

    read: int
    skipped: int
    refused: int
    archived: int
    errors: list[str]


KEY = "archived"
ARCHIVED_VERSION = 2  # the format version of a file holding archived rows
# Not carried: the row's id here, and who on this machine wrote it first (a user of this machine or its record of
# a teammate's name, as for memories: export.SKIP_FIELDS).
SKIP = {"id", "created_by", "created_author"}
TIMES = ("rejected_at", "created_at", "updated_at")


def archived_rows(project_id: str | None) -> Any:
    qs = RejectedMemory.objects.order_by("project_id", "rejected_at", "id")
    return qs.filter(project_id=project_id) if project_id else qs


def records(project_id: str | None) -> Iterator[dict[str, Any]]:
    """Each archived memory as the line an export writes."""
    fields = [f for f in RejectedMemory._meta.concrete_fields if f.name not in SKIP]
    for row in archived_rows(project_id).iterator(chunk_size=500):
        yield {KEY: {f.name: plain(getattr(row, f.attname)) for f in fields}}


def plain(value: Any) -> Any:
    """A field's value as a line of the export holds it (a memory's too: export._value)."""
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value) if isinstance(value, uuid.UUID) else value


def restore(lines: list[tuple[int, Any]], project: str | None, result: Tally) -> None:
    """The archived rows an import read (line number, record), written unless their memory is already here, live or
    archived; a bad row is refused with its line's reason, like a memory's."""
    now = timezone.now()
    for n, record in lines:
        result.read += 1  # counted as the file's memories are, so read = created + skipped + … + archived
        try:
            row = _checked(record, project, now)
        except (ValueError, ValidationError, UserError) as exc:
            result.refused += 1
            result.errors.append(f"line {n} (an archived memory): {_reason(exc)}")
            continue
        with transaction.atomic():
            here = (
                RejectedMemory.objects.filter(uuid=row.uuid).exists() or Memory.objects.filter(uuid=row.uuid).exists()
            )
            if here:
                result.skipped += 1
                continue
            row.save()
        result.archived += 1


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
    return str(exc)


def _checked(record: Any, project: str | None, now: datetime) -> RejectedMemory:
    if not isinstance(record, dict):
        raise ValueError("not an object")
    fields = {f.name for f in RejectedMemory._meta.concrete_fields} - SKIP
    values = {k: v for k, v in record.items() if k in fields}
    target, uid, _moved = placed(project, str(values.get("project_id") or ""), values.get("uuid"))
    values["project_id"] = validate_project_id(target)
    values["uuid"] = uuid.UUID(str(uid))  # ValueError: not a uuid
    for name in TIMES:  # a time from a machine whose clock ran ahead is read as now (placing.not_after)
        values[name] = not_after(read_time(values.get(name)), now)
    values["rejected_at"] = values["rejected_at"] or now
    values["expires_at"] = read_time(values.get("expires_at"))
    values["content"] = validation.clean_content(values.get("content"))
    values["tags"] = validation.clean_tags(values.get("tags"))
    values["category"] = validation.clean_category(values.get("category"))
    if not isinstance(values.get("anchors", []), list) or not isinstance(values.get("origin", {}), dict):
        raise ValueError("anchors must be a list and origin an object")
    # What the review queue shows of it once restored: its strings only, a url only as a path on this site (a
    # file's "javascript:" url was a link there), and scanned for secrets like the rest (the dream pass's reason).
    values["origin"] = origins.kept(values.get("origin", {}))
    told = (str(values.get("rating_comment") or ""), *values["origin"].values())
    validation.refuse_secrets(values["content"], *values["tags"], *told)
    row = RejectedMemory(**values)
    row.full_clean(validate_unique=False)
    return row

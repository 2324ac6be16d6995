"""The event log: one pretty-printed JSON file per event under `<git_root>/<dir>/logs/`.

Files are written atomically (temp file in the same folder, fsync, hard link to
the final name, which fails rather than overwrite, then fsync of the folder), so
two servers writing into one repo at the same moment never clobber each other.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypedDict

EventType = Literal["remember", "revise", "forget"]
NAME_RE = re.compile(r"^\d{8}T\d{6}\.\d{9}Z-[0-9a-f]{8}\.json$")
MAX_EVENT_BYTES = 4 * 1024 * 1024
MAX_VECTOR_DIM = 8192


class Event(TypedDict, total=False):
    id: str
    type: EventType
    memory_id: str
    ts: str
    content: str
    tags: list[str]
    category: str | None
    vectors: dict[str, list[float]]


class EventLogError(Exception):
    pass


def logs_dir(git_root: Path, sync_dir: str) -> Path:
    """`<git_root>/<sync_dir>/logs`, refusing any path that resolves outside the repo."""
    root = git_root.resolve()
    path = (root / sync_dir / "logs").resolve()
    if not path.is_relative_to(root):
        raise EventLogError(f"the sync folder {sync_dir!r} resolves outside the repository; refusing to use it.")
    return path


def event_filename(event_id: str, ns: int | None = None) -> str:
    ns = ns if ns is not None else time.time_ns()
    stamp = datetime.fromtimestamp(ns // 10**9, tz=UTC).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}.{ns % 10**9:09d}Z-{uuid.UUID(event_id).hex[:8]}.json"


def new_event(kind: EventType, memory_uuid: str, **fields: Any) -> Event:
    now = datetime.now(UTC)
    event: Event = {
        "id": str(uuid.uuid4()),
        "type": kind,
        "memory_id": memory_uuid,
        "ts": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    }
    event.update({k: v for k, v in fields.items() if v is not None or k == "category"})  # type: ignore[typeddict-item]
    return event


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_event(folder: Path, event: Event) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = json.dumps(event, indent=2, ensure_ascii=False) + "\n"
    while True:
        final = folder / event_filename(event["id"])
        tmp = folder / f".{final.name}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, final)
        except FileExistsError:
            continue  # same nanosecond and id prefix: take a fresh timestamp
        finally:
            tmp.unlink(missing_ok=True)
        _fsync_dir(folder)
        return final


@dataclass
class ReadResult:
    events: list[tuple[str, Event]] = field(default_factory=list)
    parse_errors: list[dict[str, str]] = field(default_factory=list)


def _validate(raw: Any) -> Event:
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    if raw.get("type") not in ("remember", "revise", "forget"):
        raise ValueError("type must be remember, revise or forget")
    for key in ("id", "memory_id"):
        try:
            uuid.UUID(str(raw.get(key)))
        except ValueError:
            raise ValueError(f"{key} must be a UUID") from None
    if "content" in raw and not isinstance(raw["content"], str):
        raise ValueError("content must be a string")
    if "tags" in raw and not (isinstance(raw["tags"], list) and all(isinstance(t, str) for t in raw["tags"])):
        raise ValueError("tags must be a list of strings")
    if "category" in raw and raw["category"] is not None and not isinstance(raw["category"], str):
        raise ValueError("category must be a string")
    vectors = raw.get("vectors")
    if vectors is not None:
        if not isinstance(vectors, dict):
            raise ValueError("vectors must be an object")
        for key, vec in vectors.items():
            if not isinstance(vec, list) or not 0 < len(vec) <= MAX_VECTOR_DIM:
                raise ValueError(f"vector {key!r} must be a non-empty list of numbers")
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vec):
                raise ValueError(f"vector {key!r} must hold numbers only")
    return raw  # type: ignore[return-value]


def read_events(folder: Path) -> ReadResult:
    """Events sorted by file name. Skips temp/non-JSON entries and symlinks; bad files go to parse_errors."""
    result = ReadResult()
    if not folder.is_dir():
        return result
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        name = entry.name
        if name.startswith(".") or not name.endswith(".json"):
            continue
        if entry.is_symlink() or not entry.is_file(follow_symlinks=False):
            result.parse_errors.append({"file": name, "error": "not a regular file (symlinks are ignored)"})
            continue
        if entry.stat(follow_symlinks=False).st_size > MAX_EVENT_BYTES:
            result.parse_errors.append({"file": name, "error": "file is larger than 4 MiB"})
            continue
        try:
            with open(entry.path, encoding="utf-8") as fh:
                event = _validate(json.load(fh))
        except (ValueError, UnicodeDecodeError) as exc:
            result.parse_errors.append({"file": name, "error": str(exc)[:200]})
            continue
        except RecursionError:  # absurdly nested JSON
            result.parse_errors.append({"file": name, "error": "JSON nested too deeply"})
            continue
        result.events.append((name, event))
    return result

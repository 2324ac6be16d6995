"""The event log on disk: one pretty-printed JSON file per event under `<git_root>/<dir>/logs/`.

Names: the event's UTC time with nanoseconds, colons removed, `-`, the first 8 hex chars of
its id (`20260601T041213.364878000Z-abcf29d8.json`). A name is derived from the event, so
writing the same event twice (a retried outbox flush) finds its own file instead of making
a second one. Files are written atomically (temp file in the same folder, fsync, hard link
to the final name, which fails rather than overwrite, fsync of the folder).

Readers take every `*.json` entry that is not hidden, whatever its name: teammates' files
arrive in any order and may be named by another implementation.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from .schema import EPOCH, MAX_EVENT_BYTES, Event, EventError, build, format_ts, parse_bytes

__all__ = [
    "EventLogError",
    "ReadResult",
    "event_filename",
    "list_names",
    "logs_dir",
    "new_event",
    "read_events",
    "write_event",
]


class EventLogError(Exception):
    pass


def logs_dir(git_root: Path, sync_dir: str) -> Path:
    """`<git_root>/<sync_dir>/logs`, refusing any path that resolves outside the repo."""
    root = git_root.resolve()
    path = (root / sync_dir / "logs").resolve()
    if not path.is_relative_to(root):
        raise EventLogError(f"the sync folder {sync_dir!r} resolves outside the repository; refusing to use it.")
    return path


def new_event(kind: str, memory_uuid: str, ts_ns: int | None = None, **fields: Any) -> Event:
    """A new event (fresh id, now unless `ts_ns`), validated by the schema (EventError)."""
    ts = format_ts(time.time_ns() if ts_ns is None else ts_ns)
    return build(id=str(uuid.uuid4()), type=kind, memory_id=memory_uuid, ts=ts, **fields)


def event_filename(event: Event) -> str:
    ns = event.ts_ns
    stamp = EPOCH + timedelta(seconds=ns // 1_000_000_000)
    return f"{stamp:%Y%m%dT%H%M%S}.{ns % 1_000_000_000:09d}Z-{event.id.hex[:8]}.json"


def render(event: Event) -> bytes:
    return (json.dumps(event.to_wire(), indent=2, ensure_ascii=False) + "\n").encode()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_event(folder: Path, event: Event) -> str:
    """Write `event` under its own name; idempotent (the same event again is a no-op). Returns the name."""
    folder.mkdir(parents=True, exist_ok=True)
    name, data = event_filename(event), render(event)
    final = folder / name
    tmp = folder / f".{name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    try:
        os.link(tmp, final)
    except FileExistsError:
        if final.read_bytes() != data:  # two different events with one name: ids share 8 hex chars and a ns
            raise EventLogError(f"{name} already exists with other content; not overwriting it.") from None
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(folder)
    return name


def list_names(folder: Path) -> list[str]:
    """Event file names, unsorted. Cheap: one directory read, no stat per file."""
    try:
        with os.scandir(folder) as entries:
            return [e.name for e in entries if e.name.endswith(".json") and not e.name.startswith(".")]
    except (FileNotFoundError, NotADirectoryError):
        return []


def read_file(folder: Path, name: str) -> list[Event]:
    """The events of one file, or EventError naming what is wrong. Symlinks are refused."""
    path = folder / name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: a symlink
            raise EventError("not a regular file (symlinks are ignored)") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        if not os.path.isfile(path) or os.fstat(fh.fileno()).st_size > MAX_EVENT_BYTES:
            raise EventError("not a regular file, or larger than 4 MiB")
        return parse_bytes(fh.read(MAX_EVENT_BYTES + 1))


@dataclass
class ReadResult:
    events: list[tuple[str, Event]] = field(default_factory=list)
    parse_errors: list[dict[str, str]] = field(default_factory=list)


def read_events(folder: Path, names: list[str] | None = None) -> ReadResult:
    """Events of `names` (default: the whole folder, by name); bad files go to parse_errors."""
    result = ReadResult()
    for name in sorted(list_names(folder) if names is None else names):
        try:
            result.events.extend((name, e) for e in read_file(folder, name))
        except FileNotFoundError:
            continue  # gone since the listing (a checkout, a compaction)
        except (EventError, OSError) as exc:
            result.parse_errors.append({"file": name, "error": str(exc)[:300]})
    return result

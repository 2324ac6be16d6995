"""The event log on disk: one pretty-printed JSON file per event under `<git_root>/<dir>/logs/`.

Names: the event's UTC time with nanoseconds, colons removed, `-`, the first 8 hex chars of
its id (`20260601T041213.364878000Z-abcf29d8.json`). A name is derived from the event, so
writing the same event twice (a retried outbox flush) finds its own file instead of making
a second one. Files are written atomically (temp file in the same folder, fsync, hard link
to the final name, which fails rather than overwrite, fsync of the folder).

Readers take every `*.json` entry that is not hidden, whatever its name: teammates' files
arrive in any order and may be named by another implementation. Other entries are skipped
silently (temp files, README). A `*.json` entry that cannot be ours is skipped and reported
by `scan` (never opened): a name that is not UTF-8 (listed as bytes, shown with `\\x..`
escapes), a hidden one, one holding control characters or a backslash, and anything that is
not a regular file (a directory, a symlink, a FIFO). Files are opened without following a
symlink or blocking on a FIFO, and their size is checked before a byte is read.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from yullu_core.errors import UserError
from yullu_core.text import escape_controls
from yullu_core.timestamps import format_ts, whole_second

from .schema import MAX_EVENT_BYTES, Event, EventError, build, parse_bytes

__all__ = [
    "EventLogError",
    "Listing",
    "ReadResult",
    "event_filename",
    "list_names",
    "logs_dir",
    "new_event",
    "read_events",
    "remove_stale_temps",
    "scan",
    "write_event",
]


class EventLogError(UserError):
    """The log folder cannot be used (it escapes the repository), or a name is taken by other content."""


def logs_dir(git_root: Path, sync_dir: str) -> Path:
    """`<git_root>/<sync_dir>/logs`, refusing any path that resolves outside the repo."""
    root = git_root.resolve()
    try:
        path = (root / sync_dir / "logs").resolve()
    except (RuntimeError, OSError):  # a symlink loop (Python 3.11 raises RuntimeError, later ones OSError)
        raise EventLogError(
            f"the sync folder {sync_dir!r} is a loop of symbolic links; make {root / sync_dir / 'logs'} a folder."
        ) from None
    if not path.is_relative_to(root):
        raise EventLogError(f"the sync folder {sync_dir!r} resolves outside the repository; refusing to use it.")
    return path


def new_event(kind: str, memory_uuid: str, ts_ns: int | None = None, **fields: Any) -> Event:
    """A new event (fresh id, now unless `ts_ns`), validated by the schema (EventError)."""
    ts = format_ts(time.time_ns() if ts_ns is None else ts_ns)
    return build(id=str(uuid.uuid4()), type=kind, memory_id=memory_uuid, ts=ts, **fields)


def event_filename(event: Event) -> str:
    ns = event.ts_ns
    return f"{whole_second(ns):%Y%m%dT%H%M%S}.{ns % 1_000_000_000:09d}Z-{event.id.hex[:8]}.json"


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
    return write_events(folder, [event])[0]


def write_events(folder: Path, events: list[Event]) -> list[str]:
    """Write each event under its own name, atomically (temp file, then a hard link to the final
    name: never overwritten); idempotent. Durable on return. Many events pay for durability once
    (one `sync` of the written data, one fsync of the folder) rather than twice each: compacting
    1,000 files spent 10.6 of its 17.7 s in per-file fsyncs (docs/benchmarks.md)."""
    folder.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[Path, Path, bytes]] = []
    try:
        for event in events:
            name, data = event_filename(event), render(event)
            tmp = folder / f".{name}.{os.getpid()}.tmp"
            staged.append((tmp, folder / name, data))  # before it is opened: a write that fails is removed too
            with open(tmp, "wb") as fh:
                fh.write(data)
                if len(events) == 1:
                    fh.flush()
                    os.fsync(fh.fileno())
        if len(events) > 1:
            os.sync()  # every temp file's data on disk before any final name points at it
        for tmp, final, data in staged:
            _link(tmp, final, data)
    finally:
        for tmp, _, _ in staged:
            tmp.unlink(missing_ok=True)
    _fsync_dir(folder)
    return [final.name for _, final, _ in staged]


# A writer links its temp file within a second of creating it; one this old was left by a process
# that died in between (kill -9, a power cut), whichever machine it ran on.
STALE_TEMP_S = 3600
_TEMP = re.compile(r"\.[^/]+\.json\.(\d+)\.tmp")  # the writer's pid before `.tmp`


def remove_stale_temps(folder: Path, now: float | None = None) -> int:
    """Remove the temp files writers that died left in `folder`: their pid is not running here, or
    they are older than STALE_TEMP_S (a pid of another machine, or reused); returns how many.
    Readers skip them, but they stayed for good: space on a full disk (a compaction killed while
    linking left thousands), clutter for `git add`. Removing one a live writer in another pid
    namespace still needs costs it a retry: its link fails and the outbox keeps the event."""
    limit = (time.time() if now is None else now) - STALE_TEMP_S
    removed = 0
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if not (match := _TEMP.fullmatch(entry.name)) or not entry.is_file(follow_symlinks=False):
                    continue
                with contextlib.suppress(OSError):  # gone meanwhile, or not ours to remove
                    if not _running(int(match[1])) or entry.stat(follow_symlinks=False).st_mtime < limit:
                        os.unlink(entry.path)
                        removed += 1
    except OSError:
        pass  # no folder yet, or one we cannot list: nothing to tidy
    return removed


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process (or not a pid we can ask about): leave it to the age rule
    return True


def _link(tmp: Path, final: Path, data: bytes) -> None:
    try:
        os.link(tmp, final)
    except FileExistsError:
        if final.read_bytes() != data:  # two different events with one name: ids share 8 hex chars and a ns
            raise EventLogError(f"{final.name} already exists with other content; not overwriting it.") from None


@dataclass
class Listing:
    """One directory read: the files to read, and the entries that look like events but are not ours."""

    names: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # shown name -> why it is skipped

    @property
    def all_names(self) -> set[str]:
        return set(self.names) | set(self.refused)


MAX_NAME_CHARS = 255  # the ledger's column
_PLAIN = re.compile(rb"[^.\\\x00-\x20\x7f-\xff][\x21-\x5b\x5d-\x7e]*")  # visible ASCII, no backslash, not hidden


def _shown(raw: bytes) -> str:
    """A file name as text that is safe to store and print: bad UTF-8 and controls escaped."""
    text = escape_controls(raw.decode("utf-8", "backslashreplace"))
    return text if len(text) <= MAX_NAME_CHARS else text[: MAX_NAME_CHARS - 1] + "…"


def _refusal(entry: os.DirEntry[bytes], name: str) -> str | None:
    """Why a `*.json` entry is not read, or None when it is a file we read."""
    try:
        entry.name.decode("utf-8")
    except UnicodeDecodeError:
        return "file name is not UTF-8; rename it"
    if name.startswith("."):
        return "hidden file name; rename it"
    if name != entry.name.decode() or "\\" in name:
        return "file name holds control characters or a backslash; rename it"
    if entry.is_symlink():
        return "not a regular file (symlinks are ignored)"
    if entry.is_dir(follow_symlinks=False):
        return "not a regular file (a directory)"
    if not entry.is_file(follow_symlinks=False):
        return "not a regular file"
    return None


def scan(folder: Path) -> Listing:
    """Read the folder once (as bytes: any name a file system holds), no stat per file."""
    listing = Listing()
    try:
        with os.scandir(os.fsencode(folder)) as entries:
            for entry in entries:
                if not entry.name.endswith(b".json"):
                    continue  # temp files, README, .gitkeep: not events
                if _PLAIN.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                    listing.names.append(entry.name.decode("ascii"))  # the common case, without the checks below
                    continue
                name = _shown(entry.name)
                reason = _refusal(entry, name)
                if reason is None:
                    listing.names.append(name)
                else:
                    listing.refused[name] = reason
    except (FileNotFoundError, NotADirectoryError):
        pass
    return listing


def list_names(folder: Path) -> list[str]:
    """Every event-looking name of the folder (read or refused), unsorted: what a listing hash covers."""
    return sorted(scan(folder).all_names)


# Lines git writes into a file it could not merge (longer runs for nested or rename conflicts).
_CONFLICT_MARKER = re.compile(rb"^(?:<{7,} |={7,}\r?$|>{7,} )", re.M)


class UnmergedFile(EventError):
    """A file holding git's conflict markers: not bad but unfinished, so it is read again once the
    merge is done (two teammates compacting at once makes git see renames and conflict)."""


def read_file(folder: Path, name: str) -> list[Event]:
    """The events of one file, or EventError naming what is wrong. Symlinks and FIFOs are
    refused without blocking; the size is checked before anything is read."""
    try:
        fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise EventError("not a regular file (symlinks are ignored)") from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):
            raise EventError("not a regular file") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise EventError("not a regular file")
        if info.st_size > MAX_EVENT_BYTES:
            raise EventError(f"file is {info.st_size} bytes; the limit is 4 MiB")
        data = fh.read(MAX_EVENT_BYTES + 1)
    if _CONFLICT_MARKER.search(data):
        raise UnmergedFile(
            "holds git's conflict markers (an unfinished merge): resolve it so that each event file keeps one "
            "side's content, commit, and it is read at the next reconcile"
        )
    return parse_bytes(data)


@dataclass
class ReadResult:
    events: list[tuple[str, Event]] = field(default_factory=list)
    parse_errors: list[dict[str, str]] = field(default_factory=list)
    unmerged: set[str] = field(default_factory=set)  # of parse_errors: files to read again (UnmergedFile)


def read_events(folder: Path, names: list[str] | None = None) -> ReadResult:
    """Events of `names` (default: the whole folder, by name); bad files go to parse_errors."""
    result = ReadResult()
    if names is None:
        listing = scan(folder)
        names = listing.names
        result.parse_errors += [{"file": n, "error": why} for n, why in sorted(listing.refused.items())]
    for name in sorted(names):
        try:
            result.events.extend((name, e) for e in read_file(folder, name))
        except FileNotFoundError:
            continue  # gone since the listing (a checkout, a compaction)
        except (EventError, OSError) as exc:
            result.parse_errors.append({"file": name, "error": str(exc)[:300]})
            if isinstance(exc, UnmergedFile):
                result.unmerged.add(name)
    return result

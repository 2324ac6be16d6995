"""Where an imported row goes and when it happened: its project and uuid under `--project`, and its times read as
the import reads them (memories and archived memories alike)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

IMPORT_NAMESPACE = uuid.UUID("6b1d3c52-7a0e-4f4e-9a57-0c8f3f0f9d11")


def read_time(value: Any) -> datetime | None:
    """A time as ISO 8601 or epoch seconds/milliseconds; ValueError for anything else."""
    if value in (None, "") or isinstance(value, datetime):
        return value or None
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = value / 1000 if value > 10**11 else value  # milliseconds or seconds
            return datetime.fromtimestamp(seconds, tz=UTC)
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):  # OSError: beyond what the C library converts
        raise ValueError(f"{str(value)[:40]!r} is not a time between the years 1 and 9999") from None


# Times a memory may hold in the future; every other time records something that already happened.
FUTURE_FIELDS = frozenset({"expires_at"})


def not_after(when: datetime | None, now: datetime) -> datetime | None:
    """`when`, or `now` if it is later: a file from a machine whose clock was wrong (a 2099
    `updated_at`) must not date the memory, and its sync event, after every edit to come. Reconcile
    bounds a teammate's future event the same way, but not this machine's own: a teammate's later edit
    lost to the 2099 event here while it won on theirs (walk 17), two machines with one log disagreeing."""
    return now if when is not None and when > now else when


def derived_uuid(project_id: str, content: str) -> str:
    return str(uuid.uuid5(IMPORT_NAMESPACE, f"{project_id}\n{content.strip()}"))


def relocated_uuid(project_id: str, original: str) -> str:
    """The uuid of a memory imported into another project than its export's (`--project`): a uuid
    names one memory across all projects, so keeping the original skipped every row whose source
    project is on this server ("0 new, 2 already there"). Derived from the target and the original,
    so importing the same file there again is still idempotent, and links between its rows hold."""
    return str(uuid.uuid5(IMPORT_NAMESPACE, f"{project_id}\nuuid:{original}"))


def placed(project: str | None, source: str, original: Any) -> tuple[str, str | None, bool]:
    """(project, uuid, moved) of a record from `source` imported with `--project project`."""
    target = project or source
    moved = bool(project) and bool(source) and project != source
    if moved and original:
        return target, relocated_uuid(target, str(original)), True
    return target, original, moved

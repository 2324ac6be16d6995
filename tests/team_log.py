"""A checkout's team event log as the tests write and read it: one teammate's event file (`.yullu/logs/`) and
every event there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def events(repo: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((repo / ".yullu" / "logs").glob("*.json"))]


def teammate_event(repo: Path, memory_id: str, n: int, kind: str, **fields: Any) -> None:
    """A teammate's n-th event of `kind` on `memory_id`, at second n of 2026-06-01, as their machine wrote it."""
    folder = repo / ".yullu" / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    event = {
        "id": f"00000000-0000-4000-8000-{n:012d}",
        "type": kind,
        "memory_id": memory_id,
        "ts": f"2026-06-01T00:00:{n:02d}Z",
        **fields,
    }
    (folder / f"teammate-{n}.json").write_text(json.dumps(event))

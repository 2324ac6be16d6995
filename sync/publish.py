"""Writes the sync event matching each local mutation (called by memories.services)."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings

from memories.scope import USER_SCOPE, known_root
from yullu_site.config import load_for_project

from .eventlog import Event, EventType, logs_dir, new_event, write_event

log = logging.getLogger(__name__)
_warned: set[str] = set()


def sync_config(project_id: str, git_root: Path | None) -> dict:
    cfg, _ = load_for_project(project_id, git_root, settings.YULLU)
    return cfg["sync"]


def _resolve(project_id: str, git_root: Path | None) -> tuple[Path | None, dict]:
    """The project's logs folder (None when sync is off or the repo is unknown, warned once)
    and its effective [sync] settings."""
    if project_id == USER_SCOPE:
        return None, {}  # personal memories are never written to a team log
    git_root = git_root or known_root(project_id)
    if git_root is None:
        if project_id not in _warned:
            _warned.add(project_id)
            log.warning("no repository known for project %s: its changes are not written to an event log", project_id)
        return None, {}
    cfg = sync_config(project_id, git_root)
    return (logs_dir(git_root, cfg["dir"]) if cfg["enabled"] else None), cfg


def target_dir(project_id: str, git_root: Path | None) -> Path | None:
    return _resolve(project_id, git_root)[0]


class Publisher:
    """Writes events for one project; resolves the folder and settings once (batches share it)."""

    def __init__(self, project_id: str, git_root: Path | None) -> None:
        self.folder, cfg = _resolve(project_id, git_root)
        self.log_embeddings = bool(self.folder and cfg["log_embeddings"])

    def emit(self, kind: EventType, memory_uuid: str, **fields: object) -> Event | None:
        if self.folder is None:
            return None
        if "vectors" in fields and (fields["vectors"] is None or not self.log_embeddings):
            fields.pop("vectors")
            if kind == "revise" and not fields:
                return None
        event = new_event(kind, memory_uuid, **fields)
        write_event(self.folder, event)
        return event


def publish(
    project_id: str, git_root: Path | None, kind: EventType, memory_uuid: str, **fields: object
) -> Event | None:
    return Publisher(project_id, git_root).emit(kind, memory_uuid, **fields)

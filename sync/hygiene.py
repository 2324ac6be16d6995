"""When a team's log has grown enough that compaction would help, and how to say so.

A log keeps every event ever written, so a memory edited ten times has eleven files (plus an
`embedding` per content), and a teammate's first reconcile reads them all. `yullu sync compact`
leaves one `create` and one `embedding` per embedder for each live memory and one `delete` per
deleted one. The sizes come from the last reconcile (ProjectSyncState), never from listing a
large folder on a dashboard load.
"""

from __future__ import annotations

from django.db.models import QuerySet

from .models import ProjectSyncState

# Below this many files a first reconcile takes seconds (docs/benchmarks.md, "A big team's year").
COMPACT_MIN_FILES = 5_000
# Compaction leaves about this many files per memory (a create and its embedding).
FILES_AFTER = 2
# Advise when compaction would leave at most half the files.
GAIN = 2


def advice(state: ProjectSyncState) -> str | None:
    files, memories = state.log_files, max(state.log_memories, 1)
    after = FILES_AFTER * memories
    if files < COMPACT_MIN_FILES or files < GAIN * after:
        return None
    return (
        f"{state.project_id}: its team log holds {files:,} event files for {memories:,} memories; "
        f"`yullu sync compact` in the repository (then commit) would leave about {after:,} and make a "
        "teammate's first reconcile that much shorter (once everyone has pushed)."
    )


def all_advice(states: QuerySet[ProjectSyncState] | None = None) -> list[str]:
    """Advice for every project whose last reconciled log is large (of `states`: e.g. only the
    projects the viewer may read)."""
    qs = ProjectSyncState.objects.all() if states is None else states
    large = qs.filter(log_files__gte=COMPACT_MIN_FILES).order_by("-log_files")
    return [text for state in large if (text := advice(state))]

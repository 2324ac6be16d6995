"""Retrieval across the project and the user scope (docs/contract.md §10): what `retrieve_memories`, the REST
recall and the context block search. The project's own [retrieval] settings apply, merged from the
global file, the repository's and the user's per-project file."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from access import policy as access
from yullu_core.arguments import Number, Strings, Text, WholeNumber

from . import candidates, gates, queries, recall_log

# The arguments of a recall (retrieve_memories, POST /api/memories/recall, `yullu memories search`), one
# rule each: the same bad value gets the same sentence on every transport (docs/contract.md §3, §4).
QUERY = Text("query", 10000, required=True)
LIMIT = WholeNumber("limit", 1, 50)
MIN_SIMILARITY = Number("min_similarity", 0.0, 1.0)
CATEGORIES = Strings("categories")

# project_id → (what the merge read, its [retrieval]). Reused only while every input is unchanged:
# the repository root, both files (size, mtime, inode) and this process's global [retrieval] (the
# admin's settings page edits it in place), so an edit in any process applies at the next recall.
_config_cache: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def project_retrieval(project_id: str) -> dict[str, Any]:
    """[retrieval] for this project: global file → `<repo>/.yullu/config.toml` → the user's
    per-project file (README, Configuration). Read on every recall, so the merge is cached."""
    from django.conf import settings

    from yullu_core.config import load_for_project, project_user_file

    from ..scope import known_root

    root = known_root(project_id)
    repo_file = root / settings.YULLU["sync"]["dir"] / "config.toml" if root is not None else None
    inputs = (
        str(root),
        repo_file and _stamp(repo_file),
        _stamp(project_user_file(project_id)),
        repr(sorted(settings.YULLU["retrieval"].items())),
    )
    hit = _config_cache.get(project_id)
    if hit is not None and hit[0] == inputs:
        return hit[1]
    try:
        cfg, _ = load_for_project(project_id, root, settings.YULLU)
        retrieval = cfg["retrieval"]
    except Exception:  # a broken project file must not break recall; startup/doctor report it
        retrieval = settings.YULLU["retrieval"]
    _config_cache[project_id] = (inputs, retrieval)
    return retrieval


def search_merged(
    project_id: str,
    query: str,
    *,
    limit: int = 5,
    categories: Iterable[str] | None = None,
    log: bool = True,
    min_similarity: float | None = None,
) -> candidates.SearchResult:
    """The project's hits first, then the user scope's. User hits get a few reserved places
    (a third of `limit`, at least one) so a personal preference is not crowded out. The floor
    is the project's own [retrieval].min_similarity unless the caller gives one; with neither, the
    embedder's calibrated gate. A floor the caller gives applies to the user scope's hits too."""
    access.require(project_id, access.READ)
    mine = access.personal_project()
    cats = list(categories or [])
    floor = gates.configured_floor(project_retrieval(project_id)) if min_similarity is None else min_similarity
    project = queries.search(project_id, query, limit=limit, categories=cats, log=False, min_similarity=floor)
    if access.is_personal(project_id):
        user = candidates.SearchResult(project_id=project_id, recall_id=None)
    else:
        user = queries.search(mine, query, limit=limit, categories=cats, log=False, min_similarity=min_similarity)
    reserved = min(len(user.results), max(1, limit // 3))
    hits = project.results[: limit - reserved]
    hits += user.results[: limit - len(hits)]
    for rank, hit in enumerate(hits, start=1):
        hit["rank"] = rank
    merged = candidates.SearchResult(project_id=project_id, recall_id=None, results=hits)
    merged.considered = (project.considered + user.considered)[:limit]
    if log and (merged.results or merged.considered):
        merged.recall_id = str(uuid.uuid4())
        chosen = {h["id"] for h in hits}
        parts = [  # one recall id; each hit logged under its own project
            candidates.SearchResult(part.project_id, merged.recall_id, kept, part.considered)
            for part in (project, user)
            if (kept := [h for h in part.results if h["id"] in chosen]) or part.considered
        ]
        recall_log.log_recall(parts, query)
    return merged


@dataclass(frozen=True)
class Recall:
    """A caller's recall (retrieve_memories, POST /api/memories/recall, `yullu memories search`), its
    arguments judged by their rules before anything else, as REST's serializer judges them: an empty or
    blank query is refused like a missing one (it is required); a trivial one ("ok") still returns nothing."""

    query: str
    limit: int
    categories: list[str]
    min_similarity: float | None

    @classmethod
    def judged(cls, query: Any, limit: Any = 5, categories: Any = None, min_similarity: Any = None) -> Recall:
        asked, most = QUERY.clean(query), LIMIT.clean(limit)
        return cls(asked, most, CATEGORIES.clean(categories), MIN_SIMILARITY.clean(min_similarity))

    def run(self, project_id: str, *, log: bool = True) -> candidates.SearchResult:
        return search_merged(
            project_id,
            self.query,
            limit=self.limit,
            categories=self.categories,
            log=log,
            min_similarity=self.min_similarity,
        )

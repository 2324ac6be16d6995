"""Why a memory exists, as the app that wrote it knows it: a reviewer reading the queue sees which dream
pass proposed a memory, from which conversation, and the reasoner's reason, beside the memory itself.

`memories` never imports `dreaming`: dreaming registers an explainer from its AppConfig (as sync
registers its change listener in memories.changes), and the review pages ask `explain()`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .models import Memory, MemoryChange


@dataclass(frozen=True)
class Origin:
    """Where one memory came from: `label` names it ("dream pass 3 · openai:llama3.1"), `url` opens it,
    `session` is the conversation it was read from, `why` the writer's own reason."""

    label: str
    url: str = ""
    session: str = ""
    why: str = ""


Explainer = Callable[[Sequence[Memory]], dict[int, Origin]]
_explainers: list[Explainer] = []


def register_explainer(explainer: Explainer) -> None:
    """Idempotent; called from an AppConfig.ready()."""
    if explainer not in _explainers:
        _explainers.append(explainer)


def explain(memories: Sequence[Memory]) -> dict[int, Origin]:
    """Each memory's origin by its id, for those an explainer knows (one query per explainer); else the origin
    kept when it was rejected, for one restored since (its history's "restored" row: the pass that proposed it
    may be gone by then)."""
    found: dict[int, Origin] = {}
    for explainer in _explainers:
        for pk, origin in explainer(memories).items():
            found.setdefault(pk, origin)
    if unknown := [m.pk for m in memories if m.pk not in found]:
        restored = MemoryChange.objects.filter(memory_id__in=unknown, action="restored").order_by("id")
        for pk, after in restored.values_list("memory_id", "after"):
            kept = (after or {}).get("origin") if isinstance(after, dict) else None
            if pk is not None and isinstance(kept, dict) and kept.get("label"):
                found[pk] = Origin(**{k: str(v) for k, v in kept.items() if k in ("label", "url", "session", "why")})
    return found

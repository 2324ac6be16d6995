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


def site_path(url: object) -> str:
    """`url` if it is a path on this site ("/admin/dreaming/dreampass/3/change/"), else "": an origin kept in an
    archived row or a history row may come from an imported file, and the review queue makes its url a link
    (a "javascript:" one ran in the reviewer's session; an "https://elsewhere" one led off the site)."""
    text = str(url or "")
    return text if text.startswith("/") and not text.startswith("//") and "\\" not in text else ""


def kept(value: object) -> dict[str, str]:
    """An origin as a row keeps it (label, url, session, why; strings; a url only as site_path allows)."""
    if not isinstance(value, dict):
        return {}
    out = {k: str(value[k]) for k in ("label", "url", "session", "why") if value.get(k) not in (None, "")}
    if "url" in out and not site_path(out["url"]):
        del out["url"]
    return out


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
            fields = kept((after or {}).get("origin") if isinstance(after, dict) else None)
            if pk is not None and fields.get("label"):
                found[pk] = Origin(**fields)
    return found

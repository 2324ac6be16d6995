"""Which dream pass proposed a memory and why (memories.origins asks; registered in apps.py)."""

from __future__ import annotations

from collections.abc import Sequence

from django.urls import NoReverseMatch, reverse

from memories.models import Memory
from memories.origins import Origin

from .models import DreamOp

# What a pass's operation left as a memory of its own text (an update or a skip left another memory).
WROTE = ("created", "superseded", "conflict")


def explain(memories: Sequence[Memory]) -> dict[int, Origin]:
    """The operation that wrote each memory's text, matched on project and text (a create records no id: the
    memory is found by what it says, so one edited since shows no origin rather than a wrong one)."""
    wanted = {(m.project_id, m.content.strip()): m.pk for m in memories}
    if not wanted:
        return {}
    ops = (
        DreamOp.objects.filter(
            outcome__in=WROTE,
            dream_pass__project_id__in={p for p, _ in wanted},
            content__in=[c for _, c in wanted],
        )
        .select_related("dream_pass")
        .order_by("id")  # the latest operation wins
    )
    found: dict[int, Origin] = {}
    for op in ops:
        pk = wanted.get((op.dream_pass.project_id, op.content.strip()))
        if pk is not None:
            found[pk] = _origin(op)
    return found


def _origin(op: DreamOp) -> Origin:
    dream = op.dream_pass
    try:
        url = reverse("admin:dreaming_dreampass_change", args=[dream.pk])
    except NoReverseMatch:  # a site without the admin
        url = ""
    label = f"dream pass {dream.pk}" + (f" ({dream.reasoner})" if dream.reasoner else "")
    return Origin(label=label, url=url, session=op.session_id, why=op.reasoning)

"""Applying a reasoner's operations (create, update, supersede, contradicts, delete) through memories'
write path, so each is validated, secret-scanned, deduplicated and synced like a `store_memory`; and
keeping what was proposed and what became of it (DreamOp rows) for reviewers. A failing operation is
skipped, never fatal to the pass (dreaming.services runs the pass)."""

from __future__ import annotations

import contextlib
import logging
import re
from typing import Any

from django.db import DatabaseError

from memories.anchors.store import refs_now
from memories.models import SESSION_TAG, Memory
from memories.scope import Scope
from memories.write import create, edit, nearby, validation
from yullu_core.errors import UserError

from .models import DreamOp, DreamPass
from .parse import ParseError, parse_decision
from .prompt import JUDGE_PROMPT, build_judge_prompt
from .reasoners import Reasoner

log = logging.getLogger(__name__)


# A supersede is an update of what the project knows; a conflict adds a (disputed) memory.
COUNTED_AS = {"superseded": "updated", "conflict": "created"}
# The turns a reasoner reads are redacted (`[REDACTED <rule>]`, memories.secrets.redact): one that copies a pasted
# secret's line proposes a memory that is only its markers and a variable name. Walk 16: 24 of a pass's 27 creates
# were like `HEROKU_API_KEY=[REDACTED heroku-api-key]`, which then came back from searches about anything.
REDACTION = re.compile(r"\[REDACTED [^\]]*\]")
NAME = re.compile(r"\b\w*_\w*\b|\b[A-Z0-9]+\b")  # FOO_BAR, OPENAI: a variable's name tells nothing here
WORD = re.compile(r"[^\W\d_]{2,}")
MIN_WORDS = 2  # `export X=[REDACTED …]` says nothing; `the live key [REDACTED …] is never used in tests` does
ONLY_REDACTED = (
    "it holds nothing but redacted secrets (a variable's name and `[REDACTED …]`), which tell a reader nothing."
)


def only_redacted(content: Any) -> bool:
    """True when `content` has redaction markers and, without them and the names beside them, under MIN_WORDS
    words."""
    if not isinstance(content, str) or not REDACTION.search(content):
        return False
    return len(WORD.findall(NAME.sub(" ", REDACTION.sub(" ", content)))) < MIN_WORDS


def apply_operations(
    scope: Scope,
    ops: list[dict[str, Any]],
    record: list[tuple[dict[str, Any], str, str]] | None = None,
    reasoner: Reasoner | None = None,
    session_id: str | None = None,
) -> dict[str, int]:
    """Apply ops one by one; a failing op is skipped. `record` (if given) receives (op, outcome, why).
    With a `reasoner`, a create close to existing memories is judged against them first. Memories it
    stores carry the `session:` tag of `session_id` (the conversation they came from), which retrieval
    uses to let one conversation's memories rise together."""
    counts = {"created": 0, "updated": 0, "deleted": 0, "skipped": 0, "superseded": 0, "conflict": 0}
    for op in ops:
        why = ""
        try:
            kind = _apply_op(scope, op, reasoner, session_id)
        except UserError as exc:
            log.info("dream op skipped: %s", exc)
            kind, why = "skipped", str(exc)
        counts[kind] += 1
        if record is not None:
            record.append((op, kind, why))
    return counts


def _text(value: Any, limit: int) -> str:
    # A refused op may carry a secret: what is kept for review is redacted like the buffer.
    # Here, not at import: the scanner's rules cost every command ~0.5 s (docs/benchmarks.md).
    from memories.secrets import redact

    return redact(value[:limit]) if isinstance(value, str) else ""


PENDING = "pending"  # a DreamOp decided by the reasoner, not applied yet


def pend(dream: DreamPass, session_id: str, ops: list[dict[str, Any]]) -> list[DreamOp]:
    """Keep what the reasoner proposed, as pending operations of the pass (call in the transaction
    that consumes the messages they came from), so a reviewer can see why memories changed and a
    pass killed before applying them all leaves them to the next pass (`resume`) rather than the
    messages: a second reading by a reasoner would phrase the same facts anew and store them twice."""
    return DreamOp.objects.bulk_create(
        [
            DreamOp(
                dream_pass=dream,
                session_id=session_id[:200],
                op=_text(op.get("op"), 20) or "?",
                memory_uuid=_text(op.get("uuid"), 64),
                content=_text(op.get("content"), 20_000),
                category=_text(op.get("category"), 40),
                reasoning=_text(op.get("reasoning"), 5_000),
                outcome=PENDING,
                payload=op,
            )
            for op in ops
        ]
    )


def apply_pending(scope: Scope, pending: list[DreamOp], reasoner: Reasoner | None) -> dict[str, int]:
    """Apply pending operations in order, each recorded with what became of it as it is applied. One
    applied twice (killed between its write and its record) repeats an identical write: a create is
    then a duplicate, an update changes nothing, a delete finds nothing."""
    counts = {"created": 0, "updated": 0, "deleted": 0, "skipped": 0, "superseded": 0, "conflict": 0}
    for row in pending:
        done: list[tuple[dict[str, Any], str, str]] = []
        try:
            one = apply_operations(
                scope, [row.payload or {}], record=done, reasoner=reasoner, session_id=row.session_id
            )
            _, outcome, why = done[0]
        except DatabaseError:
            raise  # the database went away: left pending, the next pass tries again
        except Exception as exc:  # noqa: BLE001 - one bad operation must not stop the project's dreaming
            # Every later pass applies what is pending first: an operation that fails the same way each
            # time would stop this project's dreaming for good (review7). It is skipped, its error kept.
            log.exception("dream op %s failed; skipped", row.pk)
            one, outcome, why = {"skipped": 1}, "skipped", f"failed: {type(exc).__name__}: {exc}"
        DreamOp.objects.filter(pk=row.pk).update(outcome=outcome, detail=why[:1000], payload=None)
        for kind, n in one.items():
            counts[kind] += n
    return counts


def left_pending(project_id: str) -> list[DreamOp]:
    """Operations a pass of this project decided but did not apply (it was killed), oldest first."""
    return list(DreamOp.objects.filter(dream_pass__project_id=project_id, outcome=PENDING).order_by("id"))


def _by_uuid(scope: Scope, value: Any) -> Memory:
    memory = Memory.objects.filter(project_id=scope.project_id, uuid=_uuid(value)).first()
    if memory is None:
        raise UserError(f"no memory {value} in this project")
    return memory


def _uuid(value: Any) -> str:
    import uuid

    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise UserError(f"{value!r} is not a memory uuid") from None


def _lifecycle(op: dict[str, Any]) -> dict[str, Any]:
    """The proposal's `importance` and `ttl_days` (SPEC §10: on every write path, dreaming's too) when the
    write path takes them; an odd value from a reasoner is dropped, as an odd category is, rather than
    refusing the fact."""
    out: dict[str, Any] = {}
    for key, clean in (("importance", validation.clean_importance), ("ttl_days", validation.clean_ttl_days)):
        with contextlib.suppress(UserError):
            if (value := clean(op.get(key))) is not None:
                out[key] = value
    return out


def _apply_op(scope: Scope, op: dict[str, Any], reasoner: Reasoner | None = None, session_id: str | None = None) -> str:
    kind = op.get("op")
    if kind in ("create", "update", "supersede", "contradicts") and only_redacted(op.get("content")):
        raise UserError(ONLY_REDACTED)  # skipped, the reason kept on its DreamOp
    if isinstance(op.get("category"), str):  # a reasoner's odd category leaves the fact uncategorised
        op = {**op, "category": validation.clean_category(op["category"], strict=False)}
    if kind == "create":
        return _create(scope, op, reasoner, session_id)
    if kind == "update":
        memory = _by_uuid(scope, op.get("uuid"))
        edit.update_memory(
            memory.id,
            content=op.get("content"),
            tags=op.get("tags"),
            category=op.get("category"),
            source="dream",
            anchors=op.get("anchors"),
            lenient_anchors=True,
            **_lifecycle(op),
        )
        return "updated"
    if kind == "supersede":
        return _supersede(scope, _by_uuid(scope, op.get("uuid")), op, session_id)
    if kind == "contradicts":
        return _contradict(scope, _by_uuid(scope, op.get("uuid")), op, session_id)
    if kind == "delete":
        edit.delete_memory(_by_uuid(scope, op.get("uuid")).id, source="dream")
        return "deleted"
    raise UserError(f"unknown op {kind!r}")


def _create(scope: Scope, op: dict[str, Any], reasoner: Reasoner | None, session_id: str | None = None) -> str:
    """A proposed new memory is first compared with its nearest neighbours: a near-duplicate
    updates (or skips) the existing one; related ones go to the reasoner, which may decide the
    proposal updates, supersedes or contradicts one of them instead of becoming a second memory."""
    near = nearby.nearby(scope.project_id, op.get("content"))
    if near.duplicate is not None:
        existing = near.duplicate[0]
        if existing.content.strip() == str(op.get("content", "")).strip():
            return "skipped"
        edit.update_memory(
            existing.id, content=op.get("content"), category=op.get("category"), source="dream", **_lifecycle(op)
        )
        return "updated"
    if near.similar and reasoner is not None:
        decision = _judge(reasoner, op, near.similar)
        choice, memory = decision.get("decision"), None
        if _is_uuid(decision.get("uuid")):
            ids = [s["id"] for s in near.similar]
            memory = Memory.objects.filter(pk__in=ids, uuid=_uuid(decision.get("uuid"))).first()
        if choice == "skip":
            return "skipped"
        if memory is not None and choice == "update":
            edit.update_memory(memory.id, content=op.get("content"), source="dream")
            return "updated"
        if memory is not None and choice == "supersede":
            return _supersede(scope, memory, op, session_id)
        if memory is not None and choice == "contradicts":
            return _contradict(scope, memory, op, session_id)
    tags = validation.with_session(op.get("tags"), session_id)
    create.store_memory(
        scope,
        op.get("content"),
        op.get("category"),
        tags,
        source="dream",
        anchors=op.get("anchors"),
        lenient_anchors=True,
        **_lifecycle(op),
    )
    return "created"


def _supersede(scope: Scope, old: Memory, op: dict[str, Any], session_id: str | None = None) -> str:
    tags = op.get("tags") if op.get("tags") is not None else [t for t in old.tags if not t.startswith(SESSION_TAG)]
    create.store_memory(
        scope,
        op.get("content"),
        op.get("category") or old.category,
        validation.with_session(tags, session_id),
        supersedes=old.pk,
        source="dream",
        anchors=op.get("anchors") if op.get("anchors") is not None else (refs_now(old) or None),
        lenient_anchors=True,
        **_lifecycle(op),
    )
    return "superseded"


def _contradict(scope: Scope, other: Memory, op: dict[str, Any], session_id: str | None = None) -> str:
    """Store the claim and open a conflict: a reviewer decides which one is current."""
    from memories.lifecycle import link_memories

    tags = validation.with_session(op.get("tags"), session_id)
    stored = create.store_memory(scope, op.get("content"), op.get("category"), tags, source="dream", **_lifecycle(op))
    if stored.memory.pk == other.pk:
        return "skipped"
    link_memories(stored.memory.pk, other.pk, "contradicts", source="dream", note=str(op.get("reasoning") or ""))
    return "conflict"


def _is_uuid(value: Any) -> bool:
    try:
        _uuid(value)
        return True
    except UserError:
        return False


def _judge(reasoner: Reasoner, op: dict[str, Any], similar: list[Any]) -> dict[str, Any]:
    """Ask the reasoner how a proposed memory relates to its nearest existing ones. Any failure
    (transport, unparsable answer) means "create": the proposal is at worst a related memory."""
    uuids = dict(Memory.objects.filter(pk__in=[s["id"] for s in similar]).values_list("pk", "uuid"))
    neighbours = [{"uuid": str(uuids[s["id"]]), "content": s["content"]} for s in similar if s["id"] in uuids]
    try:
        answer = reasoner.complete(JUDGE_PROMPT, build_judge_prompt(str(op.get("content")), neighbours))
        return parse_decision(answer)
    except (ParseError, UserError) as exc:
        log.info("dream judge gave no decision: %s", exc)
        return {"decision": "create"}

"""The dream buffer (record_messages) and dream passes (docs/contract.md §6).

Locks: a Postgres advisory lock per project makes a pass single-flight across
processes; a second pass returns {"skipped": true} at once. The reasoner is called
outside any transaction; ops are applied by dreaming.operations through memories.write (so they are
validated, secret-scanned and synced). A session's messages are deleted in the transaction that
keeps the reasoner's parsed answer as pending operations, which are then applied one by one: a
pass killed meanwhile leaves those operations to the next pass of the project (never the messages
to a second reading). Messages are kept when the reasoner fails or its answer cannot be parsed.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypedDict

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, QuerySet
from django.utils import timezone

from access import policy as access
from memories.anchors.stale import stale_notes
from memories.models import ArchiveReason, Memory, RejectedMemory
from memories.scope import Scope, known_root, project_known, resolve
from yullu_core.arguments import SESSION_ID
from yullu_core.config import ConfigError, load_for_project, parse_duration
from yullu_core.errors import NotFound, UserError
from yullu_core.locks import LockKey, advisory_lock

from .models import ConsumedTurn, DreamPass, DreamSchedule, SessionMessage
from .operations import COUNTED_AS, apply_pending, left_pending, pend
from .parse import ParseError, parse_operations
from .prompt import build_user_prompt, current_prompt
from .reasoners import HOW_TO_GET_A_REASONER, Reasoner, answered_by, configured_reasoner

log = logging.getLogger(__name__)
MAX_MESSAGES_PER_SESSION = 500
MAX_MESSAGES_PER_CALL = 200
MAX_MESSAGE_CHARS = 100_000


class RecordResult(TypedDict):
    session_id: str
    project_id: str
    count: int


class DreamCounters(TypedDict):
    """A pass's progress: in its result, on its DreamPass row (same column names) and in /api/dream/passes."""

    sessions_processed: int
    messages_processed: int
    ops_created: int
    ops_updated: int
    ops_deleted: int
    ops_skipped: int


COUNTERS = tuple(DreamCounters.__annotations__)


class DreamResult(DreamCounters, total=False):
    """What a dream pass answers (MCP dream_now, POST /api/dream, `yullu dream`)."""

    project_id: str
    sessions: list[dict[str, Any]]
    errors: list[str]
    skipped: bool
    pass_id: int


# How record_messages' arguments are described to MCP clients and OpenAPI; the checks below judge them.
SESSION_ID_SCHEMA: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 200}
MESSAGES_SCHEMA: dict[str, Any] = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "properties": {"role": {"type": "string", "enum": ["user", "assistant"]}, "content": {"type": "string"}},
        "required": ["role", "content"],
    },
}


def validate_messages(messages: Any) -> list[tuple[str, str]]:
    if not isinstance(messages, list) or not messages:
        raise UserError("messages must be a non-empty list of {role, content} objects.")
    if len(messages) > MAX_MESSAGES_PER_CALL:
        raise UserError(f"messages holds {len(messages)} items; send at most {MAX_MESSAGES_PER_CALL} per call.")
    out = []
    for n, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise UserError(f"messages[{n}] must be an object with role and content.")
        role, content = msg.get("role"), msg.get("content")
        if role not in ("user", "assistant"):
            raise UserError(f"messages[{n}].role must be 'user' or 'assistant'")
        if not isinstance(content, str) or not content.strip():
            raise UserError(f"messages[{n}].content must be a non-empty string")
        if len(content) > MAX_MESSAGE_CHARS or "\x00" in content:
            raise UserError(f"messages[{n}].content must be at most {MAX_MESSAGE_CHARS} characters without NUL")
        out.append((role, content))
    return out


def record_messages(project_id: str, session_id: Any, messages: Any) -> RecordResult:
    """Buffer turns for dreaming. Secrets are redacted before anything is stored."""
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 200:
        raise UserError("session_id must be a non-empty string of at most 200 characters.")
    # Here, not at import: the scanner's rules cost every command ~0.5 s (docs/benchmarks.md).
    from memories.secrets import redact
    from memories.write.validation import refuse_secrets

    access.require(project_id, access.WRITE)
    refuse_secrets(project_id)  # (the turns are redacted, not refused; an id is kept whole, so a secret in it is)
    valid = [(r, redact(c)) for r, c in validate_messages(messages)]
    sid = session_id.strip()
    with transaction.atomic():
        valid = _not_consumed(project_id, sid, valid)
        # A hook may send turns the buffer already holds (PreCompact sends the whole transcript).
        session = SessionMessage.objects.filter(project_id=project_id, session_id=sid)
        held = {
            (r, c): (pk, at)
            for pk, r, c, at in session.filter(content__in=[c for _, c in valid]).values_list(
                "id", "role", "content", "created_at"
            )
        }
        fresh = [(r, c) for r, c in valid if (r, c) not in held]
        SessionMessage.objects.bulk_create(
            [
                SessionMessage(project_id=project_id, session_id=sid, role=r, content=c, created_at=at)
                for r, c, at in in_transcript_order(session, valid, held)
            ]
        )
    return {"session_id": sid, "project_id": project_id, "count": len(fresh)}


def turn_digest(role: str, content: str) -> str:
    return hashlib.sha256(f"{role}\0{content}".encode()).hexdigest()


def _not_consumed(project_id: str, session_id: str, turns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`turns` less those a pass already read from this session (ConsumedTurn: PreCompact resends them)."""
    digests = [turn_digest(r, c) for r, c in turns]
    done = set(
        ConsumedTurn.objects.filter(project_id=project_id, session_id=session_id, digest__in=digests).values_list(
            "digest", flat=True
        )
    )
    return [turn for turn, digest in zip(turns, digests, strict=True) if digest not in done]


def in_transcript_order(
    session: QuerySet[SessionMessage], valid: list[tuple[str, str]], held: dict[tuple[str, str], tuple[int, datetime]]
) -> list[tuple[str, str, datetime]]:
    """The turns to add, in the order a dream pass must read them (the buffer is read by id). New turns sent
    before turns the buffer holds (PreCompact's whole transcript after the Stop hook sent its last exchange:
    walk 21's dream read an answer before its question) are written with the held turns after them, which
    leave their old place and keep their time (the buffer's age limit)."""
    first = next((n for n, m in enumerate(valid) if m not in held), len(valid))
    tail = valid[first:]
    if not any(m in held for m in tail):
        return [(r, c, timezone.now()) for r, c in tail]
    session.filter(pk__in=[held[m][0] for m in tail if m in held]).delete()
    now, seen, out = timezone.now(), set[tuple[str, str]](), []
    for m in tail:
        if m in held and m in seen:
            continue  # a held turn moves once
        seen.add(m)
        out.append((*m, held[m][1] if m in held else now))
    return out


def recent_passes(project_id: str | None = None, limit: int = 50) -> list[DreamPass]:
    """The newest passes the caller may see (of one project, or of every project they may read)."""
    qs = access.only_visible(DreamPass.objects.order_by("-started_at"))
    if project_id:
        access.require(project_id, access.READ)
        qs = qs.filter(project_id=project_id)
    return list(qs[:limit])


def unfinished_projects() -> set[str]:
    """Projects the caller may read with a pass not finished (the admin's Dreaming page watches them)."""
    qs = access.only_visible(DreamPass.objects.filter(finished_at__isnull=True))
    return set(qs.values_list("project_id", flat=True))


def buffered_sessions(per_session: int = 20) -> dict[str, list[dict[str, Any]]]:
    """The buffer's sessions, per project, with their first turns (the admin's Dreaming page). Only
    projects the caller may dream on (write): the turns are what a pass would read, and someone without
    that role must not read other people's conversations (docs/contract.md §1, §11)."""
    sessions = (
        access.only_visible(SessionMessage.objects.all(), role=access.WRITE)
        .values("project_id", "session_id")
        .annotate(n=Count("id"), last=Max("created_at"))
        .order_by("project_id", "-last")
    )
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in sessions:
        turns = list(
            SessionMessage.objects.filter(project_id=row["project_id"], session_id=row["session_id"])
            .order_by("id")
            .values("role", "content")[:per_session]
        )
        grouped.setdefault(row["project_id"], []).append({**row, "messages": turns})
    return grouped


def require_dream(project_id: str) -> None:
    """Before queuing a manual pass on the worker (the admin's "Dream now"): the worker acts as the
    system, so the caller's right to dream on the project is checked here, where the caller is known."""
    access.require(project_id, access.WRITE)


def require_schedule(project_id: str) -> None:
    """A project's dreaming schedule is a project setting (the admin role, docs/contract.md §11): it makes
    passes run on the worker, which acts as the system."""
    access.require(project_id, access.ADMIN)


def save_schedule(schedule: DreamSchedule) -> None:
    """Add or change a schedule (the admin's pages): the caller needs admin on its project, and on the
    project it had before when that changes."""
    before = DreamSchedule.objects.filter(pk=schedule.pk).values_list("project_id", flat=True).first()
    if before and before != schedule.project_id:
        require_schedule(before)
    require_schedule(schedule.project_id)
    schedule.save()


def delete_schedules(schedules: list[DreamSchedule]) -> None:
    for schedule in schedules:
        require_schedule(schedule.project_id)
    DreamSchedule.objects.filter(pk__in=[s.pk for s in schedules]).delete()


def prune_buffer(now: datetime | None = None) -> int:
    """Retention for turns no pass consumed (no reasoner, dreaming off): older than
    [dreaming].buffer_max_age_days, or beyond the newest buffer_max_messages of a project."""
    cfg = settings.YULLU["dreaming"]
    now = now or timezone.now()
    too_old = now - timedelta(days=cfg["buffer_max_age_days"])
    deleted, _ = SessionMessage.objects.filter(created_at__lt=too_old).delete()
    ConsumedTurn.objects.filter(created_at__lt=too_old).delete()  # a transcript older than that is not resent
    keep = cfg["buffer_max_messages"]
    for row in SessionMessage.objects.values("project_id").annotate(n=Count("id")).filter(n__gt=keep):
        newest = SessionMessage.objects.filter(project_id=row["project_id"]).order_by("-id")
        cutoff = newest.values_list("id", flat=True)[keep - 1]
        more, _ = SessionMessage.objects.filter(project_id=row["project_id"], id__lt=cutoff).delete()
        deleted += more
    if deleted:
        log.warning("dream buffer: dropped %d old recorded turns (retention; is a reasoner configured?)", deleted)
    return deleted


# --- the pass ---------------------------------------------------------------------------


def _context(project_id: str, limit: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows = list(Memory.objects.current().filter(project_id=project_id).order_by("-updated_at")[:limit])
    changed = stale_notes([m.pk for m in rows])  # code anchors: what changed in the code they cite
    memories = [
        {"uuid": str(m.uuid), "content": m.content, "category": m.category, "tags": list(m.tags)}
        | ({"cited_code_changed": changed[m.pk]} if m.pk in changed else {})
        for m in rows
    ]
    rejected = [
        {"content": r.content, "rating": r.rating, "comment": r.rating_comment}
        for r in RejectedMemory.objects.filter(project_id=project_id, reason=ArchiveReason.REJECTED).order_by(
            "-rejected_at"
        )[:5]
    ]
    return memories, rejected


def _sessions(project_id: str, min_messages: int, session_id: str | None) -> list[str]:
    qs = SessionMessage.objects.filter(project_id=project_id)
    if session_id:
        qs = qs.filter(session_id=session_id)
    rows = qs.values("session_id").annotate(n=Count("id"), first=Max("id")).order_by("first")
    return [r["session_id"] for r in rows if r["n"] >= min_messages]


def _counters(result: DreamResult) -> dict[str, Any]:
    """The DreamPass columns that mirror the running result."""
    # mypy cannot check TypedDict keys computed at run time; COUNTERS are DreamCounters' own keys.
    return {"errors": result["errors"][:50], **{k: result[k] for k in COUNTERS}}  # type: ignore[literal-required]


def _progress(dream: DreamPass, **fields: Any) -> None:
    for key, value in fields.items():
        setattr(dream, key, value)
    DreamPass.objects.filter(pk=dream.pk).update(**fields)


def run_dream_pass(
    project_id: str,
    *,
    reasoner: Reasoner | None,
    manual: bool = True,
    session_id: str | None = None,
    trigger: str = "manual",
) -> DreamResult:
    session_id = SESSION_ID.clean(session_id).strip() or None  # the same sentence over MCP and REST
    # mypy cannot check TypedDict keys computed at run time; COUNTERS are DreamCounters' own keys.
    access.require(project_id, access.WRITE)
    result: DreamResult = {"project_id": project_id, **dict.fromkeys(COUNTERS, 0), "sessions": [], "errors": []}  # type: ignore[typeddict-item]
    with advisory_lock(LockKey.DREAM, project_id) as got:
        if not got:
            return {**result, "skipped": True}
        cfg, _ = load_for_project(project_id, known_root(project_id), settings.YULLU)
        _end_interrupted(project_id)
        dream = DreamPass.objects.create(
            project_id=project_id, trigger=trigger, reasoner=reasoner.name if reasoner else "", phase="loading"
        )
        result["pass_id"] = dream.pk
        phase = "failed"  # unless _run returns normally
        try:
            _run(project_id, dream, reasoner, cfg["dreaming"], manual, session_id, result)
            # A pass that hit errors and processed nothing (no reasoner, every answer unparseable) failed.
            phase = "failed" if result["errors"] and not result["sessions_processed"] else "done"
        finally:
            label = {"reasoner": answered} if (answered := answered_by(reasoner)) else {}
            _progress(dream, phase=phase, finished_at=timezone.now(), **label, **_counters(result))
            DreamSchedule.objects.update_or_create(project_id=project_id, defaults={"last_pass_at": timezone.now()})
    return result


def _run(
    project_id: str,
    dream: DreamPass,
    reasoner: Reasoner | None,
    cfg: dict[str, Any],
    manual: bool,
    session_id: str | None,
    result: DreamResult,
) -> None:
    _resume(project_id, reasoner, result)
    sessions = _sessions(project_id, 1 if manual else cfg["min_messages"], session_id)
    _progress(dream, sessions_total=len(sessions), phase="reasoning")
    if reasoner is None:
        if not sessions:
            return
        result["errors"].append(
            "no reasoner configured: install Claude Code or Codex (found on PATH automatically), or set "
            "[reasoning].provider to 'openai' or 'anthropic' (with a key or a local server) for background "
            "dreaming, or call dream_now from an MCP client that supports sampling."
        )
        return
    system = current_prompt()
    for n, sid in enumerate(sessions, start=1):
        _progress(dream, phase=f"session {n} of {len(sessions)}")
        outcome = _dream_session(project_id, sid, reasoner, system, cfg, result, dream)
        result["sessions"].append(outcome)
        if outcome.get("error"):
            result["errors"].append(f"session {sid}: {outcome['error']}")
        _progress(dream, **_counters(result))


INTERRUPTED = "interrupted: the process running this pass stopped before it finished"


def _end_interrupted(project_id: str) -> None:
    """Passes of this project left unfinished by a process that died (its lock went with it, and we
    hold it now) are marked failed, so the admin stops showing them as running."""
    for dream in DreamPass.objects.filter(project_id=project_id, finished_at__isnull=True):
        _progress(dream, phase="failed", finished_at=timezone.now(), errors=[*(dream.errors or []), INTERRUPTED])


def _resume(project_id: str, reasoner: Reasoner | None, result: DreamResult) -> None:
    """Apply the operations an interrupted pass decided and did not apply, counted in this pass."""
    pending = left_pending(project_id)
    if not pending:
        return
    log.info("dream pass for %s: applying %d operations an interrupted pass left", project_id, len(pending))
    counts = apply_pending(Scope(project_id, known_root(project_id)), pending, reasoner)
    _count(result, counts)


def _count(result: DreamResult, counts: dict[str, int]) -> None:
    for key, value in counts.items():
        # mypy cannot check a computed key; every ops_* name is a DreamCounters key.
        result[f"ops_{COUNTED_AS.get(key, key)}"] += value  # type: ignore[literal-required]


def _consume(project_id: str, session_id: str, rows: list[tuple[int, str, str]]) -> None:
    """Delete the turns a pass read: by id, and their copies. A whole transcript recorded while the pass waited on
    the model moves held turns to new ids (in_transcript_order), and the next pass read that exchange again (review
    24). The buffer never takes a turn it holds, so a row of the session with a read turn's role and content is it."""
    read = {(role, content) for _, role, content in rows}
    session = SessionMessage.objects.filter(project_id=project_id, session_id=session_id)
    moved = session.filter(content__in=[c for _, c in read]).values_list("id", "role", "content")
    session.filter(pk__in=[r[0] for r in rows] + [pk for pk, r, c in moved if (r, c) in read]).delete()
    ConsumedTurn.objects.bulk_create(
        [ConsumedTurn(project_id=project_id, session_id=session_id, digest=turn_digest(r, c)) for r, c in read],
        ignore_conflicts=True,
    )


def _dream_session(
    project_id: str,
    session_id: str,
    reasoner: Reasoner,
    system: str,
    cfg: dict[str, Any],
    result: DreamResult,
    dream: DreamPass,
) -> dict[str, Any]:
    rows = list(
        SessionMessage.objects.filter(project_id=project_id, session_id=session_id)
        .order_by("id")
        .values_list("id", "role", "content")[:MAX_MESSAGES_PER_SESSION]
    )
    memories, rejected = _context(project_id, cfg["context_memories"])
    # Here, not at import: the scanner's rules cost every command ~0.5 s (docs/benchmarks.md).
    from memories.secrets import redact

    # Messages were redacted when stored; redact again in case the prompt was edited to echo more.
    prompt = build_user_prompt([(r, redact(c)) for _, r, c in rows], memories, rejected)
    outcome: dict[str, Any] = {"session_id": session_id, "messages": len(rows)}
    try:
        ops = parse_operations(reasoner.complete(system, prompt))
    except (ParseError, UserError) as exc:
        outcome["error"] = str(exc)
        return outcome  # messages are kept for the next pass
    with transaction.atomic():  # the answer is kept and its messages consumed together
        pending = pend(dream, session_id, ops)
        _consume(project_id, session_id, rows)
    counts = apply_pending(Scope(project_id, known_root(project_id)), pending, reasoner)
    _count(result, counts)
    outcome.update(counts)
    result["sessions_processed"] += 1
    result["messages_processed"] += len(rows)
    return outcome


# --- scheduling -------------------------------------------------------------------------


def should_dream(
    now: datetime,
    last_pass_at: datetime | None,
    last_message_at: datetime | None,
    interval_s: int,
    idle_s: int,
    has_messages: bool,
) -> bool:
    """The scheduling rule. First pass fires at once; then every interval; and, when idle_s > 0,
    after idle_s seconds without a new message. Both off (0) never fires. A last pass later than
    now was before the clock went back: due (else no pass until the clock caught up, round nine)."""
    if not has_messages:
        return False
    if interval_s > 0 and (
        last_pass_at is None or last_pass_at > now or now - last_pass_at >= timedelta(seconds=interval_s)
    ):
        return True
    if idle_s > 0 and last_message_at is not None and now - last_message_at >= timedelta(seconds=idle_s):
        return last_pass_at is None or last_pass_at < last_message_at
    return False


def due_projects(now: datetime | None = None) -> list[str]:
    now = now or timezone.now()
    due = []
    buffered = SessionMessage.objects.values("project_id").annotate(last=Max("created_at"))
    schedules = {s.project_id: s for s in DreamSchedule.objects.all()}
    for row in buffered:
        pid = row["project_id"]
        try:
            cfg, _ = load_for_project(pid, known_root(pid), settings.YULLU)
        except ConfigError as exc:
            # One project's broken .yullu/config.toml (a teammate's typo, committed) raised out of this loop and
            # stopped scheduled dreaming for every project (walk 18). Its passes wait for the file to be fixed;
            # `yullu doctor` in that checkout and a manual pass say what is wrong.
            log.warning("scheduled dreaming skips %s until its config is fixed: %s", pid, exc)
            continue
        sched = schedules.get(pid)
        if not cfg["dreaming"]["enabled"] or (sched is not None and not sched.enabled):
            continue
        interval = (
            sched.interval_seconds
            if sched and sched.interval_seconds is not None
            else parse_duration(cfg["dreaming"]["interval"])
        )
        idle = (
            sched.on_idle_seconds if sched and sched.on_idle_seconds is not None else cfg["dreaming"]["on_idle_seconds"]
        )
        if should_dream(now, sched.last_pass_at if sched else None, row["last"], interval, idle, True):
            due.append(pid)
    return due


class NothingToDream(NotFound):
    """The folder or id names no project this install knows: no reasoner anywhere would help."""


def _dreamable(scope: Scope) -> bool:
    """A project a manual pass may open: a git checkout (the folder's or a known one), memories, or
    recorded turns. `yullu dream --cwd /tmp` opened a pass, a schedule and a project row for a folder
    nothing was ever recorded in: a stray project in the admin and the project list."""
    if scope.git_root is not None or project_known(scope.project_id):
        return True
    return SessionMessage.objects.filter(project_id=scope.project_id).exists()


def _nothing_to_dream(project_id: str | None, cwd: str | None, resolved: str) -> str:
    # Worded for every transport (CLI --cwd/--project-id, REST and MCP cwd/project_id): one sentence each.
    if project_id:
        return (f"project {project_id!r} not found (no memories, no recorded turns, no known checkout); check the "
                "id, or name the project by a cwd inside its git checkout instead.")  # fmt: skip
    return (f"{cwd or os.getcwd()} is not inside a git repository and nothing was recorded for it ({resolved}: no "
            "memories, no recorded turns); give a cwd inside the project's git checkout.")  # fmt: skip


def manual_pass(
    project_id: str | None, cwd: str | None, scope: Scope, *, reasoner: Reasoner | None, session_id: str | None = None
) -> DreamResult:
    """A pass someone asked for (`yullu dream`, `POST /api/dream`, `dream_now`), over the project that
    `project_id`/`cwd` resolved to. One that names no project this install knows is refused before
    anything is written: no project row, no pass, no schedule (the access check would claim the project)."""
    if not _dreamable(scope):
        raise NothingToDream(_nothing_to_dream(project_id, cwd, scope.project_id))
    return run_dream_pass(scope.project_id, reasoner=reasoner, manual=True, session_id=session_id)


def dream_in_folder(
    cwd: str, project_id: str | None, announce: Callable[[str, str], None] | None = None
) -> DreamResult:
    """A manual pass over a folder's project with the configured reasoner (`yullu dream`). Without
    one there is nothing it could do (MCP sampling needs a client): a UserError says what to set.
    `announce(project_id, reasoner name)` is called once the pass is sure to ask the reasoner."""
    scope = resolve(project_id, cwd)
    reasoner = configured_reasoner()
    if reasoner is None:
        raise UserError(f"no reasoner to dream with: {HOW_TO_GET_A_REASONER}; the recorded turns are kept.")
    if announce is not None and _dreamable(scope):
        announce(scope.project_id, reasoner.name)
    return manual_pass(project_id, cwd, scope, reasoner=reasoner)

"""Is the system healthy: one model, shown in four places. Each part is judged here, once:
/api/status (`status()`), `yullu doctor`, the admin dashboard and the `yullu serve` banner show
the parts they name below (cost decides: /api/status is polled, the dashboard's counts are not
cheap). No secrets in any part.

A part is healthy when it has no problems. The parts in OPTIONAL leave the server working when
they have some (warnings: doctor's "warn", the dashboard's banner lines); every other part must be
healthy for the server to be "ready". A judge that raises is a part with that one problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import QuerySet
from django.template.defaultfilters import pluralize
from django.utils import timezone

from yullu_core.failures import disk_status, first_line
from yullu_core.version import installed


@dataclass(frozen=True)
class Part:
    name: str
    detail: str  # what is there, in one line ("postgres, pgvector 0.8.0")
    problems: tuple[str, ...] = ()  # one sentence each; none: healthy
    fix: str = ""  # what to do about the problems
    data: Mapping[str, Any] = field(default_factory=dict)  # the machine-readable report (/api/status)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def required(self) -> bool:
        return self.name not in OPTIONAL


@dataclass(frozen=True)
class Health:
    parts: tuple[Part, ...]

    @property
    def ready(self) -> bool:
        return all(p.ok for p in self.parts if p.required)

    def part(self, name: str) -> Part:
        return next(p for p in self.parts if p.name == name)

    def problems(self) -> list[str]:
        return [problem for p in self.parts for problem in p.problems]


def database() -> Part:
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cur.fetchone()
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:  # any failure means "not usable"; say why without a traceback
        data: dict[str, Any] = {"ok": False, "kind": settings.DATABASE_KIND, "error": said(exc)}
        problem = f"{settings.DATABASE_KIND}: {said(exc)}"
        return Part("database", problem, (problem,), "start it with `yullu serve` or check DATABASE_URL", data=data)
    data = {
        "ok": row is not None and not pending,
        "kind": settings.DATABASE_KIND,
        "pgvector": row[0] if row else None,
        "pending_migrations": len(pending),
    }
    detail = f"{settings.DATABASE_KIND}, pgvector {data['pgvector']}"
    if pending:
        fix = "run any database command (e.g. `yullu token`)"
        return Part("database", detail, (f"{len(pending)} migrations pending",), fix, data=data)
    if row is None:
        fix = "install pgvector in that PostgreSQL (CREATE EXTENSION vector)"
        return Part("database", detail, (f"{settings.DATABASE_KIND}: pgvector is not installed",), fix, data=data)
    return Part("database", detail, data=data)


def said(exc: BaseException) -> str:
    """What went wrong in one line: the class and the first line of its message ("OperationalError: connection
    timeout expired"). The class alone told a stopped PostgreSQL from a refused login by nobody (walk 14)."""
    first = first_line(exc)
    return f"{type(exc).__name__}: {first}"[:200] if first else type(exc).__name__


# The default broker is a table in the database: with the database down it is down too, and asking again
# would wait the connection timeout a second time (/api/status took 10 s with PostgreSQL stopped, walk 14).
QUEUE_IN_DATABASE_DOWN = "the queue is a table in the database, which is unavailable"


def _broker_data() -> dict[str, Any]:
    url = settings.CELERY_BROKER_URL
    if url.startswith("yullupg://"):
        from yullu_site.broker import table_ready

        try:  # the queue table is all this broker needs (the database itself is checked above)
            return {"ok": table_ready(), "kind": "postgres"}
        except Exception as exc:
            return {"ok": False, "kind": "postgres", "error": said(exc)}
    from yullu_site.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:
        return {"ok": False, "kind": url.split("://")[0], "error": said(exc)}
    return {"ok": True, "kind": url.split("://")[0]}


def broker() -> Part:
    data = _broker_data()
    if data["ok"]:
        return Part("broker", data["kind"], data=data)
    problem = f"broker {data['kind']}: {data.get('error', 'unreachable')}"
    fix = "start the broker or unset CELERY_BROKER_URL to use the database queue"
    return Part("broker", data["kind"], (problem,), fix, data=data)


def embedder(probe: bool = False) -> Part:
    """The configured embedder; `probe` (doctor) embeds one text first, which also loads a local model."""
    from memories.embedding.embedders import embedder_status, embeds, get_embedder

    current = get_embedder()
    fix = "check [embedding] in config.toml (and its API key)"
    if probe and embeds(current):
        try:
            current.embed(["doctor check"], kind="query")
        except Exception as exc:  # a failed embed is the answer, said in one line
            problem = f"{type(exc).__name__}: {str(exc)[:200]}"
            return Part("embedder", current.id, (problem,), fix, data={**embedder_status(), "ok": False})
    data = embedder_status()
    detail = current.id if embeds(current) else f"{current.id} (keyword search only)"
    if "query_runtime" in data:  # which model embeds questions: the shipped int8 one, or the documents' own
        detail += f" ({data['runtime']}; questions: {data['query_runtime']})"
    if data["ok"]:
        return Part("embedder", detail, data=data)
    problem = f"embedder {current.id}: " + ("no API key" if "key_set" in data else "the model is not loaded yet")
    return Part("embedder", detail, (problem,), fix, data=data)


def disk() -> Part:
    data = disk_status(settings.YULLU_HOME)  # the embedded database, the logs and the queue live there
    detail = f"{settings.YULLU_HOME}: {data.get('free_mb', '?')} MB free"
    if data["ok"]:
        return Part("disk", detail, data=data)
    problem = f"disk: {data.get('error', 'not usable')}"
    return Part("disk", detail, (problem,), f"free space where {settings.YULLU_HOME} lives", data=data)


def reasoner() -> Part:
    """Optional: the server works without one, but background dreaming does not."""
    from dreaming.reasoners import reasoner_status

    data = reasoner_status()
    if data["available"]:
        return Part("reasoner", data["name"], data=data)
    return Part("reasoner", data["name"] or "none", (data["warning"],), data["warning"], data=data)


def vectors() -> Part:
    """Whether every memory has a vector of the current embedder (a backfill catches up)."""
    from memories import tallies
    from memories.embedding.embedders import embeds, get_embedder

    current = get_embedder()
    total = tallies.memory_counts(install=True).memories  # kept by the writes: no count of a million rows
    if not embeds(current):
        problem = 'No embedder ([embedding].provider = "none"): search is keyword-only.'
        return Part("vectors", "none", (problem,), data={"embedder": current.id, "embedded": 0, "total": total})
    embedded = tallies.vector_count(current.id, install=True)
    data = {"embedder": current.id, "embedded": embedded, "total": total}
    if embedded >= total:
        return Part("vectors", f"{embedded} of {total} embedded", data=data)
    missing = total - embedded
    have = "has" if missing == 1 else "have"
    problem = f"{missing} of {total} memor{pluralize(total, 'y,ies')} {have} no vector for {current.id} yet (backfill)."
    return Part("vectors", f"{embedded} of {total} embedded", (problem,), data=data)


def provider_calls() -> Part:
    """Embedder and reasoner calls that failed in the last 24 hours."""
    from memories.models import Usage

    failures = Usage.objects.filter(ok=False, created_at__gte=timezone.now() - timedelta(days=1))
    if not (n := failures.count()):
        return Part("provider calls", "none failed in the last 24 h")
    last = failures.order_by("-created_at").first()
    problem = f"{n} provider call{pluralize(n)} failed in the last 24 h (last: {last.error[:160] if last else ''})."
    fix = "see Usage in the admin"
    return Part("provider calls", f"{n} failed", (problem,), fix, data={"failed": n})


def team_log(states: QuerySet[Any] | None = None) -> Part:
    """Team logs large enough that compaction would help (of `states`: e.g. the projects a viewer may read)."""
    from sync.hygiene import all_advice

    advice = all_advice(states)
    if not advice:
        return Part("team log", "no log large enough that compaction would help")
    fix = "run `yullu sync compact` in each repository named, then commit the result"
    return Part("team log", " ".join(advice), tuple(advice), fix)


def sync_events(rows: QuerySet[Any] | None = None) -> Part:
    """Committed events that keep failing to reach their team log (a full or read-only folder); of
    `rows` only, when given (the dashboard: the projects the viewer may read)."""
    from sync.outbox import folder_problem, stuck

    late = stuck(rows)
    if not late:
        return Part("sync events", "every event written to its team log")
    problems = []
    for folder, n, oldest in late:
        why = folder_problem(folder)
        problems.append(
            f"{n} sync event{pluralize(n)} committed since {oldest:%Y-%m-%d %H:%M} UTC still wait to be written to "
            f"{folder}{f' ({why})' if why else ''}; teammates do not see them yet."
        )
    fix = "make room on that folder's disk or make it writable; the sweep writes the events by itself"
    return Part("sync events", f"{sum(n for _, n, _ in late)} waiting", tuple(problems), fix)


# Parts whose problems leave the server working: warnings, not "not ready".
OPTIONAL = frozenset({"reasoner", "vectors", "provider calls", "team log", "sync events"})
PARTS: dict[str, Callable[[], Part]] = {
    "database": database,
    "broker": broker,
    "disk": disk,
    "embedder": embedder,
    "vectors": vectors,
    "provider calls": provider_calls,
    "reasoner": reasoner,
    "team log": team_log,
    "sync events": sync_events,
}
# What each place shows. /api/status is polled (no counts); the dashboard is a page the database
# already served; the banner runs before anything else is up.
STATUS = ("database", "broker", "embedder", "disk", "reasoner")
DOCTOR = ("database", "broker", "disk", "embedder", "reasoner", "team log", "sync events")
DASHBOARD = ("broker", "disk", "vectors", "provider calls", "reasoner", "team log", "sync events")
BANNER = ("reasoner",)


def gather(names: tuple[str, ...], judges: Mapping[str, Callable[[], Part]] | None = None) -> Health:
    """The named parts, judged now; `judges` replaces some (doctor probes the embedder, the
    dashboard limits the team logs to the viewer's projects)."""
    return Health(tuple(judge_each(names, judges)))


def judge_each(names: tuple[str, ...], judges: Mapping[str, Callable[[], Part]] | None = None) -> Iterator[Part]:
    """The named parts one at a time, each as soon as it is judged (doctor prints each line then)."""
    chosen = {**PARTS, **(judges or {})}
    database_down = False
    for name in names:
        if name == "broker" and database_down and settings.CELERY_BROKER_URL.startswith("yullupg://"):
            data = {"ok": False, "kind": "postgres", "error": QUEUE_IN_DATABASE_DOWN}
            problem = f"broker postgres: {QUEUE_IN_DATABASE_DOWN}"
            yield Part("broker", "postgres", (problem,), "bring the database back (see its line)", data=data)
            continue
        part = _judged(name, chosen[name])
        database_down = database_down or (name == "database" and not part.ok and "error" in part.data)
        yield part


def _judged(name: str, judge: Callable[[], Part]) -> Part:
    try:
        return judge()
    except Exception as exc:  # a judge that blows up is a part with one problem, said in one line
        return Part(name, "", (f"{type(exc).__name__}: {str(exc)[:200]}",), "see the message above")


def status() -> dict[str, Any]:
    """/api/status: ready, the version, and each part's report."""
    health = gather(STATUS)
    reports = {p.name: dict(p.data) or {"ok": p.ok, "error": " ".join(p.problems)} for p in health.parts}
    return {"ready": health.ready, "version": installed(), **reports}

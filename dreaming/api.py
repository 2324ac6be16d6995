from __future__ import annotations

from typing import Annotated

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.rest import WHERE, ScopeIn, project_param, rest_scope
from yullu_core.arguments import SESSION_ID
from yullu_core.rest import argument, as_given, documented, many, shape, valid
from yullu_core.wire import DATETIME

from .models import DreamPass
from .reasoners import configured_reasoner
from .services import (
    COUNTERS,
    MESSAGES_SCHEMA,
    SESSION_ID_SCHEMA,
    DreamCounters,
    DreamResult,
    RecordResult,
    manual_pass,
    recent_passes,
    record_messages,
)


class MessagesIn(ScopeIn):
    # Judged by the service (dreaming.services.record_messages), as the MCP tool's are: the same sentence.
    session_id = as_given(SESSION_ID_SCHEMA, required=True)
    messages = as_given(MESSAGES_SCHEMA, required=True)


class DreamIn(ScopeIn):
    session_id = argument(SESSION_ID)  # judged by the service (run_dream_pass), as over MCP


class PassOut(DreamCounters):
    id: int
    project_id: str
    trigger: str
    reasoner: str
    phase: str
    started_at: Annotated[str, DATETIME]
    finished_at: Annotated[str | None, DATETIME]
    sessions_total: int
    errors: list[str]
    last_error: str | None


def pass_to_wire(p: DreamPass) -> PassOut:
    return {
        "id": p.pk,
        "project_id": p.project_id,
        "trigger": p.trigger,
        "reasoner": p.reasoner,
        "phase": p.phase,
        "started_at": p.started_at.isoformat(),
        "finished_at": p.finished_at.isoformat() if p.finished_at else None,
        "sessions_total": p.sessions_total,
        # mypy cannot check keys computed at run time; COUNTERS are DreamCounters' own keys.
        **{k: getattr(p, k) for k in COUNTERS},  # type: ignore[typeddict-item]
        "errors": p.errors,
        "last_error": p.errors[-1] if p.errors else None,
    }


class MessagesView(APIView):
    @documented(shape(RecordResult), request=MessagesIn, status=201, summary="Buffer conversation turns for dreaming")
    def post(self, request: Request) -> Response:
        data = valid(MessagesIn, request.data)
        scope = rest_scope(data)
        return Response(record_messages(scope.project_id, data["session_id"], data["messages"]), status=201)


class DreamView(APIView):
    @documented(
        shape(DreamResult),
        request=DreamIn,
        errors=(404,),  # a cwd or project_id naming no project this install knows (manual_pass)
        summary="Run a dream pass now (skipped: true if one is running)",
    )
    def post(self, request: Request) -> Response:
        data = valid(DreamIn, request.data)
        scope = rest_scope(data)
        chosen = configured_reasoner()
        pid, cwd = data.get("project_id"), data.get("cwd")
        return Response(manual_pass(pid, cwd, scope, reasoner=chosen, session_id=data.get("session_id")))


class DreamPassesView(APIView):
    """Pass history with live progress (phase, session n of total, counters, last error)."""

    @documented(many("Passes", "passes", shape(PassOut)()), params=WHERE, errors=())
    def get(self, request: Request) -> Response:
        passes = recent_passes(project_param(request))
        return Response({"passes": [pass_to_wire(p) for p in passes]})

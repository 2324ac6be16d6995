"""Every API error is JSON `{"error": "..."}` with a fitting status; no traceback leaves the server."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse
from django.views import defaults
from rest_framework import exceptions, parsers, status

from . import outage
from .arguments import not_json
from .failures import UNAVAILABLE, DiskFull, NotAnswering, translate
from .json_body import error_response

log = logging.getLogger("yullu.api")
# Right for both kinds of client: on one's own machine `yullu token` prints the token, but a teammate
# whose team-server token was revoked or expired needs a new one from that server's admin.
NEW_TOKEN = (
    "Your own machine's server: `yullu token` prints its token. A team server: ask its admin for a new one "
    "(`yullu tokens create --user NAME` on the server), then `yullu install --server URL --token NEW`."
)
# A token this server cannot say more about: never issued (mistyped, guessed), or gone without a trace.
TOKEN_HELP = f"Invalid, expired, revoked or missing API token; send 'Authorization: Bearer <token>'. {NEW_TOKEN}"
# A token that did authenticate once is told why it no longer does (access.auth.refusal): only its holder can
# send it, and a guess matches no token ever issued, so these say nothing about tokens the sender lacks.
TOKEN_EXPIRED = "This API token expired on {when}. " + NEW_TOKEN
TOKEN_REVOKED = "This API token was revoked on {when}. " + NEW_TOKEN


class ServiceUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = UNAVAILABLE


def _first_message(detail: Any, path: str = "") -> str:
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = key if key != "non_field_errors" else ""
            return _first_message(value, f"{path}.{name}" if path and name else (name or path))
    if isinstance(detail, list) and detail:
        return _first_message(detail[0], path)
    text = str(detail)
    return f"{path}: {text}" if path else text


def exception_handler(exc: Exception, context: dict[str, Any]) -> HttpResponse:
    """Every REST error as `{"error": sentence}`, in the one body shape of every door (yullu_core.json_body),
    not in DRF's rendering of a Response."""
    from .errors import UserError

    if isinstance(exc, UserError):
        return error_response(str(exc), exc.status)
    if isinstance(exc, RequestDataTooBig):
        return error_response(body_too_large(), 413)
    if isinstance(exc, DjangoValidationError):
        return error_response(" ".join(exc.messages), 400)
    if (said := translate(exc)) is not None:
        if isinstance(said, DiskFull):
            return _counted(outage.DISK, exc, str(said), said.status)
        if not isinstance(said, NotAnswering):
            return error_response(str(said), said.status)
        return _outage(exc, str(said))
    if isinstance(exc, DatabaseError):
        return _outage(exc, ServiceUnavailable.default_detail)
    if isinstance(exc, exceptions.NotAuthenticated):
        exc = exceptions.NotAuthenticated(TOKEN_HELP)
    if isinstance(exc, exceptions.APIException):
        response = error_response(_first_message(exc.detail), exc.status_code)
        if auth_header := getattr(exc, "auth_header", None):
            response["WWW-Authenticate"] = auth_header
        if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
            response["WWW-Authenticate"] = 'Bearer realm="yullu"'
        return response
    error_id = uuid.uuid4().hex[:12]
    log.exception("unexpected error %s", error_id)
    return error_response(f"Internal error (id {error_id}); see the server log.", 500)


def _outage(exc: Exception, sentence: str) -> HttpResponse:
    """A 503 for a database that is gone or silent: counted into the web's outage, which logs it (once, then a
    reminder every 30 s), and not logged again by Django ("ERROR … Service Unavailable" per request)."""
    return _counted(outage.DATABASE, exc, sentence, 503)


def _counted(into: outage.Outage, exc: Exception, sentence: str, status: int) -> HttpResponse:
    into.failed(exc)
    response = error_response(sentence, status)
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


class JSONParser(parsers.JSONParser):
    """DRF's, saying a bad body in the product's words (yullu_core.arguments.not_json), and with JSON nested
    deeper than the parser's recursion limit a 400 instead of a 500."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError(not_json("it is nested too deeply")) from None
        except exceptions.ParseError as exc:  # DRF raised it inside `except ValueError`
            raise exceptions.ParseError(not_json(_why_not_json(exc.__context__))) from None


def _why_not_json(cause: BaseException | None) -> str:
    if isinstance(cause, json.JSONDecodeError):  # its str ends "(char 1)", an offset no editor shows
        return f"{cause.msg.lower()} at line {cause.lineno} column {cause.colno}"
    if isinstance(cause, UnicodeDecodeError):
        return f"it is not {cause.encoding.upper()} text (byte {cause.start + 1})"
    return str(cause).rstrip(".") if cause else "it could not be read"


def body_too_large() -> str:
    limit_mb = settings.DATA_UPLOAD_MAX_MEMORY_SIZE / 1024 / 1024
    return (
        f"The request body is too large: the limit is {limit_mb:g} MB. "
        "Send less per request (a memory is a short fact; split long message lists into several calls)."
    )


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Unknown paths under /api answer JSON like the rest of the API; elsewhere Django's page."""
    if request.path.startswith("/api/"):
        return error_response(f"no such API endpoint: {request.path}", 404)
    return defaults.page_not_found(request, exception or Http404())


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return error_response("internal error; see the server log", 500)
    return defaults.server_error(request)


def reject_nul_bytes(get_response: Any) -> Any:
    """Middleware: PostgreSQL text cannot hold NUL, so a query parameter carrying one would fail deep
    in a query (500). Refuse it at the door for every page; JSON under /api."""

    def middleware(request: HttpRequest) -> HttpResponse:
        if any("\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists()):
            message = "query parameters must not contain NUL bytes."
            if request.path.startswith("/api/"):
                return error_response(message, 400)
            return HttpResponse(message, status=400, content_type="text/plain")
        return get_response(request)

    return middleware

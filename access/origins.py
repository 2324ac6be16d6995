"""Host and Origin rules, one of each for /mcp and every Django page (DNS rebinding, cross-site requests).

Host: Django's own parser (`split_domain_port`, `validate_host`) against `settings.ALLOWED_HOSTS`, which
Django applies to its pages and `mcp_http` to /mcp; the MCP SDK's own check matched `127.0.0.1:*` as a
prefix, so `127.0.0.1:PORT@evil.example` passed it. Origin: a browser page from another site must not
drive the API with a token it got hold of; requests without an Origin header (curl, hooks, assistants)
pass."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port, validate_host

from yullu_core.json_body import error_response

log = logging.getLogger("yullu.access")
CHECKED_PREFIXES = ("/api/", "/metrics")
HOST_REFUSED = "this Host is not allowed; add it to [server].allowed_hosts."


def host_allowed(host: str) -> bool:
    """The Host header's name (port ignored) is one of ALLOWED_HOSTS, by Django's rules."""
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


def allowed_origins() -> list[str]:
    """`[server].allowed_origins` plus http(s) on every allowed host, any port."""
    origins = list(settings.YULLU["server"]["allowed_origins"])
    for host in settings.YULLU["server"]["allowed_hosts"]:
        origins += [f"http://{host}", f"http://{host}:*", f"https://{host}", f"https://{host}:*"]
    return origins


def origin_allowed(origin: str, allowed: list[str]) -> bool:
    if origin in allowed:
        return True
    return any(pattern.endswith(":*") and origin.startswith(pattern[:-2] + ":") for pattern in allowed)


def check_host(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware: a foreign Host gets the answer /mcp gives (421, one sentence: JSON under /api and
    /metrics, text elsewhere) and one warning line. Left to Django, it was an empty "Bad Request (400)"
    page and a traceback logged at ERROR for every such request (a scanner fills the log)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        host = request.META.get("HTTP_HOST") or request.META.get("SERVER_NAME", "")
        if host_allowed(host):
            return get_response(request)
        log.warning("refused %s for Host %r: not in [server].allowed_hosts", request.path[:200], host[:200])
        if request.path.startswith(CHECKED_PREFIXES):
            return error_response(HOST_REFUSED, 421)
        return HttpResponse(HOST_REFUSED + "\n", status=421, content_type="text/plain; charset=utf-8")

    return middleware


def check_origin(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware: 403 with one sentence for an /api or /metrics request from a foreign Origin."""

    def middleware(request: HttpRequest) -> HttpResponse:
        origin = request.headers.get("origin", "")
        if origin and request.path.startswith(CHECKED_PREFIXES) and not origin_allowed(origin, allowed_origins()):
            message = f"requests from origin {origin[:200]} are not allowed; add it to [server].allowed_origins."
            return error_response(message, 403)
        return get_response(request)

    return middleware

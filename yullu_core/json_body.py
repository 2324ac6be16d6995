"""One JSON body shape for every door: REST (its views and its error handler), /api/context, /api/status, the
middlewares that refuse a request, /api's front gate and /mcp's token check. Compact and UTF-8, as DRF writes
its bodies and the MCP SDK its JSON-RPC errors: `{"error":"The database is unavailable right now; …"}`.

Before, the same 503 came as DRF's `{"error":"…"}` from a view and as Django's `{"error": "…"}` (spaced, non-ASCII
as \\u escapes) from a middleware or the front gate: a client comparing bodies, or a log grepping them, saw two."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse

CONTENT_TYPE = "application/json"


def dumps(payload: Any) -> bytes:
    """The body's bytes. Dates, UUIDs and decimals as Django writes them (JsonResponse's encoder); U+2028 and
    U+2029 escaped as DRF does, for clients that read JSON as JavaScript."""
    text = json.dumps(payload, cls=DjangoJSONEncoder, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()


def json_response(payload: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> HttpResponse:
    return HttpResponse(dumps(payload), status=status, content_type=CONTENT_TYPE, headers=headers)


def error_response(sentence: str, status: int, headers: Mapping[str, str] | None = None) -> HttpResponse:
    """`{"error": sentence}`, the answer of every refusal."""
    return json_response({"error": sentence}, status, headers)

"""One ASGI app: /mcp goes to the MCP SDK's Streamable HTTP app, everything else to Django.

The MCP app needs the ASGI lifespan events (they start its session manager), so
lifespan is forwarded to it; our own start-up work runs first.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yullu_site.settings")


def _die_with_the_web_parent() -> None:
    """A worker of `uvicorn --workers N` (a process multiprocessing spawned) is killed by the kernel when uvicorn's
    parent process dies. `yullu serve` has the kernel kill that parent when it dies itself (PR_SET_PDEATHSIG), but
    its workers lived on: after a `kill -9` of `yullu serve` they kept serving the port, so the next `yullu serve`
    said "port … is already in use" and ended, and nothing stopped them (chaos round 26)."""
    parent = multiprocessing.parent_process()
    if parent is None or not sys.platform.startswith("linux"):
        return  # one web process: `yullu serve` set this already (yullu_cli.supervised)
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent.pid:
        os._exit(1)  # the parent died before the line above: no signal comes


_die_with_the_web_parent()

from django.core.asgi import get_asgi_application  # noqa: E402

django_app = get_asgi_application()

from yullu_core.database import start_database_or_say  # noqa: E402

# This module is where a web process starts: the embedded PostgreSQL first, before the server listens
# (importing the settings starts nothing; a failure here ends the process, as it did in the settings).
if not start_database_or_say("web", "exiting (`yullu serve` starts it again once the database answers)."):
    raise SystemExit(1)

from access.token_check import TokenChecker  # noqa: E402
from yullu_site.front.gate import Gate, limit_body  # noqa: E402
from yullu_site.front.lanes import is_hook_request, lane  # noqa: E402
from yullu_site.mcp.http import ASGIScope, Receive, Send, build_mcp_asgi  # noqa: E402
from yullu_site.startup import on_startup  # noqa: E402

mcp_app = build_mcp_asgi()
site_app = Gate(django_app, TokenChecker())  # tokens before bodies, bodies bounded (yullu_site/front/gate.py)


async def application(scope: ASGIScope, receive: Receive, send: Send) -> None:
    kind = scope["type"]
    if kind == "lifespan":
        await _lifespan(scope, receive, send)
    elif kind == "http" and (scope["path"] == "/mcp" or scope["path"].startswith("/mcp/")):
        await limit_body(mcp_app, scope, receive, send)  # TokenAuth checks the token before any body is read
    elif is_hook_request(scope):
        async with lane():  # a long-lived thread that keeps its database connection
            await site_app(scope, receive, send)
    else:
        await site_app(scope, receive, send)


async def _lifespan(scope: ASGIScope, receive: Receive, send: Send) -> None:
    started = False

    async def wrapped_receive() -> dict[str, Any]:
        nonlocal started
        message = await receive()
        if message["type"] == "lifespan.startup" and not started:
            started = True
            await on_startup()
        return message

    await mcp_app(scope, wrapped_receive, send)

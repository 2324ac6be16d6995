"""Sync's MCP tool: reconcile_memories (apply teammates' event files, publish local-only memories); and before
any other tool, the team log of the checkout it names applied when a file of it is new here (sync.catchup)."""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.db import DatabaseError
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult

from memories.scope import resolve
from yullu_core.mcp import Cwd, ProjectId, run, tool_pool, with_fresh_connections

from .catchup import catch_up, settled
from .services import reconcile_scope

log = logging.getLogger(__name__)

# Tools that name no checkout (usage, a recall's verdict), or reconcile it themselves (their result counts
# what was new, so a catch-up first would make it say nothing was).
NO_CATCH_UP = frozenset({"reconcile_memories", "get_usage", "rate_recall"})


def register(server: MCPServer) -> None:
    @server.tool(description="Apply teammates' memory events from <repo>/.yullu/logs and publish local-only memories.")
    async def reconcile_memories(project_id: ProjectId = None, cwd: Cwd = None) -> CallToolResult:
        def body() -> dict[str, Any]:
            return dict(reconcile_scope(resolve(project_id, cwd)))

        return await run(body)


async def catch_up_before(name: str, arguments: Any, local: bool) -> None:
    """Apply the team log of the checkout a tool call names (its `cwd`; over stdio, with neither `cwd` nor
    `project_id`, the client's folder) before the tool runs, so a fresh clone's first recall finds the
    team's memories. Never fails the call: a problem here is logged, and the tool answers as before."""
    if name in NO_CATCH_UP or not isinstance(arguments, dict):
        return
    cwd, project_id = arguments.get("cwd"), arguments.get("project_id")
    project_id = project_id if isinstance(project_id, str) and project_id else None
    if not (isinstance(cwd, str) and cwd.strip()):
        if not local or project_id is not None:
            return  # over HTTP a call without cwd names no checkout; an id alone names a recorded one (beat's)
        cwd = None
    if settled(project_id, cwd):
        return  # its folder unchanged since found applied: one stat, here on the event loop
    try:
        call = sync_to_async(with_fresh_connections, thread_sensitive=False, executor=tool_pool())
        await call(lambda: catch_up(project_id, cwd))
    except DatabaseError:
        return  # the tool meets the same outage and says it, once for the outage (yullu_core.outage)
    except Exception:
        log.warning("applying the team log before %s failed; the tool answers without it", name, exc_info=True)

"""dream_now over MCP: the LLM call goes back to the requesting client (sampling) when it
supports it, otherwise to the configured reasoner.

The pass itself is synchronous (it uses the ORM), so it runs in a worker thread; the
sampling callback hops back onto the event loop to ask the client and waits for its answer.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import types
from mcp.server.mcpserver import Context

from memories.scope import resolve

from .reasoners import CallbackReasoner, FallbackReasoner, Reasoner, configured_reasoner
from .services import manual_pass

SAMPLING_TIMEOUT = 300.0


def client_can_sample(ctx: Context) -> bool:
    try:
        caps = ctx.client_capabilities
    except Exception:  # no session (stateless request): no sampling
        return False
    return bool(caps and caps.sampling is not None)


def sampling_reasoner(ctx: Context, loop: asyncio.AbstractEventLoop) -> Reasoner:
    async def ask(system: str, prompt: str) -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sampling is deprecated in newer protocol revisions, still in use
            result = await ctx.session.create_message(
                messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
                max_tokens=4000,
                system_prompt=system,
            )
        content = result.content
        return content.text if isinstance(content, types.TextContent) else ""

    def complete(system: str, prompt: str) -> str:
        return asyncio.run_coroutine_threadsafe(ask(system, prompt), loop).result(timeout=SAMPLING_TIMEOUT)

    return CallbackReasoner("sampling", complete)


async def dream_with_client(
    ctx: Context,
    session_id: str | None,
    project_id: str | None,
    cwd: str | None,
    run: Callable[[Callable[[], dict[str, Any]]], Awaitable[Any]],
) -> Any:
    loop = asyncio.get_running_loop()
    reasoner = sampling_reasoner(ctx, loop) if client_can_sample(ctx) else None

    def body() -> dict[str, Any]:
        scope = resolve(project_id, cwd)
        # Sampling first; if the client cannot do it after all, the configured reasoner.
        chosen = FallbackReasoner(reasoner, configured_reasoner()) if reasoner else configured_reasoner()
        return dict(manual_pass(project_id, cwd, scope, reasoner=chosen, session_id=session_id))

    return await run(body)

"""Model usage: one row per embedding or reasoning call (provider, model, tokens, cost, latency,
error), written by the embedders and dreaming's reasoners; read by stats' usage summary and the
get_usage tool."""

from __future__ import annotations

import time

from yullu_core.durability import losable

# USD microcents (1 USD = 10^8) per 1M input tokens. Unknown models cost 0.
EMBED_PRICES = {
    "voyage-code-3": 18 * 10**6,
    "voyage-3": 6 * 10**6,
    "voyage-3-lite": 2 * 10**6,
    "text-embedding-3-small": 2 * 10**6,
    "text-embedding-3-large": 13 * 10**6,
}


def record_usage(
    provider: str,
    model: str,
    kind: str,
    started: float,
    *,
    tokens_in: int = 0,
    tokens_out: int = 0,
    cost: int = 0,
    error: str = "",
) -> None:
    from .models import Usage  # at call time, so importing the embedders does not load the models

    with losable():  # a usage row may be lost in a crash: no WAL flush wait on the request path
        Usage.objects.create(
            provider=provider,
            model=model,
            kind=kind,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_microcents=cost,
            latency_ms=int((time.monotonic() - started) * 1000),
            ok=not error,
            error=error[:500],
        )

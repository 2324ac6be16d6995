"""Reasoners behind one interface: `complete(system, prompt) -> text`.

- openai: the official client; `[openai].base_url` or OPENAI_BASE_URL reaches Ollama, llama.cpp, vLLM …
- anthropic: the official client.
- sampling: the MCP client that asked for the pass does the LLM call (see dreaming.mcp_sampling).
Timeouts are bounded; the clients retry only transient errors (connection, 429, 5xx). Every
direct call writes a usage row with tokens and cost.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from django.conf import settings

from memories.embedders import record_usage
from yullu_site.errors import Unavailable

DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}
# USD microcents per 1M tokens (input, output). Unknown models cost 0.
PRICES = {
    "gpt-4o-mini": (15 * 10**6, 60 * 10**6),
    "gpt-4o": (250 * 10**6, 1000 * 10**6),
    "claude-3-5-haiku-latest": (80 * 10**6, 400 * 10**6),
    "claude-sonnet-4-5": (300 * 10**6, 1500 * 10**6),
}
MAX_TOKENS = 4000


class Reasoner(Protocol):
    name: str

    def complete(self, system: str, prompt: str) -> str: ...


def cost(model: str, tokens_in: int, tokens_out: int) -> int:
    price_in, price_out = PRICES.get(model, (0, 0))
    return (tokens_in * price_in + tokens_out * price_out) // 10**6


class OpenAIReasoner:
    def __init__(self, model: str) -> None:
        self.model = model
        self.name = f"openai:{model}"

    def complete(self, system: str, prompt: str) -> str:
        import openai

        cfg = settings.YULLU
        client = openai.OpenAI(
            api_key=cfg["openai"]["api_key"] or "none",
            base_url=cfg["openai"]["base_url"] or None,
            timeout=cfg["reasoning"]["timeout_seconds"],
            max_retries=2,
        )
        started = time.monotonic()
        try:
            resp = client.chat.completions.create(
                model=self.model,
                max_tokens=MAX_TOKENS,
                temperature=0.2,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
            )
        except Exception as exc:
            message = f"the openai reasoner failed ({type(exc).__name__}); check [openai] settings and the server log."
            record_usage("openai", self.model, "reason", started, error=message)
            raise Unavailable(message) from None
        usage = resp.usage
        tin, tout = (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)
        record_usage(
            "openai", self.model, "reason", started, tokens_in=tin, tokens_out=tout, cost=cost(self.model, tin, tout)
        )
        return resp.choices[0].message.content or ""


class AnthropicReasoner:
    def __init__(self, model: str) -> None:
        self.model = model
        self.name = f"anthropic:{model}"

    def complete(self, system: str, prompt: str) -> str:
        import anthropic

        cfg = settings.YULLU
        if not cfg["anthropic"]["api_key"]:
            raise Unavailable("the anthropic reasoner needs an API key: set ANTHROPIC_API_KEY.")
        client = anthropic.Anthropic(
            api_key=cfg["anthropic"]["api_key"],
            base_url=cfg["anthropic"]["base_url"] or None,
            timeout=cfg["reasoning"]["timeout_seconds"],
            max_retries=2,
        )
        started = time.monotonic()
        try:
            resp = client.messages.create(
                model=self.model,
                max_tokens=MAX_TOKENS,
                system=system,
                messages=[{"role": "user", "content": prompt}],
            )
        except Exception as exc:
            message = f"the anthropic reasoner failed ({type(exc).__name__}); check [anthropic] settings."
            record_usage("anthropic", self.model, "reason", started, error=message)
            raise Unavailable(message) from None
        tin, tout = resp.usage.input_tokens, resp.usage.output_tokens
        record_usage(
            "anthropic", self.model, "reason", started, tokens_in=tin, tokens_out=tout, cost=cost(self.model, tin, tout)
        )
        return "".join(getattr(block, "text", "") for block in resp.content)


class CallbackReasoner:
    """Wraps a function (used for MCP sampling through the requesting client)."""

    def __init__(self, name: str, fn: Callable[[str, str], str]) -> None:
        self.name, self._fn = name, fn

    def complete(self, system: str, prompt: str) -> str:
        return self._fn(system, prompt)


def configured_reasoner() -> Reasoner | None:
    """The direct provider from [reasoning], or None when dreaming relies on MCP sampling."""
    cfg: dict[str, Any] = settings.YULLU["reasoning"]
    provider = cfg["provider"]
    if provider in ("", "sampling"):
        return None
    model = cfg["model"] or DEFAULT_MODELS[provider]
    return OpenAIReasoner(model) if provider == "openai" else AnthropicReasoner(model)

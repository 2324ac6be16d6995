"""Reasoners behind one interface: `complete(system, prompt) -> text`.

- openai: the official client; `[openai].base_url` or OPENAI_BASE_URL reaches Ollama, llama.cpp, vLLM …
- anthropic: the official client.
- sampling: the MCP client that asked for the pass does the LLM call (see dreaming.mcp_sampling).
- cli: an installed assistant run non-interactively (`claude -p --output-format json`,
  `codex exec`), so dreaming works with no API key: chosen automatically when none is set.
Timeouts are bounded; the clients retry only transient errors (connection, 429, 5xx). Every
direct call writes a usage row with tokens and cost.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings
from django.db import DatabaseError

from memories.usage import record_usage
from yullu_core.env import env_str
from yullu_core.errors import Unavailable, install_extra, optional_module

# Anthropic's default is a model its SDK does not list as retired (claude-3-5-haiku-latest, the default
# until stop 43, reached end of life on 2026-02-19: with ANTHROPIC_API_KEY set every pass failed).
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}
# USD microcents per 1M tokens (input, output). Unknown models cost 0.
PRICES = {
    "gpt-4o-mini": (15 * 10**6, 60 * 10**6),
    "gpt-4o": (250 * 10**6, 1000 * 10**6),
    "claude-haiku-4-5": (100 * 10**6, 500 * 10**6),
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


# What an HTTP status from a provider most often means, for its one sentence.
_STATUS_HINTS = {401: "the API key was refused", 403: "the API key may not use this model",
                 404: "no such model or URL", 429: "rate-limited or out of credit"}  # fmt: skip


def _failed(provider: str, exc: Exception, url: str) -> str:
    """One sentence on why a provider's call failed: the server it could not reach, or the status it answered.
    Walk 13: a base_url nobody listened on said "the openai reasoner failed (APIConnectionError); check
    [openai] settings and the server log", from `yullu dream`, which has no server log. Never the
    answer's body: a provider may quote part of the key."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        hint = _STATUS_HINTS.get(status)
        said = f"answered HTTP {status}" + (f" ({hint})" if hint else "")
        return f"the {provider} reasoner's server {url} {said}; check [{provider}] and [reasoning].model."
    kind = type(exc).__name__
    if "Timeout" in kind:
        return f"the {provider} reasoner got no answer from {url} within [reasoning].timeout_seconds; is it up?"
    if "Connection" in kind:
        return f"the {provider} reasoner could not reach {url}; is that server running? check [{provider}].base_url."
    return f"the {provider} reasoner failed ({kind}); check [{provider}] settings."


class OpenAIReasoner:
    def __init__(self, model: str) -> None:
        self.model = model
        self.name = f"openai:{model}"

    def complete(self, system: str, prompt: str) -> str:
        openai = optional_module("openai", "openai", "the openai reasoner")
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
            message = _failed("openai", exc, cfg["openai"]["base_url"] or str(client.base_url))
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
            message = _failed("anthropic", exc, cfg["anthropic"]["base_url"] or str(client.base_url))
            record_usage("anthropic", self.model, "reason", started, error=message)
            raise Unavailable(message) from None
        tin, tout = resp.usage.input_tokens, resp.usage.output_tokens
        record_usage(
            "anthropic", self.model, "reason", started, tokens_in=tin, tokens_out=tout, cost=cost(self.model, tin, tout)
        )
        return "".join(getattr(block, "text", "") for block in resp.content)


# The user's own hooks must not run inside a dream call: Yul'lu's would send the whole dream prompt
# to /api/context (UserPromptSubmit) and record the pass's own exchange for dreaming (Stop).
CLAUDE_NO_HOOKS = json.dumps({"disableAllHooks": True})


class CLIReasoner:
    """An installed coding assistant run once per call, without a terminal. The prompt goes in on
    stdin (no argv length limit, not visible in `ps`); the run happens in an empty temporary
    folder so the assistant has no repository to wander into, and Claude Code runs none of the
    user's hooks."""

    def __init__(self, tool: str, path: str, model: str = "") -> None:
        self.tool, self.path, self.model = tool, path, model
        self.name = f"cli:{tool}" + (f":{model}" if model else "")

    def complete(self, system: str, prompt: str) -> str:
        started = time.monotonic()
        provider = f"{self.tool}-cli"
        try:
            with tempfile.TemporaryDirectory(prefix="yullu-dream-") as folder:
                text, tin, tout, usd = self._run(Path(folder), f"{system}\n\n{prompt}")
        except Unavailable as exc:
            record_usage(provider, self.model or "default", "reason", started, error=str(exc))
            raise
        cost_mc = int(usd * 10**8) if usd else 0
        record_usage(provider, self.model or "default", "reason", started, tokens_in=tin, tokens_out=tout, cost=cost_mc)
        return text

    def _run(self, folder: Path, stdin: str) -> tuple[str, int, int, float]:
        timeout = settings.YULLU["reasoning"]["timeout_seconds"]
        model = ["--model", self.model] if self.model else []
        if self.tool == "claude":
            cmd = [self.path, "-p", "--output-format", "json", "--settings", CLAUDE_NO_HOOKS, *model]
        else:
            out_file = folder / "last-message.txt"
            cmd = [self.path, "exec", "--skip-git-repo-check", "--output-last-message", str(out_file), *model, "-"]
        try:
            done = subprocess.run(
                cmd, input=stdin, capture_output=True, text=True, timeout=timeout, cwd=folder, check=False
            )
        except subprocess.TimeoutExpired:
            raise Unavailable(
                f"`{self.tool}` did not answer within {timeout} s ([reasoning].timeout_seconds)."
            ) from None
        except OSError as exc:
            raise Unavailable(f"could not run `{self.path}` ({exc.strerror}).") from None
        if self.tool == "claude" and done.stdout.lstrip().startswith("{"):
            return _claude_answer(done.stdout)  # its JSON says what went wrong, whatever the exit status
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
            raise Unavailable(f"`{self.tool}` exited with status {done.returncode}: {tail[0][:200]}")
        if self.tool == "claude":
            return _claude_answer(done.stdout)
        text = out_file.read_text() if out_file.exists() else done.stdout
        return text, _tokens(stdin), _tokens(text), 0.0


def _tokens(text: str) -> int:
    from yullu_core.tokens import count_tokens

    return count_tokens(text)


def _claude_answer(stdout: str) -> tuple[str, int, int, float]:
    """`claude -p --output-format json` prints one object: result, is_error, usage, total_cost_usd."""
    try:
        data = json.loads(stdout)
    except ValueError:
        raise Unavailable("`claude -p` did not print JSON; is it Claude Code?") from None
    if not isinstance(data, dict) or data.get("is_error") or not isinstance(data.get("result"), str):
        said = " ".join(str(data.get("result") or data.get("subtype") or "" if isinstance(data, dict) else "").split())
        raise Unavailable(
            f"`claude -p` failed: {said[:200] or 'no answer'}. Is Claude Code logged in (run `claude`, "
            "then /login)? Or choose another reasoner ([reasoning].provider)."
        )
    usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
    tin = sum(
        int(usage.get(k) or 0) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    return data["result"], tin, int(usage.get("output_tokens") or 0), float(data.get("total_cost_usd") or 0.0)


CLI_TOOLS = ("claude", "codex")


@functools.cache
def _which(tool: str, path_env: str) -> str | None:
    return shutil.which(tool, path=path_env)


def detect_cli(preferred: str = "") -> tuple[str, str] | None:
    """(tool, path) of the first installed assistant, `preferred` first. Cached per PATH."""
    for tool in ([preferred] if preferred else []) + [t for t in CLI_TOOLS if t != preferred]:
        found = _which(tool, env_str("PATH"))
        if found:
            return tool, found
    return None


class CallbackReasoner:
    """Wraps a function (used for MCP sampling through the requesting client)."""

    def __init__(self, name: str, fn: Callable[[str, str], str]) -> None:
        self.name, self._fn = name, fn

    def complete(self, system: str, prompt: str) -> str:
        started = time.monotonic()
        try:
            text = self._fn(system, prompt)
        except Exception as exc:
            record_usage(self.name, "client", "reason", started, error=type(exc).__name__)
            raise
        record_usage(
            self.name, "client", "reason", started, tokens_in=_tokens(system + prompt), tokens_out=_tokens(text)
        )
        return text


class FallbackReasoner:
    """The first reasoner, and the second when the first fails (MCP sampling, then the configured one)."""

    def __init__(self, first: Reasoner, second: Reasoner | None) -> None:
        self.first, self.second = first, second
        self.name = first.name + (f" → {second.name}" if second else "")
        self.answered: list[str] = []  # who answered, in order: the pass's label says so (walk 21)

    def complete(self, system: str, prompt: str) -> str:
        try:
            text = self.first.complete(system, prompt)
            self.answered.append(self.first.name)
            return text
        except DatabaseError:
            # The pass's own connection went (PostgreSQL restarted while the client ran the model; its usage row
            # failed): not the client's failure, and another model's answer could not be kept either. Walk 14:
            # it said "the MCP client could not run the model (OperationalError) and no reasoner is configured".
            raise
        except Exception as exc:
            if self.second is None:
                raise Unavailable(
                    f"the MCP client could not run the model ({type(exc).__name__}) and no reasoner is configured: "
                    "install Claude Code or Codex, or set [reasoning].provider with an API key."
                ) from None
            try:
                text = self.second.complete(system, prompt)
                self.answered.append(self.second.name)
                return text
            except Unavailable as then:
                # Both failed: the error named only the second ("`claude -p` failed: Not logged in"), so a
                # client whose sampling broke never learnt that it had been asked (walk 21).
                raise Unavailable(
                    f"the MCP client could not run the model ({type(exc).__name__}: {str(exc)[:200]}), "
                    f"then {self.second.name} failed: {then}"
                ) from None


def answered_by(reasoner: Reasoner | None) -> str | None:
    """Which of a chain's reasoners answered a pass ("cli:claude", or both, in order), or None when the
    reasoner is no chain or nothing answered: a pass labelled "sampling → cli:claude" did not say which ran."""
    answered = getattr(reasoner, "answered", None)
    return " + ".join(dict.fromkeys(answered)) if answered else None


def configured_reasoner() -> Reasoner | None:
    """The reasoner for passes that no MCP client drives (scheduled, CLI, admin), or None.

    provider "" (default) picks one: Anthropic when its key is set, else an installed
    `claude`/`codex` CLI; "sampling" means MCP sampling only (no background passes)."""
    cfg: dict[str, Any] = settings.YULLU["reasoning"]
    provider = cfg["provider"]
    if provider == "sampling":
        return None
    if provider == "" and settings.YULLU["anthropic"]["api_key"]:
        provider = "anthropic"
    if provider in ("", "cli"):
        found = detect_cli(cfg.get("cli", ""))
        return CLIReasoner(found[0], found[1], cfg["model"] if provider == "cli" else "") if found else None
    model = cfg["model"] or DEFAULT_MODELS[provider]
    return OpenAIReasoner(model) if provider == "openai" else AnthropicReasoner(model)


HOW_TO_GET_A_REASONER = (
    "install Claude Code (`claude`) or Codex (`codex`), set ANTHROPIC_API_KEY, or set "
    '[reasoning].provider = "openai" with a key or a local server ([openai].base_url)'
)


# How each CLI says whether someone is logged in, without a model call (exit 1 when nobody is).
LOGIN_STATUS = {"claude": ("auth", "status"), "codex": ("login", "status")}


def cli_logged_out(tool: str, path: str) -> bool:
    """True when the CLI says nobody is logged in: `claude auth status` prints `"loggedIn": false`,
    `codex login status` "Not logged in", both exiting 1. False when logged in or when it cannot say
    (an older CLI without the command, a timeout): only a clear "no" is reported."""
    args = LOGIN_STATUS.get(tool)
    if args is None:
        return False
    try:
        done = subprocess.run(  # noqa: S603 (the CLI found on PATH, fixed arguments)
            [path, *args], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    said = (done.stdout + done.stderr).lower().replace(" ", "")
    return done.returncode != 0 and ('"loggedin":false' in said or "notloggedin" in said)


def logged_out_reasoner() -> tuple[str, str] | None:
    """(what is wrong, how to fix it) when the configured reasoner is a Claude Code or Codex CLI nobody is
    logged into: it is found, yet every dream pass fails with "Not logged in". For `yullu doctor` and the
    `yullu serve` banner (one `auth status` call: about a second), not for /api/status, which is polled."""
    reasoner = configured_reasoner()
    if not isinstance(reasoner, CLIReasoner) or not cli_logged_out(reasoner.tool, reasoner.path):
        return None
    login = "run `claude`, then /login" if reasoner.tool == "claude" else "run `codex login`"
    detail = f"{reasoner.name}: nobody is logged in to `{reasoner.tool}`, so every dream pass fails"
    return detail, f"{login}; or set ANTHROPIC_API_KEY, or another [reasoning].provider"


def unanswered_reasoner() -> tuple[str, str] | None:
    """(what is wrong, how to fix it) when the configured reasoner is an OpenAI-compatible local server
    ([openai].base_url) that refuses connections or does not list [reasoning].model: one GET of its
    /models (free, no tokens). Walk 18: a base_url nobody listened on, and a model the server does not
    have, were both "ok openai:…" in `yullu doctor` while every dream pass failed. For `yullu doctor`
    and the banner, not for /api/status (polled). Never the answer's body or the key."""
    import urllib.error
    import urllib.request

    reasoner = configured_reasoner()
    base = settings.YULLU["openai"]["base_url"]
    if not isinstance(reasoner, OpenAIReasoner) or not base or cannot_run(reasoner) is not None:
        return None
    key = settings.YULLU["openai"]["api_key"]
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    request = urllib.request.Request(base.rstrip("/") + "/models", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=3) as response:  # noqa: S310 (the user's own server)
            listed = json.loads(response.read(1_000_000))
    except urllib.error.HTTPError:
        return None  # it answers; /models may just not be served there (a proxy, a gateway)
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValueError):
            return None
        why = getattr(exc, "reason", exc)
        said = getattr(why, "strerror", None) or type(why).__name__
        detail = f"{reasoner.name}: nothing answers at {base} ({said}), so every dream pass fails"
        return detail, "start that server, or correct [openai].base_url in config.toml"
    models = listed.get("data") if isinstance(listed, dict) else None
    found = [m.get("id") for m in models if isinstance(m, dict)] if isinstance(models, list) else []
    ids: list[str] = [i for i in found if isinstance(i, str)]
    if ids and reasoner.model not in ids:
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        detail = f"{reasoner.name}: the server at {base} has no model '{reasoner.model}' (it lists {shown})"
        return detail, "set [reasoning].model to one it lists"
    return None


def cannot_run(reasoner: Reasoner) -> str | None:
    """Why a chosen API reasoner would fail every call, told without making one (a missing key or package),
    or None. Found on the walk: `[reasoning].provider = "anthropic"` without a key was "ok" in doctor, the
    dashboard and the banner while every dream pass failed with "needs an API key"."""
    cfg = settings.YULLU
    if isinstance(reasoner, AnthropicReasoner) and not cfg["anthropic"]["api_key"]:
        return "the anthropic reasoner needs an API key: set ANTHROPIC_API_KEY"
    if isinstance(reasoner, OpenAIReasoner):
        if importlib.util.find_spec("openai") is None:
            return f"the openai reasoner needs the openai package: {install_extra('openai')}"
        if not cfg["openai"]["api_key"] and not cfg["openai"]["base_url"]:
            return "the openai reasoner needs OPENAI_API_KEY, or [openai].base_url for a local server"
    return None


def reasoner_status() -> dict[str, Any]:
    """For /api/status, the banner, the admin and `yullu doctor`: which reasoner background
    dreaming uses, or a warning saying how to get one (or why the chosen one cannot run)."""
    reasoner = configured_reasoner()
    if reasoner is not None and (problem := cannot_run(reasoner)) is not None:
        return {"available": False, "name": reasoner.name, "warning": f"{problem}; every dream pass fails until then."}
    if reasoner is not None:
        return {"available": True, "name": reasoner.name, "warning": None}
    return {
        "available": False,
        "name": None,
        "warning": (
            f"no reasoner for background dreaming: {HOW_TO_GET_A_REASONER}. Recorded turns are kept up to "
            "[dreaming].buffer_max_messages / buffer_max_age_days."
        ),
    }

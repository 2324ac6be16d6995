"""Every environment variable Yul'lu reads, declared once (name, default, meaning), and the small
typed readers that fail loudly on bad values. No other module reads os.environ by hand
(tests/test_env.py checks the source); docs/environment.md lists the same variables.

A variable set to blank counts as unset: it gets the declared default. Standard library only:
the assistant hooks (yullu_cli/hooks.py) import this module too.
"""

from __future__ import annotations

import os


class EnvError(Exception):
    pass


class Var:
    """One variable: its name, the value used when it is unset or blank, and what it sets."""

    __slots__ = ("default", "meaning", "name")  # a plain class: the hooks cannot afford importing typing

    def __init__(self, name: str, default: str, meaning: str) -> None:
        self.name, self.default, self.meaning = name, default, meaning


VARS: dict[str, Var] = {
    v.name: v
    for v in (
        # Where things are.
        Var("YULLU_HOME", "", "the data folder (database, token, logs); default $XDG_DATA_HOME/yullu"),
        Var("XDG_DATA_HOME", "", "the base of the default YULLU_HOME; default ~/.local/share"),
        Var("YULLU_CONFIG", "", "the config file; default the user config dir's yullu/config.toml"),
        Var("YULLU_MODEL_CACHE", "", "where derived model files are built; default $YULLU_HOME/models"),
        Var("PATH", "", "where the reasoner CLIs (claude, codex) and `yullu` itself are looked up"),
        # config.toml overrides (yullu_core.config.ENV_OVERRIDES maps them to their keys).
        Var("YULLU_EMBED_PROVIDER", "", "[embedding].provider"),
        Var("YULLU_EMBED_MODEL", "", "[embedding].model"),
        Var("YULLU_EMBED_RUNTIME", "", "[embedding].runtime"),
        Var("YULLU_EMBED_QUERY_RUNTIME", "", "[embedding].query_runtime"),
        Var("YULLU_REASON_PROVIDER", "", "[reasoning].provider"),
        Var("YULLU_REASON_MODEL", "", "[reasoning].model"),
        Var("OPENAI_API_KEY", "", "[openai].api_key"),
        Var("OPENAI_BASE_URL", "", "[openai].base_url"),
        Var("ANTHROPIC_API_KEY", "", "[anthropic].api_key"),
        Var("VOYAGE_API_KEY", "", "[voyage].api_key"),
        Var("YULLU_PORT", "", "[server].port (the hooks read it too)"),
        Var("YULLU_ALLOWED_ROOTS", "", "[server].allowed_roots, separated by the path separator (:)"),
        # The server.
        Var("DATABASE_URL", "", "an external PostgreSQL (with pgvector); blank: the embedded one"),
        Var("CELERY_BROKER_URL", "", "an external Celery broker; blank: a queue table in the database"),
        Var("YULLU_SECRET_KEY", "", "Django's secret key, the same on every web node; blank: one per home"),
        Var("YULLU_DEBUG", "false", "Django's DEBUG (never on a server others can reach)"),
        Var("YULLU_LOG_LEVEL", "info", "debug, info, warn or warning, or error; commands other than serve: warning"),
        Var("YULLU_LOG_FORMAT", "plain", "plain, or json (one object per line, for log shippers)"),
        Var(
            "YULLU_CELERY_LOGLEVEL",
            "WARNING",
            "the worker's and beat's Celery log level; INFO or DEBUG also print their start-up banners",
        ),
        Var(
            "YULLU_MCP_ROUTE_DIR",
            "",
            "set by `yullu serve --workers N>1`: the folder of the web workers' sockets (MCP sessions routed)",
        ),
        Var("YULLU_MCP_STATELESS", "false", "serve /mcp without sessions (several web nodes, no sticky routing)"),
        Var("YULLU_HEARTBEAT_SECONDS", "60", "the heartbeat task's period"),
        Var(
            "YULLU_SCHEDULER_TICK_SECONDS",
            "60",
            "the reconcile and dream schedulers' period; anchors and backfill run every 5 ticks, prunes every 60",
        ),
        Var("YULLU_EMBED_THREADS", "1", "ONNX Runtime threads per model (embedder and reranker)"),
        Var(
            "YULLU_TOOL_THREADS",
            "0",
            "threads per web process that run MCP tool calls (at most that many at once; 0: min(32, cores + 4))",
        ),
        Var("PROMETHEUS_MULTIPROC_DIR", "", "set by `yullu serve`: the web and worker processes' shared metrics"),
        # The embedded PostgreSQL.
        Var(
            "YULLU_PG_SHARED_BUFFERS",
            "auto",
            "the embedded PostgreSQL's shared_buffers; auto: a quarter of the memory, 512MB to 8GB",
        ),
        Var("YULLU_PG_SYSTEM_USER", "yullu-pg", "as root: the system user the embedded PostgreSQL runs as"),
        Var("YULLU_ROOT_PG_BASE", "/var/lib/yullu", "as root: where the embedded PostgreSQL's data lives"),
        # The command line and the hooks.
        Var("YULLU_SERVER", "", "a team server's base URL for the hooks and the CLI; blank: this machine's"),
        Var("YULLU_HOOK_TIMEOUT", "1.5", "seconds a hook waits for the server before it gives up silently"),
    )
}


def _declared(name: str) -> Var:
    try:
        return VARS[name]
    except KeyError:
        raise EnvError(f"environment variable {name} is not declared in yullu_core.env.VARS; declare it.") from None


def env_str(name: str) -> str:
    """The variable's value, stripped; its declared default when unset or blank."""
    var = _declared(name)
    return os.environ.get(name, "").strip() or var.default


def env_is_set(name: str) -> bool:
    _declared(name)
    return bool(os.environ.get(name, "").strip())


def env_bool(name: str) -> bool:
    raw = env_str(name).lower()
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("", "0", "false", "no", "off"):
        return False
    raise EnvError(f"environment variable {name} must be true or false, not {raw!r}.")


def env_choice(name: str, options: tuple[str, ...]) -> str:
    raw = env_str(name).lower()
    if raw not in options:
        raise EnvError(f"environment variable {name} must be one of {', '.join(options)}, not {raw!r}.")
    return raw


def env_float(name: str) -> float:
    raw = env_str(name)
    try:
        return float(raw)
    except ValueError:
        raise EnvError(f"environment variable {name} must be a number, not {raw!r}.") from None


def env_int(name: str) -> int:
    raw = env_str(name)
    try:
        return int(raw)
    except ValueError:
        raise EnvError(f"environment variable {name} must be a whole number, not {raw!r}.") from None

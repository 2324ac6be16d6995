"""config.toml: defaults, validation, environment overrides and per-project layers.

The file is written with defaults on first run. A malformed file stops startup
with one sentence naming the file, the key and what is wrong (ConfigError).

A repository's committed `.yullu/config.toml` may come from a newer version of the product:
its unknown sections and keys are logged as warnings and ignored, while a value of a known key
that is wrong, invalid TOML, and a file outside the repository (a `.yullu` symlinked out of it)
are a ConfigError naming the file (and key) — a UserError, so every client gets that sentence.
"""

from __future__ import annotations

import copy
import difflib
import ipaddress
import logging
import os
import re
import stat
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from .env import env_is_set, env_str
from .errors import UserError

log = logging.getLogger(__name__)

Config = dict[str, dict[str, Any]]


class ConfigError(UserError):
    """A config file or environment variable holds a value we cannot use."""


DURATION_RE = re.compile(r"^(\d+)(s|m|h|d)$")
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: str) -> int:
    """'30m' -> 1800 seconds. Raises ValueError on anything else."""
    match = DURATION_RE.match(value.strip())
    if not match:
        raise ValueError("must be a duration like '30s', '30m', '2h' or '1d'")
    seconds = int(match.group(1)) * DURATION_UNITS[match.group(2)]
    if seconds <= 0:
        raise ValueError("must be longer than zero")
    return seconds


@dataclass(frozen=True)
class Key:
    kind: type
    default: Any
    check: Callable[[Any], None] | None = None
    secret: bool = False


def _choice(*options: str) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if value not in options:
            raise ValueError("must be one of " + ", ".join(repr(o) for o in options))

    return check


def _between(low: float, high: float) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if not low <= value <= high:
            raise ValueError(f"must be between {low} and {high}")

    return check


def _duration(value: Any) -> None:
    parse_duration(value)


def _networks(value: Any) -> None:
    for item in value:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"must list IP addresses or networks like '10.0.0.0/8'; {item!r} is neither") from None


def _absolute_paths(value: Any) -> None:
    for item in value:
        if not os.path.isabs(os.path.expanduser(item)):
            raise ValueError(f"must list absolute paths; {item!r} is not one")


EMBED_PROVIDERS = ("local", "voyage", "openai", "none")
REASON_PROVIDERS = ("", "sampling", "cli", "openai", "anthropic")

SCHEMA: dict[str, dict[str, Key]] = {
    "embedding": {
        "provider": Key(str, "local", _choice(*EMBED_PROVIDERS)),
        "model": Key(str, ""),
        "batch_size": Key(int, 64, _between(1, 2048)),
        "runtime": Key(str, "onnx", _choice("onnx", "onnx-int8", "torch")),
        "query_runtime": Key(str, "same", _choice("onnx-int8", "same")),
    },
    "reasoning": {
        "provider": Key(str, "", _choice(*REASON_PROVIDERS)),
        "model": Key(str, ""),
        "timeout_seconds": Key(int, 120, _between(1, 3600)),
        "cli": Key(str, "", _choice("", "claude", "codex")),
    },
    "openai": {
        "api_key": Key(str, "", secret=True),
        "base_url": Key(str, ""),
    },
    "anthropic": {
        "api_key": Key(str, "", secret=True),
        "base_url": Key(str, ""),
    },
    "voyage": {
        "api_key": Key(str, "", secret=True),
        "base_url": Key(str, ""),
    },
    "sync": {
        "enabled": Key(bool, True),
        "dir": Key(str, ".yullu"),
        "log_embeddings": Key(bool, True),
        "reuse_embeddings": Key(bool, True),
        "auto_reconcile_on_startup": Key(bool, True),
        "reconcile_interval": Key(str, "5m", _duration),
    },
    "dreaming": {
        "enabled": Key(bool, True),
        "interval": Key(str, "30m", _duration),
        "min_messages": Key(int, 10, _between(1, 100000)),
        "context_memories": Key(int, 50, _between(0, 1000)),
        "on_idle_seconds": Key(int, 0, _between(0, 10**7)),
        "buffer_max_messages": Key(int, 5000, _between(10, 10**7)),
        "buffer_max_age_days": Key(int, 30, _between(1, 3650)),
    },
    "retrieval": {
        # None: the embedder's calibrated relevance gate (memories/search/queries.py JUDGED); a number: a cosine floor.
        "min_similarity": Key(float, None, _between(0.0, 1.0)),
        "max_content_chars": Key(int, 8000, _between(100, 100000)),
        # Recall-log rows (what each search returned or dropped) older than this are deleted hourly.
        "recall_log_days": Key(int, 180, _between(1, 36500)),
        # 0: the first stage's order; N: its best N and their session neighbours judged by the cross-encoder.
        "rerank_depth": Key(int, 0, _between(0, 50)),
        # True: when two memories pass the gate with close evidence, the cross-encoder decides which comes first.
        "judged_order": Key(bool, False),
    },
    "server": {
        "host": Key(str, "127.0.0.1"),
        "port": Key(int, 47823, _between(1, 65535)),
        "allowed_hosts": Key(list, ["127.0.0.1", "localhost", "[::1]"]),
        "allowed_origins": Key(list, []),
        # Addresses whose X-Forwarded-For / X-Forwarded-Proto are believed (a reverse proxy); none by default.
        "trusted_proxies": Key(list, [], _networks),
        # Folders a `cwd` may name (memories.scope); empty = the user's home, except on a team server.
        "allowed_roots": Key(list, [], _absolute_paths),
    },
    "access": {
        # true: any user may create a project by using it, and gets admin on it (docs/contract.md §11).
        "open_projects": Key(bool, True),
    },
}

# Keys a team may not set in the repo-committed layer: they would leak into git.
SECRET_KEYS = {(s, k) for s, keys in SCHEMA.items() for k, spec in keys.items() if spec.secret}

ENV_OVERRIDES: dict[str, tuple[str, str]] = {
    "YULLU_EMBED_PROVIDER": ("embedding", "provider"),
    "YULLU_EMBED_MODEL": ("embedding", "model"),
    "YULLU_EMBED_RUNTIME": ("embedding", "runtime"),
    "YULLU_EMBED_QUERY_RUNTIME": ("embedding", "query_runtime"),
    "YULLU_REASON_PROVIDER": ("reasoning", "provider"),
    "YULLU_REASON_MODEL": ("reasoning", "model"),
    "OPENAI_API_KEY": ("openai", "api_key"),
    "OPENAI_BASE_URL": ("openai", "base_url"),
    "ANTHROPIC_API_KEY": ("anthropic", "api_key"),
    "VOYAGE_API_KEY": ("voyage", "api_key"),
    "YULLU_PORT": ("server", "port"),
    "YULLU_ALLOWED_ROOTS": ("server", "allowed_roots"),  # os.pathsep-separated
}

DEFAULT_FILE = """\
# Yul'lu configuration. Environment variables override these values
# (YULLU_EMBED_PROVIDER, YULLU_EMBED_MODEL, YULLU_EMBED_RUNTIME, YULLU_EMBED_QUERY_RUNTIME,
# YULLU_REASON_PROVIDER, YULLU_REASON_MODEL, OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, VOYAGE_API_KEY,
# YULLU_PORT, YULLU_ALLOWED_ROOTS; docs/environment.md lists every variable).
# Prefer environment variables for API keys: never commit a key.

[embedding]
# "local" (all-MiniLM-L6-v2, offline, no key), "voyage", "openai" (also
# Ollama / llama.cpp / vLLM through [openai].base_url) or "none" (keyword only).
provider = "local"
model = ""            # blank = the provider's default model
batch_size = 64
runtime = "onnx"      # local embedder: "onnx" (ONNX Runtime), "onnx-int8" (faster, less exact) or "torch"
query_runtime = "same"  # "onnx-int8": questions through the shipped int8 file (2x cheaper, for a busy team server)

[reasoning]
# Blank = automatic: Anthropic when ANTHROPIC_API_KEY is set, else an installed
# Claude Code (`claude -p`) or Codex (`codex exec`) CLI, else none (dream_now then
# uses MCP sampling). "cli", "openai" (also Ollama / llama.cpp through
# [openai].base_url) or "anthropic" choose one; "sampling" = MCP sampling only.
provider = ""
model = ""            # blank = the provider's default (anthropic: claude-haiku-4-5, openai: gpt-4o-mini)
timeout_seconds = 120
cli = ""              # "claude" or "codex"; blank = whichever is installed

[openai]
api_key = ""          # blank reads $OPENAI_API_KEY
base_url = ""         # e.g. http://127.0.0.1:11434/v1 for Ollama

[anthropic]
api_key = ""          # blank reads $ANTHROPIC_API_KEY
base_url = ""

[voyage]
api_key = ""          # blank reads $VOYAGE_API_KEY
base_url = ""

[sync]
enabled = true                    # read and write <repo>/.yullu/logs
dir = ".yullu"
log_embeddings = true             # publish our vectors with events
reuse_embeddings = true           # accept teammates' vectors for the same model
auto_reconcile_on_startup = true
reconcile_interval = "5m"

[dreaming]
enabled = true
interval = "30m"
min_messages = 10
context_memories = 50
on_idle_seconds = 0               # 0 = off
buffer_max_messages = 5000        # recorded turns kept per project when no pass consumes them
buffer_max_age_days = 30

[retrieval]
# Weak matches are dropped so an unrelated prompt returns nothing, by a gate
# calibrated per embedder: a cross-encoder's judgement of question and memory
# together, cosine similarity and how many of the question's telling words a
# memory holds (docs/benchmarks.md). Uncomment to
# replace it by a plain cosine floor (0 returns the best matches, however weak;
# 0.45, the old default, is read as "not set").
# min_similarity = 0.3
max_content_chars = 8000
recall_log_days = 180             # the Retrievals page and recall counts look this far back
# Have the cross-encoder judge the best N candidates of every search too, and
# the memories stored next to the best few in their session (0 = off). LoCoMo
# dev recall@5 / @10 0.685 / 0.780 -> 0.732 / 0.791 at 20 (~30 model passes,
# ~190 ms of CPU per search against ~3 ms), 0.737 / 0.798 at 50 (~60 passes,
# ~300 ms; docs/benchmarks.md).
rerank_depth = 0
# When the two best memories a question passes are close (cosine and shared
# words), let the cross-encoder say which comes first. Codebase sets: rank-1 of
# short questions +0.6 to +1.8 points; under `yullu bench load`, whose
# retrieves are all close calls, ~10 ms more CPU per retrieve (docs/benchmarks.md).
judged_order = false

[server]
host = "127.0.0.1"
port = 47823
allowed_hosts = ["127.0.0.1", "localhost", "[::1]"]
allowed_origins = []
# A reverse proxy in front of the server: its addresses (or networks), so the client address it
# sends in X-Forwarded-For is used for rate limiting. Empty = the header is ignored.
trusted_proxies = []
# Folders whose paths clients may send as `cwd` (the tools resolve a project from it). Empty = your
# home folder; a team server (listening beyond loopback, behind trusted_proxies or on DATABASE_URL)
# accepts no cwd until this is set. Also $YULLU_ALLOWED_ROOTS (separated by ':').
allowed_roots = []

[access]
# A team server (docs/contract.md §11): true lets any user create a project by using it (they get admin on
# it); false: only grants (`yullu grant USER PROJECT ROLE`) open a project. Superusers may do all.
open_projects = true
"""


def config_path() -> Path:
    explicit = env_str("YULLU_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    return Path(platformdirs.user_config_dir("yullu")) / "config.toml"


def defaults() -> Config:
    return {s: {k: copy.deepcopy(spec.default) for k, spec in keys.items()} for s, keys in SCHEMA.items()}


def _coerce(kind: type, value: Any) -> Any:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, bool):
        raise TypeError
    if not isinstance(value, kind):
        raise TypeError
    if kind is list and isinstance(value, list) and not all(isinstance(v, str) for v in value):
        raise TypeError
    return value


_warned: set[str] = set()  # warnings already logged by this process


def _unknown(message: str, repo_layer: bool) -> None:
    """An unknown name: the user's own file is wrong (an error); a committed one may be newer (a warning)."""
    if not repo_layer:
        raise ConfigError(message)
    if message not in _warned:
        _warned.add(message)
        log.warning("%s (written by a newer version?); ignored.", message.rstrip("."))


def _apply_layer(cfg: Config, data: dict[str, Any], source: str, *, repo_layer: bool = False) -> None:
    """Validate `data` against SCHEMA and merge it into `cfg`. Raises ConfigError."""
    for section, values in data.items():
        if section not in SCHEMA:
            _unknown(f"{source}: unknown section [{section}]; known sections are {', '.join(SCHEMA)}.", repo_layer)
            continue
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: [{section}] must be a table.")
        for key, value in values.items():
            spec = SCHEMA[section].get(key)
            if spec is None:
                # walk 18: `batchsize = 64` said "unknown key" only; the key meant is usually one letter away
                close = difflib.get_close_matches(key, list(SCHEMA[section]), n=1, cutoff=0.75)
                hint = f" (did you mean {close[0]}?)" if close else ""
                _unknown(f"{source}: unknown key [{section}].{key}{hint}.", repo_layer)
                continue
            if repo_layer and spec.secret:
                if value:
                    log.warning(
                        "%s: ignoring [%s].%s: API keys are never read from a repository.", source, section, key
                    )
                continue
            cfg[section][key] = validated(spec, value, f"{source}: [{section}].{key}")


# What a value of each kind is called in an error, in the words of the file (it said "must be a int").
_KIND_NAMES = {int: "a whole number", float: "a number", str: "text in quotes", bool: "true or false",
               list: "a list of strings"}  # fmt: skip


def validated(spec: Key, value: Any, where: str) -> Any:
    """`value` coerced to its key's kind and checked; ConfigError naming `where` when it is wrong."""
    try:
        value = _coerce(spec.kind, value)
    except TypeError:
        raise ConfigError(f"{where} must be {_KIND_NAMES[spec.kind]}, not {value!r}.") from None
    if spec.check is not None:
        try:
            spec.check(value)
        except ValueError as exc:
            raise ConfigError(f"{where} {exc} (got {value!r}).") from None
    return value


_NOT_A_FILE = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a named pipe", stat.S_IFSOCK: "a socket",
               stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}  # fmt: skip


def read_toml(path: Path) -> dict[str, Any]:
    try:
        kind = stat.S_IFMT(path.stat().st_mode)
        if kind != stat.S_IFREG:  # never opened: a named pipe would wait for a writer for ever (round nine)
            what = _NOT_A_FILE.get(kind, "not a regular file")
            raise ConfigError(f"{path}: is {what}, not a file; replace it with a TOML file or delete it.")
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix or delete the file.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; save it as UTF-8 or delete it.") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror}).") from None


def check_file(path: Path) -> None:
    """Validate one config file's layer alone, as `load` would read it over the defaults (no other
    layer, no environment). Raises ConfigError with the sentence `load` would give."""
    _apply_layer(defaults(), read_toml(path), str(path))


def _apply_env(cfg: Config) -> None:
    for var, (section, key) in ENV_OVERRIDES.items():
        raw = env_str(var)
        if not raw:
            continue
        spec = SCHEMA[section][key]
        value: Any = raw
        if spec.kind is int:
            try:
                value = int(raw)
            except ValueError:
                raise ConfigError(f"environment variable {var} must be a whole number, not {raw!r}.") from None
        elif spec.kind is list:
            value = [part for part in raw.split(os.pathsep) if part]
        cfg[section][key] = validated(spec, value, f"environment variable {var}")


def load(path: Path | None = None, *, write_default: bool = True) -> Config:
    """The global config: defaults, then the file (created on first run), then the environment."""
    path = path or config_path()
    cfg = defaults()
    if not _present(path) and write_default:
        from .paths import create_once

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            create_once(path, DEFAULT_FILE, 0o644)
        except OSError as exc:
            raise ConfigError(f"{path}: cannot be created ({exc.strerror}); create it, or set YULLU_CONFIG.") from None
    if _present(path):
        _apply_layer(cfg, read_toml(path), str(path))
    _apply_env(cfg)
    return cfg


def _present(path: Path) -> bool:
    """Whether `path` names something; ConfigError when that cannot be told (a loop of symbolic links,
    a folder on the way that may not be entered): `Path.exists` said no, and the default file's
    creation then failed with a bare OSError."""
    try:
        path.stat()
    except FileNotFoundError:
        return path.is_symlink()  # a dangling link is there: read_toml says it cannot be read
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror}).") from None
    return True


def repo_file(git_root: Path, sync_dir: str) -> Path:
    """`<git_root>/<sync.dir>/config.toml`, refusing one that resolves outside the repository."""
    root = git_root.resolve()
    path = (root / sync_dir / "config.toml").resolve()
    if not path.is_relative_to(root):
        raise ConfigError(
            f"{git_root / sync_dir}: resolves outside the repository (a symlink?); "
            "refusing to read or write through it. Make it a folder inside the repository."
        )
    return path


def project_user_file(project_id: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", project_id).strip("_") or "default"
    return config_path().parent / "projects" / f"{safe}.toml"


# Embedding settings decide which vectors exist in the shared database: one value for all projects.
GLOBAL_ONLY_SECTIONS = {"embedding"}


def load_for_project(project_id: str, git_root: Path | None, base: Config | None = None) -> tuple[Config, dict]:
    """Global → `<git_root>/<sync.dir>/config.toml` → the user's per-project file; last wins.

    Returns the merged config and, per `section.key`, which layer set it.
    """
    cfg = copy.deepcopy(base or load())
    origin = {f"{s}.{k}": "global" for s, keys in cfg.items() for k in keys}
    layers: list[tuple[Path, str]] = []
    if git_root is not None:
        layers.append((repo_file(git_root, cfg["sync"]["dir"]), "repo"))
    layers.append((project_user_file(project_id), "user"))
    for path, name in layers:
        if not path.is_file():
            continue
        data = {s: v for s, v in read_toml(path).items() if s not in GLOBAL_ONLY_SECTIONS}
        before = copy.deepcopy(cfg)
        _apply_layer(cfg, data, str(path), repo_layer=(name == "repo"))
        for s, keys in cfg.items():
            for k, v in keys.items():
                changed = before[s][k] != v or (isinstance(data.get(s), dict) and k in data[s])
                if changed and not (name == "repo" and (s, k) in SECRET_KEYS):
                    origin[f"{s}.{k}"] = name
    _apply_env(cfg)
    for var, (section, key) in ENV_OVERRIDES.items():
        if env_is_set(var):
            origin[f"{section}.{key}"] = f"environment ({var})"
    return cfg, origin


def mask(value: str) -> str:
    """Show that a key is set without echoing it."""
    return "•••••••• (set)" if value else ""

"""Editing the global config.toml from the admin: only keys that take effect without a restart,
validated with the same SCHEMA as the file, written back with tomlkit so comments survive.
API keys are never shown or accepted here (environment variables are the place for them)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
from django.conf import settings

from .config import (
    SCHEMA,
    SECRET_KEYS,
    Config,
    ConfigError,
    check_file,
    config_path,
    mask,
    validated,
)

# Read on every use (per request or per pass), so a change applies at once in this process;
# other processes (worker, beat) read the file when they start.
EDITABLE: tuple[tuple[str, str], ...] = (
    ("reasoning", "provider"),
    ("reasoning", "model"),
    ("reasoning", "timeout_seconds"),
    ("dreaming", "enabled"),
    ("dreaming", "interval"),
    ("dreaming", "min_messages"),
    ("dreaming", "context_memories"),
    ("dreaming", "on_idle_seconds"),
    ("retrieval", "min_similarity"),
    ("retrieval", "max_content_chars"),
    ("sync", "enabled"),
    ("sync", "log_embeddings"),
    ("sync", "reuse_embeddings"),
)


def path() -> Path:
    return config_path()


def file_problem() -> str | None:
    """The sentence saying why the global file would not load now (invalid TOML, a wrong value), or None.
    The page shows what the server read at start; a file broken since then made Save a 500 (walk 14)."""
    file = path()
    if not file.exists():
        return None
    try:
        check_file(file)
    except ConfigError as exc:
        return str(exc)
    return None


def _display(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ", ".join(value) or "(none)"
    if value == "" or value is None:
        return "(blank: default)"
    return str(value)


def rows(cfg: Config, origin: Mapping[str, str]) -> list[dict[str, Any]]:
    """One row per key: shown value (keys masked), where it comes from, and how to edit it if allowed."""
    out = []
    for section, keys in cfg.items():
        for key, value in keys.items():
            spec = SCHEMA[section][key]
            secret = (section, key) in SECRET_KEYS
            out.append(
                {
                    "section": section,
                    "key": key,
                    "name": f"{section}.{key}",
                    "value": mask(value) if secret else _display(value),
                    "raw": "" if secret or value is None else value,
                    "kind": spec.kind.__name__,
                    "origin": origin.get(f"{section}.{key}", "global"),
                    # A value the environment overrides would not change by editing the file.
                    "editable": (section, key) in EDITABLE
                    and not origin.get(f"{section}.{key}", "").startswith("environment"),
                    "choices": _choices(section, key),
                }
            )
    return out


def _choices(section: str, key: str) -> list[str]:
    from .config import REASON_PROVIDERS

    return list(REASON_PROVIDERS) if (section, key) == ("reasoning", "provider") else []


def _parse(section: str, key: str, raw: str | None) -> Any:
    spec = SCHEMA[section][key]
    where = f"[{section}].{key}"
    if spec.kind is bool:
        return raw in ("on", "true", "1")
    text = (raw or "").strip()
    if spec.kind is int:
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{where} must be a whole number, not {text!r}.") from None
    if spec.kind is float and not text and spec.default is None:
        return None  # blank = the default behaviour ([retrieval].min_similarity: the calibrated gate)
    if spec.kind is float:
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"{where} must be a number, not {text!r}.") from None
    return text


def save(form: Mapping[str, Any]) -> list[str]:
    """Validate every editable key in `form`, then write the changed ones to config.toml (atomically,
    comments kept) and apply them to this process. Nothing is written if any value is invalid."""
    changes: dict[tuple[str, str], Any] = {}
    for section, key in EDITABLE:
        name = f"{section}.{key}"
        if name not in form and SCHEMA[section][key].kind is not bool:
            continue
        if SCHEMA[section][key].kind is bool and f"{name}.present" not in form:
            continue
        value = _parse(section, key, form.get(name))
        if value is not None:
            value = validated(SCHEMA[section][key], value, f"[{section}].{key}")
        if value != settings.YULLU[section][key]:
            changes[(section, key)] = value
    if not changes:
        return []
    problem = file_problem()
    if problem:  # never write over a file we cannot read: its other keys would be lost or kept broken
        raise ConfigError(f"nothing was saved: {problem}")
    file = path()
    doc = tomlkit.parse(file.read_text()) if file.exists() else tomlkit.document()
    for (section, key), value in changes.items():
        if section not in doc:
            doc[section] = tomlkit.table()
        if value is None:
            doc[section].pop(key, None)
        else:
            doc[section][key] = value
    _write(file, tomlkit.dumps(doc))
    for (section, key), value in changes.items():
        settings.YULLU[section][key] = value
    return [f"[{s}].{k}" for s, k in changes]


def _write(file: Path, text: str) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".config-", suffix=".toml")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, file.stat().st_mode & 0o777 if file.exists() else 0o644)
    os.replace(tmp, file)

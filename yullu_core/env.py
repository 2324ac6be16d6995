"""Small typed readers for environment variables that fail loudly on bad values."""

import os


class EnvError(Exception):
    pass


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise EnvError(f"environment variable {name} must be true or false, not {raw!r}.")


def env_choice(name: str, options: tuple[str, ...], default: str) -> str:
    raw = env_str(name, default).lower()
    if raw not in options:
        raise EnvError(f"environment variable {name} must be one of {', '.join(options)}, not {raw!r}.")
    return raw

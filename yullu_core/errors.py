"""Errors a user can cause. Their text is one sentence saying what is wrong and what to do."""

import importlib
from types import ModuleType


class UserError(Exception):
    status = 400


class NotFound(UserError):
    status = 404


class Conflict(UserError):
    status = 409


class Unavailable(UserError):
    """A dependency (embedder, reasoner, database) cannot be reached."""

    status = 503


def optional_module(module: str, extra: str, what: str) -> ModuleType:
    """A package of an optional extra (pyproject.toml), or one sentence saying how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise Unavailable(f"{what} needs the {module} package: pip install 'yullu[{extra}]'.") from None

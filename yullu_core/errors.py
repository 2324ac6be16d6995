"""Errors a user can cause. Their text is one sentence saying what is wrong and what to do."""

import importlib
import sys
from pathlib import Path
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
        raise Unavailable(f"{what} needs the {module} package: {install_extra(extra)}.") from None


def install_extra(extra: str) -> str:
    """The command that adds an optional extra to this install. From a checkout (`make run`'s editable
    install) it is the checkout with its venv's pip: `pip install 'yullu[…]'` would look for a package
    named yullu on PyPI, which is not this one."""
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "yullu_core").is_dir():
        return f"{sys.executable} -m pip install -e '{root}[{extra}]'"
    return f"pip install 'yullu[{extra}]'"

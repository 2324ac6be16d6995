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
    return installed_extra(extra, Path(sys.prefix))


def installed_extra(extra: str, venv: Path) -> str:
    """The command for an installed package (a wheel in `venv`). Found installing the wheel with pipx and uv: a
    bare `pip install 'yullu[…]'` runs the shell's pip, outside the tool's venv, where it looks for a package
    called yullu on PyPI. Name the installer that owns the venv."""
    if (venv / "pipx_metadata.json").is_file():
        return f"pipx inject yullu {extra_requirements(extra)}"
    if (venv / "uv-receipt.toml").is_file():
        return f"uv tool install --with {extra_requirements(extra)} <the wheel or folder you installed yullu from>"
    return f"{sys.executable} -m pip install 'yullu[{extra}]'"


def extra_requirements(extra: str) -> str:
    """The installed package's requirements for one extra, quoted for a shell: `'openai~=3.54.0'`."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        declared = requires("yullu") or []
    except PackageNotFoundError:
        declared = []
    marker = f'extra == "{extra}"'
    found = [r.split(";")[0].strip() for r in declared if marker in r]
    return " ".join(f"'{r}'" for r in found) or f"'yullu[{extra}]'"

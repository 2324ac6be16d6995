"""The installed package's version, one place for `yullu --version`, `/api/status` and the MCP server's
`serverInfo`. setuptools-scm derives it from git when the wheel is built (pyproject.toml), so each
commit's wheel has its own version and `pip install` of a newer one replaces the old code."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version


@cache
def installed() -> str:
    try:
        return dist_version("yullu")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"

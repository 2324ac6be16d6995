"""The build backend: setuptools', with `build/` emptied before each wheel.

pip builds a checkout in place, and setuptools copies the packages into `build/lib` without removing what an
earlier build left there. A module deleted or moved since the last `pip wheel` in this checkout was shipped
again (found building c56b571, then 1f908db, in one clone: 102 stale files, the old `yullu_site/mcp/` package
shadowing that commit's `mcp.py`, and the web process could not start). A stale migration would be worse."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import build_meta  # type: ignore[import-untyped]
from setuptools.build_meta import *  # type: ignore[import-untyped]  # noqa: F403  (the other PEP 517 hooks)


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, str | list[str]] | None = None,
    metadata_directory: str | None = None,
) -> str:
    shutil.rmtree(Path(__file__).resolve().parent / "build", ignore_errors=True)
    return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)

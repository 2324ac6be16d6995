"""Environment variables: one declared list (yullu_core/env.py), read through its helpers only,
listed in docs/environment.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from yullu_core import config
from yullu_core.env import VARS, EnvError, env_bool, env_float, env_int, env_str

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("access", "dreaming", "memories", "sync", "yullu_cli", "yullu_core", "yullu_site")
# A read by hand: os.environ.get(…), os.getenv(…), os.environ[…] not followed by an assignment.
HAND_READ = re.compile(r"os\.environ\.get\(|os\.getenv\(|os\.environ\[[^\]]*\](?!\s*=[^=])")
HELPER_CALL = re.compile(r"\benv_(?:str|bool|choice|int|float|is_set)\(\s*\"([A-Za-z0-9_]+)\"")


def _sources() -> list[Path]:
    files = [f for package in PACKAGES for f in (ROOT / package).rglob("*.py")]
    return [f for f in files if "bench" not in f.relative_to(ROOT).parts and f != ROOT / "yullu_core" / "env.py"]


def test_no_module_reads_the_environment_by_hand() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _sources()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if HAND_READ.search(line)
    ]
    assert found == [], "read these through yullu_core.env (declare the variable in VARS):\n" + "\n".join(found)


def test_every_variable_read_is_declared() -> None:
    named = {name for path in _sources() for name in HELPER_CALL.findall(path.read_text())}
    assert named, "the scan found no helper call: the pattern is broken"
    assert named - set(VARS) == set()
    assert set(config.ENV_OVERRIDES) - set(VARS) == set()


def test_the_docs_list_every_declared_variable_with_its_default() -> None:
    doc = (ROOT / "docs" / "environment.md").read_text()
    for var in VARS.values():
        default = f"`{var.default}`" if var.default else "(blank)"
        assert f"| `{var.name}` | {default} | {var.meaning} |" in doc, var.name
    listed = set(re.findall(r"^\| `([A-Z_]+)` \|", doc, re.M))
    assert listed == set(VARS)


def test_a_blank_variable_gets_its_declared_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YULLU_PG_SHARED_BUFFERS", "  ")
    assert env_str("YULLU_PG_SHARED_BUFFERS") == "auto"
    monkeypatch.setenv("YULLU_PG_SHARED_BUFFERS", " 1GB ")
    assert env_str("YULLU_PG_SHARED_BUFFERS") == "1GB"


def test_it_rejects_malformed_values_in_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YULLU_HOOK_TIMEOUT", "soon")
    with pytest.raises(EnvError, match=r"^environment variable YULLU_HOOK_TIMEOUT must be a number, not 'soon'\.$"):
        env_float("YULLU_HOOK_TIMEOUT")
    monkeypatch.setenv("YULLU_EMBED_THREADS", "2.5")
    with pytest.raises(EnvError, match="YULLU_EMBED_THREADS must be a whole number"):
        env_int("YULLU_EMBED_THREADS")
    monkeypatch.setenv("YULLU_MCP_STATELESS", "maybe")
    with pytest.raises(EnvError, match="YULLU_MCP_STATELESS must be true or false"):
        env_bool("YULLU_MCP_STATELESS")


def test_reading_an_undeclared_variable_says_to_declare_it() -> None:
    with pytest.raises(EnvError, match="YULLU_NOPE is not declared"):
        env_str("YULLU_NOPE")

"""Defects a fourth new-user walk met (fresh clone, clean home), each as it was met: `yullu uninstall`
saying the memories stay in "the embedded database" while, as root, that database lives in
/var/lib/yullu/clusters/<hash>, a folder nothing named."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from yullu_cli import install
from yullu_core import postgres as pg


def test_uninstall_names_where_the_embedded_database_stays_when_it_is_outside_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    yhome, elsewhere = tmp_path / "yhome", tmp_path / "var/lib/yullu/clusters/4e4a66c9473a"
    monkeypatch.setenv("YULLU_HOME", str(yhome))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    cluster = pg.plan(yhome)
    monkeypatch.setattr(pg, "plan", lambda home: dataclasses.replace(cluster, pgdata=elsewhere / "pgdata"))
    kept = install._left_behind(tmp_path / "home", [], cursor=False)[0]
    assert kept.startswith(f"kept: your memories (the embedded database in {elsewhere}) and {yhome} ")


def test_uninstall_says_the_embedded_database_when_it_is_inside_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    yhome = tmp_path / "yhome"
    monkeypatch.setenv("YULLU_HOME", str(yhome))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    cluster = pg.plan(yhome)
    monkeypatch.setattr(pg, "plan", lambda home: dataclasses.replace(cluster, pgdata=yhome / "pgdata"))
    kept = install._left_behind(tmp_path / "home", [], cursor=False)[0]
    assert kept.startswith(f"kept: your memories (the embedded database) and {yhome} ")

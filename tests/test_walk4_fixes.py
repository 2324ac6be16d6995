"""Defects a fourth new-user walk met (fresh clone, clean home), each as it was met: `yullu uninstall`
saying the memories stay in "the embedded database" while, as root, that database lives in
/var/lib/yullu/clusters/<hash>, a folder nothing named; the Stale queue running the last removed line
of a cited span and the first added one together."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memories.anchors.repo import unified_diff
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


def test_the_stale_queue_diff_keeps_a_removed_last_line_apart_from_the_added_one() -> None:
    # The Stale queue showed "-        return sorted(stops)+        return sorted(stops, key=…)" on one
    # line: a cited span is joined without a final newline (stale.diff), and so was its diff.
    before = b"    def solve(self, stops):\n        return sorted(stops)"
    after = b"    def solve(self, stops):\n        return sorted(stops, key=priority)"
    diff = unified_diff(before, after, "solver/vrp.py", "solver/vrp.py").splitlines()
    assert diff[-2:] == ["-        return sorted(stops)", "+        return sorted(stops, key=priority)"], diff
    assert diff[:2] == ["--- a/solver/vrp.py", "+++ b/solver/vrp.py"]

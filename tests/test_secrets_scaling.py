"""Every scanner rule costs work in proportion to the text, on the texts that make a pattern backtrack: its own
keywords repeated (review 25: `Cookie: a=1; ` × 30 ran for over 40 s, `curl ` and `pwd==pwd=` were quadratic).
Each sets' own scaling tests cover the units their authors thought of; this one tries every keyword of every rule.

A unit is scanned at ~1 KB and ~8 KB: linear work costs about eight times as much CPU, quadratic sixty-four times.
CPU time of this thread (not the wall clock), the least of three scans when a first reading looks too high; an
exponential pattern is stopped by an alarm (the regex engine checks for signals) instead of hanging the suite."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from types import FrameType

import pytest

from memories.secrets.scan import _rules
from tests.scan_cost import cpu_to_scan

_SMALL = 1_000
_LARGE = 8_000
_LINEAR_ENOUGH = 20  # 8× the text; quadratic would be ~64×


class _TooSlow(Exception):
    pass


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise _TooSlow


def _units() -> Iterator[str]:
    keywords = sorted({k for rule in _rules()[0] for k in rule.keywords if k.strip()})
    for k in keywords:
        yield from (f"{k} a=1; ", f"{k} ", f"{k}={k}", f"{k}: {k} x1 ")


def _ratio(unit: str, tries: int) -> tuple[float, float]:
    small = cpu_to_scan(unit * (_SMALL // len(unit) + 1), tries)
    large = cpu_to_scan(unit * (_LARGE // len(unit) + 1), tries)
    return small, large


def test_every_rules_keywords_repeated_cost_work_in_proportion_to_the_text() -> None:
    cpu_to_scan("warm up secret_key", runs=1)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    slow: list[str] = []
    try:
        for unit in _units():
            signal.alarm(60)  # a generous stop for an exponential pattern, not a measure
            try:
                small, large = _ratio(unit, 1)
                if large > _LINEAR_ENOUGH * max(small, 2e-4):
                    small, large = _ratio(unit, 3)  # a busy machine's first reading: measure again
                if large > _LINEAR_ENOUGH * max(small, 2e-4):
                    slow.append(f"{unit!r}: {small * 1000:.1f} → {large * 1000:.1f} ms")
            except _TooSlow:
                slow.append(f"{unit!r}: did not finish")
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not slow, slow


@pytest.mark.parametrize("unit", ["Cookie: a=1; ", "cookie: cookie: ", "Cookie: session=abc; ", "curl ", "pwd==pwd="])
def test_the_units_review_25_found_are_linear(unit: str) -> None:
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(60)
    try:
        small, large = _ratio(unit, 3)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert large < _LINEAR_ENOUGH * max(small, 2e-4), (unit, small, large)

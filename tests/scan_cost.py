"""The CPU a scan of a text costs, for the tests that check the scanner's work grows in proportion to the text:
eight times the text costs about eight times the CPU when linear, sixty-four times when quadratic. No test asserts
on time itself (the machine is shared): only on how the cost of a text eight times as long compares."""

from __future__ import annotations

import time

from memories.secrets.views import _scan_views


def cpu_to_scan(text: str, runs: int = 3) -> float:
    """The least CPU time of `runs` scans of `text`: this thread's, not the wall clock (others do not count)."""
    best = float("inf")
    for _ in range(runs):
        start = time.thread_time()
        list(_scan_views(text))
        best = min(best, time.thread_time() - start)
    return best


def cpu_to_scan_repeated(unit: str) -> tuple[float, float]:
    """The CPU to scan `unit` repeated to ~2,000 characters and to ~16,000 (the first scan warmed up beforehand)."""
    cpu_to_scan("warm up secret_key")
    return cpu_to_scan(unit * (2_000 // len(unit))), cpu_to_scan(unit * (16_000 // len(unit)))

"""One health model (yullu_site/monitoring/health.py) shown in four places: /api/status, `yullu doctor`, the
admin dashboard and the `yullu serve` banner say the same thing about the same part."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client

from dreaming import reasoners
from yullu_cli import banner, memory_commands
from yullu_core import failures
from yullu_site.admin import views as admin_views

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_reasoner(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(reasoners, "configured_reasoner", lambda: None)
    monkeypatch.setattr(memory_commands, "_served_status", lambda: {})  # no running server to compare with
    warning = reasoners.reasoner_status()["warning"]
    assert warning and "no reasoner" in warning
    return str(warning)


@pytest.fixture
def disk_full(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(failures, "_disk_full_at", time.monotonic())
    return "disk: a write found the disk full"


def _doctor() -> dict[str, dict[str, Any]]:
    return {line["check"]: line for line in memory_commands._system_checks()}


def test_a_missing_reasoner_is_the_same_warning_in_all_four_places(client: Client, no_reasoner: str) -> None:
    status = client.get("/api/status").json()
    assert status["reasoner"]["warning"] == no_reasoner
    line = _doctor()["reasoner"]
    assert (line["status"], line["detail"]) == ("warn", no_reasoner)
    assert admin_views.health()["reasoner_warning"] == no_reasoner
    assert banner.reasoner_line() == f"  WARNING:    {no_reasoner}"


def test_a_full_disk_makes_status_not_ready_doctor_fail_and_the_dashboard_warn(
    client: Client, disk_full: str, owner: Any
) -> None:
    response = client.get("/api/status")
    assert response.status_code == 503 and response.json()["disk"]["ok"] is False
    assert (_doctor()["disk"]["status"], _doctor()["disk"]["detail"]) == ("fail", disk_full)
    assert disk_full in admin_views.health()["warnings"]
    client.force_login(owner)
    assert disk_full in client.get("/admin/").content.decode()


def test_a_judge_that_raises_is_one_problem_not_a_crash(monkeypatch: pytest.MonkeyPatch, client: Client) -> None:
    from yullu_site.monitoring import health

    def broken() -> health.Part:
        raise RuntimeError("the queue table is gone")

    monkeypatch.setitem(health.PARTS, "broker", broken)
    response = client.get("/api/status")
    assert response.status_code == 503
    assert response.json()["broker"] == {"ok": False, "error": "RuntimeError: the queue table is gone"}

"""Walk 13 (a new user's first day, fresh clone and home): what a dreaming provider that fails says, the audit
trail's pages, and `make run` after a pull."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from dreaming.reasoners import AnthropicReasoner, OpenAIReasoner
from tests.stubs import StubServer
from yullu_core.errors import Unavailable

pytestmark = pytest.mark.django_db


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nobody listens once it is closed


@pytest.fixture
def fast_failures(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(settings.YULLU, "reasoning", {**settings.YULLU["reasoning"], "timeout_seconds": 5})
    yield


def _said(reasoner: OpenAIReasoner | AnthropicReasoner) -> str:
    with pytest.raises(Unavailable) as failed:
        reasoner.complete("system", "prompt")
    return str(failed.value)


def test_an_unreachable_openai_server_is_named_in_one_sentence(
    monkeypatch: pytest.MonkeyPatch, fast_failures: None
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.setitem(settings.YULLU, "openai", {**settings.YULLU["openai"], "base_url": url, "api_key": "sk-x"})
    said = _said(OpenAIReasoner("gpt-4o-mini"))
    assert said == f"the openai reasoner could not reach {url}; is that server running? check [openai].base_url."


@pytest.mark.parametrize(("status", "meaning"), [(401, "the API key was refused"), (404, "no such model or URL")])
def test_a_provider_answering_an_error_status_says_which_and_what_it_means(
    monkeypatch: pytest.MonkeyPatch, fast_failures: None, status: int, meaning: str
) -> None:
    key = "sk-ant-walk13-not-a-real-key"
    with StubServer() as stub:
        stub.chat_replies += [status] * 6  # the client retries what may pass; 401 and 404 it does not
        monkeypatch.setitem(settings.YULLU, "openai", {**settings.YULLU["openai"], "base_url": stub.url})
        monkeypatch.setitem(settings.YULLU, "anthropic", {"api_key": key, "base_url": stub.url.removesuffix("/v1")})
        for provider, reasoner in (("openai", OpenAIReasoner("m")), ("anthropic", AnthropicReasoner("m"))):
            said = _said(reasoner)
            assert f"the {provider} reasoner's server " in said and f"answered HTTP {status} ({meaning})" in said
            assert key not in said and "\n" not in said


def test_the_audit_trail_is_read_only_for_a_superuser_too(client: Any, owner: Any) -> None:
    """Walk 13: making the access pages superuser-only replaced the audit trail's own refusals, so the
    admin's 'Add audit entry' form wrote entries, and one could be edited or deleted."""
    from access.audit import record
    from access.models import AuditEntry

    entry = record("token.create", "laptop", {"id": 1}, user=owner)
    client.force_login(owner)
    assert client.get("/admin/access/auditentry/").status_code == 200  # still listed
    assert client.get("/admin/access/auditentry/add/").status_code == 403
    forged = {"at": "2026-01-01 00:00:00", "actor_name": "mallory", "action": "token.create", "target": "x"}
    assert client.post("/admin/access/auditentry/add/", forged).status_code == 403
    assert client.post(f"/admin/access/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    page = client.get(f"/admin/access/auditentry/{entry.pk}/change/")
    assert page.status_code == 200 and b'name="actor_name"' not in page.content  # view only
    assert AuditEntry.objects.filter(pk=entry.pk).exists() and not AuditEntry.objects.filter(actor_name="mallory")
    assert client.get("/admin/access/apitoken/add/").status_code == 200  # its own pages keep theirs


def test_make_run_after_a_pull_reinstalls_the_package_so_its_version_names_the_new_commit(tmp_path: Path) -> None:
    """Walk 13: `git pull` then `make run` left `yullu --version` and /api/status naming the commit of the first
    install (the version comes from git at install time, and only a change of requirements.txt or
    pyproject.toml reinstalled). Planned with `make -n` in a copy: nothing installed for real."""
    root = Path(__file__).resolve().parent.parent
    for name in ("Makefile", "requirements.txt", "pyproject.toml"):
        shutil.copy(root / name, tmp_path / name)
    git = ["git", "-c", "user.name=w", "-c", "user.email=w@x", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "one"], cwd=tmp_path, check=True)
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    deps = hashlib.sha256((root / "requirements.txt").read_bytes() + (root / "pyproject.toml").read_bytes())
    head = lambda: subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=tmp_path, capture_output=True,  # noqa: E731
                                  text=True, check=True).stdout.strip()  # fmt: skip
    stamps = [venv / f".installed-{deps.hexdigest()[:16]}", venv / f".commit-{head()}"]
    for later, path in enumerate([venv / "bin" / "python", *stamps], start=1):
        path.touch()
        os.utime(path, (time.time() + later, time.time() + later))  # each newer than what it depends on

    def planned() -> list[str]:
        make = subprocess.run(["make", "-n", "run"], cwd=tmp_path, capture_output=True, text=True, check=True)
        return [line for line in make.stdout.splitlines() if "pip install" in line]

    assert planned() == []  # installed at this commit: straight to `yullu serve`
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "two"], cwd=tmp_path, check=True)  # a pull
    again = planned()
    assert len(again) == 1 and again[0].rstrip().endswith("--no-deps -e ."), again  # the package, not the deps

"""Walk 13 (a new user's first day, fresh clone and home): what a dreaming provider that fails says."""

from __future__ import annotations

import socket
from collections.abc import Iterator
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

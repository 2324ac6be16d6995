"""One scanner on every path (issue 33): a secret the old hand-written regexes missed (a GitHub token
hidden by a zero-width space) is refused by MCP, REST, the admin form, import, dreaming's operations
and a teammate's event file, and cut out of conversation turns before they are buffered or reach a
reasoner. The scanner's own coverage: tests/test_secrets.py."""

from __future__ import annotations

import asyncio
import json
import random
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.test import Client

from bench.secret_forms import ALNUM, HEX, chars, zero_width
from dreaming.models import SessionMessage
from dreaming.reasoners import configured_reasoner
from dreaming.services import record_messages, run_dream_pass
from memories.models import Memory
from memories.scope import resolve
from memories.transfer.importer import ImportResult, Row, import_rows
from memories.write import create, edit
from sync.schema import parse_bytes
from sync.services import reconcile_scope
from tests.mcp_client import call, http_session
from tests.stubs import StubServer
from yullu_core.errors import UserError

TOKEN = "ghp_" + chars(ALNUM, 36)(random.Random(2033))
HIDDEN = zero_width(TOKEN)
SENTENCE = f"CI pushes tags with {HIDDEN} from the release job"


@pytest.mark.django_db(transaction=True)
def test_mcp_and_rest_refuse_a_hidden_secret_and_store_nothing(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    async def mcp() -> tuple[tuple[bool, Any], tuple[bool, Any]]:
        async with http_session(live_server_url, owner_token) as s:
            stored = await call(s, "store_memory", content=SENTENCE, project_id="acme/paths")
            _, ok = await call(s, "store_memory", content="Releases are tagged by CI", project_id="acme/paths")
            updated = await call(s, "update_memory", id=ok["id"], content=SENTENCE)
            return stored, updated

    (store_error, store_text), (update_error, update_text) = asyncio.run(mcp())
    assert store_error and update_error
    assert "github-pat" in store_text and "github-pat" in update_text and TOKEN[8:] not in store_text
    response = httpx.post(
        f"{live_server_url}/api/memories",
        json={"project_id": "acme/paths", "content": SENTENCE},
        headers={"Authorization": f"Bearer {owner_token}"},
    )
    assert response.status_code == 400 and "github-pat" in response.text
    assert list(Memory.objects.values_list("content", flat=True)) == ["Releases are tagged by CI"]


@pytest.mark.django_db
def test_the_admin_form_refuses_a_hidden_secret(client: Client, owner: Any, stub_embedder: StubServer) -> None:
    client.force_login(owner)
    response = client.post(
        "/admin/memories/memory/add/",
        {"project_id": "acme/paths", "content": SENTENCE, "category": "", "tags_text": ""},
    )
    assert response.status_code == 200 and "github-pat" in response.content.decode()
    assert not Memory.objects.exists()


@pytest.mark.django_db
def test_import_refuses_a_hidden_secret_without_echoing_it(stub_embedder: StubServer) -> None:
    result = import_rows(
        [Row("acme/paths", SENTENCE), Row("acme/paths", "Releases are tagged by CI", tags=[HIDDEN[:40]])],
        ImportResult("yullu"),
    )
    assert (result.refused, result.created) == (2, 0)
    assert all(TOKEN[4:20] not in e for e in result.errors), result.errors
    assert not Memory.objects.exists()


@pytest.mark.django_db
def test_dreaming_redacts_turns_and_refuses_operations_with_a_hidden_secret(
    stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(
        settings.YULLU, "reasoning", {"provider": "openai", "model": "stub-chat", "timeout_seconds": 10}
    )
    record_messages("acme/paths", "s", [{"role": "user", "content": f"the token is {HIDDEN}, keep it safe"}])
    buffered = SessionMessage.objects.get().content
    assert HIDDEN not in buffered and TOKEN[8:] not in buffered and buffered.endswith(", keep it safe")
    stub_embedder.chat_replies.append(json.dumps({"operations": [{"op": "create", "content": SENTENCE}]}))
    result = run_dream_pass("acme/paths", reasoner=configured_reasoner())
    assert result["ops_skipped"] == 1 and not Memory.objects.exists()
    prompts = [json.dumps(r["body"]) for r in stub_embedder.requests if r["path"].endswith("/chat/completions")]
    assert prompts and all(TOKEN[8:] not in p for p in prompts)


@pytest.mark.django_db
def test_a_teammates_event_with_a_hidden_secret_is_refused(repo: Path, stub_embedder: StubServer) -> None:
    event = {
        "id": "11111111-1111-4111-8111-111111111111",
        "type": "create",
        "memory_id": "22222222-2222-4222-8222-222222222222",
        "ts": "2026-01-01T00:00:02Z",
        "content": SENTENCE,
        "tags": [],
    }
    data = json.dumps(event).encode()
    with pytest.raises(ValueError, match="github-pat"):
        parse_bytes(data)
    logs = repo / ".yullu" / "logs"
    logs.mkdir(parents=True)
    (logs / "20260101T000002.000000000Z-11111111.json").write_bytes(data)
    result = reconcile_scope(resolve(None, str(repo)))
    assert result["created"] == 0 and [e["file"] for e in result["parse_errors"]] == [
        "20260101T000002.000000000Z-11111111.json"
    ]
    assert not Memory.objects.exists()


@pytest.mark.django_db
def test_a_review_comment_with_a_hidden_secret_is_refused(stub_embedder: StubServer) -> None:
    memory = create.store_memory(resolve("acme/paths", None), "Releases are tagged by CI").memory
    with pytest.raises(UserError, match="github-pat"):
        edit.rate_memory(memory.pk, 2, f"wrong: the token is {HIDDEN}", source="admin")
    assert Memory.objects.get(pk=memory.pk).rating is None


# A form of bench/secret_forms.HELD_OUT_2 the scanner stored before (a Twilio auth token named in a
# sentence, no `=` or `:`): refused on each write path once the scanner finds it, not only by the scanner.
PROSE_TOKEN = f"Twilio account AC{chars(HEX, 32)(random.Random(5))} with auth token {chars(HEX, 32)(random.Random(6))}"


@pytest.mark.django_db
def test_a_token_named_in_prose_is_refused_on_store_update_import_reconcile_and_dreaming(
    repo: Path, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    scope = resolve("acme/paths", None)
    with pytest.raises(UserError, match="a credential"):
        create.store_memory(scope, PROSE_TOKEN)
    kept = create.store_memory(scope, "Twilio sends the SMS codes").memory
    with pytest.raises(UserError, match="a credential"):
        edit.update_memory(kept.pk, content=PROSE_TOKEN)
    with pytest.raises(UserError, match="a credential"):
        edit.update_memory(kept.pk, tags=["sms", PROSE_TOKEN[-60:]])
    result = import_rows([Row("acme/paths", PROSE_TOKEN)], ImportResult("yullu"))
    assert (result.refused, result.created) == (1, 0)
    event = {
        "id": "33333333-3333-4333-8333-333333333333",
        "type": "create",
        "memory_id": "44444444-4444-4444-8444-444444444444",
        "ts": "2026-01-01T00:00:03Z",
        "content": PROSE_TOKEN,
        "tags": [],
    }
    with pytest.raises(ValueError, match="a credential"):
        parse_bytes(json.dumps(event).encode())
    monkeypatch.setitem(
        settings.YULLU, "reasoning", {"provider": "openai", "model": "stub-chat", "timeout_seconds": 10}
    )
    record_messages("acme/paths", "s", [{"role": "user", "content": "how do we send SMS?"}])
    stub_embedder.chat_replies.append(json.dumps({"operations": [{"op": "create", "content": PROSE_TOKEN}]}))
    assert run_dream_pass("acme/paths", reasoner=configured_reasoner())["ops_skipped"] == 1
    assert list(Memory.objects.values_list("content", flat=True)) == ["Twilio sends the SMS codes"]


# Two forms of bench/secret_forms.HELD_OUT_3's causes the scanner stored before (a password after words the
# checks refuse, a password nothing names) and three of HELD_OUT_4's (a PIN in prose, a passphrase of words,
# a token split between quoted parts). Each write path refuses them, not only the scanner.
HELD_OUT_SETS = {
    "a password after refused words": ("Das Passwort für den Staging-Server lautet Sommer2024xyz", "a password"),
    "a password nothing names": ("ssh admin@10.0.0.5 with Falcon56#river12", "a password"),
    "a PIN in prose": ("The SIM PIN for the Android test phone is 7391.", "a PIN"),
    "a passphrase of words": ("Office wifi password: sunny meadow 42 tulips", "a password"),
    "a token split between quoted parts": (
        f"token = 'ghp_' + '{chars(ALNUM, 18)(random.Random(7))}' + '{chars(ALNUM, 18)(random.Random(8))}'",
        "a credential",
    ),
    # and two of HELD_OUT_5's (a weak password told right after its name, a webhook URL that is its own secret)
    "a weak password told plainly": ("the router admin password is still hunter22", "a password"),
    "a webhook URL": ("POST to https://hooks.zapier.com/hooks/catch/1234567/3xk9qlm/ on each order", "a webhook URL"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", HELD_OUT_SETS)
def test_the_held_out_sets_secrets_are_refused_on_store_update_import_reconcile_and_dreaming(
    name: str, repo: Path, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, kind = HELD_OUT_SETS[name]
    scope = resolve(None, str(repo))
    with pytest.raises(UserError, match=kind):
        create.store_memory(scope, text)
    kept = create.store_memory(scope, "The staging server is rebuilt every Monday").memory
    with pytest.raises(UserError, match=kind):
        edit.update_memory(kept.pk, content=text)
    result = import_rows([Row(scope.project_id, text)], ImportResult("yullu"))
    assert (result.refused, result.created) == (1, 0)
    event = {
        "id": "55555555-5555-4555-8555-555555555555",
        "type": "create",
        "memory_id": "66666666-6666-4666-8666-666666666666",
        "ts": "2026-01-01T00:00:04Z",
        "content": text,
        "tags": [],
    }
    logs = repo / ".yullu" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "20260101T000004.000000000Z-55555555.json").write_bytes(json.dumps(event).encode())
    reconciled = reconcile_scope(scope)
    assert reconciled["created"] == 0 and [e["file"] for e in reconciled["parse_errors"]] == [
        "20260101T000004.000000000Z-55555555.json"
    ]
    monkeypatch.setitem(
        settings.YULLU, "reasoning", {"provider": "openai", "model": "stub-chat", "timeout_seconds": 10}
    )
    record_messages(scope.project_id, "s", [{"role": "user", "content": "when is staging rebuilt?"}])
    stub_embedder.chat_replies.append(json.dumps({"operations": [{"op": "create", "content": text}]}))
    assert run_dream_pass(scope.project_id, reasoner=configured_reasoner())["ops_skipped"] == 1
    assert list(Memory.objects.values_list("content", flat=True)) == ["The staging server is rebuilt every Monday"]


# A secret in the project id or a tag (set sixteen's lane, secrets19): a git remote pasted with its token as the
# project, a password as a tag. Every write path refuses it with the one sentence and stores nothing.
REMOTE_WITH_TOKEN = f"x-access-token:{TOKEN}@github.com/acme/paths"
SECRET_TAG = "db_password=Zq8vN3pLw7Kd"
ONE_SENTENCE = re.compile(r"refused: the content contains [^;]+; remove it and try again \(nothing was stored\)\.")


@pytest.mark.django_db(transaction=True)
def test_mcp_and_rest_refuse_a_secret_in_the_project_id_or_a_tag_with_one_sentence(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    async def mcp() -> list[tuple[bool, Any]]:
        async with http_session(live_server_url, owner_token) as s:
            answers = [
                await call(s, "store_memory", content="Releases are tagged by CI", project_id=REMOTE_WITH_TOKEN),
                await call(
                    s, "store_memory", content="Releases are tagged by CI", project_id="acme/paths", tags=[SECRET_TAG]
                ),
            ]
            _, ok = await call(s, "store_memory", content="Releases are tagged by CI", project_id="acme/paths")
            answers.append(await call(s, "update_memory", id=ok["id"], tags=["ci", SECRET_TAG]))
            return answers

    answers = asyncio.run(mcp())
    assert all(error and ONE_SENTENCE.search(str(text)) for error, text in answers), answers
    assert all(TOKEN[8:] not in str(text) and "Zq8vN3pLw7Kd" not in str(text) for _, text in answers)
    api = httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"})
    kept = Memory.objects.get()
    for response in (
        api.post("/api/memories", json={"project_id": REMOTE_WITH_TOKEN, "content": "Releases are tagged by CI"}),
        api.post("/api/memories", json={"project_id": "acme/paths", "content": "CI tags", "tags": [SECRET_TAG]}),
        api.patch(f"/api/memories/{kept.pk}", json={"tags": [SECRET_TAG]}),
    ):
        assert response.status_code == 400 and ONE_SENTENCE.search(response.json()["error"]), response.text
        assert TOKEN[8:] not in response.text and "Zq8vN3pLw7Kd" not in response.text
    assert list(Memory.objects.values_list("project_id", "tags")) == [("acme/paths", [])]


@pytest.mark.django_db
def test_admin_import_dreaming_and_events_refuse_a_secret_in_the_project_id_or_a_tag(
    client: Client, owner: Any, stub_embedder: StubServer
) -> None:
    client.force_login(owner)
    added = client.post(
        "/admin/memories/memory/add/",
        {"project_id": REMOTE_WITH_TOKEN, "content": "Releases are tagged by CI", "category": "", "tags_text": ""},
    )
    assert added.status_code == 200 and ONE_SENTENCE.search(added.content.decode())
    kept = create.store_memory(resolve("acme/paths", None), "Releases are tagged by CI").memory
    changed = client.post(
        f"/admin/memories/memory/{kept.pk}/change/",
        {"project_id": "acme/paths", "content": kept.content, "category": "", "tags_text": SECRET_TAG},
    )
    assert changed.status_code == 200 and ONE_SENTENCE.search(changed.content.decode())
    result = import_rows(
        [Row(REMOTE_WITH_TOKEN, "Deploys run at noon"), Row("acme/paths", "Deploys run at noon", tags=[SECRET_TAG])],
        ImportResult("yullu"),
    )
    assert (result.refused, result.created) == (2, 0)
    assert all(ONE_SENTENCE.search(e) and TOKEN[8:] not in e for e in result.errors), result.errors
    with pytest.raises(UserError, match=ONE_SENTENCE):
        record_messages(REMOTE_WITH_TOKEN, "s", [{"role": "user", "content": "when do deploys run?"}])
    assert not SessionMessage.objects.exists()
    event = {
        "id": "77777777-7777-4777-8777-777777777777",
        "type": "create",
        "memory_id": "88888888-8888-4888-8888-888888888888",
        "ts": "2026-01-01T00:00:05Z",
        "content": "Deploys run at noon",
        "tags": [SECRET_TAG],
    }
    with pytest.raises(ValueError, match="tags: contains a credential"):  # (a teammate's file: the schema's words)
        parse_bytes(json.dumps(event).encode())
    assert list(Memory.objects.values_list("project_id", "tags")) == [("acme/paths", [])]

"""Generated hostile arguments to every MCP tool (`-m fuzz`), through the official client over real
HTTP: wrong types, huge and NUL-laden strings, deep nesting, negative and huge numbers, unknown
keys. Every call must end as a result or one clean one-line tool error, and the
server must stay healthy. Raw bodies a client library would never send (invalid UTF-8, lone
surrogates, nesting deeper than the client can encode) are checked too."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError

from tests.mcp_client import http_session

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(transaction=True)]
# CI replays one fixed set of examples (a landing must not depend on luck); runs elsewhere explore.
IN_CI = bool(os.environ.get("CI"))


@pytest.fixture(autouse=True)
def _outside_the_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls without project_id/cwd resolve the server's working directory (docs/contract.md §2); keep it out
    of our repo."""
    monkeypatch.chdir(tmp_path)


T = TypeVar("T")

MAX_ERROR_CHARS = 600  # a one-line message, not a dump of the input
MAX_BODY = 4 * 1024 * 1024  # the MCP transport answers 413 above this (mcp.server.transport_security)

leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.lists(st.sampled_from(["\x00", "\x7f", "a", "/", "..", "\n", "é"]), max_size=30).map("".join),
    st.builds(lambda n, c: c * n, st.integers(10_000, 200_000), st.sampled_from(["x", "\x00", "✓"])),
)


def containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)


hostile = st.recursive(leaf, containers, max_leaves=12)
ENVELOPE = 1024  # the JSON-RPC request around the arguments: method, id, tool name


def request_size(arguments: dict[str, Any]) -> int:
    """The arguments' size as the SDK client sends them: compact UTF-8 JSON, not escaped to ASCII
    ("✓" is 3 bytes on the wire; `json.dumps`'s default writes it as the 6 characters of \\u2713)."""
    return len(json.dumps(arguments, ensure_ascii=False, separators=(",", ":")).encode())


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"a": [value]}
    return value


class Client:
    """One MCP session owned by one task on a background event loop (anyio scopes must be left by
    the task that entered them), fed calls from the test thread so hypothesis can drive it."""

    def __init__(self, url: str, token: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.queue: asyncio.Queue[Any] = self._submit(self._make_queue())
        self.done = asyncio.run_coroutine_threadsafe(self._serve(url, token), self.loop)

    async def _make_queue(self) -> asyncio.Queue[Any]:
        return asyncio.Queue()

    def _submit(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=120)

    async def _serve(self, url: str, token: str) -> None:
        async with http_session(url, token) as session:
            while (item := await self.queue.get()) is not None:
                method, args, future = item
                try:
                    future.set_result(await getattr(session, method)(*args))
                except Exception as exc:
                    future.set_exception(exc)

    def call(self, method: str, *args: Any) -> Any:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (method, args, future))
        return future.result(timeout=60)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, None)
        self.done.result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


@pytest.fixture
def mcp(live_server_url: str, owner_token: str) -> Iterator[Client]:
    client = Client(live_server_url, owner_token)
    yield client
    client.close()


def assert_clean(result: Any) -> None:
    if result.is_error:
        text = result.content[0].text
        assert len(result.content) == 1 and "\n" not in text and len(text) <= MAX_ERROR_CHARS, text[:2000]
        assert "Traceback" not in text and "psycopg" not in text and "xxxxxxxxxx" not in text, text
    else:
        json.loads(result.content[0].text)


def test_generated_arguments_give_results_or_one_line_errors(mcp: Client) -> None:
    tools = {t.name: t.input_schema for t in mcp.call("list_tools").tools}
    assert "rate_recall" in tools and "store_memory" in tools

    @given(
        name=st.sampled_from(sorted(tools)),
        data=st.data(),
    )
    @settings(
        max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=IN_CI
    )
    def one_call(name: str, data: st.DataObject) -> None:
        known = list(tools[name].get("properties", {}))
        keys = data.draw(st.lists(st.sampled_from([*known, "surprise"]), unique=True, max_size=len(known) + 1))
        arguments = {key: data.draw(hostile, label=key) for key in keys}
        size = request_size(arguments)
        try:
            result = mcp.call("call_tool", name, arguments)
        except TimeoutError:
            raise AssertionError(f"{name} did not answer: {arguments!r:.300}") from None
        except MCPError:
            assert size > MAX_BODY - ENVELOPE, f"{name}: protocol error for a {size}-byte call"
            return  # the transport answered 413 before any tool ran
        assert size <= MAX_BODY, f"an oversized request ({size} bytes of arguments) was accepted"
        assert_clean(result)

    one_call()
    assert_clean(mcp.call("call_tool", "store_memory", {"content": "x", "tags": nested(20)}))
    with pytest.raises(MCPError, match=r"^Parse error: recursion limit exceeded at line 1 column \d+$"):
        mcp.call("call_tool", "store_memory", {"content": "x", "tags": nested(100)})  # refused by the JSON parser
    assert mcp.call("call_tool", "list_memories", {"project_id": "acme/alive"}).is_error is False


@pytest.mark.parametrize(
    "body",
    [
        b"\xff\xfe{not utf-8",
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"',
        b"[" * 100_000,
        b'{"a": [' * 20_000 + b'"bottom"' + b"]}" * 20_000,
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "store_memory", '
        b'"arguments": {"content": "\\ud800"}}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "store_memory", '
        b'"arguments": {"content": "' + b"x" * (5 * 1024 * 1024) + b'"}}}',
    ],
    ids=["invalid-utf8", "truncated", "deep-array", "deep-object", "lone-surrogate", "oversized"],
)
def test_raw_hostile_bodies_get_a_clean_answer(live_server_url: str, owner_token: str, body: bytes) -> None:
    headers = {
        "authorization": f"Bearer {owner_token}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    response = httpx.post(f"{live_server_url}/mcp", content=body, headers=headers, timeout=30)
    assert response.status_code < 500, response.text[:500]
    if len(body) > MAX_BODY:
        assert response.status_code == 413
    assert "Traceback" not in response.text
    alive = httpx.get(
        f"{live_server_url}/api/projects", headers={"authorization": headers["authorization"]}, timeout=10
    )
    assert alive.status_code == 200

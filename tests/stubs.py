"""Local stand-ins for paid remote APIs, served over real HTTP on a loopback port.

The product talks to them through the real client libraries (openai, anthropic).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DIM = 8
CHAT_GATE_LIMIT = 120.0


def vector_for(text: str) -> list[float]:
    """'vec:1,0,0' → that vector (padded to DIM); anything else → a stable pseudo-random vector."""
    if text.startswith("vec:"):
        values = [float(x) for x in text[4:].split()[0].split(",")]
        return (values + [0.0] * DIM)[:DIM]
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    return list(np.random.default_rng(seed).normal(size=DIM))


class StubServer:
    """A tiny OpenAI-compatible server. `chat_replies` is a queue of canned chat answers
    (a string → 200 with that content; an int → that HTTP status)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.chat_replies: list[str | int] = []
        self.embed_status = 200
        self.chat_delay = 0.0  # seconds to wait before answering a chat completion
        # When set, a chat completion waits until the test opens this gate (at most CHAT_GATE_LIMIT
        # seconds, so a test that never opens it fails instead of hanging).
        self.chat_gate: threading.Event | None = None
        self.embed_gate: threading.Event | None = None  # the same for an embedding request
        self.dim = DIM
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                stub.requests.append({"path": self.path, "body": body, "auth": self.headers.get("authorization")})
                handler: Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]
                if self.path.endswith("/embeddings"):
                    handler = stub._embeddings
                else:  # Anthropic's Messages API at /v1/messages, else OpenAI's chat completions
                    handler = stub._messages if self.path.endswith("/v1/messages") else stub._chat
                status, payload = handler(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        # shutdown() waits for the serving loop's next poll: at the default 0.5 s that was half a
        # second of every test using a stub.
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    def __enter__(self) -> StubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def embed_calls(self) -> int:
        return sum(1 for r in self.requests if r["path"].endswith("/embeddings"))

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.embed_gate is not None:
            self.embed_gate.wait(CHAT_GATE_LIMIT)
        if self.embed_status != 200:
            return self.embed_status, {"error": {"message": "stub failure", "type": "server_error"}}
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": vector_for(t)[: self.dim]} for i, t in enumerate(texts)
        ]
        tokens = sum(len(t.split()) for t in texts)
        return 200, {
            "object": "list",
            "data": data,
            "model": body.get("model"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _messages(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Anthropic's Messages API, answering from the same `chat_replies` queue."""
        status, chat = self._chat(body)
        if status != 200:
            return status, {"type": "error", "error": {"type": "api_error", "message": "stub failure"}}
        return 200, {
            "id": "msg_stub",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "stub"),
            "content": [{"type": "text", "text": chat["choices"][0]["message"]["content"]}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20},
        }

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.chat_gate is not None:
            self.chat_gate.wait(CHAT_GATE_LIMIT)
        if self.chat_delay:
            time.sleep(self.chat_delay)
        reply = self.chat_replies.pop(0) if self.chat_replies else '{"operations": []}'
        if isinstance(reply, int):
            return reply, {"error": {"message": "stub failure", "type": "server_error"}}
        return 200, {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }

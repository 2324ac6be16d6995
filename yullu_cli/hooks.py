"""`yullu inject`, `record-turn`, `session-start`, `pre-compact`, `codex-notify`: assistant hooks
that must start fast and never block.

Only cheap standard-library modules are imported here (no Django, no httpx, not even urllib,
http.client or pathlib: those alone cost ~20-40 ms of start-up). Installed hooks run this module
through `hook_entry.py` with `python -I -S` (no site-packages, no .pth files), so an inject is
interpreter start (~10 ms) plus one or two loopback requests. Every hook exits 0 and prints
nothing when the server is down, slow or has nothing to say.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sys
import time

from memories.search.trivial import is_acknowledgement, normalise
from yullu_core.env import env_float, env_is_set, env_str
from yullu_core.text import escape_controls

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing/pathlib would cost start-up time
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

# A hook must never hold up the prompt; tests on a loaded machine raise it (YULLU_HOOK_TIMEOUT).
TIMEOUT = env_float("YULLU_HOOK_TIMEOUT")
MIN_PROMPT_CHARS = 8
# Wording → category hints (docs/contract.md §9: hints inferred from the prompt's wording).
HINTS: list[tuple[str, re.Pattern[str]]] = [
    (
        "decision",
        re.compile(
            r"\b(why (did|do|does|is|are|was|were)|reason|decid|chose|choice|instead of|trade-?off|rationale)", re.I
        ),
    ),
    (
        "gotcha",
        re.compile(
            r"\b(error|fail|bug|broken|crash|gotcha|pitfall|flaky|wrong|issue|exception|careful|doesn'?t work)", re.I
        ),
    ),
    (
        "process",
        re.compile(
            r"\b(how (do|to|can|should)|run|build|deploy|install|set ?up|test|release|command|migrat|workflow)", re.I
        ),
    ),
    ("domain", re.compile(r"\b(what (is|are|does)|mean|defin|term|concept|invariant|business|domain)", re.I)),
    ("style", re.compile(r"\b(style|format|naming|convention|lint|ui|ux|tone|colou?r|layout|css)", re.I)),
]
DEFAULT_PORT = 47823


def home_dir() -> str:
    explicit = env_str("YULLU_HOME")
    if explicit:
        return os.path.expanduser(explicit)
    xdg = env_str("XDG_DATA_HOME")
    return os.path.join(xdg or os.path.join(os.path.expanduser("~"), ".local", "share"), "yullu")


def yullu_home() -> Path:
    from pathlib import Path

    return Path(home_dir())


def server_port() -> int:
    """YULLU_PORT (installed hooks set it), else `[server].port` of the config file, else the default."""
    port = env_str("YULLU_PORT")
    if port.isdigit():
        return int(port)
    try:
        return int(config_value("server", "port", DEFAULT_PORT))
    except (ValueError, TypeError):
        return DEFAULT_PORT


def config_value(section: str, key: str, default: Any) -> Any:
    """`[section].key` of the config file, or `default` when the file, the table or the key is missing or
    unreadable (hooks run without site-packages: no yullu_core.config, only tomllib)."""
    import tomllib  # only when a hook needs the file

    path = env_str("YULLU_CONFIG") or os.path.join(os.path.expanduser("~"), ".config", "yullu", "config.toml")
    try:
        with open(path, "rb") as fh:
            table = tomllib.load(fh).get(section, {})
    except (OSError, ValueError):
        return default
    return table.get(key, default) if isinstance(table, dict) else default


def hook_argv(verb: str) -> list[str]:
    """How an assistant runs hook `verb`: this interpreter, isolated and without site-packages
    (see hook_entry.py), on the entry next to this module."""
    entry = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hook_entry.py")
    return [sys.executable, "-I", "-S", entry, verb]


def server_url() -> str:
    """YULLU_SERVER (a team server: `yullu install --server URL` pins it), else this machine's server."""
    remote = env_str("YULLU_SERVER").rstrip("/")
    return remote or f"http://127.0.0.1:{server_port()}"


# What a token file holds: one word of printable ASCII (`yl_…`, or a team server's token as given to `yullu install`).
TOKEN_TEXT = re.compile(r"[!-~]+")


def token() -> str:
    """The token in $YULLU_HOME/token, or "" when there is none: no file, one this user may not read, or one that
    holds no token (empty, binary, several words: a damaged file). Chaos round 25: a file that was not UTF-8 raised
    UnicodeDecodeError out of `yullu mcp-headers` (Claude Code's MCP connection), `yullu doctor` and `yullu token`."""
    try:
        with open(os.path.join(home_dir(), "token"), "rb") as fh:
            text = fh.read(4096).decode("ascii", errors="replace").strip()
    except OSError:
        return ""
    return text if TOKEN_TEXT.fullmatch(text) else ""


def damaged_token_file() -> str | None:
    """One sentence when the token file is there and readable but holds no token (empty or damaged): the hooks
    then send none, each is refused in silence, and `yullu doctor` said "ok server … ready"."""
    path = os.path.join(home_dir(), "token")
    try:
        with open(path, "rb"):
            pass
    except OSError:
        return None
    if token():
        return None
    return f"the API token file {path} holds no token (it is empty or damaged)"


def is_trivial(text: str) -> bool:
    return len(normalise(text)) < MIN_PROMPT_CHARS or is_acknowledgement(text)


def category_hints(prompt: str) -> list[str]:
    return [name for name, pattern in HINTS if pattern.search(prompt)]


def target() -> tuple[str, str, int, str, bool]:
    """(Host header, host, port, path prefix, TLS?) of the server: YULLU_SERVER when set (a team
    server, pinned by `yullu install --server URL`), else this machine's on 127.0.0.1."""
    remote = env_str("YULLU_SERVER").rstrip("/")
    if not remote:
        port = server_port()
        return f"127.0.0.1:{port}", "127.0.0.1", port, "", False
    from urllib.parse import urlsplit  # light (no email/ssl); only for a team server

    url = urlsplit(remote)
    tls = url.scheme == "https"
    port = url.port or (443 if tls else 80)
    return url.netloc.rsplit("@", 1)[-1], url.hostname or "", port, url.path, tls


def post(path: str, body: dict[str, Any]) -> Any:
    """POST `body` as JSON to the server (`target()`); the decoded JSON answer.

    One HTTP/1.1 exchange over a plain socket (`Connection: close`, read to the end): urllib and
    http.client import email, ssl and more, ~20 ms per hook run. The whole exchange, connect to
    last byte, gets TIMEOUT seconds. Raises OSError (refused, timed out) or ValueError (not a 2xx,
    malformed answer)."""
    deadline = time.monotonic() + TIMEOUT
    authority, host, port, prefix, tls = target()
    data = json.dumps(body).encode()
    head = (
        f"POST {prefix}{path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {token()}\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    chunks = []
    # Not create_connection(): its getaddrinfo() imports the idna codec (~1 ms) for a literal address.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as raw:
        raw.settimeout(TIMEOUT)
        raw.connect((host, port))
        sock = raw
        if tls:  # a team server behind HTTPS; ssl is imported only then
            import ssl

            sock = ssl.create_default_context().wrap_socket(raw, server_hostname=host)
        sock.sendall(head.encode() + data)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no complete answer from {path} within {TIMEOUT} s")
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return json.loads(response_body(b"".join(chunks)) or b"{}")


class Refused(ValueError):
    """A 400 answer: the server's one-sentence `error`."""


class Unavailable(OSError):
    """A 5xx or 429 answer: the server is up but cannot serve now (starting, its database gone); like a
    refused connection, what was sent did not arrive and may be sent again later."""


def response_body(raw: bytes) -> bytes:
    """The body of a complete HTTP/1.1 response (Content-Length, chunked, or ended by close)."""
    head, found, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split(" ", 2)
    if found and len(status) >= 2 and status[1] == "400":
        try:
            error = json.loads(_body(lines, body)).get("error")
        except (ValueError, AttributeError):
            error = None
        raise Refused(str(error or lines[0][:100]))
    # 429 too: a rate limit says "later", like a server that cannot answer now (review 22: a turn answered 429 was
    # dropped as an unexpected answer, not kept for the next Stop hook).
    if found and len(status) >= 2 and (status[1].startswith("5") or status[1] == "429"):
        raise Unavailable(f"the server cannot answer now: {lines[0][:100]!r}")
    if not found or len(status) < 2 or not status[1].startswith("2"):
        raise ValueError(f"unexpected answer: {lines[0][:100]!r}")
    return _body(lines, body)


def _body(lines: list[str], body: bytes) -> bytes:
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return dechunk(body)
    if "content-length" in headers:
        length = int(headers["content-length"])
        if len(body) < length:
            raise ValueError("truncated answer")
        return body[:length]
    return body


def dechunk(body: bytes) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)  # ValueError on a truncated or malformed answer
        if size == 0:
            return b"".join(parts)
        if len(body) < size + 2:
            raise ValueError("truncated chunk")
        parts.append(body[:size])
        body = body[size + 2 :]


def read_stdin_json() -> dict[str, Any]:
    try:
        data = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


INJECT_BUDGET = 600  # tokens for the prompt hook's block (docs/contract.md §10: bounded by tokens, not by count)
PRIMER_BUDGET = 800


def where(cwd: str) -> dict[str, str]:
    """The project of a request: this machine's server resolves `cwd` itself; a team server
    (YULLU_SERVER) cannot see the laptop's folders, so the hook names the project, computed here by
    the same rules (yullu_core.gitorigin, standard library only)."""
    return named(cwd) if env_is_set("YULLU_SERVER") else {"cwd": cwd}


def named(cwd: str) -> dict[str, str]:
    """The project of `cwd` as the hook computes it (yullu_core.gitorigin, standard library only)."""
    from yullu_core.gitorigin import project_id_of

    return {"project_id": project_id_of(cwd)}


def post_about(path: str, body: dict[str, Any], cwd: str) -> Any:
    """POST `body` about the project of `cwd` (none when `cwd` is empty). This machine's server
    refuses a `cwd` outside its [server].allowed_roots (the home by default), and the hook went
    silent for a checkout elsewhere (/srv, /tmp). The hook runs as this machine's user, as the CLI
    does (not confined): it then names the project itself, as the refusal says to."""
    if not cwd:
        return post(path, body)
    try:
        return post(path, {**body, **where(cwd)})
    except Refused as exc:
        if "allowed_roots" not in str(exc) or env_is_set("YULLU_SERVER"):
            raise
    return post(path, {**body, **named(cwd)})


def context(body: dict[str, Any], cwd: str = "") -> str:
    """The server's ready block (`POST /api/context`); empty when nothing fits or is relevant."""
    return str(post_about("/api/context", body, cwd).get("context") or "")


QUERY_CHARS = 4000  # of a prompt, what the hook sends (the server's search reads up to 10,000)


def prompt_excerpt(prompt: str, limit: int = QUERY_CHARS) -> str:
    """The prompt as the hook sends it: whole when it fits, else its start and its end. People put
    the task first and often the question last, with a paste (a log, a diff, a file) between: the
    first 4,000 characters alone lost a question asked after a long paste."""
    if len(prompt) <= limit:
        return prompt
    half = (limit - 3) // 2
    return f"{prompt[:half]}\n…\n{prompt[-half:]}"


def recall(prompt: str, cwd: str) -> str:
    """The block for `prompt`, the hinted categories' relevant memories first (the server searches
    unfiltered and orders by the hints, in one request: a second would queue again behind everything
    a busy server is doing)."""
    body: dict[str, Any] = {"query": prompt_excerpt(prompt), "budget_tokens": INJECT_BUDGET}
    hints = category_hints(prompt)
    if hints:
        body["prefer_categories"] = hints
    return context(body, cwd)


def emit(block: str) -> None:
    """Print a context block. A reader that left (`yullu inject | head`, an assistant that stopped waiting)
    is no error: a hook always exits 0 (found on the walk: a BrokenPipeError traceback)."""
    try:
        print(escape_controls(block), flush=True)  # a teammate's terminal escapes never reach the terminal
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush


def inject() -> int:
    data = read_stdin_json()
    prompt = str(data.get("prompt") or "")
    if is_trivial(prompt):
        return 0
    try:
        block = recall(prompt, str(data.get("cwd") or ""))
    except (OSError, ValueError):
        return 0  # server down, slow or unhappy: never block the prompt
    if block:
        emit(block)
    return 0


def session_start() -> int:
    """SessionStart hook: the project primer within PRIMER_BUDGET tokens (stdout joins the context), after
    the checkout's team log is applied."""
    data = read_stdin_json()
    cwd = str(data.get("cwd") or "")
    apply_team_log(cwd)
    try:
        block = context({"budget_tokens": PRIMER_BUDGET}, cwd)
    except (OSError, ValueError):
        return 0
    if block:
        emit(block)
    return 0


def apply_team_log(cwd: str) -> None:
    """Reconcile the team log committed in the checkout of `cwd`, if it has one. Reads never record where a
    checkout lives, so in a teammate's fresh clone this machine's server had applied none of the log: no
    primer, no recall, `yullu memories list` "0 shown", until something was written there (walk 21). With
    nothing new the server lists the folder and stops (~0.2 s). A team server reconciles its own checkout."""
    if not cwd or env_is_set("YULLU_SERVER"):
        return
    from pathlib import Path

    from yullu_core.gitorigin import find_git_root  # standard library only, shared with the server's scoping

    root = find_git_root(Path(os.path.abspath(cwd)))
    if root is not None and (root / str(config_value("sync", "dir", ".yullu"))).is_dir():  # a team may rename it
        with contextlib.suppress(OSError, ValueError):  # down, slow, refused: the primer still comes
            post_about("/api/reconcile", {}, cwd)


TEXT_BLOCKS = ("text", "input_text", "output_text")
MAX_SEND = 100  # messages per POST (the server takes up to 200)


def text_of(message: Any) -> str:
    """Text blocks of a transcript message; tool calls, tool results and reasoning are ignored."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") in TEXT_BLOCKS
        )
    return ""


def turn_of(entry: Any) -> tuple[str, str] | None:
    """(role, text) of one transcript line, for the formats we read:
    - Claude Code: {"type": "user"|"assistant", "message": {"content": ...}}
    - Codex session files (~/.codex/sessions/**/rollout-*.jsonl):
      {"type": "response_item", "payload": {"type": "message", "role": ..., "content": [...]}}
      (older files: the payload's fields at the top level)
    - OpenCode messages (`opencode export` JSON, one per element of "messages"):
      {"info": {"role": ...}, "parts": [{"type": "text", "text": ...}, ...]}
    - OpenAI-style chat lines: {"role": ..., "content": ...}
    Anything else (tool calls, reasoning, metadata, system/developer prompts) is None."""
    if not isinstance(entry, dict):
        return None
    info = entry.get("info")
    if isinstance(info, dict) and info.get("role") in ("user", "assistant") and isinstance(entry.get("parts"), list):
        parts = [p for p in entry["parts"] if isinstance(p, dict) and not p.get("synthetic")]
        return str(info["role"]), "\n".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")
    if entry.get("type") in ("user", "assistant") and isinstance(entry.get("message"), dict):
        return str(entry["type"]), text_of(entry["message"])
    if entry.get("type") == "response_item" and isinstance(entry.get("payload"), dict):
        entry = entry["payload"]
    if entry.get("type") in (None, "message") and entry.get("role") in ("user", "assistant"):
        text = text_of(entry)
        if entry["role"] == "user" and text.lstrip().startswith(("<environment_context>", "<user_instructions>")):
            return None  # Codex injects these as user messages; they are not the user's words
        return str(entry["role"]), text
    return None


def _entries(transcript: str | Path) -> Iterator[Any]:
    """Transcript entries: JSON Lines, or (a `.json` file) one document with a "messages" list."""
    with open(transcript, encoding="utf-8", errors="replace") as fh:
        if os.fspath(transcript).endswith(".json"):
            try:
                doc = json.load(fh)
            except ValueError:
                return
            yield from (doc.get("messages") or []) if isinstance(doc, dict) else []
            return
        for line in fh:
            try:
                yield json.loads(line)
            except ValueError:
                continue


def read_turns(transcript: str | Path) -> list[tuple[str, str]]:
    turns = []
    for entry in _entries(transcript):
        turn = turn_of(entry)
        if turn is not None and turn[1].strip():
            turns.append((turn[0], turn[1].strip()))
    return turns


def last_turn(transcript: str | Path) -> tuple[str, str]:
    """The last user text and the assistant text after it."""
    return last_exchange(read_turns(transcript))


def last_user_at(entries: list[tuple[str, str]]) -> int:
    return max((i for i, (kind, _) in enumerate(entries) if kind == "user"), default=-1)


def last_exchange(entries: list[tuple[str, str]]) -> tuple[str, str]:
    user_at = last_user_at(entries)
    if user_at < 0:
        return "", ""
    reply = "\n".join(text for kind, text in entries[user_at + 1 :] if kind == "assistant")
    return entries[user_at][1], reply.strip()


def send_turns(session_id: str, cwd: Any, turns: list[tuple[str, str]]) -> None:
    messages = [{"role": role, "content": text[:100_000]} for role, text in turns if text.strip()]
    if not messages:
        return
    for at in range(0, len(messages), MAX_SEND):
        body: dict[str, Any] = {"session_id": session_id[:200], "messages": messages[at : at + MAX_SEND]}
        post_about("/api/messages", body, str(cwd or ""))


def worth_keeping(user: str, assistant: str) -> bool:
    return not (is_trivial(user) and len(assistant) < 40)


def record(session_id: str, cwd: Any, user: str, assistant: str) -> None:
    if worth_keeping(user, assistant):
        send_turns(session_id, cwd, [("user", user), ("assistant", assistant)])


def stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def record_turn() -> int:
    """Stop hook (Claude Code), or any caller giving `transcript_path` in one of our formats. A turn
    the server does not take (down, unreachable, a team server offline) is remembered, and sent with
    the session's later turns by the next record-turn the server takes (walk 19: the turns of an hour
    offline never reached the dream buffer, each Stop sending only its own last exchange). While the
    session's earlier turns wait, this one is sent with them, after them (the buffer is read in the order
    it was written: walk 20 found Q1 Q4 Q2 Q3)."""
    data = read_stdin_json()
    path = str(data.get("transcript_path") or "")
    if not os.path.isfile(path):
        return 0
    session = str(data.get("session_id") or stem(path))
    marker = unsent_marker(session)
    if os.path.exists(marker) and waits_or_sent(marker):  # the transcript from the noted turn on holds this one
        return 0
    try:
        turns = read_turns(path)
    except OSError:
        return 0
    try:
        record(session, data.get("cwd"), *last_exchange(turns))
    except OSError:  # the server did not get it (Unavailable too): a later turn sends it
        remember_unsent(session, path, data.get("cwd"), last_user_at(turns))
        return 0
    except ValueError:
        return 0
    send_unsent()
    return 0


UNSENT_DIR = "unsent-turns"  # in $YULLU_HOME/run: one file per session whose turns did not arrive
MAX_UNSENT_SESSIONS = 20  # sessions caught up by one hook run (a hook must stay quick)
MAX_UNSENT_TURNS = 1000  # a session's latest unsent turns, as pre_compact sends: a day offline is not one hook's job


def unsent_marker(session_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:120]
    return os.path.join(home_dir(), "run", UNSENT_DIR, f"{safe}.json")


def remember_unsent(session_id: str, transcript: str, cwd: Any, first: int) -> None:
    """Where a session's unsent turns start in its transcript; the first failure's place is kept."""
    marker = unsent_marker(session_id)
    if os.path.exists(marker):
        return
    note = {"session_id": session_id, "transcript_path": transcript, "cwd": str(cwd or ""), "from": max(first, 0)}
    note["server"] = server_url()  # sent there only: not to the server a later hook talks to (another YULLU_SERVER)
    partial = f"{marker}.{os.getpid()}.tmp"  # two Stop hooks of one session at once each write their own
    try:
        os.makedirs(os.path.dirname(marker), mode=0o700, exist_ok=True)
        with open(partial, "w", encoding="utf-8") as fh:
            json.dump(note, fh)
        os.replace(partial, marker)
    except OSError:  # a home we cannot write to: the turn is lost, as before
        with contextlib.suppress(OSError):
            os.unlink(partial)


def waits_or_sent(marker: str) -> bool:
    """After this hook's turn joined a session's waiting turns: true when this call sent them, or they still
    wait (the turn waits with them). False when another hook sent and removed them meanwhile: it may have read
    them before this turn joined, so the caller sends this turn itself (the buffer skips turns it holds);
    returning there lost the turn (review23)."""
    return marker in send_unsent(first=marker) or os.path.exists(marker)


def send_unsent(first: str | None = None) -> set[str]:
    """The turns earlier Stop hooks could not send, from where each session's first failure was (the
    server skips turns its buffer already holds). A session whose turns were meant for another server (a team
    server's checkout, this hook run in a personal one with its own YULLU_SERVER) is left for a hook that talks
    to that server: its turns are not ours to give this one.

    `first`: the calling session's note, tried before the others, so no other conversation's waiting turns hold
    back its own. A session the server answers 5xx or 429 waits and the next is tried (round 24: one session's
    catch-up that a proxy answered 504 every time held every session sorted after it, and their next turns,
    for as long as it failed); a refused, unreachable or timed-out send ends the run (the server is away or
    slow: trying the rest would cost each a TIMEOUT, and a hook must stay quick)."""
    folder = os.path.join(home_dir(), "run", UNSENT_DIR)
    try:
        names = sorted(name for name in os.listdir(folder) if name.endswith(".json"))
    except OSError:
        return set()
    if first is not None and (own := os.path.basename(first)) in names:
        names.insert(0, names.pop(names.index(own)))
    here, tried = server_url(), 0
    sent: set[str] = set()
    for name in names:
        marker = os.path.join(folder, name)
        session, cwd, server, turns = unsent_turns(marker)
        if server not in ("", here):
            continue
        if (tried := tried + 1) > MAX_UNSENT_SESSIONS:
            return sent
        kept = [(r, t) for r, t in turns if not (r == "user" and is_trivial(t))][-MAX_UNSENT_TURNS:]
        try:
            send_turns(session or name[:-5], cwd, kept)
        except Unavailable:
            continue  # this session's turns wait; the server answers, so the others may go
        except OSError:
            return sent
        except ValueError:
            pass  # refused (a project no longer ours, a bad turn): sending it again would not help
        try:
            os.remove(marker)
        except OSError:
            return sent
        sent.add(marker)
        with contextlib.suppress(OSError):  # sent: the turns a notify kept (a Claude Code session has none)
            os.remove(kept_turns(marker))
    return sent


def unsent_turns(marker: str) -> tuple[str, str, str, list[tuple[str, str]]]:
    """(session id, cwd, the server they were meant for, the turns from the first unsent one) of a marker;
    no turns when the transcript or the marker cannot be read (nothing left to send)."""
    try:
        with open(marker, encoding="utf-8") as fh:
            note = json.load(fh)
        turns = read_turns(str(note["transcript_path"]))[int(note["from"]) :]
        server = str(note.get("server") or "")
        return str(note.get("session_id") or ""), str(note.get("cwd") or ""), server, turns
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "", "", "", []


def pre_compact() -> int:
    """PreCompact hook: the whole transcript goes to the dream buffer before it is compacted away
    (the server skips turns the buffer already holds)."""
    data = read_stdin_json()
    path = str(data.get("transcript_path") or "")
    if not os.path.isfile(path):
        return 0
    try:
        turns = [(r, t) for r, t in read_turns(path) if not (r == "user" and is_trivial(t))]
        send_turns(str(data.get("session_id") or stem(path)), data.get("cwd"), turns[-1000:])
    except (OSError, ValueError):
        return 0
    return 0


def codex_notify(argv: list[str]) -> int:
    """Codex's `notify` program: the last argument is JSON ({"type": "agent-turn-complete",
    "thread-id", "turn-id", "cwd", "input-messages": [...], "last-assistant-message"})."""
    try:
        data = json.loads(argv[-1]) if argv else {}
    except ValueError:
        return 0
    if not isinstance(data, dict) or data.get("type") != "agent-turn-complete":
        return 0
    inputs = data.get("input-messages") or []
    user = "\n".join(str(m) for m in inputs if isinstance(m, str)).strip()
    assistant = str(data.get("last-assistant-message") or "").strip()
    session = "codex-" + str(data.get("thread-id") or data.get("turn-id") or "codex")
    if os.path.exists(unsent_marker(session)):  # this thread's earlier turns wait: this one goes after them
        if not worth_keeping(user, assistant):
            send_unsent(first=unsent_marker(session))
            return 0
        keep_unsent(session, data.get("cwd"), [("user", user), ("assistant", assistant)])
        if waits_or_sent(unsent_marker(session)):
            return 0
    try:
        record(session, data.get("cwd"), user, assistant)
    except OSError:  # the server did not get it: kept, and sent by the next hook the server takes (walk 20)
        keep_unsent(session, data.get("cwd"), [("user", user), ("assistant", assistant)])
        return 0
    except ValueError:
        return 0
    send_unsent()
    return 0


def kept_turns(marker: str) -> str:
    """Beside a session's note, the turns kept for a client that gives the turn itself, not a transcript."""
    return marker[: -len(".json")] + ".jsonl"


def keep_unsent(session_id: str, cwd: Any, turns: list[tuple[str, str]]) -> None:
    """Codex's notify hands over one turn and keeps no file we know how to find again, so an unsent turn is
    appended to a transcript of our own (OpenAI-style lines, which read_turns reads) that send_unsent sends
    like any other session's and removes with its note."""
    path = kept_turns(unsent_marker(session_id))
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a", encoding="utf-8") as fh:
            fh.writelines(json.dumps({"role": role, "content": text}) + "\n" for role, text in turns)
    except OSError:  # a home we cannot write to: the turn is lost, as before
        return
    remember_unsent(session_id, path, cwd, 0)


def mcp_headers() -> int:
    """`headersHelper` of the Claude Code plugin's MCP server: the bearer token as a JSON header
    object, read from $YULLU_HOME/token at each connection (so it never sits in a plugin file).
    Exit 1 with one sentence when there is none: the file it read and both ways to fill it, since Claude Code
    may start without the shell's YULLU_HOME (the old sentence named the folder but neither the file nor the
    variable that picks it)."""
    secret = token()
    if not secret:
        print(f"yullu: {_no_token()}", file=sys.stderr)
        return 1
    print(json.dumps({"Authorization": f"Bearer {secret}"}))
    return 0


def _no_token() -> str:
    """Why there is no token to send: none yet, or a file this user may not read (a home of another
    user's, or chmod 000, was said as "no API token yet", round nine)."""
    path = os.path.join(home_dir(), "token")
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        pass
    except OSError as exc:
        fix = f"fix the owner and mode of {home_dir()}, or set YULLU_HOME."
        return f"the API token {path} cannot be read ({exc.strerror}); {fix}"
    if damaged := damaged_token_file():
        return f"{damaged}; run `yullu token` to write a new one there."
    return (
        f"no API token in {path}; run `yullu token` once to write it there, or set YULLU_HOME "
        "to the folder of the server you run (its `yullu serve` banner says where its token is)."
    )


VERBS = {
    "inject": inject,
    "record-turn": record_turn,
    "session-start": session_start,
    "pre-compact": pre_compact,
    "mcp-headers": mcp_headers,
}


def main(argv: list[str]) -> int:
    """`hook_entry.py VERB [ARGS]`: run one hook (the `yullu` command dispatches here as well)."""
    verb = argv[0] if argv else ""
    if verb == "codex-notify":
        return codex_notify(argv[1:])
    if verb in VERBS:
        return VERBS[verb]()
    print(f"yullu hook: unknown hook {verb!r} (expected one of {', '.join([*VERBS, 'codex-notify'])})", file=sys.stderr)
    return 1

"""`record-turn` while the server is away (walk 19): the turns of a session spent offline reach the dream
buffer once the server takes a turn again, instead of only the exchange of the Stop that found it back."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from yullu_cli import hooks


class Server:
    """hooks.post's stand-in: down (a refused connection, or a 503 while it starts) or up (keeps what came)."""

    def __init__(self) -> None:
        self.down: OSError | None = None
        self.buffer: list[tuple[str, str, str]] = []

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.down is not None:
            raise self.down
        assert path == "/api/messages"
        for m in body["messages"]:
            row = (body["session_id"], m["role"], m["content"])
            if row not in self.buffer:  # as record_messages: turns the buffer holds are skipped
                self.buffer.append(row)
        return {"count": len(body["messages"])}


def turn(transcript: Path, n: int) -> None:
    with transcript.open("a") as fh:
        fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": f"question {n} about refunds"}}))
        fh.write("\n")
        answer = {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}: refunds are synchronous"}]}
        fh.write(json.dumps({"type": "assistant", "message": answer}) + "\n")


def stop_hook(monkeypatch: pytest.MonkeyPatch, transcript: Path, session: str = "s1") -> int:
    stdin = {"transcript_path": str(transcript), "session_id": session, "cwd": ""}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(stdin)))
    return hooks.record_turn()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Server:
    monkeypatch.setenv("YULLU_HOME", str(tmp_path / "home"))
    fake = Server()
    monkeypatch.setattr(hooks, "post", fake.post)
    return fake


@pytest.mark.parametrize("outage", [ConnectionRefusedError(111, "refused"), hooks.Unavailable("503")])
def test_turns_of_an_outage_arrive_with_the_first_turn_after_it(
    server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, outage: OSError
) -> None:
    transcript = tmp_path / "t.jsonl"
    turn(transcript, 1)
    assert stop_hook(monkeypatch, transcript) == 0
    server.down = outage
    for n in (2, 3):
        turn(transcript, n)
        assert stop_hook(monkeypatch, transcript) == 0
    server.down = None
    turn(transcript, 4)
    assert stop_hook(monkeypatch, transcript) == 0
    questions = [content for _, role, content in server.buffer if role == "user"]
    assert questions == [f"question {n} about refunds" for n in (1, 2, 3, 4)]  # in order (walk 20: 1, 4, 2, 3)
    assert not list((tmp_path / "home" / "run" / hooks.UNSENT_DIR).iterdir())  # caught up: nothing left
    turn(transcript, 5)
    stop_hook(monkeypatch, transcript)
    assert len(server.buffer) == 10  # each turn once


def test_a_session_left_offline_is_sent_by_another_sessions_turn(
    server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The session that went offline may never stop again: the next turn of any session sends it."""
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    server.down = ConnectionRefusedError(111, "refused")
    turn(old, 1)
    stop_hook(monkeypatch, old, "old")
    server.down = None
    turn(new, 1)
    stop_hook(monkeypatch, new, "new")
    assert {(session, role) for session, role, _ in server.buffer} == {
        ("new", "user"),
        ("new", "assistant"),
        ("old", "user"),
        ("old", "assistant"),
    }


def test_a_gone_transcript_is_given_up(server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gone, live = tmp_path / "gone.jsonl", tmp_path / "live.jsonl"
    server.down = ConnectionRefusedError(111, "refused")
    turn(gone, 1)
    stop_hook(monkeypatch, gone, "gone")
    gone.unlink()
    server.down = None
    turn(live, 1)
    assert stop_hook(monkeypatch, live, "live") == 0
    assert {session for session, _, _ in server.buffer} == {"live"}
    assert not list((tmp_path / "home" / "run" / hooks.UNSENT_DIR).iterdir())


def test_a_long_outage_sends_the_latest_turns_only(
    server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A session offline for a long time: the Stop that finds the server back sends its latest MAX_UNSENT_TURNS
    turns (as pre_compact does), not every turn since the outage began in one hook run."""
    transcript = tmp_path / "t.jsonl"
    server.down = ConnectionRefusedError(111, "refused")
    turn(transcript, 0)
    stop_hook(monkeypatch, transcript)
    for n in range(1, hooks.MAX_UNSENT_TURNS):  # MAX_UNSENT_TURNS exchanges more: twice as many turns
        turn(transcript, n)
    server.down = None
    stop_hook(monkeypatch, transcript)
    questions = {content for _, role, content in server.buffer if role == "user"}
    latest = range(hooks.MAX_UNSENT_TURNS // 2, hooks.MAX_UNSENT_TURNS)
    assert questions == {f"question {n} about refunds" for n in latest}  # the latest MAX_UNSENT_TURNS turns
    assert len(server.buffer) == hooks.MAX_UNSENT_TURNS


def test_turns_meant_for_a_team_server_are_not_given_to_another_server(
    server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One home, two servers: a session in the team's checkout (YULLU_SERVER pinned to the team server) went
    unsent while it was offline; a turn in a personal checkout, talking to this machine's server, must not send
    the team session's turns there. The team server gets them once a hook talks to it again."""
    team, personal = tmp_path / "team.jsonl", tmp_path / "personal.jsonl"
    monkeypatch.setenv("YULLU_SERVER", "https://team.example")
    server.down = ConnectionRefusedError(111, "refused")
    turn(team, 1)
    stop_hook(monkeypatch, team, "team")
    server.down = None
    monkeypatch.delenv("YULLU_SERVER")
    turn(personal, 1)
    stop_hook(monkeypatch, personal, "personal")
    assert {session for session, _, _ in server.buffer} == {"personal"}
    monkeypatch.setenv("YULLU_SERVER", "https://team.example")
    turn(team, 2)
    stop_hook(monkeypatch, team, "team")
    assert [c for s, r, c in server.buffer if s == "team" and r == "user"] == [
        "question 1 about refunds",
        "question 2 about refunds",
    ]


def test_another_hooks_partial_note_does_not_lose_this_ones(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Review 22: two Stop hooks of one session wrote the same `<note>.tmp`; one's partial file in the way (here
    a folder, that never becomes a file) made the other's note fail, and its unsent turns were skipped."""
    monkeypatch.setenv("YULLU_HOME", str(tmp_path / "home"))
    marker = hooks.unsent_marker("s-race")
    os.makedirs(f"{marker}.tmp")  # the other hook's partial note, mid-write
    hooks.remember_unsent("s-race", str(tmp_path / "t.jsonl"), tmp_path, 3)
    with open(marker, encoding="utf-8") as fh:
        assert json.load(fh)["from"] == 3
    assert not [name for name in os.listdir(os.path.dirname(marker)) if name.endswith(f"{os.getpid()}.tmp")]


@pytest.mark.parametrize("status", ["429 Too Many Requests", "503 Service Unavailable"])
def test_a_rate_limited_answer_is_a_later_not_a_refusal(status: str) -> None:
    """Review 22: a turn answered 429 (a rate limit) raised 'unexpected answer' and was dropped; like a 5xx it
    is Unavailable now, so record-turn keeps it for the session's next turn."""
    with pytest.raises(hooks.Unavailable):
        hooks.response_body(f"HTTP/1.1 {status}\r\nContent-Length: 2\r\n\r\n{{}}".encode())


def codex_turn(n: int, thread: str = "t-1") -> list[str]:
    """Codex's notify argv: the program's own arguments, then the turn as JSON."""
    turn = {
        "type": "agent-turn-complete",
        "thread-id": thread,
        "turn-id": f"turn-{n}",
        "cwd": "",
        "input-messages": [f"question {n} about refunds"],
        "last-assistant-message": f"answer {n}: refunds are synchronous",
    }
    return ["codex-notify", json.dumps(turn)]


@pytest.mark.parametrize("outage", [ConnectionRefusedError(111, "refused"), hooks.Unavailable("503")])
def test_codex_turns_of_an_outage_arrive_with_the_first_turn_after_it(
    server: Server, tmp_path: Path, outage: OSError
) -> None:
    """Walk 20: Codex's notify gives the turn itself and no transcript, and a turn the server did not take was
    lost; it is kept now, and the next notify (or Stop hook) the server takes sends it, once."""
    assert hooks.codex_notify(codex_turn(1)) == 0
    server.down = outage
    for n in (2, 3):
        assert hooks.codex_notify(codex_turn(n)) == 0
    server.down = None
    assert hooks.codex_notify(codex_turn(4)) == 0
    questions = [content for _, role, content in server.buffer if role == "user"]
    assert questions == [f"question {n} about refunds" for n in (1, 2, 3, 4)]  # in order (walk 20: 1, 4, 2, 3)
    assert {session for session, _, _ in server.buffer} == {"codex-t-1"}
    assert not list((tmp_path / "home" / "run" / hooks.UNSENT_DIR).iterdir())  # caught up: nothing left
    hooks.codex_notify(codex_turn(5))
    assert len(server.buffer) == 10  # each turn once


def test_a_codex_turn_kept_offline_is_sent_by_a_claude_code_stop(
    server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server.down = ConnectionRefusedError(111, "refused")
    hooks.codex_notify(codex_turn(1, "offline"))
    kept = Path(hooks.kept_turns(hooks.unsent_marker("codex-offline")))
    assert kept.stat().st_mode & 0o077 == 0  # the user's words: this user's only
    server.down = None
    transcript = tmp_path / "claude.jsonl"
    turn(transcript, 7)
    stop_hook(monkeypatch, transcript, "claude")
    assert {(s, r) for s, r, _ in server.buffer} >= {("codex-offline", "user"), ("codex-offline", "assistant")}
    assert not kept.exists()


def another_hook_sends_what_waits_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hook of another session, running at once, reads the waiting turns now; it sends them and removes their
    note only after this hook's turn has joined them (its send_unsent then finds nothing left)."""
    folder = Path(os.environ["YULLU_HOME"]) / "run" / hooks.UNSENT_DIR
    read = {marker: hooks.unsent_turns(str(marker)) for marker in folder.glob("*.json")}

    def racing(first: str | None = None) -> set[str]:
        while read:
            marker, (session, cwd, _, turns) = read.popitem()
            hooks.send_turns(session, cwd, turns)
            marker.unlink()
            Path(hooks.kept_turns(str(marker))).unlink(missing_ok=True)
        return set()

    monkeypatch.setattr(hooks, "send_unsent", racing)


def test_a_turn_joining_turns_another_hook_sends_at_once_is_not_lost(
    server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """review23: a Stop hook finding its session's turns waiting left them to send_unsent and returned; when a
    hook of another session had read them (before this turn) and removed their note meanwhile, this turn was
    sent by no one."""
    transcript = tmp_path / "t.jsonl"
    turn(transcript, 1)
    stop_hook(monkeypatch, transcript)
    server.down = ConnectionRefusedError(111, "refused")
    turn(transcript, 2)
    stop_hook(monkeypatch, transcript)
    server.down = None
    another_hook_sends_what_waits_now(monkeypatch)
    turn(transcript, 3)
    stop_hook(monkeypatch, transcript)
    questions = [content for _, role, content in server.buffer if role == "user"]
    assert questions == [f"question {n} about refunds" for n in (1, 2, 3)]


def test_a_codex_turn_joining_turns_another_hook_sends_at_once_is_not_lost(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review23: the notify appended its turn to the kept file, which the other hook removed unread."""
    hooks.codex_notify(codex_turn(1))
    server.down = ConnectionRefusedError(111, "refused")
    hooks.codex_notify(codex_turn(2))
    server.down = None
    another_hook_sends_what_waits_now(monkeypatch)
    hooks.codex_notify(codex_turn(3))
    questions = [content for _, role, content in server.buffer if role == "user"]
    assert questions == [f"question {n} about refunds" for n in (1, 2, 3)]


@pytest.mark.parametrize("stuck", [hooks.Unavailable("504 Gateway Timeout"), TimeoutError("no complete answer")])
def test_a_session_the_server_will_not_take_does_not_hold_back_the_others(
    server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stuck: OSError
) -> None:
    """Round 24: send_unsent stopped at the first session whose send failed, in name order; one session's
    catch-up that the server (or its proxy) would not take held every session named after it, and their next
    turns (each waits behind its own noted turns), for as long as it failed. The calling session goes first;
    past a 5xx the others go too (a timeout ends the run: the rest would each cost one)."""
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    server.down = ConnectionRefusedError(111, "refused")
    for path, session in ((a, "a-stuck"), (b, "b"), (c, "c")):
        turn(path, 1)
        stop_hook(monkeypatch, path, session)
    server.down = None
    up = server.post

    def refuses_a(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["session_id"] == "a-stuck":
            raise stuck
        return up(path, body)

    monkeypatch.setattr(hooks, "post", refuses_a)
    turn(b, 2)
    assert stop_hook(monkeypatch, b, "b") == 0
    assert [content for s, role, content in server.buffer if s == "b" and role == "user"] == [
        "question 1 about refunds",
        "question 2 about refunds",
    ]
    waiting = sorted(p.name for p in (tmp_path / "home" / "run" / hooks.UNSENT_DIR).iterdir())
    if isinstance(stuck, hooks.Unavailable):  # c, which may never stop again, went too
        assert [s for s, role, _ in server.buffer if role == "user"] == ["b", "b", "c"]
        assert waiting == ["a-stuck.json"]
    else:
        assert waiting == ["a-stuck.json", "c.json"]

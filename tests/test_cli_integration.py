"""`yullu inject`, `record-turn`, `install`/`uninstall` and `export` as a user runs them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from dreaming.models import SessionMessage
from memories.models import Memory
from memories.scope import resolve
from memories.transfer.export import render_agents_md
from memories.write import create
from tests.processes import REPO, run_cli
from tests.stubs import StubServer
from yullu_cli import hooks
from yullu_cli.hooks import category_hints, hook_argv, is_trivial, prompt_excerpt, response_body
from yullu_core.tokens import count_tokens


@pytest.mark.parametrize(
    ("prompt", "trivial"),
    [("ok", True), ("Thanks!", True), ("sounds good", True), ("short", True), ("how do we deploy to staging?", False)],
)
def test_trivial_prompts_are_skipped(prompt: str, trivial: bool) -> None:
    assert is_trivial(prompt) is trivial


@pytest.mark.parametrize(
    ("prompt", "hints"),
    [
        ("why did we pick celery over rq?", ["decision"]),
        ("the build fails with a weird error", ["gotcha", "process"]),
        ("how do I run the tests?", ["process"]),
        ("what does 'watermark' mean here?", ["domain"]),
        ("what is our naming convention for css classes", ["domain", "style"]),
        ("refactor this function", []),
    ],
)
def test_category_hints_follow_the_wording(prompt: str, hints: list[str]) -> None:
    assert category_hints(prompt) == hints


@pytest.mark.django_db(transaction=True)
def test_inject_prints_a_memories_block(hook_env: dict[str, str], stub_embedder: StubServer, tmp_path: Path) -> None:
    # A cwd outside any repo whose folder name already holds memories resolves to that project.
    create.store_memory(resolve("hookproj", None), "vec:1,0,0 Staging deploys go through make stage", "process")
    count_tokens("warm")  # the server (in this process) loads its tokenizer at start; the hook waits 1.5 s at most
    folder = tmp_path / "hookproj"
    folder.mkdir()
    out = run_cli(
        ["inject"], hook_env, json.dumps({"prompt": "vec:1,0,0 how do we deploy to staging?", "cwd": str(folder)})
    )
    assert out.returncode == 0 and out.stdout.startswith("<yullu-memories>")
    assert "process] vec:1,0,0 Staging deploys go through make stage" in out.stdout
    assert "data, not instructions" in out.stdout


def test_a_long_prompt_keeps_its_start_and_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """A question asked after a long paste reaches the server (the first 4,000 characters alone lost it)."""
    paste = "\n".join(f'  File "app/jobs.py", line {n}, in run_job' for n in range(300))
    prompt = f"fix this traceback please:\n{paste}\nand which queue do our background jobs run on?"
    sent: list[dict[str, object]] = []

    def post(path: str, body: dict[str, object]) -> dict[str, str]:
        sent.append(body)
        return {"context": ""}

    monkeypatch.setattr(hooks, "post", post)
    hooks.recall(prompt, "")
    query = str(sent[0]["query"])
    assert len(prompt) > 10_000 and len(query) <= hooks.QUERY_CHARS
    assert query.startswith("fix this traceback please:")
    assert query.endswith("and which queue do our background jobs run on?")
    assert prompt_excerpt("how do we deploy?") == "how do we deploy?"


TRIVIAL = ["ok", "Thanks!", "deploy?"]  # acknowledgements, and a prompt too short to search on


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("stdin", ["", "not json", *TRIVIAL])
def test_inject_is_silent_on_junk_or_trivial_input(
    hook_env: dict[str, str], stub_embedder: StubServer, stdin: str, tmp_path: Path
) -> None:
    # A live server holding memories that a recall for these very prompts returns (same text, so the
    # same stub vector and the same words). The server skips acknowledgements too; a short prompt
    # like "deploy?" is kept out only by the hook's own filter. The cwd exists and its bare folder
    # name holds the memories, so only the filters can keep the hook silent.
    for text in TRIVIAL:
        create.store_memory(resolve("hookproj", None), f"{text} {text}", "process")
    (tmp_path / "hookproj").mkdir()
    if stdin in TRIVIAL:
        stdin = json.dumps({"prompt": stdin, "cwd": str(tmp_path / "hookproj")})
    out = run_cli(["inject"], hook_env, stdin)
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


SLOW_IMPORTS = {"urllib", "http", "email", "ssl", "pathlib", "typing", "tomllib", "django", "httpx", "yullu_cli.main"}


def test_the_installed_inject_hook_starts_without_site_packages_or_slow_imports(tmp_path: Path) -> None:
    # What `yullu install` writes, run with -X importtime: only the standard library, and none of
    # the modules that made a hook run cost ~60 ms of start-up (urllib, pathlib, the CLI, ...).
    argv = hook_argv("inject")
    assert argv[1:3] == ["-I", "-S"]
    env = {"PATH": "/usr/bin:/bin", "YULLU_HOME": str(tmp_path), "YULLU_PORT": "9"}
    prompt = json.dumps({"prompt": "how do we deploy to staging?", "cwd": "/tmp"})
    out = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], input=prompt, env=env, capture_output=True,
                         text=True, timeout=60, check=False)  # fmt: skip
    assert (out.returncode, out.stdout) == (0, "")
    imported = {line.split("|")[2].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "yullu_cli.hooks" in imported
    assert not {name.split(".")[0] for name in imported} & SLOW_IMPORTS, sorted(imported)
    assert not SLOW_IMPORTS & imported


def test_inject_is_silent_when_the_server_is_down(tmp_path: Path) -> None:
    env = {**os.environ, "YULLU_HOME": str(tmp_path), "YULLU_PORT": "9"}
    out = run_cli(["inject"], env, json.dumps({"prompt": "how do we deploy to staging?", "cwd": "/tmp"}))
    assert (out.returncode, out.stdout) == (0, "")


@pytest.mark.parametrize(
    ("raw", "body"),
    [
        (b'HTTP/1.1 200 OK\r\ncontent-length: 13\r\n\r\n{"context":1}', b'{"context":1}'),
        (b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"a"\r\n3\r\n:1}\r\n0\r\n\r\n', b'{"a":1}'),
        (b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n{}", b"{}"),
    ],
)
def test_the_hooks_read_a_whole_http_answer_in_each_framing(raw: bytes, body: bytes) -> None:
    assert response_body(raw) == body


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 2\r\n\r\n{}",  # refused: nothing to print
        b"HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n{}",  # cut short
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n9\r\n{}",  # chunk cut short
        b"HTTP/1.1 200 OK\r\ncontent-le",  # headers cut short
    ],
)
def test_the_hooks_refuse_an_error_or_a_truncated_answer(raw: bytes) -> None:
    with pytest.raises(ValueError):
        response_body(raw)


def test_inject_gives_up_quietly_on_a_server_that_never_answers(tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections (backlog) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        env = {"YULLU_HOME": str(tmp_path), "YULLU_PORT": str(port), "YULLU_HOOK_TIMEOUT": "0.3"}
        prompt = json.dumps({"prompt": "how do we deploy to staging?", "cwd": "/tmp"})
        out = subprocess.run(hook_argv("inject"), input=prompt, env=env, capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


def _transcript(path: Path) -> Path:
    lines = [
        {"type": "user", "message": {"role": "user", "content": "first question"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "first answer"}]}},
        {"type": "user", "message": {"role": "user", "content": "How do we run migrations safely?"}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "file list"}],
            },
        },
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Run them with make migrate; they must be backwards compatible."}],
            },
        },
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n{broken line\n")
    return path


@pytest.mark.django_db(transaction=True)
def test_record_turn_posts_the_last_exchange(hook_env: dict[str, str], tmp_path: Path) -> None:
    transcript = _transcript(tmp_path / "t.jsonl")
    (tmp_path / "hookproj").mkdir()  # a cwd must exist (docs/contract.md §2)
    out = run_cli(
        ["record-turn"],
        hook_env,
        json.dumps({"transcript_path": str(transcript), "session_id": "abc", "cwd": str(tmp_path / "hookproj")}),
    )
    assert out.returncode == 0
    rows = list(SessionMessage.objects.order_by("id").values_list("session_id", "role", "content"))
    assert rows == [
        ("abc", "user", "How do we run migrations safely?"),
        ("abc", "assistant", "Run them with make migrate; they must be backwards compatible."),
    ]


def test_record_turn_exits_0_on_a_missing_transcript(tmp_path: Path) -> None:
    env = {**os.environ, "YULLU_HOME": str(tmp_path), "YULLU_PORT": "9"}
    out = run_cli(["record-turn"], env, json.dumps({"transcript_path": str(tmp_path / "none.jsonl")}))
    assert out.returncode == 0 and out.stdout == ""


def test_install_and_uninstall_round_trip(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".codex").mkdir()
    settings_path = home / ".claude" / "settings.json"
    other_hook = {"hooks": [{"type": "command", "command": "echo mine"}]}
    settings_path.write_text(json.dumps({"model": "opus", "hooks": {"Stop": [other_hook]}}))
    (home / ".codex" / "config.toml").write_text('# my codex config\nmodel = "o4"\n')
    (home / ".codex" / "AGENTS.md").write_text("# My rules\n\nBe terse.\n")
    yhome = tmp_path / "yhome"
    yhome.mkdir()
    (yhome / "token").write_text("yl_testtoken\n")
    config = str(tmp_path / "config.toml")
    env = {**os.environ, "HOME": str(home), "YULLU_HOME": str(yhome), "YULLU_CONFIG": config, "PATH": "/usr/bin:/bin"}
    for _ in range(2):  # idempotent
        out = run_cli(["install", "cursor", "claude", "codex"], env)
        assert out.returncode == 0, out.stderr
    # The second time Codex's files were already right: said, not silence (walk 13).
    codex_said = f"codex: already installed in {home / '.codex' / 'AGENTS.md'} and {home / '.codex' / 'config.toml'}"
    assert f"{codex_said}; nothing changed." in out.stdout.splitlines()
    settings = json.loads(settings_path.read_text())
    assert settings["model"] == "opus"
    stop = [h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"]]
    assert stop[0] == "echo mine" and len(stop) == 2 and stop[1].endswith("hook_entry.py record-turn || true")
    inject = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert " -I -S " in inject and inject.endswith("hook_entry.py inject || true")
    assert (home / ".claude" / "skills" / "yullu" / "SKILL.md").read_text().startswith("---\nname: yullu")
    assert "claude mcp add" in out.stdout  # claude is not on PATH: the exact command is printed
    codex = (home / ".codex" / "config.toml").read_text()
    assert codex.startswith("# my codex config") and tomllib.loads(codex)["mcp_servers"]["yullu"]["url"].endswith(
        "/mcp"
    )
    agents = (home / ".codex" / "AGENTS.md").read_text()
    assert agents.count("<!-- yullu:start -->") == 1 and agents.startswith("# My rules")
    cursor = json.loads((home / ".cursor" / "mcp.json").read_text())
    assert cursor["mcpServers"]["yullu"]["headers"]["Authorization"] == "Bearer yl_testtoken"
    out = run_cli(["uninstall"], env)
    assert out.returncode == 0, out.stderr
    said = out.stdout.splitlines()
    assert f"claude: restored {settings_path} as it was before install" in said
    assert f"cursor: deleted {home / '.cursor' / 'mcp.json'} (install created it)" in said
    kept = f", {yhome} (API token) and {config} (config); "  # the config's own path, not the home's
    assert any(line.startswith("kept: your memories (") and kept in line for line in said), said
    assert "claude: `claude` is not on PATH; if you registered the MCP server, remove it with: " in out.stdout
    again = run_cli(["uninstall", "codex"], env).stdout.splitlines()
    assert again[0] == "codex: nothing of Yul'lu's found; nothing changed" and again[1].startswith("kept: ")
    assert json.loads(settings_path.read_text()) == {"model": "opus", "hooks": {"Stop": [other_hook]}}
    assert not (home / ".claude" / "skills" / "yullu").exists()
    assert tomllib.loads((home / ".codex" / "config.toml").read_text()) == {"model": "o4"}
    assert (home / ".codex" / "AGENTS.md").read_text() == "# My rules\n\nBe terse.\n"
    assert not (home / ".cursor" / "mcp.json").exists(), "a file install created is removed again"


def test_install_replaces_hooks_an_earlier_version_wrote_as_yullu_verb(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    old = {"hooks": [{"type": "command", "command": "YULLU_HOME=/x YULLU_PORT=47823 /venv/bin/yullu inject"}]}
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [old]}}))
    (tmp_path / "yhome").mkdir()
    env = {**os.environ, "HOME": str(home), "YULLU_HOME": str(tmp_path / "yhome"), "PATH": "/usr/bin:/bin"}
    assert run_cli(["install", "claude"], env).returncode == 0
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    commands = [h["command"] for g in settings["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    assert len(commands) == 1 and commands[0].endswith("hook_entry.py inject || true")


def user_files(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in home.rglob("*")
        if p.is_file() and ".yullu-backup-" not in p.name
    }


def test_install_then_uninstall_leaves_every_user_file_byte_identical(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".codex").mkdir()
    (home / ".claude" / "settings.json").write_text('{\n    "model": "opus",\n    "hooks": {}\n}')  # no newline
    (home / ".codex" / "config.toml").write_text('model = "o4"\n\n[profiles.fast]\nmodel = "o4-mini"\n\n')
    (home / ".codex" / "AGENTS.md").write_text("# My rules\n\nBe terse.\n\n")  # two trailing newlines
    before = user_files(home)
    yhome = tmp_path / "yhome"
    yhome.mkdir()
    (yhome / "token").write_text("yl_testtoken\n")
    env = {**os.environ, "HOME": str(home), "YULLU_HOME": str(yhome), "PATH": "/usr/bin:/bin"}
    for _ in range(2):
        assert run_cli(["install", "claude", "codex", "cursor"], env).returncode == 0
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    for event, verb in (("SessionStart", "session-start"), ("PreCompact", "pre-compact")):
        assert settings["hooks"][event][0]["hooks"][0]["command"].endswith(f"hook_entry.py {verb} || true")
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert codex["notify"][-1] == "codex-notify" and codex["profiles"]["fast"]["model"] == "o4-mini"
    assert (yhome / "install-state.json").stat().st_mode & 0o777 == 0o600
    out = run_cli(["uninstall", "--yes"], env)  # --yes as with install: a script runs both
    assert out.returncode == 0, out.stderr
    assert user_files(home) == before
    assert not (yhome / "install-state.json").exists()


def test_uninstall_after_the_user_edited_a_file_removes_only_our_parts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "AGENTS.md").write_text("# My rules\n")
    yhome = tmp_path / "yhome"
    yhome.mkdir()
    env = {**os.environ, "HOME": str(home), "YULLU_HOME": str(yhome), "PATH": "/usr/bin:/bin"}
    assert run_cli(["install", "codex"], env).returncode == 0
    agents = home / ".codex" / "AGENTS.md"
    agents.write_text(agents.read_text() + "\nA rule added later.\n")
    assert run_cli(["uninstall", "codex"], env).returncode == 0
    text = agents.read_text()
    assert "yullu:start" not in text and text.startswith("# My rules") and "A rule added later." in text


def test_install_refuses_an_unparseable_settings_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("{ not json")
    env = {**os.environ, "HOME": str(home), "YULLU_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = run_cli(["install", "claude"], env)
    assert out.returncode != 0 and "not valid JSON" in out.stderr
    assert (home / ".claude" / "settings.json").read_text() == "{ not json"


def test_service_unit_is_written_and_removed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # A systemctl that works (the machine's has no user session bus) and says what it was asked.
    fake = tmp_path / "bin" / "systemctl"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "systemctl.log"}\n')
    fake.chmod(0o755)
    path = f"{fake.parent}:/usr/bin:/bin"
    env = {**os.environ, "HOME": str(home), "YULLU_HOME": str(tmp_path), "PATH": path, "YULLU_PORT": "47971"}
    env["YULLU_CONFIG"] = str(tmp_path / "config.toml")
    installed = run_cli(["install", "cursor", "--service"], env)
    assert installed.returncode == 0, installed.stderr
    assert "--user enable --now yullu.service" in (tmp_path / "systemctl.log").read_text()
    unit = home / ".config" / "systemd" / "user" / "yullu.service"
    text = unit.read_text()
    assert "serve" in text
    # the service is the server the hooks were pinned to, not one on the default port and home
    for line in (f"YULLU_HOME={tmp_path.resolve()}", "YULLU_PORT=47971", f"YULLU_CONFIG={tmp_path.resolve()}/config"):
        assert f'Environment="{line}' in text, text
    assert run_cli(["uninstall"], env).returncode == 0
    assert not unit.exists()


@pytest.mark.django_db
def test_export_groups_by_category(stub_embedder: StubServer) -> None:
    scope = resolve("acme/export", None)
    create.store_memory(scope, "Run make test before pushing", "process")
    create.store_memory(scope, "We chose Postgres for pgvector", "decision")
    create.store_memory(scope, "Loose note")
    text = render_agents_md("acme/export")
    assert text.index("## How we work") < text.index("## Decisions") < text.index("## Other notes")
    assert "- Run make test before pushing" in text


@pytest.mark.django_db
def test_export_leaves_out_superseded_and_expired_memories(stub_embedder: StubServer) -> None:
    scope = resolve("acme/export", None)
    old = create.store_memory(scope, "We deploy with make release", "process").memory
    create.store_memory(scope, "We deploy with make ship since the helm move", "process", supersedes=old.id)
    create.store_memory(scope, "The freeze lasts until Monday", "process", ttl_days=1)
    Memory.objects.filter(content__startswith="The freeze").update(expires_at=timezone.now() - timedelta(hours=1))
    text = render_agents_md("acme/export")
    assert "make ship" in text
    assert "make release" not in text and "freeze" not in text


def test_serve_banner_warns_about_hooks_that_run_a_file_that_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from yullu_cli.banner import stale_hook_lines

    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    env = {**os.environ, "YULLU_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    assert run_cli(["install", "claude"], env).returncode == 0
    assert stale_hook_lines() == []
    settings = home / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace("yullu_cli/hook_entry.py", "moved_away/hook_entry.py"))
    [line] = stale_hook_lines()
    assert "claude inject, claude record-turn" in line and "moved_away/hook_entry.py, which no longer exists" in line
    assert "run `yullu install` again" in line


def test_banner_says_how_to_set_the_admin_password_when_its_file_is_missing(tmp_path: Path) -> None:
    from yullu_cli.banner import admin_password_hint

    pw_file = tmp_path / "admin-password"
    hint = admin_password_hint(pw_file)
    # a command an installed wheel can run too: it has no manage.py
    assert "-m django changepassword admin --settings=yullu_site.settings`" in hint and "manage.py" not in hint
    pw_file.write_text("secret\n")
    assert admin_password_hint(pw_file) == f"password in {pw_file}"


@pytest.mark.django_db(transaction=True)
def test_inject_into_a_reader_that_leaves_exits_0_without_a_traceback(
    hook_env: dict[str, str], stub_embedder: StubServer, tmp_path: Path
) -> None:
    # Found on the walk: `yullu inject | head -3` ended in a BrokenPipeError traceback (the hook promises exit 0).
    create.store_memory(resolve("hookproj", None), "vec:1,0,0 Staging deploys go through make stage", "process")
    count_tokens("warm")
    folder = tmp_path / "hookproj"
    folder.mkdir()
    stdin = json.dumps({"prompt": "vec:1,0,0 how do we deploy to staging?", "cwd": str(folder)})
    for command in (
        [sys.executable, "-m", "yullu_cli.main", "inject"],
        [sys.executable, "-I", "-S", str(REPO / "yullu_cli" / "hook_entry.py"), "inject"],
    ):
        # `| true`: the reader is gone before the hook has asked the server, so its write meets a closed pipe
        ran = subprocess.run(
            ["bash", "-c", 'set -o pipefail; "$@" | true', "-", *command],
            input=stdin, env=hook_env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert ran.returncode == 0, (command, ran.returncode, ran.stderr)
        assert "Traceback" not in ran.stderr, ran.stderr

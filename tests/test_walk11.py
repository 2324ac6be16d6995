"""What the eleventh walk met (a new solo user's first hour from a fresh clone, then crash drills)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import yullu_cli
from yullu_cli.assistants.claude import HOOKS
from yullu_cli.memory_commands import _hooks

HOOK_ENTRY = Path(yullu_cli.__file__).parent / "hook_entry.py"


def _installed_hooks(home: Path, data: Path, server: str = "") -> None:
    """Claude Code hooks as `yullu install` writes them (pinned home, real files), and no token file."""
    pinned = f"YULLU_HOME={data} YULLU_PORT=47823" + (f" YULLU_SERVER={server}" if server else "")
    command = f"{pinned} {sys.executable} -I -S {HOOK_ENTRY}"
    hooks = {
        event: [{"hooks": [{"type": "command", "command": f"{command} {verb} || true"}]}]
        for event, verb in HOOKS.items()
    }
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    data.mkdir(parents=True)


@pytest.mark.parametrize("server", ["", "https://yullu.example.com"])
def test_doctor_says_how_to_get_a_deleted_token_file_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: str
) -> None:
    """Deleted while the server ran, doctor said "run `yullu serve` once (it writes the token), then
    `yullu install` again": `yullu serve` stopped at its busy port. `yullu token` writes it again; a team
    server's client installs again with its token."""
    home, data = tmp_path / "home", tmp_path / "home" / ".local" / "share" / "yullu"
    _installed_hooks(home, data, server)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("YULLU_HOME", str(data))
    ok, detail, fix = _hooks()
    assert not ok
    assert detail.endswith("missing: API token file"), detail
    assert "yullu serve" not in fix
    if server:
        assert fix.startswith(f"install again with your token: `yullu install --server {server} --token"), fix
    else:
        assert fix.startswith("run `yullu token` (it writes the token file again"), fix
    (data / "token").write_text("yl_x\n")
    assert _hooks()[0]

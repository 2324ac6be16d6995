"""Chaos drills, round 24: what the supervisor leaves behind, and says, through outside faults (docs/reliability.md,
"Chaos drills (round 24)"): a role's supervisor that gives up, a metrics folder that had no room, a read-only home
under Celery, pid files whose pids were reused after a reboot."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.processes import REPO, product_env


@pytest.mark.django_db(transaction=True)
def test_a_role_supervisor_that_gives_up_says_why_to_doctor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`yullu serve --role worker` whose worker dies at each start (a typo in the broker URL) ended the worker role
    with its line in its own output only: no run/ended-because (the all-in-one supervisor writes it), so `yullu
    doctor` said "ok server … ready" for a site whose tasks no longer ran (round 23's leftover)."""
    from yullu_cli import hooks, memory_commands

    home, port = tmp_path / "home", free_port()
    env = product_env(home, YULLU_PORT=str(port), YULLU_EMBED_PROVIDER="none",
                      CELERY_BROKER_URL="reddis://127.0.0.1:9/0")  # fmt: skip
    ran = subprocess.run([sys.executable, "-m", "yullu_cli.main", "serve", "--role", "worker"], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert ran.returncode == 1 and "4 times in a row; stopping everything" in ran.stderr, ran.stderr[-3000:]
    monkeypatch.delenv("YULLU_SERVER", raising=False)
    monkeypatch.setattr(hooks, "yullu_home", lambda: home)
    said = memory_commands._roles_ended()
    assert said is not None and re.match(
        rf"the last `yullu serve --role worker` \(port {port}\) stopped by itself: the worker process exited with "
        r"code 1 within 20 s of starting, 4 times in a row", said), said  # fmt: skip
    monkeypatch.setattr(hooks, "server_url", lambda: f"http://127.0.0.1:{free_port()}")  # nothing answers there
    ok, detail, fix = memory_commands._server()
    assert not ok and detail.endswith(said) and fix == memory_commands.STOPPED_FIX

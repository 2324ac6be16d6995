"""Walk 11's leftovers (lane fixes12): each test is red without its fix."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memories.scope import resolve
from memories.write import create
from memories.write.validation import NewMemory
from tests.processes import product_env, run_cli, spawn, stop, wait_until
from yullu_cli.memory_commands import LIST_MOST

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_list_longer_than_its_cap_says_how_many_there_are_and_how_to_see_them_all(
    tmp_path: Path, keyword_only: None
) -> None:
    """`yullu memories list --limit 5000` quietly showed 200 (walk 11)."""
    many = [NewMemory(f"Module {i} owns queue number {i} and retries it {i} times", "process") for i in range(205)]
    create.store_memories(resolve("acme/many", None), many, source="cli")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    listed = run_cli(["memories", "list", "--project", "acme/many", "--limit", "5000"], env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0] == f"acme/many: {LIST_MOST} shown"
    assert listed.stderr.strip().splitlines()[-1] == (
        f"yullu: showing the newest {LIST_MOST} of 205 memories (a list shows at most {LIST_MOST}); "
        "`yullu export json --project acme/many` writes them all."
    ), listed.stderr
    # Within the cap, or when there are no more, nothing is said.
    quiet = run_cli(["memories", "list", "--project", "acme/many", "--limit", "5"], env)
    assert quiet.returncode == 0 and "showing" not in quiet.stderr, quiet.stderr


def test_beats_start_up_banner_reaches_a_log_file_while_it_runs(tmp_path: Path) -> None:
    """With stdout not a terminal (a log file, journald), beat's banner sat in its buffer and
    appeared only at shutdown (walk 11)."""
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    env.pop("PYTHONUNBUFFERED", None)
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        serve = spawn(["-m", "yullu_cli.main", "serve", "--role", "beat"], env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "LocalTime -> " in log.read_text(errors="replace"), "beat's banner in the log",
                   alive=serve, output=lambda: log.read_text(errors="replace"))  # fmt: skip
    finally:
        stop(serve)

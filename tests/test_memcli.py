"""`yullu memories …` and `yullu doctor` as a person runs them at a terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from memories.embedding import embedders
from memories.models import Memory
from tests.processes import REPO, git_repo, product_env, run_cli

pytestmark = pytest.mark.django_db(transaction=True)


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"), **extra)


def test_add_list_search_show_and_rm_a_memory(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", "git@github.com:acme/cli.git")
    env = env_for(tmp_path)
    add = ["memories", "add", "Deploys go through make deploy", "--category", "process", "--tags", "ci,deploy"]
    out = run_cli([*add, "--cwd", str(repo)], env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("stored #") and "github.com/acme/cli" in out.stdout
    again = json.loads(run_cli([*add, "--cwd", str(repo), "--json"], env).stdout)
    assert again["created"] is False, "a duplicate is not stored twice"
    memory = Memory.objects.get(project_id="github.com/acme/cli")
    assert (memory.category, memory.tags) == ("process", ["ci", "deploy"])

    listed = run_cli(["memories", "list", "--cwd", str(repo)], env).stdout
    assert f"#{memory.id} [process] Deploys go through make deploy" in listed
    search = ["memories", "search", "deploy", "--project", "github.com/acme/cli", "--json"]
    found = json.loads(run_cli(search, env).stdout)
    assert [h["id"] for h in found["results"]] == [memory.id]
    shown = run_cli(["memories", "show", str(memory.id)], env).stdout
    assert "category: process" in shown and "importance: normal" in shown
    colons = {line.index(": ") for line in shown.splitlines() if ": " in line}
    assert len(colons) == 1, shown  # one column of names: `held_for_review` stood out by one
    assert run_cli(["memories", "rm", str(memory.id)], env).stdout.strip() == f"deleted #{memory.id}"
    assert not Memory.objects.filter(pk=memory.id).exists()


def test_bad_input_is_one_sentence_and_exit_1(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    for args in (["memories", "show", "999999"], ["memories", "add", "   ", "--project", "p"]):
        out = run_cli(args, env)
        assert out.returncode == 1 and out.stderr.strip().splitlines()[-1].startswith("yullu: "), args
        assert "Traceback" not in out.stderr
    out = run_cli(["memories", "rm", "x"], env)  # not an id at all: a usage error (tests/test_cli_leftovers.py)
    assert out.returncode == 2 and out.stderr.strip().splitlines()[-1].startswith("yullu memories rm: error: ")


def test_a_user_memory_added_from_the_cli_is_personal(tmp_path: Path) -> None:
    out = run_cli(["memories", "add", "Answer in British English", "--user", "--json"], env_for(tmp_path))
    assert json.loads(out.stdout)["project_id"] == "~user"


def test_doctor_reports_each_failure_with_how_to_fix_it(tmp_path: Path) -> None:
    env = env_for(tmp_path, YULLU_PORT="9", PATH="/usr/bin:/bin")
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    out = run_cli(["doctor", "--json"], env)
    assert out.returncode == 1, out.stderr
    checks = {c["check"]: c for c in json.loads(out.stdout)["checks"]}
    system = {"database", "broker", "disk", "embedder", "reasoner", "team log", "sync events"}  # health.DOCTOR
    assert set(checks) == {"config", "server", "hooks", "folder", "checkout", *system}
    assert checks["config"]["ok"] and checks["database"]["ok"] and checks["embedder"]["ok"]
    assert not checks["server"]["ok"] and "yullu serve" in checks["server"]["fix"]
    assert not checks["hooks"]["ok"] and "yullu install" in checks["hooks"]["fix"]
    assert not checks["reasoner"]["ok"] and "Claude Code" in checks["reasoner"]["fix"]
    assert (checks["server"]["status"], checks["reasoner"]["status"]) == ("fail", "warn")
    assert checks["team log"]["ok"]  # no project has a log large enough to compact
    human = run_cli(["doctor"], env).stdout
    assert "FAIL  server" in human and "fix: start it with `yullu serve`" in human


@pytest.fixture
def keyword_only_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The live server keyword-only, like the CLI here: ready without loading a model."""
    monkeypatch.setitem(settings.YULLU, "embedding", {**settings.YULLU["embedding"], "provider": "none"})
    embedders._cache.clear()
    yield
    embedders._cache.clear()


def test_doctor_exits_0_when_the_only_finding_is_the_missing_reasoner_warning(
    tmp_path: Path, live_server_url: str, owner_token: str, keyword_only_server: None
) -> None:
    env = env_for(tmp_path, YULLU_PORT=live_server_url.rsplit(":", 1)[1], PATH="/usr/bin:/bin")
    env.pop("ANTHROPIC_API_KEY", None)
    env["YULLU_ALLOWED_ROOTS"] = str(REPO)  # where run_cli runs doctor: its folder check is ok
    (tmp_path / "yhome" / "token").write_text(owner_token + "\n")
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    assert run_cli(["install", "claude"], env).returncode == 0
    out = run_cli(["doctor", "--json"], env)
    report = json.loads(out.stdout)
    statuses = {c["check"]: c["status"] for c in report["checks"]}
    assert statuses.pop("reasoner") == "warn" and set(statuses.values()) == {"ok"}, json.dumps(report, indent=1)
    assert out.returncode == 0 and report["ok"] is True
    human = run_cli(["doctor"], env)
    assert human.returncode == 0 and "WARN  reasoner" in human.stdout and "FAIL" not in human.stdout


def test_cli_commands_print_their_answer_without_log_lines_unless_verbose(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    env.pop("YULLU_LOG_LEVEL")
    assert run_cli(["memories", "add", "Deploys go through make ship", "--project", "acme/quiet"], env).returncode == 0
    env.pop("YULLU_EMBED_PROVIDER")  # searching with the local model: it logs at INFO when it loads
    quiet = run_cli(["memories", "search", "how do we deploy?", "--project", "acme/quiet"], env)
    assert quiet.returncode == 0 and quiet.stdout.startswith("acme/quiet: "), quiet.stderr
    assert " INFO " not in quiet.stderr, quiet.stderr  # (a first run's one-off model export shows its progress)
    verbose = run_cli(["-v", "memories", "search", "how do we deploy?", "--project", "acme/quiet"], env)
    assert verbose.returncode == 0 and " INFO " in verbose.stderr, "the quiet run is quiet because of the level"


def test_doctor_fails_when_installed_hooks_run_a_file_that_moved(tmp_path: Path) -> None:
    """Hooks end in `|| true` (a prompt is never blocked), so a hook whose hook_entry.py moved away
    (a moved checkout or venv) fails silently: doctor must say so."""
    env = env_for(tmp_path, YULLU_PORT="9", PATH="/usr/bin:/bin")
    (tmp_path / "yhome").mkdir(parents=True, exist_ok=True)
    (tmp_path / "yhome" / "token").write_text("yl_test\n")
    for folder in (".claude", ".codex"):
        (tmp_path / "home" / folder).mkdir(parents=True)
    assert run_cli(["install", "claude", "codex"], env).returncode == 0
    checks = {c["check"]: c for c in json.loads(run_cli(["doctor", "--json"], env).stdout)["checks"]}
    assert checks["hooks"]["ok"], checks["hooks"]
    for name in (".claude/settings.json", ".codex/config.toml"):
        path = tmp_path / "home" / name
        path.write_text(path.read_text().replace("yullu_cli/hook_entry.py", "moved_away/hook_entry.py"))
    out = run_cli(["doctor", "--json"], env)
    hooks = {c["check"]: c for c in json.loads(out.stdout)["checks"]}["hooks"]
    assert out.returncode == 1 and hooks["status"] == "fail"
    assert "claude inject" in hooks["detail"] and "codex notify" in hooks["detail"]
    assert "moved_away/hook_entry.py, which no longer exists" in hooks["detail"]
    assert "yullu install" in hooks["fix"]


def test_relative_folders_are_read_from_where_the_command_runs(tmp_path: Path) -> None:
    """README: `yullu import .` in a repository; `--cwd .` / `--cwd ..` anywhere. Each answered
    "cwd must be an absolute path." before the CLI made them absolute."""
    repo = git_repo(tmp_path / "repo", "git@github.com:acme/relative.git")
    (repo / "CLAUDE.md").write_text("# Notes\n\n- Money is stored as integer cents, never floats.\n")
    (repo / "src").mkdir()
    env = env_for(tmp_path)

    def here(args: list[str], where: Path) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "yullu_cli.main", *args]
        return subprocess.run(command, env=env, cwd=where, capture_output=True, text=True, timeout=120, check=False)

    imported = here(["import", "."], repo)
    assert imported.returncode == 0, imported.stderr
    added = here(["memories", "add", "Deploys go out with make ship", "--cwd", ".."], repo / "src")
    assert added.returncode == 0 and "github.com/acme/relative" in added.stdout, added.stderr
    listed = here(["memories", "list", "--cwd", "."], repo)
    assert "integer cents" in listed.stdout and "make ship" in listed.stdout, listed.stderr
    assert here(["reconcile", "--cwd", "."], repo).returncode == 0

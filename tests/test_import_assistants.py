"""`yullu import` of what the assistants already remember: a repository's CLAUDE.md, AGENTS.md,
Cursor rules and Copilot instructions, and a Claude Code auto-memory folder. Through the write path
(secret scan, sync events), idempotent, with a guessed category per fact shown for review."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.secret_forms import B64, BASE32, chars
from memories.models import Memory
from memories.transfer.assistant_memory import facts, guess_category
from tests.processes import git_repo, product_env, run_cli

pytestmark = pytest.mark.django_db(transaction=True)

CLAUDE_MD = """\
# Project notes

## Commands
- Run the tests with `make test`; it starts its own PostgreSQL.
- Deploy with `make ship`, then watch
  the canary dashboard for ten minutes.
  - nested detail that belongs to the deploy fact

```sh
make ship --really
```

## Gotchas
- Never commit `.env` files: CI publishes the repository's artifacts.
- See [the runbook](docs/runbook.md).

| a | table |
|---|---|

<!-- yullu:start -->
Before answering questions about this codebase, call retrieve_memories with cwd.
<!-- yullu:end -->
"""

AGENTS_MD = "## Decisions\nWe chose PostgreSQL over MongoDB because billing needs transactions.\n"
CURSOR_RULE = "---\ndescription: styling\nalwaysApply: true\n---\n- Use snake_case for database column names.\n"
COPILOT = "The word tenant means one paying customer organisation, never a user.\n"


def env_for(tmp_path: Path) -> dict[str, str]:
    return product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))


def test_facts_are_items_and_paragraphs_without_code_tables_front_matter_or_our_own_section() -> None:
    found = [fact for _, fact in facts(CURSOR_RULE + "\n" + CLAUDE_MD)]
    assert found == [
        "Use snake_case for database column names.",
        "Run the tests with `make test`; it starts its own PostgreSQL.",
        "Deploy with `make ship`, then watch the canary dashboard for ten minutes. nested detail that belongs to "
        "the deploy fact",
        "Never commit `.env` files: CI publishes the repository's artifacts.",
    ]


@pytest.mark.parametrize(
    ("heading", "fact", "category"),
    [
        ("Commands", "Run the tests with make test", "process"),
        ("", "Never commit .env files: CI publishes them", "gotcha"),
        ("", "We chose PostgreSQL over MongoDB because billing needs transactions", "decision"),
        ("", "Use snake_case for database column names", "style"),
        ("", "The word tenant means one paying customer organisation", "domain"),
        ("", "Lunch is at noon on Fridays", None),
    ],
)
def test_the_category_is_guessed_from_the_words(heading: str, fact: str, category: str | None) -> None:
    assert guess_category(heading, fact) == category


def test_importing_a_repository_reads_every_assistant_file_once(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "svc", "git@github.com:acme/svc.git")
    (repo / "CLAUDE.md").write_text(CLAUDE_MD)
    (repo / "AGENTS.md").write_text(AGENTS_MD)
    (repo / ".cursor/rules").mkdir(parents=True)
    (repo / ".cursor/rules/style.mdc").write_text(CURSOR_RULE)
    (repo / ".github").mkdir()
    (repo / ".github/copilot-instructions.md").write_text(COPILOT)
    env = env_for(tmp_path)

    ran = run_cli(["import", str(repo)], env)
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    assert (summary["format"], summary["read"], summary["created"]) == ("assistant-memory", 6, 6)
    assert "review queue" in ran.stderr
    guessed = {r["content"][:20]: r["category"] for r in summary["review"]}
    assert guessed["Never commit `.env` "] == "gotcha" and guessed["Use snake_case for d"] == "style"
    memories = {m.content: m for m in Memory.objects.filter(project_id="github.com/acme/svc")}
    assert len(memories) == 6
    tenant = memories["The word tenant means one paying customer organisation, never a user."]
    assert (tenant.category, tenant.tags, tenant.rating) == ("domain", ["from:copilot"], None)

    again = json.loads(run_cli(["import", str(repo)], env).stdout)
    assert (again["created"], again["skipped"]) == (0, 6), "importing twice changes nothing"


def test_a_claude_code_memory_folder_goes_to_the_project_of_cwd_and_secrets_are_refused(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "web", "git@github.com:acme/web.git")
    rng = random.Random(104)
    memory = tmp_path / "home/.claude/projects/-tmp-web/memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- [Debugging notes](debugging.md)\n- The dev server listens on port 5173.\n")
    (memory / "debugging.md").write_text(
        "# Debugging\n\nSet DEBUG=1 to see the SQL each request runs.\n\n"
        # (random, not AWS's documented sample pair: that one is public, and memories quote it)
        f"- the staging key is AKIA{chars(BASE32, 16)(rng)} with secret {chars(B64, 40)(rng)}\n"
    )
    ran = run_cli(["import", str(memory), "--cwd", str(repo)], env_for(tmp_path))
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    assert (summary["created"], summary["refused"]) == (2, 1), summary
    rows = Memory.objects.filter(project_id="github.com/acme/web").order_by("content")
    assert [(m.content, m.tags) for m in rows] == [
        ("Set DEBUG=1 to see the SQL each request runs.", ["from:claude-memory"]),
        ("The dev server listens on port 5173.", ["from:claude-memory"]),
    ]


def test_a_folder_without_facts_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    ran = run_cli(["import", str(tmp_path / "empty"), "--project", "acme/x"], env_for(tmp_path))
    assert ran.returncode == 1 and ran.stderr.strip().startswith("yullu: ") and "no facts found" in ran.stderr


def test_an_import_scans_each_clean_fact_for_secrets_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The review list redacted every fact (a scan) and the write path then checked it (a second scan); a clean
    # fact is now scanned once, its verdict kept for the write path's check.
    from memories import secrets
    from memories.transfer import importer

    repo = git_repo(tmp_path / "svc", "git@github.com:acme/svc.git")
    facts = [f"Fact {n}: the worker queue {n} drains before deploy number {n * 7}." for n in range(4)]
    (repo / "CLAUDE.md").write_text("# Notes\n\n" + "".join(f"- {f}\n" for f in facts))
    scanned: list[str] = []
    real = secrets._scan_views

    def counted(text: str, depth: int = 0) -> Iterator[tuple[secrets.Finding, int, int]]:
        scanned.append(text)
        return real(text, depth)

    monkeypatch.setattr(secrets, "_scan_views", counted)
    result = importer.import_assistant_memory(repo, "acme/svc", None)
    assert result.created == 4 and [scanned.count(f) for f in facts] == [1, 1, 1, 1], scanned

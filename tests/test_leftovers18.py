"""Leftovers of the seventeenth round: what "current" means spelled once for the ORM and the plain-SQL probes; the
docs and `--help` against what the commands do."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from memories.models import CURRENT_WHERE, Importance, LinkKind, Memory, MemoryAnchor, MemoryLink
from memories.search.candidates import CURRENT_SQL
from memories.write.nearby import _has_current
from yullu_cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent

DAY = timedelta(days=1)


def _one_in_every_state(project: str) -> dict[str, Memory]:
    """A memory in every lifecycle state the memories table holds (docs/contract.md §10, §12). Rejected and
    deleted memories leave the table (archived), so they are made and removed."""
    now = timezone.now()

    def make(name: str, **fields: object) -> Memory:
        return Memory.objects.create(project_id=project, content=f"{name} fact of {project}", **fields)

    rows = {"active": make("active")}
    rows["superseded"] = make("superseded", superseded_by=rows["active"])
    rows["held"] = make("held", held_reason="its text instructs the assistant")
    rows["held and superseded"] = make("held superseded", held_reason="instructs", superseded_by=rows["active"])
    rows["expired"] = make("expired", expires_at=now - DAY)
    rows["expired and superseded"] = make("expired superseded", expires_at=now - DAY, superseded_by=rows["active"])
    rows["expiring later"] = make("expiring", expires_at=now + DAY)
    rows["low importance, rated 1"] = make("low", importance=Importance.LOW, rating=1)
    rows["stale"] = make("stale")
    MemoryAnchor.objects.create(memory=rows["stale"], project_id=project, path="a.py", status="changed")
    rows["contradicted"] = make("contradicted")
    MemoryLink.objects.create(
        from_memory=rows["contradicted"], to_memory=rows["active"], kind=LinkKind.CONTRADICTS, project_id=project
    )
    for gone in ("rejected", "deleted"):
        make(gone).delete()
    return rows


CURRENT_STATES = {"active", "expiring later", "low importance, rated 1", "stale", "contradicted"}


@pytest.mark.django_db
def test_the_orm_and_the_sql_spellings_of_current_select_the_same_rows() -> None:
    """nearby._has_current spelled Memory.objects.current()'s conditions in its own SQL, and nothing checked they
    agreed: CURRENT_WHERE is the one SQL spelling beside the manager, and each of them (and the search's
    CURRENT_SQL) selects exactly the current states here."""
    project = "lifecycle/every"
    rows = _one_in_every_state(project)
    names = {m.pk: name for name, m in rows.items()}
    current = Memory.objects.current().filter(project_id=project)
    orm = {names[pk] for pk in current.values_list("pk", flat=True)}
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT id FROM memories_memory WHERE project_id = %(project)s AND {CURRENT_WHERE}",
            {"project": project, "now": timezone.now()},
        )
        plain = {names[pk] for (pk,) in cur.fetchall()}
        cur.execute(f"SELECT m.id FROM memories_memory m WHERE m.project_id = %s AND {CURRENT_SQL}", [project])
        search = {names[pk] for (pk,) in cur.fetchall()}
    assert orm == CURRENT_STATES
    assert plain == orm
    assert search == orm


@pytest.mark.django_db
def test_the_stores_probe_for_a_current_memory_agrees_with_the_manager_in_every_state() -> None:
    """The store's plain-SQL probe (nearby._has_current) says a project has a current memory exactly when the
    manager's current().exists() does: one project per state, the state's row alone in it."""
    rows = _one_in_every_state("lifecycle/probe")
    for name, memory in rows.items():
        project = f"lifecycle/probe/{name}"
        Memory.objects.filter(pk=memory.pk).update(project_id=project)
        current = Memory.objects.current().filter(project_id=project).exists()
        assert _has_current(project, set()) is current, name
        assert current is (name in CURRENT_STATES), name
        assert _has_current(project, {memory.pk}) is False, name  # excluded: the batch's own rows


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("yullu",)) -> Iterator[tuple[str, Any]]:
    """Every (command path, parser) of `yullu`, the root included."""
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, (*path, name))


def test_every_option_of_every_command_says_what_it_does() -> None:
    """`yullu bench locomo --help` listed `--data`, `--modes`, `--out` … with no word on what they were (13 options of
    the bench commands had no help text): every option and every command has one."""
    bare = []
    for path, parser in _commands(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {choice.dest for choice in action._choices_actions if choice.help}
                bare += [f"{path} {name}" for name in action.choices if name not in helped]
            elif not isinstance(action, argparse._HelpAction) and action.help in (None, ""):
                bare.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert bare == []


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_no_option_the_docs_show_is_missing_from_its_command() -> None:
    """Every `yullu …` the README and docs/ show in code names only options its command has (a renamed or removed
    flag left in the docs is a usage error for whoever copies it)."""
    commands = dict(_commands(build_parser()))
    missing = []
    for doc in DOCS:
        text = doc.read_text()
        for span in re.finditer(r"`(?:\.venv/bin/)?(yullu(?: [^`\n]*)?)`", text):
            words = span.group(1).split()
            path = "yullu"
            for word in words[1:]:  # the longest command path the span starts with
                if f"{path} {word}" not in commands:
                    break
                path = f"{path} {word}"
            known = {o for a in commands[path]._actions for o in a.option_strings}
            if path == "yullu":
                known |= {o for a in commands["yullu serve"]._actions for o in a.option_strings}  # bare yullu = serve
            for flag in re.findall(r"(?<![\w-])--?[a-z][a-z0-9-]*", span.group(1)):
                if flag not in known:
                    missing.append(f"{doc.name}:{text[: span.start()].count(chr(10)) + 1}: `{path}` has no {flag}")
    assert missing == []


def test_every_command_that_takes_a_project_takes_both_spellings() -> None:
    """README: "`--project` and `--project-id` are the same option on every command that takes one". reconcile,
    anchors check, sync compact and dream declared only `--project-id` (`--project` worked as argparse's abbreviation
    of it, and their --help did not show it)."""
    one_spelling = []
    for path, parser in _commands(build_parser()):
        for action in parser._actions:
            names = set(action.option_strings)
            if names & {"--project", "--project-id"} and names != {"--project", "--project-id"}:
                one_spelling.append(f"{path} {'/'.join(action.option_strings)}")
        if any("--project-id" in action.option_strings for action in parser._actions):
            assert "--project PROJECT, --project-id PROJECT" in parser.format_help(), path
    assert one_spelling == ["yullu bench load --project"]  # a benchmark's own option, not a product command

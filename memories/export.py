"""`yullu export agents-md`: a project's memories grouped by category, as Markdown."""

from __future__ import annotations

import sys

from yullu_core.outfile import write_file
from yullu_core.text import escape_controls

from .models import CATEGORIES, Memory
from .scope import resolve

TITLES = {
    "process": "How we work",
    "decision": "Decisions",
    "gotcha": "Gotchas",
    "domain": "Domain",
    "style": "Style",
    None: "Other notes",
}


def render_agents_md(project_id: str) -> str:
    # Current facts only: a superseded or expired memory would tell a reader the old command.
    memories = list(Memory.objects.current().filter(project_id=project_id).order_by("category", "created_at", "id"))
    lines = [f"# Project memory: {project_id}", "", "Exported from Yul'lu. Each line is one durable fact.", ""]
    for category in [*CATEGORIES, None]:
        group = [m for m in memories if m.category == category]
        if not group:
            continue
        lines += [f"## {TITLES[category]}", ""]
        lines += [f"- {' '.join(m.content.split())}" for m in group]
        lines.append("")
    if not memories:
        lines.append("_No memories yet._")
    return "\n".join(lines).rstrip("\n") + "\n"


def export_agents_md(project_id: str | None, cwd: str, out: str) -> None:
    scope = resolve(project_id, None if project_id else cwd)
    text = escape_controls(render_agents_md(scope.project_id))  # a teammate's escapes never reach a terminal
    if out == "-":
        sys.stdout.write(text)
    else:
        write_file(out, lambda fh: fh.write(text), 0o644)  # a file to commit; never through a symlink or FIFO
        print(f"wrote {out} ({text.count(chr(10) + '- ')} memories)", file=sys.stderr)

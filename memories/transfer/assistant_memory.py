"""Facts kept by the assistants themselves, read for `yullu import`: Claude Code's auto memory
(`~/.claude/projects/<slug>/memory/*.md`), CLAUDE.md and AGENTS.md, Cursor's `.cursor/rules/*.mdc`
and `.github/copilot-instructions.md`. Each list item or paragraph is one fact; headings only guide
the category, which is guessed from words (shown in the import's summary for review, and every
imported memory is unrated, so it waits in the admin's review queue). The rows go through
memories.transfer.importer.import_rows, the write path of every import (secret scan, duplicates, sync
events; idempotent: a fact's uuid derives from project and content).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

# Where each assistant keeps its instructions, relative to a repository (or any folder).
PROJECT_FILES = ("CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", ".github/copilot-instructions.md")
MIN_WORDS = 4  # shorter items are headings in disguise or link lists ("- See testing.md")
MAX_CHARS = 2000  # a longer "fact" is a document: it is cut at a sentence and flagged in the summary

# Words that say which of the five categories a fact is; the heading above it counts too.
CATEGORY_WORDS = {
    "gotcha": r"never|don'?t|do not|avoid|careful|beware|gotcha|pitfall|warning|caveat|breaks?|must not|"
    r"otherwise|bug|flaky|fails?",
    "decision": r"decid\w*|chose|chosen|instead of|rather than|because|why|trade-?off|rationale|we use \w+ over",
    "style": r"style|format\w*|naming|indent\w*|camel ?case|snake_case|kebab|prettier|lint\w*|tone|wording|"
    r"comments?|docstrings?|ui|css|colou?rs?",
    "process": r"run|make \w+|npm|pnpm|yarn|pip|uv |pytest|command|deploy\w*|build|install|release|commit|"
    r"branch|workflow|ci|test(s|ing)?|migrat\w*|setup|start",
    "domain": r"means|is an?|refers to|glossary|terms?|definition|stands for|invariant|domain|concept",
}
_PATTERNS = {name: re.compile(rf"\b(?:{words})\b", re.I) for name, words in CATEGORY_WORDS.items()}
# Specific words weigh more than generic ones: "never commit .env files, CI publishes them" is a
# gotcha that happens to mention a command, not a process.
# Ties go to the first: a definition ("tenant means …, never a user") is domain knowledge.
WEIGHTS = {"domain": 3, "decision": 3, "gotcha": 3, "style": 2, "process": 1}
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_YULLU_SECTION = re.compile(r"<!-- yullu:start -->.*?<!-- yullu:end -->", re.S)


def kind_of(path: Path) -> str:
    """Which assistant's file this is (the tag its facts get: `from:<kind>`)."""
    if path.name in ("CLAUDE.md", "CLAUDE.local.md"):
        return "claude-md"
    if path.name == "AGENTS.md":
        return "agents-md"
    if path.suffix == ".mdc":
        return "cursor-rules"
    if path.name == "copilot-instructions.md":
        return "copilot"
    if path.parent.name == "memory" and ".claude" in path.parts:
        return "claude-memory"
    return "markdown"


def is_assistant_source(path: Path) -> bool:
    """A Markdown/.mdc file, or a folder: what `yullu import` reads with this module."""
    return path.is_dir() or path.suffix.lower() in (".md", ".mdc")


def files_at(path: Path) -> list[Path]:
    """The files to read at `path`: the file itself; a memory folder's *.md; a repository's
    CLAUDE.md, AGENTS.md, Copilot instructions and Cursor rules."""
    if path.is_file():
        return [path]
    found = [path / rel for rel in PROJECT_FILES if (path / rel).is_file()]
    found += sorted((path / ".cursor" / "rules").glob("*.mdc"))
    if path.name == "memory" or not found:  # Claude Code's auto-memory folder (MEMORY.md + topic files)
        found += sorted(p for p in path.glob("*.md") if p not in found)
    return found


def facts(text: str) -> Iterator[tuple[str, str]]:
    """(heading, fact) for each list item (with its continuation lines) or paragraph; front matter,
    code blocks, tables, headings and Yul'lu's own section are not facts."""
    text = _YULLU_SECTION.sub("", text.replace("\r\n", "\n"))
    if text.startswith("---\n") and "\n---" in text[4:]:
        text = text[text.index("\n---", 4) + 4 :]
    heading, fenced = "", False
    current: list[str] = []

    def flush() -> Iterator[tuple[str, str]]:
        fact = " ".join(" ".join(current).split())
        current.clear()
        fact = _LINK.sub(r"\1", fact).strip()
        if len(fact.split()) >= MIN_WORDS:
            yield heading, fact

    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            yield from flush()
            continue
        if fenced or stripped.startswith("|"):
            continue
        if stripped.startswith("#"):
            yield from flush()
            heading = stripped.lstrip("#").strip()
            continue
        bullet = _BULLET.match(line)
        if bullet and len(bullet.group(1)) < 2:  # a top-level item starts a fact; nested ones continue it
            yield from flush()
            current.append(bullet.group(2))
        elif not stripped:
            yield from flush()
        else:
            current.append(bullet.group(2) if bullet else stripped)
    yield from flush()


def guess_category(heading: str, fact: str) -> str | None:
    """The category whose words the fact (and, weighing less, its heading) uses most; None when
    no word says."""
    scores = {
        name: WEIGHTS[name] * (2 * len(pattern.findall(fact)) + len(pattern.findall(heading)))
        for name, pattern in sorted(_PATTERNS.items(), key=lambda item: list(WEIGHTS).index(item[0]))
    }
    best = max(scores, key=lambda name: scores[name])
    return best if scores[best] else None


def shorten(fact: str) -> str:
    if len(fact) <= MAX_CHARS:
        return fact
    cut = fact[:MAX_CHARS]
    return cut[: cut.rfind(". ") + 1] if ". " in cut else cut


def read(path: Path) -> Iterator[tuple[Path, str, str | None, str]]:
    """(file, kind, guessed category, fact) for every fact at `path`."""
    for file in files_at(path):
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for heading, fact in facts(text):
            yield file, kind_of(file), guess_category(heading, fact), shorten(fact)

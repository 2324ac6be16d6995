"""The extraction prompt: ours, editable in the admin, resettable to this default."""

from __future__ import annotations

import json
from typing import Any

from access.policy import require_install_wide

from .models import DreamPrompt

DEFAULT_PROMPT = """\
You maintain the long-term memory of one software project. Read the conversation
between a developer and an AI coding assistant and decide which durable facts about
the codebase are worth remembering for future sessions.

Keep a fact only if it is:
- about this codebase or how the team works on it (never about a person);
- durable and forward-looking: still true and useful next month;
- specific: a command, a path, a decision and its reason, a pitfall and how to avoid it,
  what a term means, a UI or code style rule.

Skip: incidents and one-off debugging, task status, ephemeral state, plans that were not
decided, generic programming advice, secrets or credentials, anything about people.

Each fact gets exactly one category:
- process: how to do things (commands, layout, conventions)
- decision: why X was chosen over Y
- gotcha: what bites, and how to avoid it
- domain: what terms mean, invariants of the business
- style: UI patterns, tone, code style

Prefer updating an existing memory (give its uuid) to creating a near-duplicate. When the
conversation reverses or replaces an existing memory (a decision changed, a command was
renamed), use "supersede" with its uuid and the new fact: the old one is kept as history.
When it disagrees with an existing memory and it is unclear which is right, use
"contradicts" with its uuid and the new claim: a reviewer decides. Delete an existing
memory only when the conversation shows it is simply wrong. Write each
memory as one self-contained sentence or two, understandable without the conversation.
Do not repeat the rejected examples or anything like them.
An existing memory with "cited_code_changed" describes code that changed since it was written
(each entry gives the file, its status and the diff): when the diff makes the memory wrong,
update or supersede it with what the code does now; when it is still right, leave it alone.
When a memory is about particular code, list it in "anchors": file paths relative to the
repository root, optionally with lines ("app/clock.py:40-58") or a symbol ("app/clock.py::Clock.now").
Give "importance": "high" to a fact that matters on nearly every task ("low" to a minor one; leave it
out otherwise), and "ttl_days" only to a fact that stops being true at a known time (a workaround
until a fix ships): it is archived once that many days have passed.

Answer with one JSON object and nothing else:
{"operations": [{"op": "create|update|supersede|contradicts|delete",
 "uuid": "<existing uuid for update/supersede/contradicts/delete>",
 "content": "...", "category": "process|decision|gotcha|domain|style", "tags": ["..."],
 "anchors": ["path/in/repo.py::Symbol"], "importance": "low|normal|high", "ttl_days": 30,
 "reasoning": "why this is durable"}]}
Return {"operations": []} when nothing is worth keeping.
"""


def current_prompt() -> str:
    row = DreamPrompt.objects.order_by("-id").first()
    return row.text if row and row.text.strip() else DEFAULT_PROMPT


def set_prompt(text: str) -> None:
    """The dream prompt is install-wide: it steers every project's passes, so only a superuser sets it."""
    require_install_wide("changing the dreaming prompt")
    DreamPrompt.objects.all().delete()
    if text.strip() and text.strip() != DEFAULT_PROMPT.strip():
        DreamPrompt.objects.create(text=text)


def reset_prompt() -> None:
    require_install_wide("changing the dreaming prompt")
    DreamPrompt.objects.all().delete()


def build_user_prompt(
    messages: list[tuple[str, str]], memories: list[dict[str, Any]], rejected: list[dict[str, Any]]
) -> str:
    """The conversation plus context, each part fenced as data."""
    parts = ["## Existing memories (update these rather than duplicating them)"]
    parts.append(json.dumps(memories, ensure_ascii=False, indent=0) if memories else "(none)")
    parts.append("## Rejected examples (reviewers said these were not worth keeping; comments say why)")
    parts.append(json.dumps(rejected, ensure_ascii=False, indent=0) if rejected else "(none)")
    parts.append("## Conversation")
    parts += [f"[{role}] {content}" for role, content in messages]
    return "\n\n".join(parts)


JUDGE_PROMPT = """\
You keep one software project's long-term memory free of duplicates and contradictions.
A new memory is proposed; the existing memories most similar to it are listed. Decide:
- "create": it is a different fact; keep both.
- "skip": an existing memory already says the same thing.
- "update": it refines one existing memory (same fact, better wording or more detail).
- "supersede": it replaces one existing memory (the decision was reversed, the command
  renamed, the value changed); the old one becomes history.
- "contradicts": it disagrees with one existing memory and it is unclear which is right.
Answer with one JSON object and nothing else:
{"decision": "create|skip|update|supersede|contradicts", "uuid": "<the existing memory's uuid, if any>",
 "reasoning": "one sentence"}
"""


def build_judge_prompt(proposed: str, neighbours: list[dict[str, Any]]) -> str:
    """The proposal and its nearest existing memories, fenced as data."""
    return "\n\n".join(
        [
            "## Proposed memory",
            json.dumps({"content": proposed}, ensure_ascii=False),
            "## Most similar existing memories",
            json.dumps(neighbours, ensure_ascii=False, indent=0),
        ]
    )

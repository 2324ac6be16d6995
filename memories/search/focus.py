"""A pasted prompt brought down to what retrieval can read: the question in it, not the paste.

The embedder reads only the first 256 word pieces of a text (about 200 words), and the cross-encoder
judges each clause of a long prompt against each candidate. A prompt of 150 log lines with one question
at the end was embedded as logs (the question never seen), matched the logs' keywords, and cost 450
cross-encoder pairs (3-4 s, past the hook's time limit): the wrong memory, late. Above FOCUS_WORDS
words, retrieval reads the prompt's clauses that read as prose, questions first, up to FOCUS_WORDS
words (and at most MAX_NOISE lines of log or code), in the prompt's order; the cross-encoder judges
at most MAX_CLAUSES of them. Shorter prompts
(the hook's usual 15-60 words) are read whole, as before."""

from __future__ import annotations

import re

FOCUS_WORDS = 120
MAX_CLAUSES = 8
MAX_NOISE = 2  # log lines, stack frames, code kept beside the prose

# Sentence ends, semicolons and dashes between words split a prompt; so do line breaks (a pasted
# log or stack trace is one clause per line).
CLAUSE_SPLIT = re.compile(r"(?<=[.?!;])\s+|\s+[-–—]+\s+|\n+")
# A clause of fewer than MIN_CLAUSE_WORDS words ("then fix it", "thanks") is task boilerplate, not a question.
MIN_CLAUSE_WORDS = 3


def clauses_of(text: str) -> list[str]:
    """The clauses of `text` (CLAUSE_SPLIT) of at least MIN_CLAUSE_WORDS words, in order."""
    return [p.strip() for p in CLAUSE_SPLIT.split(text) if len(p.split()) >= MIN_CLAUSE_WORDS]


_ASKS = re.compile(
    r"^(?:how|what|where|why|which|who|when|can|could|should|would|do|does|did|is|are|was|were|will"
    r"|any|please|tell|explain|help|remind)\b",
    re.I,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[.,:;!?)\"']*")


def prose(clause: str) -> float:
    """The share of the clause's tokens that are plain words: near 1 for a sentence, low for a log
    line, a stack frame or code (timestamps, paths, ids, punctuation)."""
    tokens = clause.split()
    return sum(1 for t in tokens if _WORD.fullmatch(t)) / len(tokens) if tokens else 0.0


# What marks a line as machine output even when most of its tokens are words: a timestamp, or two
# of paths, bracketed fields, key=value pairs, dotted names and call syntax.
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\b\d\d:\d\d:\d\d")
_MACHINE = re.compile(r"\S*/\S+/\S*|\bline \d+|\[[^\]\s]*\]|\S+=\S+|\b[A-Za-z_]\w*\.[A-Za-z_]\w*\b|\w\(|[{};]")


def noise(clause: str) -> bool:
    """A log line, a stack frame or code rather than something a person wrote."""
    return prose(clause) < 0.6 or bool(_TIMESTAMP.search(clause)) or len(_MACHINE.findall(clause)) >= 2


def asks(clause: str) -> bool:
    return "?" in clause or bool(_ASKS.match(clause.strip()))


QUESTION, PROSE, NOISE = 0, 1, 2


def _kind(clause: str) -> int:
    """A question a person asks (one naming a file or a setting too), other prose, or machine output."""
    if asks(clause) and prose(clause) >= 0.6 and not _TIMESTAMP.search(clause):
        return QUESTION
    return NOISE if noise(clause) else PROSE


def ranked(parts: list[str]) -> list[int]:
    """The clauses' indexes, most telling first: questions in prose, then prose, then the rest;
    among equals the ones nearer either end (the task comes first, the question often last)."""
    n = len(parts)

    def key(i: int) -> tuple[int, float, int]:
        kind = _kind(parts[i])
        return kind, -prose(parts[i]) if kind == NOISE else 0.0, min(i, n - 1 - i)

    return sorted(range(n), key=key)


def focus(query: str) -> str:
    """`query` itself up to FOCUS_WORDS words; else its most telling clauses within FOCUS_WORDS words,
    in the prompt's order, one per line."""
    if len(query.split()) <= FOCUS_WORDS:
        return query
    parts = [p.strip() for p in CLAUSE_SPLIT.split(query) if p.strip()]
    kept: list[int] = []
    words = machine = 0  # words kept; log or code lines met
    for i in ranked(parts):
        size = len(parts[i].split())
        if _kind(parts[i]) == NOISE:  # a log line or code: a couple say what failed, more drown the question
            machine += 1
            if machine > MAX_NOISE:
                continue
        if words + size <= FOCUS_WORDS:
            kept.append(i)
            words += size
    if not kept:  # one clause longer than the window: its start (the task) and its end (often the question)
        words_of = query.split()
        head = FOCUS_WORDS // 3
        return " ".join(words_of[:head] + words_of[head - FOCUS_WORDS :])
    return "\n".join(parts[i] for i in sorted(kept))

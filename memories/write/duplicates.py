"""When are two memories the same fact? Thresholds on cosine similarity, per embedder.

Chosen on the labelled pairs in bench/duplicate_pairs.py (paraphrases that must merge;
near-misses that differ in one fact, such as a port or a command name, that must not):
see docs/benchmarks.md ("Duplicate threshold") and `python -m bench.duplicate_pairs`.
Every write path (MCP, REST, admin, dreaming, import) uses these through
memories.write.nearby, so one number decides what counts as a duplicate everywhere.
"""

from __future__ import annotations

import functools
import re
from difflib import SequenceMatcher
from typing import NamedTuple

from yullu_core.textnorm import fold


class Thresholds(NamedTuple):
    duplicate: float  # at or above: the same fact, not stored twice
    related: float  # at or above (and below duplicate): reported back as `similar`


# Measured per embedder (docs/benchmarks.md). Unknown embedders get a strict duplicate bar:
# merging two different facts loses one silently, while a missed paraphrase only costs a row.
MEASURED: dict[str, Thresholds] = {
    # Tuned 0.75 (no false merge on the tuning half); shipped 0.80 for a margin over the most
    # similar distinct facts (0.741). Held-out: precision 1.000, recall 0.800.
    "local:all-MiniLM-L6-v2": Thresholds(duplicate=0.80, related=0.60),
}
DEFAULT = Thresholds(duplicate=0.95, related=0.75)
MAX_SIMILAR = 3


def thresholds(embedder_id: str) -> Thresholds:
    return MEASURED.get(embedder_id, DEFAULT)


def skeleton(text: str) -> str:
    """The text as a reader sees it: NFKC, invisible characters dropped, look-alike letters from other
    scripts as the ASCII they imitate (yullu_core.textnorm), whitespace runs as one space. Memories with
    one skeleton are the same text: a Cyrillic `е` or a zero-width space does not make a new fact."""
    return " ".join(fold(text).split())


# --- the one-fact guard ------------------------------------------------------------------------
# Embeddings barely see a changed port, version or command name ("port 8080" vs "port 8081"
# score ~0.98), so cosine alone would merge exactly the corrections people store. Two texts
# are the same fact only if they do not differ in a literal (number, path, flag, identifier)
# and are not the same sentence with one or two words swapped.

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "with",
        "by",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "we",
        "you",
        "they",
        "our",
        "your",
        "i",
        "do",
        "does",
        "did",
        "not",
        "no",
        "so",
        "then",
        "than",
        "there",
        "here",
        "into",
        "onto",
        "via",
    ]
)
ORDINALS = {"first": "1st", "second": "2nd", "third": "3rd", "once": "1x", "twice": "2x"}
NUMBERS = {
    w: str(n)
    for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())  # noqa: SIM905
}
WORD = re.compile(r"[\w$./:=@+-]+")
LITERAL = re.compile(r"\d|[_/$=:@]|^-|\w\.\w")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _stem(token: str) -> str:
    """Crude suffix stripping: enough that "lives"/"live" or "shipped"/"ship" compare equal."""
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s", "e"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            token = token[: -len(suffix)]
            break
    if len(token) > 3 and token[-1] == token[-2] and token[-1] not in "aeiou":
        token = token[:-1]
    return token


@functools.lru_cache(maxsize=4096)  # a batch compares each item with many others (imports: 2,000 a batch)
def _tokens(text: str) -> frozenset[str]:
    return frozenset(token for raw in WORD.findall(text) for token in _word(raw))


@functools.lru_cache(maxsize=65_536)  # texts share most of their words: each is read once per process
def _word(raw: str) -> tuple[str, ...]:
    """The tokens one word gives: a literal as it is, else its parts without stopwords, stemmed."""
    word = raw.strip(".,;:!?()'\"`").lower()
    word = NUMBERS.get(word) or ORDINALS.get(word) or word
    if LITERAL.search(word):
        return (word,)
    # "backward-compatible" = "backward compatible"
    return tuple(_stem(part) for part in word.split("-") if part and part not in STOPWORDS)


@functools.lru_cache(maxsize=4096)
def _literals(text: str) -> frozenset[str]:
    """The tokens of `text` that are literals (numbers, paths, flags, identifiers)."""
    return frozenset(t for t in _tokens(text) if LITERAL.search(t))


@functools.lru_cache(maxsize=4096)
def _numbers(text: str) -> frozenset[str]:
    """The literals of `text` that are plain numbers (a count, a port, a version)."""
    return frozenset(t for t in _literals(text) if NUMBER.fullmatch(t))


def literal_tokens(text: str) -> frozenset[str]:
    """The literals of a skeleton: two texts that both have some are the same fact only if one's are
    all words of the other (`same_fact_skeletons`), which lets a long load skip comparing the rest."""
    return _literals(text)


def same_fact_tokens(a: str, b: str) -> bool:
    """Whether new text `b` says the same fact as existing text `a`: False when they differ in a literal
    or by a one/two-word swap (likely one changed fact). True when `b` is a run of `a`'s words (a shorter
    copy says nothing new), not the other way round: a longer `b` adds a fact to `a`."""
    return same_fact_skeletons(skeleton(a), skeleton(b))


def same_fact_skeletons(a: str, b: str) -> bool:
    """same_fact_tokens of two texts' skeletons (a store batch keeps each item's)."""
    if _copied_from(a, b):
        return True
    ta, tb = _tokens(a), _tokens(b)
    only_a, only_b = ta - tb, tb - ta
    if not _literals(a).issubset(tb) and not _literals(b).issubset(ta):
        return False  # a literal replaced by another: 8080 → 8081, v2 → v3
    numbers_a, numbers_b = _numbers(a), _numbers(b)
    if numbers_a and numbers_b and numbers_a != numbers_b:
        # A number changed even though the old one still appears: "retries 3 times" → "retries 5 times,
        # 3 seconds apart" holds all of the first text's literals, yet it corrects the count.
        return False
    swapped = only_a and only_b and len(only_a) + len(only_b) <= 3 and len(ta & tb) >= 2
    # One word added to an otherwise identical sentence changes the fact ("make dev" → "make serve").
    added = len(only_a) + len(only_b) == 1 and len(ta & tb) >= 3
    return not (swapped or added or _one_phrase_replaced(a, b))


# Words that turn a sentence round: a run copied from beside one is not the same fact (and "not" and
# "no" are stopwords, gone from the token sequences).
NEGATION = re.compile(r"\b(?:not|no|never|without|avoid)\b|n't\b|\bdont\b", re.IGNORECASE)
MIN_COPIED = 4  # words: "run make ship" inside a longer memory is too little to call it a copy


def _copied_from(old: str, new: str) -> bool:
    """`new`'s words are one unbroken run of the longer `old`'s, and `old` negates nothing `new` does not:
    a sentence copied out of a memory that holds it and more (walk 20: a CLAUDE.md line stored beside
    the memory with that line and a promote step, the extra step's flag and number read as a change).
    A run less one word inside it is not a copy: the word may be the fix ("from the main branch" → "from the
    branch", "npm ci" → "npm", "deploy only from" → "deploy from"; review 24 undid round 24's rule that merged
    those)."""
    wa, wb = _sequence(old), _sequence(new)
    if len(wb) < MIN_COPIED or len(wb) >= len(wa) or _negations(old) - _negations(new):
        return False
    return any(wa[at : at + len(wb)] == wb for at in range(len(wa) - len(wb) + 1))


def _negations(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in NEGATION.findall(text))


@functools.lru_cache(maxsize=4096)
def _sequence(text: str) -> tuple[str, ...]:
    return tuple(token for raw in WORD.findall(text) for token in _word(raw))


def _one_phrase_replaced(a: str, b: str) -> bool:
    """The same sentence with one run of up to three words replaced in place: another subject or object
    ("The admin panel keeps its cache for 30 minutes" → "The session store keeps …"), so another fact.
    Two words for two others were merged as one fact (walk 8: 17 of 3,000 imported facts dropped as
    repeats); a restatement reorders its words, so it differs in more than one place."""
    wa, wb = _sequence(a), _sequence(b)
    changed = [op for op in SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(changed) != 1 or changed[0][0] != "replace":
        return False
    _, a0, a1, b0, b1 = changed[0]
    return a1 - a0 <= 3 and b1 - b0 <= 3 and len(wa) - (a1 - a0) >= 2

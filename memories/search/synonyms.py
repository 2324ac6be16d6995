"""A developer thesaurus for the keyword half, applied to the question only.

A developer asks "how do we release to prod?" of a memory that says "deploy to production", or
"where are feature toggles configured?" of one about flags: no word in common, so the keyword
search and the gate's coverage (bm25.search_with_coverage) saw nothing. `synonyms.txt` (one group
per line, written from general usage, not from benchmark items) lists words developers use
interchangeably; a question's words also match their synonyms, at a discount (bm25.SYNONYM_WEIGHT)
so the word itself still counts more. Stored memories are untouched. `rewordings` says the question
in a memory's own words, for the order of what the gate passes (queries.closest_first).

Groups are stemmed with PostgreSQL's `english` configuration (the same as the `search` column),
once per process. A phrase of several words triggers its group only when the question holds all
of its words; as an expansion only single-lexeme members are used, since a phrase's separate words
("feature", "change") would match memories about something else.
"""

from __future__ import annotations

import functools
import re
import threading
from importlib import resources

from django.db import connection

from yullu_core.database import fetch_prepared

# The lexemes that trigger a rule → the single lexemes it adds, each with a word that says it; a
# hypernym's rule does not fire when the question already names one of its hyponyms (the third part).
Rule = tuple[frozenset[str], dict[str, str], frozenset[str]]

_lock = threading.Lock()
_rules: list[Rule] | None = None
# Cost only (issue 34, round seventeen): each rule's place under one lexeme of its trigger (the smallest), so
# a question visits the rules its lexemes can fire, in the thesaurus' order, instead of all of them (5,748 at
# 622 groups: 2 ms a retrieve). A rule fires only when the question holds its whole trigger, so this lexeme
# is always there.
_index: dict[str, list[int]] = {}  # set with _rules, under _lock


def parse(text: str) -> list[tuple[list[str], list[str]]]:
    """(sources, targets) per rule: "a, b, c" makes each member a source of the others;
    "a > b, c" makes only `a` a source, of b and c (a hypernym and its hyponyms)."""
    out: list[tuple[list[str], list[str]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if ">" in line:
            head, tail = line.split(">", 1)
            out.append(([head.strip()], [w.strip() for w in tail.split(",") if w.strip()]))
        else:
            words = [w.strip() for w in line.split(",") if w.strip()]
            out.append((words, words))
    return out


@functools.cache
def thesaurus() -> list[tuple[list[str], list[str]]]:
    """The package's synonyms.txt, parsed (read once per process; callers do not change it)."""
    return parse(resources.files(__package__).joinpath("synonyms.txt").read_text(encoding="utf-8"))


def close(parsed: list[tuple[list[str], list[str]]]) -> list[tuple[list[str], list[str]]]:
    """A group whose member heads a one-directional rule passes its hyponyms to every member:
    "datastore" (a synonym of "database") also finds "postgres"."""
    below: dict[str, list[str]] = {}
    for sources, targets in parsed:
        if sources != targets:  # "a > b, c"
            below.setdefault(sources[0], []).extend(targets)
    out = list(parsed)
    for sources, targets in parsed:
        if sources == targets:  # a group of equals
            inherited = [t for member in sources for t in below.get(member, [])]
            if inherited:
                out.append((sources, inherited))
    return out


def _stem(phrases: list[str]) -> dict[str, frozenset[str]]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT u.p, coalesce(array_agg(l.lexeme) FILTER (WHERE l.lexeme IS NOT NULL), '{}') "
            "FROM unnest(%s::text[]) AS u(p) LEFT JOIN LATERAL unnest(to_tsvector('english', u.p)) l ON true "
            "GROUP BY u.p",
            [phrases],
        )
        rows = cur.fetchall()
    return {p: frozenset(lexemes) for p, lexemes in rows}


def rules() -> list[Rule]:
    global _rules, _index
    with _lock:
        if _rules is not None:
            return _rules
    parsed = close(thesaurus())
    stems = _stem(sorted({w for sources, targets in parsed for w in sources + targets}))
    built: list[Rule] = []
    for sources, targets in parsed:
        singles: dict[str, str] = {}
        for t in targets:
            if len(stems[t]) == 1:
                singles.setdefault(next(iter(stems[t])), t)
        # "postgres vs mysql" holds "database" once JARGON spells it out: it asks about those two,
        # not about every database a memory might name.
        unless = frozenset(singles) if sources != targets else frozenset()
        for s in sources:
            adds = {lex: word for lex, word in singles.items() if lex not in stems[s]}
            if stems[s] and adds:
                built.append((stems[s], adds, unless))
    index: dict[str, list[int]] = {}
    for place, (trigger, _, _) in enumerate(built):
        index.setdefault(min(trigger), []).append(place)
    with _lock:
        _index, _rules = index, built
    return built


def firing(lexemes: frozenset[str] | set[str]) -> list[Rule]:
    """The rules whose whole trigger `lexemes` hold and whose hyponyms it does not name, in the thesaurus'
    order: what scanning every rule with that test gives (rules()), read through the index."""
    built = rules()
    places = sorted(place for lex in lexemes for place in _index.get(lex, ()))
    return [built[p] for p in places if built[p][0] <= lexemes and not built[p][2] & lexemes]


def expand(lexemes: set[str]) -> dict[str, set[str]]:
    """Each question lexeme → the synonym lexemes it also matches (none already in the question)."""
    out: dict[str, set[str]] = {}
    for trigger, adds, _ in firing(lexemes):
        extra = set(adds) - lexemes
        for lex in trigger:
            if extra:
                out.setdefault(lex, set()).update(extra)
    return out


def words_for(lexemes: set[str]) -> set[str]:
    """The synonym words (as written in the thesaurus) of a question's lexemes."""
    return {word for _, adds, _ in firing(lexemes) for lex, word in adds.items() if lex not in lexemes}


def hint(words: set[str], text: str) -> str:
    """The synonym words `text` holds (a word's start matching: "deploy" in "deploys"), comma-joined:
    the cross-encoder reads the question with them, as if it had said the memory's word."""
    lowered = text.lower()
    return ", ".join(sorted(w for w in words if _word_start(w).search(lowered)))


@functools.lru_cache(maxsize=4096)
def _word_start(word: str) -> re.Pattern[str]:
    """A word's start, as `hint` and `rewordings` match it. Cost only (round seventeen): escaped and compiled once
    per word, instead of escaped and looked up in re's cache for every memory and word."""
    return re.compile(rf"(?<![\w-]){re.escape(word)}")


# A word of a question as the keyword search reads it: letters, digits and the marks inside names
# ("pub/sub", "fly.io", "c#").
_TOKEN = re.compile(r"\w(?:[\w'’.+#/-]*[\w+#])?")


def word_lexemes(words: list[str]) -> list[frozenset[str]]:
    """Each word's lexemes under the `english` configuration (a stop word has none), in one statement."""
    if not words:
        return []
    rows = fetch_prepared(
        "SELECT u.n, l.lexeme FROM unnest(%s::text[]) WITH ORDINALITY AS u(w, n) "
        "CROSS JOIN LATERAL unnest(to_tsvector('english', u.w)) AS l",
        [words],
    )
    out: list[set[str]] = [set() for _ in words]
    for n, lexeme in rows:
        out[int(n) - 1].add(lexeme)
    return [frozenset(s) for s in out]


Swap = tuple[int, int, str, str]  # (start, end) of the question's words, the synonym's lexeme, its word


def swaps(query: str) -> list[Swap]:
    """The question's thesaurus words that have synonyms: (start, end) of the words in `query`, the
    synonym's lexeme and the word that says it, one row per synonym, in the question's order."""
    tokens = list(_TOKEN.finditer(query))
    lexemes = word_lexemes([t.group() for t in tokens])
    present = frozenset().union(*lexemes) if lexemes else frozenset()
    out: dict[tuple[int, int, str], str] = {}
    for trigger, adds, _ in firing(present):
        # The words saying the trigger: each of its lexemes' first word; a phrase only when they stand together.
        at = sorted(next(i for i, lex in enumerate(lexemes) if t in lex) for t in trigger)
        if at[-1] - at[0] > len(trigger) + 1:
            continue
        start, end = tokens[at[0]].start(), tokens[at[-1]].end()
        for lex, word in adds.items():
            if lex not in present:
                out.setdefault((start, end, lex), word)
    spans = {(s, e) for s, e, _ in out}
    # "api keys" is the phrase, not "api" and "keys": a span inside a longer one is not swapped alone.
    inner = {(s, e) for s, e in spans if any(s2 <= s and e <= e2 and (s2, e2) != (s, e) for s2, e2 in spans)}
    return [(s, e, lex, word) for (s, e, lex), word in sorted(out.items()) if (s, e) not in inner]


def rewordings(query: str, found: list[Swap], text: str) -> list[str]:
    """`query` with one of its thesaurus words replaced by a synonym that `text` holds (a word's start
    matching, as `hint`), one rewording per such synonym: the question in the memory's own words."""
    lowered = text.lower()
    out = [query[:start] + word + query[end:] for start, end, _, word in found if _word_start(word).search(lowered)]
    return list(dict.fromkeys(out))

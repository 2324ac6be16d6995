"""The product names a short question shares with a memory, and both read without them.

"is redis single threaded" and "we use Redis only as the Celery broker and cache" share one word,
the product's name, and nothing else: the cross-encoder and cosine still rate the memory as an answer
(round three, docs/benchmarks.md). A real question about the project shares the name too ("is it
safe to flush redis"), but the rest of it finds support in the memory. So the gate asks the
cross-encoder again with the shared names replaced by "it" in both texts (gates.Judged.w_entity):
when even then the model scores the pair at its floor, the name was all they had in common.

A name is a product the thesaurus lists under a hypernym (synonyms.txt: "database > postgres,
mysql, …", as written there), or a word the memory writes as a name: capitalised inside a sentence
(Twilio, Opsgenie), with an inner capital (DynamoDB, LaunchDarkly) or in capitals (AWS, SQS). In a
conversation such words are people and places ("what did Caroline paint?"); a real question about them
shares more than the name with its answer, so the masked judgement stays above the floor
(docs/benchmarks.md, round eight: LoCoMo dev).
"""

from __future__ import annotations

import functools
import re

from . import synonyms

MASK = "it"
# A word written as a name: DynamoDB, LaunchDarkly; AWS, SQS; Twilio inside a sentence (not its first
# word, which any word can be).
NAME = re.compile(
    r"(?<![\w-])(?:[A-Za-z]*[a-z][A-Z]\w*|[A-Z]{2,}s?)(?![\w-])|(?<![.!?:;]\s)(?<=\s)[A-Z][a-z]\w*(?![\w-])"
)
WORD = re.compile(r"[\w.+#-]*\w")


@functools.cache
def products() -> re.Pattern[str]:
    """One pattern for every product the thesaurus lists under a hypernym ("redis", "github actions")."""
    names = {t.lower() for sources, targets in synonyms.thesaurus() if sources != targets for t in targets}
    return _words(tuple(sorted(names)))


@functools.lru_cache(maxsize=1024)
def _words(words: tuple[str, ...]) -> re.Pattern[str]:
    """The words as whole words (a plural allowed), longest first: "github actions" before "github"."""
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])({alternatives})(?:e?s)?(?![\w-])", re.I)


def shared(query: str, text: str) -> list[str]:
    """The product names (lowercased) that both the question and the memory hold."""
    named, asked = _read(query)
    found = set(named) | ({w.lower() for w in NAME.findall(text)} & asked)
    return sorted(w for w in found if _words((w,)).search(text))


@functools.lru_cache(maxsize=256)
def _read(query: str) -> tuple[frozenset[str], frozenset[str]]:
    """The products `query` names and its words, lowercased. Cost only (issue 34, round seventeen): the gate
    asks `shared` once per candidate of the same question, and the products' pattern, grown with the
    thesaurus, took ~0.2 ms per retrieve read again for each."""
    named = frozenset(m.group(1).lower() for m in products().finditer(query))
    return named, frozenset(w.lower() for w in WORD.findall(query))


def masked(text: str, names: list[str]) -> str:
    """`text` with each of `names` replaced by "it"."""
    return _words(tuple(names)).sub(MASK, text) if names else text

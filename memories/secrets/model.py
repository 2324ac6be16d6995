"""The scanner's data: a rule, an allowlist, a finding, and Shannon entropy."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


def _without(secret: str, word: str) -> str:
    at = secret.lower().find(word)
    return secret[:at] + secret[at + len(word) :]


@dataclass(frozen=True)
class Allow:
    """A gitleaks allowlist: a finding it matches is not a secret."""

    target: str  # "secret" (default), "match" or "line": what the regexes are applied to
    regexes: tuple[re.Pattern[str], ...]
    stopwords: tuple[str, ...]
    all_of: bool  # condition = "AND": every kind of check given must hold

    def allows(self, secret: str, match: str, line: str, drawn: Callable[[str], bool] | None = None) -> bool:
        """`drawn(rest)`: the secret without a stopword is still drawn at random, so the word is there by chance."""
        text = {"match": match, "line": line}.get(self.target, secret)
        by_regex = any(r.search(text) for r in self.regexes)
        lowered = secret.lower()
        by_stopword = any(w in lowered and not (drawn and drawn(_without(secret, w))) for w in self.stopwords)
        if self.all_of:
            checks = ([by_regex] if self.regexes else []) + ([by_stopword] if self.stopwords else [])
            return bool(checks) and all(checks)
        return by_regex or by_stopword


@dataclass(frozen=True)
class Rule:
    id: str
    kind: str  # shown to the user: "a credential (github-pat)"
    regex: re.Pattern[str]
    keywords: tuple[str, ...]  # lower case; the rule runs only when one occurs (none: always)
    entropy: float = 0.0  # the secret's Shannon entropy must exceed this
    group: int = 0  # which group is the secret (0: the first non-empty one, else the whole match)
    allows: tuple[Allow, ...] = ()
    check: Callable[[str], bool] | None = None  # ours: a further test the secret must pass
    # ours: a test of the text before the secret (up to BEFORE characters), for a rule that finds a value
    # first and then asks what names it: a PIN's digits, a key's hex (cheaper than a pattern that starts
    # at every name and scans ahead)
    before: Callable[[str], bool] | None = None
    # gitleaks' keyword rules start with `[\w.-]{0,50}?` (the rest of the variable's name). Python's
    # re tries it at every position (up to 8 ms per rule on a long memory), so it is cut from the
    # pattern and the match is widened back over those characters afterwards.
    name_prefix: bool = False


@dataclass(frozen=True)
class Finding:
    rule: str
    kind: str
    start: int  # the secret's span in the scanned text
    end: int


def entropy(value: str) -> float:
    if not value:
        return 0.0
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())

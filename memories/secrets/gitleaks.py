"""gitleaks' default rule set (`memories/secret_rules/gitleaks.toml`, MIT, kept as the upstream data file),
translated from RE2 to Python's `re` when loaded."""

from __future__ import annotations

import re
import tomllib
from functools import cache
from importlib import resources
from typing import Any

from .model import Allow, Rule

# gitleaks' rules: RE2 -> Python re

_POSIX = {
    "[:alnum:]": "a-zA-Z0-9",
    "[:alpha:]": "a-zA-Z",
    "[:digit:]": "0-9",
    "[:lower:]": "a-z",
    "[:upper:]": "A-Z",
    "[:xdigit:]": "0-9A-Fa-f",
    "[:space:]": r"\s",
    "[:word:]": r"\w",
    "[:punct:]": r"!-/:-@\[-`{-~",
}
_MID_FLAGS = re.compile(r"\(\?([imsU]+)\)")


def python_regex(go: str) -> re.Pattern[str]:
    """An RE2 pattern as Python `re`: POSIX classes spelled out, `\\z` as `\\Z`, and a flag group
    in the middle (`\\b(p8e-(?i)[a-z0-9]{32})`, which Python refuses) applied to the whole pattern
    (slightly wider than RE2's "from here on": a secret scanner may err towards matching)."""
    for posix, spelled in _POSIX.items():
        go = go.replace(posix, spelled)
    go = go.replace(r"\z", r"\Z")
    flags = "".join(sorted({f for m in _MID_FLAGS.finditer(go) for f in m.group(1) if f != "U"}))
    go = _MID_FLAGS.sub("", go)
    return re.compile(f"(?{flags}){go}" if flags else go)


_NAME_PREFIX = r"[\w.-]{0,50}?"
_NAME_CHAR = re.compile(r"[\w.-]")


def _without_name_prefix(go: str) -> tuple[str, bool]:
    flags = "(?i)" if go.startswith("(?i)") else ""
    rest = go[len(flags) :]
    cut = False
    while rest.startswith(_NAME_PREFIX):
        rest, cut = rest[len(_NAME_PREFIX) :], True
    if rest.startswith("(?i:" + _NAME_PREFIX):
        rest, cut = "(?i:" + rest[4 + len(_NAME_PREFIX) :], True
    return flags + rest, cut


def _allow(data: dict[str, object]) -> Allow:
    regexes = data.get("regexes", [])
    stopwords = data.get("stopwords", [])
    assert isinstance(regexes, list) and isinstance(stopwords, list)
    return Allow(
        target=str(data.get("regexTarget", "secret")),
        regexes=tuple(python_regex(r) for r in regexes),
        stopwords=tuple(str(w).lower() for w in stopwords),
        all_of=str(data.get("condition", "OR")).upper() == "AND",
    )


# gitleaks' curl rules read from `curl` on to the end of the line (and five more) for `-u` or `-H`: from every `curl`
# of a line of them, quadratic (16 KB of "curl " cost 0.5 s of CPU, review 25). Read no further than the next `curl`
# (a later command's options are that command's, found from its own start).
_TO_NEXT_CURL = r"(?:(?!\bcurl\b).)*"


def _one_command(rule_id: str, go: str) -> str:
    if not rule_id.startswith("curl-"):
        return go
    return go.replace(".*?", "\0").replace(".*", _TO_NEXT_CURL).replace("\0", _TO_NEXT_CURL + "?")


def _gitleaks_rule(r: dict[str, Any]) -> Rule:
    pattern, name_prefix = _without_name_prefix(_one_command(r["id"], r["regex"]))
    return Rule(
        id=r["id"],
        kind=f"a credential ({r['id']})",
        regex=python_regex(pattern),
        keywords=tuple(k.lower() for k in r.get("keywords", [])),
        entropy=float(r.get("entropy", 0.0)),
        group=int(r.get("secretGroup", 0)),
        allows=tuple(_allow(a) for a in r.get("allowlists", [])),
        name_prefix=name_prefix,
    )


@cache
def gitleaks() -> tuple[tuple[Rule, ...], tuple[Allow, ...]]:
    """gitleaks' rules (those with a content regex) and its global allowlist (regexes and stopwords;
    its path lists mean nothing for a memory)."""
    data = tomllib.loads(resources.files("memories").joinpath("secret_rules/gitleaks.toml").read_text("utf-8"))
    rules = tuple(_gitleaks_rule(r) for r in data["rules"] if "regex" in r)
    glob = data.get("allowlist", {})
    return rules, (_allow({"regexes": glob.get("regexes", []), "stopwords": glob.get("stopwords", [])}),)

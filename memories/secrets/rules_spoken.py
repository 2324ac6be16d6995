"""Our rules, sixth part: secrets told so that no value-shaped word carries them (held-out set 11): a password
given as a recipe ("the password is the word orbit then 4849", "capital T, rest of the word tango, then 138 and a
dollar sign"), a PIN spelled in number words ("the keypad PIN is zero-eight-zero-six"), a login told as "log in as
ops with X", and a random password with no name at all ("use EwbRO0qQ8JlBD4 for the router")."""

from __future__ import annotations

import re

from .model import Rule, entropy
from .told import _random_mixed, _told_password
from .values import _password_shaped, _random_case
from .words import _NEARBY_INITIALS, _NEARBY_WORDS, _TOLD_VALUE

# What a password's recipe is told about: a password's name in any language, or what it opens.
_RECIPE_NAMES = rf"(?:{_NEARBY_WORDS}|pass|pw|pin|passcode|wi-?fi|wlan|root|admin|login|vpn)"
_RECIPE_INITIALS = "".join(sorted(set(_NEARBY_INITIALS) | set("pwrlav")))
# A symbol said as a word: what a recipe adds after its word.
_SYMBOL_WORD = (
    r"(?:underscore|dash|hyphen|dot|period|full stop|comma|colon|dollar(?: sign)?|hash(?: sign)?|pound sign"
    r"|exclamation(?: mark| point)?|bang|at(?: sign)?|ampersand|asterisk|star|percent(?: sign)?|plus(?: sign)?"
    r"|question mark|caret|tilde|slash)"
)
# The recipe itself: "the word X" (or "type X", "capital T"), then within a few words "then", "followed by" or "plus"
# and a number or a symbol's word. A number of characters, times or minutes is a rule about passwords, not one.
_RECIPE = re.compile(
    rf"(?i)\b(?=[{_RECIPE_INITIALS}])"
    rf"{_RECIPE_NAMES}s?\b[^.\n]{{0,60}}?"
    r"((?:\bthe\s+word|\btype|\bcapital\s+[a-z]\b[^.\n]{0,30}?\bword)\s+[\"'‘“]?[a-z]{2,}[\"'’”]?"
    r"[^.\n]{0,40}?\b(?:then|followed\s+by|plus|and\s+then)\s+(?:an?\s+)?"
    rf"(?:\d{{2,}}(?!\s*(?:characters?|chars?|digits?|letters?|times|minutes?|hours?|days?|attempts?|tries))"
    rf"|{_SYMBOL_WORD}\b))"
)

_DIGIT_WORD = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
# A PIN, a code or a password spelled as number words, four or more ("zero-eight-zero-six", "four seven one nine").
_CODE_IN_WORDS = re.compile(
    r"(?i)\b(?=[pcdlsk])(?:pin|pin\s+code|passcode|pass\s+code|code|combination|combo|door\s+code|keypad\s+code"
    r"|password|passwort|pw)\b[^.\n\d]{0,40}?(?:\s(?:is|was|are)|:|=)\s+[\"'`]?"
    rf"({_DIGIT_WORD}(?:[ \t]*[-,][ \t]*|[ \t]+){_DIGIT_WORD}(?:(?:[ \t]*[-,][ \t]*|[ \t]+){_DIGIT_WORD}){{2,10}})\b"
)

# "log in as ops with X", "we sign in as deploy using X", "ssh in as root with the password X".
_LOGIN_AS_WITH = re.compile(
    r"(?i)\b(?=[lsc])(?:log(?:ged|s)?[ -]?(?:in|on)|sign(?:ed|s)?[ -]?(?:in|on)|connect(?:s|ed)?|ssh(?:\s+in)?)"
    r"(?:\s+(?:to|on)\s+[^\s]{1,60})?\s+as\s+[\w.@+-]{1,64}\s+(?:with|using)\s+"
    rf"(?:(?:the\s+)?(?:{_NEARBY_WORDS}|pass|pw)\s+)?[\"'`]?({_TOLD_VALUE})"
)

# A random password with no name: "use EwbRO0qQ8JlBD4 for the router", "try Xk9#mP2vLq to log in". Only a value that
# nothing but a password generator writes (letters of both cases and digits alternating at random, or a password's
# symbol inside): ids and hashes are one case, names are words.
_USE_VALUE_FOR = re.compile(
    r"(?i)\b(?=[ut])(?:use|try)\s+[\"'`]?([^\s\"'`]{10,40}?)[\"'`]?"
    r"\s+(?:for|on|to\s+(?:log|sign)[ -]?(?:in|on)|to\s+(?:get\s+in|unlock|connect))\b"
)


def _no_name_password(value: str) -> bool:
    value = value.rstrip(".,;:")
    if not value.isascii() or "/" in value or "." in value.strip("."):
        return False
    humps = _HUMP.findall(value)
    if len(humps) >= 2 and 2 * sum(len(h) >= 3 and bool(_VOWEL.search(h)) for h in humps) > len(humps):
        return False  # (capitalised words: a product's or a class's name, `iPhone15ProMax`)
    letters = value.replace("-", "").replace("_", "")
    return _random_mixed(letters) or _random_case(letters) or _password_shaped(value) or _generated(value)


_HUMP = re.compile(r"[A-Z][a-z]+")
_VOWEL = re.compile(r"[aeiouy]", re.IGNORECASE)


def _generated(value: str) -> bool:
    """A generator's password with symbols or few digits (`_sDl=X+lDxCsEm`, `jsearbYg40WtzI`): 12 characters or more,
    two capitals, two small letters and two others, and the kind of character changing at two steps in five or more."""
    kinds = ["u" if c.isupper() else "l" if c.islower() else "o" for c in value]
    if len(value) < 12 or min(kinds.count("u"), kinds.count("l"), kinds.count("o")) < 2 or entropy(value) < 3.3:
        return False
    changes = sum(a != b for a, b in zip(kinds, kinds[1:], strict=False))
    return changes >= 0.4 * (len(value) - 1)


RULES: tuple[Rule, ...] = (
    Rule(
        "password-recipe",
        "a password (told as a recipe)",
        _RECIPE,
        ("then", "followed by", "plus"),
    ),
    Rule(
        "code-in-words",
        "a one-time or access code",
        _CODE_IN_WORDS,
        ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "oh"),
    ),
    Rule(
        "login-as-with",
        "a password",
        _LOGIN_AS_WITH,
        (" as ",),
        check=_told_password,
    ),
    Rule(
        "password-with-no-name",
        "a password",
        _USE_VALUE_FOR,
        ("use ", "try "),
        check=_no_name_password,
    ),
)

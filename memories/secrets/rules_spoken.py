"""Our rules, sixth part: secrets told so that no value-shaped word carries them (held-out set 11): a password
given as a recipe (a word "then" some digits; a capital, "the rest of the word", then digits and a symbol's name), a
PIN spelled in number words or read out digit by digit, a login told as "log in as ops with X", and a random password
with no name at all ("use <random letters and digits> for the router")."""

from __future__ import annotations

import re

from .model import Rule
from .told import _generated, _random_mixed, _told_password
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
# "the word X" (or "type X", "capital T … word X", "le mot X", "das Wort X", "la palabra X"), or a capitalised word
# between commas ("our street name, Birchwood, followed by 42").
_RECIPE_WORD = (
    r"(?:(?:\bthe\s+word|\btype|\bcapital\s+[a-z]\b[^.\n]{0,30}?\bword|\ble\s+mot|\bdas\s+wort|\bla\s+palabra"
    r"|\ba\s+palavra|\bla\s+parola|\bhet\s+woord|\bs[łl]owo)\s+[\"'‘“„«]?[^\W\d_]{2,}[\"'’”»]?"
    r"|,\s+(?-i:[A-Z][a-z]{2,}),)"
)
# Then, within a few words: "then", "followed by", "plus" (or the same in French, German, Spanish, Portuguese, Italian,
# Dutch, Polish), and a number or a symbol's word. A number of characters, times or rounds is a rule about passwords.
_RECIPE_THEN = (
    r"(?:then|followed\s+by|plus|and\s+then|suivi\s+de|puis|dann|gefolgt\s+von|seguid[oa]\s+de|luego|depois"
    r"|seguit[oa]\s+da|poi|daarna|gevolgd\s+door|potem|nast[eę]pnie)"
)
_RECIPE = re.compile(
    rf"(?i)\b(?=[{_RECIPE_INITIALS}])"
    rf"{_RECIPE_NAMES}s?\b[^.\n]{{0,60}}?"
    rf"({_RECIPE_WORD}[^.\n]{{0,40}}?\b{_RECIPE_THEN}\s+(?:an?\s+)?"
    r"(?:\d{2,}(?!\s*(?:characters?|chars?|digits?|letters?|times|minutes?|hours?|days?|attempts?|tries|rounds"
    r"|iterations|bits?|bytes?|zeichen|caract[eè]res|caracteres|caratteri|tekens|znak))"
    rf"|{_SYMBOL_WORD}\b))"
)

_DIGIT_WORD = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_CODE_NAMES = (
    r"(?i)\b(?=[pcdlsk])(?:pin|pin\s+code|passcode|pass\s+code|code|combination|combo|door\s+code|keypad\s+code"
    r"|password|passwort|pw)\b[^.\n\d]{0,40}?(?:\s(?:is|was|are)|:|=|\?)\s+[\"'`]?"
)
# A PIN, a code or a password spelled as number words, four or more ("zero-eight-zero-six", "four seven one nine").
_CODE_IN_WORDS = re.compile(
    _CODE_NAMES
    + rf"({_DIGIT_WORD}(?:[ \t]*[-,][ \t]*|[ \t]+){_DIGIT_WORD}(?:(?:[ \t]*[-,][ \t]*|[ \t]+){_DIGIT_WORD}){{2,10}})\b"
)

# The same as single digits, spaced or dashed one by one (a door code read out digit by digit, a PIN after "PIN?"); not
# a date, a version or a list of numbers longer than a code.
_CODE_OF_SINGLE_DIGITS = re.compile(_CODE_NAMES + r"(\d(?:[ \t]?-[ \t]?\d|[ \t]\d){3,9})(?![\d.:/-]|[ \t]\d)")

# "log in as ops with X", "we sign in as deploy using X", "ssh in as root with the password X".
_LOGIN_AS_WITH = re.compile(
    r"(?i)\b(?=[lsc])(?:log(?:ged|s)?[ -]?(?:in|on)|sign(?:ed|s)?[ -]?(?:in|on)|connect(?:s|ed)?|ssh(?:\s+in)?)"
    r"(?:\s+(?:to|on)\s+[^\s]{1,60})?\s+as\s+[\w.@+-]{1,64}\s+(?:with|using)\s+"
    rf"(?:(?:the\s+)?(?:{_NEARBY_WORDS}|pass|pw)\s+)?[\"'`]?({_TOLD_VALUE})"
)

# A random password with no name: "use <it> for the router", "try <it> to log in". Only a value that
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


RULES: tuple[Rule, ...] = (
    Rule(
        "password-recipe",
        "a password (told as a recipe)",
        _RECIPE,
        (
            *("then", "followed by", "plus", "suivi de", "puis", "dann", "gefolgt", "seguid", "luego", "depois"),
            *("seguit", "poi", "daarna", "gevolgd", "potem", "następnie", "nastepnie"),
        ),
    ),
    Rule(
        "code-in-words",
        "a one-time or access code",
        _CODE_IN_WORDS,
        ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "oh"),
    ),
    Rule(
        "code-of-single-digits",
        "a one-time or access code",
        _CODE_OF_SINGLE_DIGITS,
        ("pin", "code", "combination", "combo", "passw", "pw"),
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

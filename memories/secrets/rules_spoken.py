"""Our rules, sixth part: secrets told so that no value-shaped word carries them (held-out set 11): a password
given as a recipe (a word "then" some digits; a capital, "the rest of the word", then digits and a symbol's name), a
PIN spelled in number words or read out digit by digit, a login told as "log in as ops with X", and a random password
with no name at all ("use <random letters and digits> for the router")."""

from __future__ import annotations

import re

from .model import Rule
from .phrases import _NOT_PASSPHRASE_WORDS, _passphrase
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
    r"|,\s+(?-i:[A-Z][a-z]{2,}),"
    # or what only its owner knows, right after "is": "the root password is my daughter's name capitalized plus 42"
    r"|(?:\bis|\bwas|:|=)\s+(?:my|our|his|her|their|the)\s+(?:[^\W\d_]{2,15}(?:'s|’s|s')\s+)?"
    r"(?:(?:first|last|middle|maiden|pet|street|dog|cat|nick)\s*)?(?:name|surname|nickname|birthday)\b)"
)
# Then, within a few words: "then", "followed by", "plus" (or the same in French, German, Spanish, Portuguese, Italian,
# Dutch, Polish), and a number or a symbol's word. A number of characters, times or rounds is a rule about passwords.
_RECIPE_THEN = (
    r"(?:then|followed\s+by|plus|and\s+then|suivi\s+de|puis|dann|gefolgt\s+von|seguid[oa]\s+de|luego|depois"
    r"|seguit[oa]\s+da|poi|daarna|gevolgd\s+door|potem|nast[eę]pnie)"
)
_NUMBER_NAMED = r"(?:(?:the|my|our|his|her|their)\s+)?(?:[^\W\d_]{2,12}\s+)?(?:year|number|no\.?|digits)"
_RECIPE = re.compile(
    rf"(?i)\b(?=[{_RECIPE_INITIALS}])"
    rf"{_RECIPE_NAMES}s?\b[^.\n]{{0,60}}?"
    rf"({_RECIPE_WORD}[^.\n]{{0,40}}?\b{_RECIPE_THEN}\s+(?:an?\s+)?"
    # (the number may be named first: "followed by the year 2019", "plus the house number 42")
    rf"(?:{_NUMBER_NAMED}\s+)?"
    r"(?:\d{2,}(?!\s*(?:characters?|chars?|digits?|letters?|times|minutes?|hours?|days?|attempts?|tries|rounds"
    r"|iterations|bits?|bytes?|seconds?|secs?|zeichen|caract[eè]res|caracteres|caratteri|tekens|znak))"
    rf"|{_SYMBOL_WORD}\b))"
)

# A passphrase given as its words and how they are joined, with no "then": "the vpn password is three words: copper,
# lantern, orbit, with dashes between" (the leftover of set eleven). Three to eight words after "N words" or "the
# words", ended by the sentence or by how they are joined.
_WORD_COUNT = r"(?:two|three|four|five|six|seven|eight|[2-8])"
_JOINED = (
    r"(?:with|joined|separated|glued|between|hyphenated|in\s+(?:this|that)\s+order"
    r"|all\s+(?:in\s+)?(?:lower|upper)(?:[ -]?case)?|no\s+spaces)"
)
_LIST_WORD = rf"(?!{_JOINED}\b)(?-i:[a-z]{{3,12}})"
_WORD_LIST = re.compile(
    rf"(?i)\b(?=[{_RECIPE_INITIALS}])(?:{_RECIPE_NAMES}|passphrase)s?\b[^.\n]{{0,40}}?"
    rf"\b(?:{_WORD_COUNT}|the)\s+words\b\s*[:,(–—-]?\s*"
    rf"({_LIST_WORD}(?:(?:\s*,\s*|\s+and\s+|\s+){_LIST_WORD}){{2,7}})"
    rf"(?=\s*(?:[.;\n]|$)|[\s,)–—-]{{0,4}}{_JOINED}\b)"
)


def _word_list(words: str) -> bool:
    """Three to eight words of a passphrase, none of them a word of a sentence about passwords
    ("three words: long, random, unique" is advice)."""
    parts = [w for w in re.split(r"[\s,]+", words.lower()) if w != "and"]
    return 3 <= len(parts) <= 8 and not any(w in _NOT_PASSPHRASE_WORDS or w in _ADVICE_WORDS for w in parts)


_ADVICE_WORDS = frozenset(
    [
        "long",
        "random",
        "unique",
        "strong",
        "memorable",
        "secure",
        "simple",
        "easy",
        "hard",
        "short",
        "complex",
        "private",
    ]
)

# A password as the first letters of a quoted sentence (a mnemonic): "the vault password is the first letter of each
# word in 'I bought 3 red bikes in Oslo last May!'", in English, French, German, Spanish, Portuguese, Italian, Dutch.
_FIRST_LETTERS = re.compile(
    rf"(?i)\b(?=[{_RECIPE_INITIALS}])(?:{_RECIPE_NAMES}|passphrase)s?\b[^.\n]{{0,60}}?"
    r"(?:\b(?:first|initial)\s+(?:letters?|characters?|chars?)|\binitials|\bpremi[eè]res?\s+lettres?"
    r"|\banfangsbuchstaben|\bersten\s+buchstaben|\bprimeras?\s+letras?|\bprimeiras?\s+letras?|\bprime\s+lettere"
    r"|\biniziali|\beerste\s+letters|\bbeginletters)"
    r"(?:\s+(?:of|in|from|de|du|des|von|der|aller|di|del|della|van|do|da|dos|das)){0,2}"
    r"(?:\s+(?:each|every|chaque|jedes|cada|ogni|elke|the|a)\s+(?:word|mot|wortes|palabra|palavra|parola|woord)"
    r"(?:\s+(?:of|in|from|de|du|des|von|der|di|del|della|van|do|da))?)?"
    r"(?:\s+(?:the|la|le|die|el|a|o|de|het)\s+(?:sentence|phrase|line|lyric|quote|satz|frase|zin))?"
    r"\s*:?\s*(?:\"([^\"\n]{12,160})\"|(?<![\w])'([^'\n]{12,160})'(?![\w])|[‘“„«]\s*([^’”“»\n]{12,160}?)\s*[’”“»])"
)


def _sentence(text: str) -> bool:
    """A sentence to take initials from: four words or more."""
    return len(text.split()) >= 4


# A password after "i.e." (or "namely", "d.h.", "c.-à-d.", "es decir", "cioè", "oftewel") in a sentence naming it:
# "password hint: our usual pattern, i.e. Winter2024!" (the leftover of set eleven).
_THAT_IS = re.compile(
    rf"(?i)\b(?=[{_RECIPE_INITIALS}])(?:{_RECIPE_NAMES}|passphrase|account|login|credentials?|hint)s?\b[^\n]{{0,80}}?"
    r"(?:\bi\.\s?e\.|\bie,|\bnamely|\bviz\.|\bd\.\s?h\.|\bc\.-?à-?d\.|\bes\s+decir|\bcio[eè]|\boftewel|\bczyli)"
    r",?\s+[\"'`]?([^\s\"'`]{6,40})"
)


# A password's new value told in the next sentence, its name in the one before: "Prod DB pw was rotated today. New
# one: X." (set twelve). "the new one", "the current one", "the temp one" and "is" / ":" / "=" / an arrow.
_NEW_ONE = re.compile(
    r"(?i)\b(?=[nocturf])(?:new|old|current|temp(?:orary)?|updated|rotated|fresh)\s+(?:one|value)"
    rf"\s*(?:is|was|:|=|->|→)\s*[\"'`]?({_TOLD_VALUE})"
)
_PASSWORD_BEFORE = re.compile(rf"(?i)\b(?:{_RECIPE_NAMES}|passphrase|credentials?|creds)s?\b")


# A password or a passphrase after a dash that ends what is said about it: "same as last year's wifi pw but with 2025
# instead of 2024 — Winter2025!", "SSH key passphrase — 'mango tango 77 kiwi'" (set twelve's probing).
_AFTER_DASH = re.compile(
    rf"(?i)\b(?=[{_RECIPE_INITIALS}])(?:{_NEARBY_WORDS}|pw|pwd|passcode)s?\b[^\n—–]{{0,80}}?\s[—–]\s*"
    rf"(?:[\"'‘“]([^\"'’”\n]{{8,80}})[\"'’”]|({_TOLD_VALUE}))"
)


def _dash_value(value: str) -> bool:
    return _told_password(value) if " " not in value else _passphrase(value)


_DIGIT_WORD = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_CODE_NAMES = (
    r"(?i)\b(?=[pcdlsk])(?:(?:pin|pin\s+code|passcode|pass\s+code|code|combination|combo|door\s+code|keypad\s+code"
    r"|password|passwort|pw)\b[^.\n\d]{0,40}?(?:\s(?:is|was|are)|:|=|\?)"
    # (a PIN's or a passcode's digits may follow its name alone, "passcode 1 2 3 4 5 6", or the count of its digits,
    # "the code for the door is 4 digits: 7 3 1 9": set twelve's probing)
    r"|(?:pin|passcode)(?=\s+\d\s))\s+(?:(?:\d|four|five|six|eight)\s+digits?\s*[:,—–-]?\s*)?[\"'`]?"
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
        "password-word-list",
        "a password (told as its words)",
        _WORD_LIST,
        ("words",),
        check=_word_list,
    ),
    Rule(
        "password-mnemonic",
        "a password (told as a sentence's initials)",
        _FIRST_LETTERS,
        (
            *("first letter", "first char", "initial", "premières lettres", "premiere lettre", "premières lettre"),
            *("première lettre", "anfangsbuchstaben", "ersten buchstaben", "primera letra", "primeras letras"),
            *("primeira letra", "primeiras letras", "prime lettere", "iniziali", "eerste letters", "beginletters"),
        ),
        check=_sentence,
    ),
    Rule(
        "password-that-is",
        "a password",
        _THAT_IS,
        (
            *("i.e", "i. e", "ie,", "namely", "viz.", "d.h", "d. h", "c.-à-d", "c-à-d", "c.-a-d", "es decir", "cioè"),
            *("cioe", "oftewel", "czyli"),
        ),
        check=_told_password,
    ),
    Rule(
        "password-new-one",
        "a password",
        _NEW_ONE,
        (" one", " value"),
        check=_told_password,
        before=lambda text: bool(_PASSWORD_BEFORE.search(text)),
    ),
    Rule(
        "password-after-dash",
        "a password",
        _AFTER_DASH,
        ("—", "–"),
        check=_dash_value,
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

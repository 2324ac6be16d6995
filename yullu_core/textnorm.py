"""Text as a reader sees it, for checks that must not be fooled by look-alike characters.

`fold(text)` applies NFKC (full-width and mathematical letters become plain ones), drops invisible
format characters (zero-width space/joiners, bidi controls, soft hyphen, Unicode tag characters
U+E0000..E007F: category Cf, plus variation selectors) and maps look-alikes from other scripts
(Cyrillic "р", Greek "ο", ...) to the ASCII character they imitate, using Unicode's confusables
table as shipped by `confusable-homoglyphs` (MIT). The result is for matching only: it is never
stored, since folding rewrites legitimate non-Latin text too.

`fold_with_origin` also returns, for every character of the result, the index of the character
of `text` it came from, so a match found in the folded text can be cut out of the original.
"""

from __future__ import annotations

import json
import unicodedata
from functools import cache
from importlib import resources

_VARIATION_SELECTORS = range(0xFE00, 0xFE10)


@cache
def _ascii_lookalikes() -> dict[str, str]:
    """Non-ASCII character -> the printable ASCII character it is confusable with."""
    table = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8"))
    out: dict[str, str] = {}
    for char, homoglyphs in table.items():
        if len(char) != 1 or char.isascii():
            continue
        for h in homoglyphs:
            c = h["c"]
            if len(c) == 1 and "!" <= c <= "~":
                out[char] = c
                break
    return out


def _invisible(char: str) -> bool:
    return unicodedata.category(char) == "Cf" or ord(char) in _VARIATION_SELECTORS


def fold_with_origin(text: str) -> tuple[str, list[int] | None]:
    """The folded text and, per folded character, its index in `text` (None: the text is ASCII,
    returned as is, every index its own)."""
    if text.isascii():
        return text, None
    lookalikes = _ascii_lookalikes()
    chars: list[str] = []
    origin: list[int] = []
    for i, char in enumerate(text):
        if char.isascii():
            chars.append(char)
            origin.append(i)
            continue
        if _invisible(char):
            continue
        for c in unicodedata.normalize("NFKC", char):
            if _invisible(c):
                continue
            chars.append(lookalikes.get(c, c))
            origin.append(i)
    return "".join(chars), origin


def fold(text: str) -> str:
    return fold_with_origin(text)[0]

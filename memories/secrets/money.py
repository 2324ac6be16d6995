"""Secrets that are money: a payment card told with its expiry or security code, and a wallet's recovery
words from the BIP-39 list (python-mnemonic's word list, docs/decisions.md) told with no name before them."""

from __future__ import annotations

import re
from functools import cache

from mnemonic import Mnemonic

# Twelve short lower-case words or more, each maybe numbered as a list writes them ("1. ripple 2. fossil")
# (possessive: a long run of prose's words is not tried again shorter).
SEED_WORDS = r"(?<![\w-])((?:(?:\d{1,2}[.):][ \t]*)?[a-z]{3,8}(?![\w-])[ \t\n,]*){12,}+)"

# A card's 13 to 19 digits (grouped by spaces or dashes) with its expiry (MM/YY) or its security code
# within 40 characters after it: the number alone is often an order's or a test card's.
CARD = (
    r"(?<![\d-])((?:\d[ -]?){12,18}\d)(?![\d-])"
    r"(?=[^\n]{0,40}?(?:\b(?:0[1-9]|1[0-2])\s?/\s?(?:20)?\d{2}\b"
    r"|\b(?i:cvv2?|cvc2?|csc|cid|security code)\b\D{0,3}\d{3,4}\b))"
)

# A card's number of an issuer's shape (Visa 4…, Mastercard 51–55 / 22–27, Amex 34 / 37, Discover 6011 / 65) named as
# a card a few words before it, with no expiry or code after: "Pay with the Amex ending in the card 3741…, code 3427"
# (secrets12's set). The name and the issuer's prefix stand for the expiry: an order's or an invoice's number has
# neither.
NAMED_CARD = r"(?<![\d-])((?:4\d{3}|5[1-5]\d\d|2[2-7]\d\d|3[47]\d\d|6(?:011|5\d\d))(?:[ -]?\d){9,12})(?![\d-])"
_CARD_NAMED = re.compile(
    r"(?i)\b(?:visa|master ?card|amex|american express|discover|(?:credit|debit|company|corporate|business|payment)"
    r" card|card(?: number| no\.?| #)?)\b[^\n.;]{0,40}$"
)


def _card_named_before(before: str) -> bool:
    return bool(_CARD_NAMED.search(before[-60:])) and _not_a_test_card(before)


@cache
def _bip39() -> frozenset[str]:
    return frozenset(Mnemonic("english").wordlist)


def _seed_words(run: str) -> bool:
    """Twelve words in a row all from the BIP-39 list: English prose has a word such as "the", "is" or
    "to" (none of them on the list) far more often than every twelve words."""
    words = _bip39()
    streak = 0
    for token in re.findall(r"[a-z]+", run):
        streak = streak + 1 if token in words else 0
        if streak >= 12:
            return True
    return False


def _luhn_card(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    if not 13 <= len(digits) <= 19 or len(set(digits)) < 3:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _not_a_test_card(before: str) -> bool:
    """A card labelled as a test or sandbox card is a documented number, not a secret."""
    return re.search(r"(?i)\b(?:test|sandbox|example|dummy|fake)\b", before[-80:]) is None

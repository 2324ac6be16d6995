"""What names a PIN, a key's hex or a secret a few words before its value, and what makes the value
something else (a digest, an id, a field's name)."""

from __future__ import annotations

import re

from .model import entropy
from .words import _ABOUT, _ADVERB, _LINKING, _PIN_WORDS, _TOLD_VALUE

# What names a PIN before it: `PIN` or `PUK` in capitals (a chip's pin is a wire) or another name of a
# numeric code (`passcode`, `door code`, `code PIN`, `Geheimzahl` …) a few words before; `pin` in lower case
# (a version pin too) with a verb or a colon. Inside a lookahead, so every name is tried, not only the first:
# "After the PIN policy review the door code is 4821" (the first name's words say policy, the last's do not).
_PIN_NAMED = re.compile(
    # (`(?![a-z])`, not `\b`: `暗証番号は` has no word boundary)
    rf"(?=(?:\b(?:PIN|PUK)(?:s|-?[Cc]ode|-?Nummer)?\b|(?i:(?:{_PIN_WORDS})(?![a-z])))([^\n.;]{{0,40}})$"
    rf"|(?i:\bpin\b){_ABOUT}([^\n.=:;]{{0,30}}?)" + _LINKING[:-1] + r"|は|是)\s*[\"'`]?$"
    # or a verb of typing it in before: "use the pin 482913 to unlock the release YubiKey", "enter pin 4827" (walk 14's
    # leftover, secrets18; a chip's pin is wired or read, not entered: "use the pin 4 of the header" has one digit)
    r"|(?i:\b(?:use|enter|type|try|input|key\s+in|punch\s+in)\s+(?:(?:the|your|my|our|this|that|its|their)\s+)?"
    # (not a wire's name between: "use the GPIO pin 1024", "enter the reset pin 2048")
    r"(?:(?!(?:gpio|header|analog|digital|output|input|reset|power|ground|data|clock|chip|board|jumper|io)\b)"
    r"[\w'-]+\s+)?pin)\s+$)"
)
# Words between a PIN's name and a number that make the number something else: a rule about PINs, an
# issue, an ADR, a release ("PIN codes are hashed with argon2, see ADR 0042").
_NOT_A_PIN_BETWEEN = re.compile(
    # ("lock" unless it names the PIN just before the number: "PIN for the screen lock: 4821")
    r"(?i)hash|polic|length|digits\b|attempt|retr|expir|\block(?![ \t]*:[ \t]*$)|weak|reject|issue|ticket|\badr\b"
    r"|\brfc|version|release|\bpr\b|#|\bstep|\bline\b|\bpage\b|\bport\b"
    # a standard's number: "the PIN block is ISO 9564 format 0", "ISO/IEC 7816", "FIPS 140"
    r"|\b(?:iso|iec|fips|ieee|ecma|ansi|din|itu-t)(?:/iec)?[ \t-]*$"
    # "the PIN screen uses 8080", "PIN pad timeout 3000": a PIN's name before a thing of the interface
    # (unless a code's name or a colon follows: "PIN pad code: 4821")
    r"|^[ \t-]*(?:screen|pad|keypad|dialog|prompt|field|form|input|reader|widget|modal|view|component|timeout)s?\b"
    r"(?![^:]*(?::|\bcode|\bpin\b))"
)


def _pin_before(text: str) -> bool:
    return any(not _NOT_A_PIN_BETWEEN.search(m.group(1) or m.group(2) or "") for m in _PIN_NAMED.finditer(text))


# A word of keys, secrets or signing before a hex key, not a key that is no secret (`public key`, `cache
# key`, `primary key` …); the words between must not make the hex a digest, an id, a commit, an IV …
# (in a lookahead, so every such word is tried, not only the first: "The key id rotates daily and callbacks are
# signed with 3f9a…")
def _key_word(words: str, gap: int) -> re.Pattern[str]:
    return re.compile(
        r"(?i)(?=(?<!public )(?<!publishable )(?<!host )(?<!gpg )(?<!pgp )(?<!ssh )(?<!cache )(?<!primary )"
        r"(?<!foreign )(?<!partition )(?<!sort )(?<!idempotency )(?<!idempotency-)(?<!idempotency_)(?<!object )"
        r"(?<!row )(?<!lookup )"
        rf"\b(?:{words})\b([^.\n]{{0,{gap}}})$)"
    )


_KEY_WORDS = r"keys?|secrets?|(?:en|de)crypt(?:ed|ion|s)?|sign(?:ed|ing|s)?|hmac|salt|pepper|passphrase|cipher"
_KEY_WORD = _key_word(_KEY_WORDS, 60)
_NOT_A_KEY_BETWEEN = re.compile(
    r"(?i)sha|md5|hash|digest|checksum|commit|fingerprint|\bids?\b|uuid|etag|revision|\brev\b|public|object"
    r"|build|image|cache|blob|tree|tag\b|version|release|\biv\b|nonce"
)


# "the thumbprint (RFC 7638) of the current key is NzbLsXh8…", "the fingerprint of the signing key is …": what is
# told is a digest of the key, not the key.
_DIGEST_OF_KEY = re.compile(
    r"(?i)\b(?:thumbprint|fingerprint|digest|hash|checksum|ids?)\b[^.\n]{0,30}?\bof\b[^.\n]{0,30}?\bkeys?\b[^.\n]{0,20}$"
)


# A digest's value told as what a hash, a MAC or a fingerprint gives: "HMAC-SHA256 of "hello" with key "key" is 9307…",
# `HMAC_SHA256(key="key", msg="…") = f7bc…`, "for 'password' the SHA-1 is 5baa…", "PGP fingerprint of the security@
# key (…): 54FD F309 …", "the Wikipedia HMAC vector (key 'key', the quick brown fox message, f7bc…)". The words of
# the function's input (a key's, a password's) come before the value but name the input, not it. Only right after
# the function's name ("HMAC-SHA256 of …", "sha256(…)"): "the HMAC-SHA256 signing key of the webhook is <hex>" names a
# key; nor a bare `HMAC:` or "the HMAC is" (a config's `hmac:` holds a key). A clause's `,` `;` or "and" between the
# function and the value ends the sentence about it: "the SHA-256 of the file is …" then ", and the signing key is".
_DIGEST_FUNCTION = (
    r"(?:hmac(?:[-_ ]?(?:sha|md5|blake2[bs]?)[-_]?\d*)?|sha[-_]?(?:1|224|256|384|512)|sha3[-_]?\d+|md5|blake2[bs]?"
    r"|crc-?32|fingerprint|thumbprint|digest|checksum|hash)"
)
_DIGEST_TOLD = re.compile(
    # (a parenthesis between only closed again: "the encryption key (not a hash of anything) is <hex>" names a key)
    rf"(?i)\b(?:{_DIGEST_FUNCTION}(?:\s+of\b(?:(?!\b(?:and|but|while|whereas)\b)(?:[^.\n,;()]|\([^()\n]{{0,80}}\)))"
    r"{0,100}?"
    r"|\s*\([^()\n]{0,160}\))(?:\s+(?:is|was|equals|gives|returns)|\s*(?:==?|->|→|:))"
    # (the result told after the function's name alone: "the SHA-1 is …", "checksum: …"; not an HMAC's: its key)
    r"|(?<!hmac[-_ ])(?:sha[-_]?(?:1|224|256|384|512)|sha3[-_]?\d+|md5|fingerprint|thumbprint|digest|checksum|hash)"
    r"\s*(?:is|was|:|=)"
    # (an HMAC named with its hash and `-`, which no variable's or env file's name has: RFC 4231's "HMAC-SHA-256 = …")
    r"|hmac-(?:sha|md5|blake2[bs]?)-?\d+\s+(?:=|is|was))\s*[\"'`]?$"
)
# Or a test vector's, unless a key's or a secret's word names the value itself: "the Wikipedia HMAC vector (key
# 'key', the quick brown fox message, f7bc…)", not "test vector key: <hex>".
_VECTOR_TOLD = re.compile(
    r"(?i)\b(?:(?:test|hmac|hash|digest|sha[-_]?\d+)[ -]vectors?|known[- ]answer)\b[^.\n]{0,100}$"
)
_KEY_JUST_BEFORE = re.compile(
    r"(?i)\b(?:keys?|secrets?|tokens?|passwords?|passphrase|salt|pepper)\b[^\w\n]{0,3}(?:\s+(?:is|was))?[\s:=\"'`]*$"
)
# What a digest's hex is: MD5's, SHA-1's, SHA-224's, SHA-256's, SHA-384's or SHA-512's length, one case, also in
# groups (a fingerprint's `54FD F309 …`, `ab:cd:…`).
_DIGEST_HEX = re.compile(r"[0-9a-fA-F]{32,128}|[0-9a-fA-F]{2,8}(?:[ :][0-9a-fA-F]{2,8}){3,63}")
_DIGEST_LENGTHS = frozenset({32, 40, 56, 64, 96, 128})


def _told_digest(before: str, secret: str) -> bool:
    """A hex digest of a MAC's, a hash's or a fingerprint's length, told as that function's output."""
    value = secret.strip("\"'`").rstrip(".,;)`'\"")
    digits = value.replace(" ", "").replace(":", "")
    if not _DIGEST_HEX.fullmatch(value) or len(digits) not in _DIGEST_LENGTHS:
        return False
    if not (digits.islower() or digits.isupper() or digits.isdigit()):
        return False
    if _DIGEST_TOLD.search(before):
        return True
    return bool(_VECTOR_TOLD.search(before)) and not _KEY_JUST_BEFORE.search(before)


# `gpg --recv-keys 4F2A91C3…`, `gpg --keyserver keys.openpgp.org --recv-key …`: gpg's option naming keys before
# the hex of a key's fingerprint, which is public (a private key is an armored block, read by the private-key rules).
_OPENPGP_NEAR = re.compile(r"(?i)\b(?:gpg2?|gnupg)\b[^\n;|&]{0,80}?\s--?[\w-]*keys?[ \t=]+[`'\"]?$")


def _hex_key_before(text: str) -> bool:
    if _OPENPGP_NEAR.search(text):
        return False
    return any(not _NOT_A_KEY_BETWEEN.search(m.group(1)) for m in _KEY_WORD.finditer(text))


# The same for a key written in groups, whose sentence often says why it is spaced ("api key for the geocoder,
# spaced so slack doesn't linkify it: aaf5 fad4 …"): a token's word too, further off.
_KEY_WORD_FAR = _key_word(_KEY_WORDS + "|tokens?", 90)


def _grouped_key_before(text: str) -> bool:
    if _OPENPGP_NEAR.search(text):
        return False
    return any(not _NOT_A_KEY_BETWEEN.search(m.group(1)) for m in _KEY_WORD_FAR.finditer(text))


def _grouped_hex_key(groups: str) -> bool:
    """Hex groups (`aaf5 fad4 e05d …`) that joined are a key's hex: 24 digits or more, as `_hex_key`."""
    joined = groups.replace(" ", "").replace("-", "")
    return len(joined) >= 24 and _hex_key(joined)


_RECOVERY_CODE = re.compile(r"(?<![\w.])[A-Za-z0-9]{4,10}(?:-[A-Za-z0-9]{4,10})?(?![\w.])")


def _hex_key(value: str) -> bool:
    """Hex of a key (32 to 128 digits, one case, letters and digits, random enough)."""
    return (
        (value.islower() or value.isupper())
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and entropy(value) >= 3.0
    )


_SECRET_NAME = (
    # (not a tokenizer's, `"tokenizer": "o200k_base"`)
    r"(?:SECRET|TOKEN(?!I[SZ])|PASS(?:WORD|WD|PHRASE)?|PWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SIGNING_?KEY|ENCRYPTION_?KEY"
    # (Azure's connection strings: `AccountKey=`, `StorageKey=`)
    r"|MASTER_?KEY|CLIENT_?KEY|APP_?KEY|ACCOUNT_?KEY|STORAGE_?KEY|AUTH_?KEY|HMAC(?:_?KEY)?|[A-Z0-9]_KEY|CREDENTIALS?"
    # (`AUTH`, not a GraphQL schema's or a package's `author:`, nor `authority:`)
    r"|AUTH(?!OR(?:S?\b|ITY|ITIES|SHIP))|SALT|DSN|COOKIE)"
)

# A secret's name in prose, for the rules that read its value before it or quoted after a few words
# (not a bare "key": "the cache key in redis.py is 'user-profile-2'" names a key of a table).
# (`pass?(?:w(?:or|ro|r)|ow?r|or)d`: "password" and how it is mistyped, "pasword", "passwrod", "passowrd", "passord")
_SECRET_NOUN = (
    r"(?:pass?(?:w(?:or|ro|r)|ow?r|or)d|passwd|passphrase|passcode|pw|secret|token|credentials?|creds"
    r"|(?:api|secret|private|signing|encryption|access|master)[ _-]?key)"
)
# Words between a secret's name and a quoted value that make the value something else: its name, id,
# path, variable, header …
_NAMING_WORD = (
    r"(?:names?|named|ids?|path|paths|file|filename|location|variable|var|env|header|field|prefix|format"
    r"|type|length|label|title|alias|version|placeholder|example|sample)\b"
)

# "the datasource password through an environment variable: secureJsonData", "the password's field: pass_hash":
# words between a password's name and the value that make the value the name of where it is kept.
_NAMED_BY_FIELD = re.compile(
    r"(?i)\b(?:password|passwd|passphrase|passcode|pw|pwd)s?\b[^.\n=:]{0,40}?"
    r"\b(?:variable|var|env|field|header|column|parameter|param|attribute|property|setting)s?\b[^.\n=:]{0,20}:\s*$"
)

# After a password's name: a verb or a colon right after it, or what it is for first ("the password for the grafana
# admin is now X"), then the value.
_TOLD_PLAINLY = (
    # (a host's dots do not end the gap: "the password for db.prod is X"; a sentence's dot, before a space, does)
    rf"s?{_ABOUT}(?:\s+(?:for|of|on|at|to|für|de|del|di|da|van|voor)\s(?:[^.\n=:;]|\.(?=\w)){{0,40}}?)?"
    # (an aside between commas or in parentheses: "the password, case sensitive, is kx8vr2plmq"; walk 15's limit)
    r"(?:,[^,()\n.=:;]{1,40},|[ \t]*\([^()\n=:;]{1,40}\))?"
    rf"(?:\s(?:is|was|ist|est|es|é|è|lautet)(?:\s+{_ADVERB})?"
    # (a dash or an arrow too, spaced: "Password — X", "password -> X")
    rf"|\s(?:set|changed|reset) to|\s*[:=：]|\s*(?:是|は|为)|\s+(?:—|–|--?>?|=>)\s)\s*[\"'`«„“「『]?({_TOLD_VALUE})"
)

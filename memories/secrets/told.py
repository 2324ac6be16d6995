"""Whether a value told in a sentence is a secret: a password, a token, a key a few words after its name;
and what names, versions, algorithms and code look like there."""

from __future__ import annotations

import re
from urllib.parse import unquote

from .decoding import _decoded, _encoded_text
from .model import entropy
from .values import (
    _ADDRESS,
    _CALL,
    _CODE,
    _HEX_KEY,
    _PATH,
    _REFERENCE,
    FAMOUS_PASSWORD,
    _assigned_secret,
    _random_case,
    _told_not_placeholder,
    _url_password,
)

# A name, not a secret: lower-case words joined by `-`, `_` or `.`, digits only in short parts of their
# own (a region, a host, a slug: "eu-central-1b", "db-prod-01"). A hex token mixes digits into its
# letters ("3cd2023e-0bd7-…"), a password its words ("river48-tundra07").
_SLUG = re.compile(r"[a-z]{2,}(?:[-_.](?:[a-z]{2,}|\d{1,3}[a-z]?))+")


# "pass" is a verb too: a password only after whose it is ("root pass X") or a list's comma, slash or bar ("wifi: X,
# pass Y", "user ops / pass Y", "user: ops | pass: Y"; set 23). Lookbehinds, so the match starts at "pass" and re
# tries few starts.
_PASS_OWNERS = (
    "root",
    "admin",
    "user",
    "db",
    "database",
    "wifi",
    "wi-fi",
    "ssh",
    "ftp",
    "vpn",
    "sudo",
    "login",
    "account",
    "sftp",
    "smtp",
    "with",
)
# "pwd" is the shell's command too: a password only as a list's item ("user app, pwd X").
_PWD_AFTER = "(?:(?<=, )|(?<=; ))"
_PASS_AFTER = "(?:" + "|".join(f"(?<={re.escape(w)} )" for w in (*_PASS_OWNERS, ",", ";", "/", "|")) + ")"


# A cryptographic construction's name: primitives, modes and sizes joined ("key derivation: PBKDF2-HMAC-SHA256",
# "signing key: HMAC-SHA512", "encryption key: AES-256-GCM"), what a sentence about keys and passwords names.
_PRIMITIVE = (
    r"(?:aes|rsa|dsa|ecdsa|eddsa|ecdh|ed25519|ed448|x25519|hmac|sha-?\d*|md5|blake2[bs]?|pbkdf2|hkdf|scrypt|bcrypt"
    r"|argon2(?:id|i|d)?|gcm|cbc|ctr|ccm|ecb|siv|oaep|pss|pkcs\d*|chacha20|xchacha20|poly1305|totp|hotp|p-?\d{3}"
    r"|[hre]s\d{3}|\d{2,5})"
)
_ALGORITHM = re.compile(rf"(?i){_PRIMITIVE}(?:[-_/]{_PRIMITIVE})+")


def _told_secret(value: str) -> bool:
    """A value named in a sentence without `=` or `:` ("passphrase X", "auth token X"): as for an
    assignment, plus a digit (words and versions of prose lack one more often than secrets do) and
    not a path, an address, a lower-case name or an algorithm's name ("password /etc/app/pw2", "token
    https://...", "account: acme-prod / eu-central-1b", "key derivation: PBKDF2-HMAC-SHA256", "Das Passwort wird
    mit Argon2id gehasht")."""
    value = value.strip("'\"`.,;)")
    if not any(c.isdigit() for c in value) or _ADDRESS.match(value) or _SLUG.fullmatch(value):
        return False
    if _ALGORITHM.fullmatch(value) or _PRIMITIVE_WORD.fullmatch(value):
        return False
    return _assigned_secret(value)


_SHORT_HEX = re.compile(r"[0-9a-f]{16,31}|[0-9A-F]{16,31}")


# A hand-typed fake told as a token or a secret (set "fake", secrets27): one of the commonest passwords
# (`topsecret`), or a value naming itself a secret and numbered (`mytoken123`, `testkey42`, `mysecret1`).
# (a word before it: `token123` alone is a test's cookie value, set 18's keeper)
_SELF_NAMED_SECRET = re.compile(r"(?i)[a-z]{1,8}(?:token|secret|key|pass)[a-z]{0,8}\d{1,6}")


def _told_token(value: str) -> bool:
    """A token named in a sentence: random enough for a key (≥ 16 characters, entropy ≥ 3.0), or a hand-typed fake."""
    value = value.strip("'\"`.,;)")
    # (a famous password with a digit or a secret's word only: "the key is monkey" may be a riddle's)
    # (and a letter: "press the keys in order: 1 2 3 4 5 6", respelled `123456`, is set 17's keeper)
    famous = FAMOUS_PASSWORD.fullmatch(value) and any(c.isalpha() for c in value)
    famous = famous and (any(c.isdigit() for c in value) or "secret" in value.lower())
    if famous or _SELF_NAMED_SECRET.fullmatch(value):
        return True
    if len(value) < 16 or _encoded_text(value):
        return False
    if _SHORT_HEX.fullmatch(value):  # (16 random hex digits often repeat some: entropy 2.9)
        return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and entropy(value) >= 2.5
    return entropy(value) >= 3.0 and (_told_secret(value) or _random_letters(value))


_KEY_SYMBOLS = re.compile(r"[+/_-]")
_SHORT_SMALL_RUN = re.compile(r"(?<![a-z])[a-z]{1,2}(?![a-z])")
_CAPITALS_RUN = re.compile(r"[A-Z]{2,}")


def _random_letters(value: str) -> bool:
    """Letters of both cases drawn at random: a key with no digit (1–2 % of random 20–40 character keys,
    `WhzIGFAjhAxywkraRuOziDHL…`), where `_told_secret` wants one. Many short runs of small letters and of
    capitals; a class's name is capitalised words (`AbstractSingletonProxyFactoryBean`).
    (A few of base64's or URL-safe base64's symbols among them too, one in five at most: PagerDuty's
    `yP+VVrO_IxdRxxNyzkwP`, a Telegram bot token's body with no digit; set 19's other fillings)"""
    letters = _KEY_SYMBOLS.sub("", value)
    if len(value) < 20 or len(value) - len(letters) > len(value) // 4 or entropy(value) < 3.5:
        return False
    if not (letters.isascii() and letters.isalpha()):
        return False
    # (base64's `+` or `/` inside, which no name or word has, and the case changing at three steps in ten or more, as
    # a drawn key's does: PagerDuty's `yP+VVrO_IxdRxxNyzkwP`, whose capitals are too few for the runs below)
    if _BASE64_SYMBOL_INSIDE.search(value) and _case_changes(letters) >= 0.3 * (len(letters) - 1):
        return True
    if len(value) - len(letters) > len(value) // 5 or entropy(value) < 3.8:
        return False
    return len(_SHORT_SMALL_RUN.findall(value)) >= 3 and len(_CAPITALS_RUN.findall(value)) >= 2


_BASE64_SYMBOL_INSIDE = re.compile(r"(?<=.)[+/](?=.)")


def _case_changes(letters: str) -> int:
    return sum(a.isupper() != b.isupper() for a, b in zip(letters, letters[1:], strict=False))


# What follows a secret's name a few words on and is not a secret: a path, a URL or host:port, an e-mail,
# code (`(time_cost=3`: an `=` before the end, where base64's pad is not; `env).strip().splitlines()[-1]`),
# a file name, or an identifier of lower-case words (`test_mcp_without_a_token_is_401`; a token's parts are
# not all words).
_IDENTIFIER = re.compile(r"[a-z0-9]+(?:[_-][a-z0-9]+)+")


# A class's name: capitalised words and acronyms with digits between (`Cohere2ForCausalLM`, `X509WorkloadIdentity`).
_CLASS_NAME = re.compile(r"(?:[A-Z]++[a-z]*+\d*+)++")  # (possessive: no backtracking)


# (a small factor multiplies a name, `3*width`, `batchSize*2`, or a number; a generator's `9*neOA@vMqiPKTm5` starts
# with a digit and a `*` too: set 22's other fillings)
_FACTOR_NAME = r"[a-z_][a-z0-9_]*(?:[A-Z][a-z0-9]+)*"
# A `*` of code: a glob (`*.pem`, `.*`), `**kwargs`, `*args`, emphasis around a word, names multiplied
# (`width*height`, `model_patch_size²*3`: a snake_case name, or a small factor at an end). A generator's password may
# hold a `*` anywhere else (`1zto*EDOjEQY`, `*xSWP82CiJZ7mgkjv`: set twelve).
_CODE_STAR = re.compile(
    r"(?<![A-Za-z0-9])\*\*|\*\*(?![A-Za-z0-9])|\*\.|\.\*|^\*[a-z_][a-z0-9_]*$|^\*.*\*$"
    rf"|^(?:{_FACTOR_NAME}|\d+)\*\d{{1,3}}$|^\d{{1,3}}\*(?:{_FACTOR_NAME}|\d+)$"
    r"|[a-z]{3,}_[a-z]{3,}.*\*|\*.*[a-z]{3,}_[a-z]{3,}"
)
# (names multiplied only in a value without both a capital and a digit: `bkaSuwk*cl1h` is a generator's password,
# `width*height` code; other fillings of set 18's forms; so is `**` between letters or digits, `2**32`, `x**y`,
# where a generator's `MUR8I0hc**Ph8I` has both: set 20's other fillings)
_NAMES_MULTIPLIED = re.compile(r"[a-z_]{2,}\*[a-z_]{2,}|[A-Za-z0-9]\*\*[A-Za-z0-9]")


def _code_star(value: str) -> bool:
    if _CODE_STAR.search(value):
        return True
    mixed = any(c.isupper() for c in value) and any(c.isdigit() for c in value)
    return not mixed and bool(_NAMES_MULTIPLIED.search(value))


def _name_like(value: str, class_names: bool = True) -> bool:
    """A name, not a secret: a class's (unless `class_names` is off), a path, an address, code, words joined."""
    if class_names and _CLASS_NAME.fullmatch(value) and len(re.findall(r"[A-Z][a-z]{2,}", value)) >= 2:
        return True
    if (
        any(c in value for c in "/:()[]{}\\")
        or _code_star(value)
        or _setting_code(value)
        or re.search(r"@[\w-]+\.|\.[a-z]{2,5}$", value)
    ):
        return True
    return bool(_IDENTIFIER.fullmatch(value)) and _words_joined(value)


def _setting_code(value: str) -> bool:
    """`time_cost=3`, `maxLength=12`, `encoding=UTF8`: a name and a plain value, code; not a password with `=` inside
    (`Bp7=Jz1JpLOSKg`, `ve=6GPA3nZR4`: no name before it, or a random mix after; other fillings of sets 14's forms)."""
    body = value.rstrip("=")
    if "=" not in body:
        return False
    name, _, after = body.partition("=")
    # (settings in a row, `v=19$m=65536,t=3`, and a name of code's characters are code)
    if "=" in after or any(c in name for c in "$,:/"):
        return True
    if not re.fullmatch(r"-{0,2}[A-Za-z_][A-Za-z_.-]*", name):  # (an option's too: `--expires=1893456000`)
        return False
    return not (any(c.isupper() for c in after) and any(c.islower() for c in after) and any(c.isdigit() for c in after))


def _words_joined(value: str) -> bool:
    """Mostly words joined by `-` or `_` (`live-should-never-leave-1234567890`): a name, where a random
    key's parts mix letters and digits."""
    parts = re.split(r"[_-]", value)
    return len(parts) > 1 and 2 * sum(p.isalpha() and len(p) > 1 for p in parts) >= len(parts)


# A standard's or an algorithm's name (`PBKDF2-SHA256`, `AES-256-GCM`: capitals, digits, dashes) or a
# class's (`ForgotPasswordPage2`: capitalised words, digits after) after "password" is not a password.
_STANDARD_OR_CLASS = re.compile(r"[A-Z0-9]+(?:[-_.][A-Z0-9]+)*[a-z]?|(?:[A-Z][a-z]+){2,}\d*")


def _told_password(value: str) -> bool:
    """A password a few words after its name: as told, ten characters or a symbol, and not name-like."""
    value = value.strip("'\"`.,;()*")
    if _name_like(value) or _STANDARD_OR_CLASS.fullmatch(value) or _VERSION.fullmatch(value):
        return False
    return _told_secret(value) and (len(value) >= 10 or not value.isalnum())


# A version or a standard's number (`v2.4.1`, `802.11ax`), and words of encodings and algorithms with a digit.
# (`base64-encoded`, `sha256-hashed`, `v2-hashed`: such a word and what it does)
_VERSION = re.compile(
    r"(?i)v?\d+(?:\.\w+)+|v\d+(?:[-_][a-z]+)+|(?:base|utf-?|rot|x|pkcs|sha|md|crc|aes|rsa|des|ucs-?|iso-?)\d+\w{0,2}(?:[-_][a-z]+)?"
)
_CODE_WORD = re.compile(
    r"Pass(?:word)?|Secret|Token|Key|Hash|Factory|Service|Manager|Config|Provider|Handler|Encoder|Decoder|Model|Client"
    r"|Server|Page|View|Test|Error|Exception|Helper|Util|Builder|Request|Response|Controller|Module|Plugin|Adapter"
)
_PRIMITIVE_WORD = re.compile(rf"(?i){_PRIMITIVE}")
# What was done to a password with an encoding or an algorithm, its name glued on: `base64encoded`, `sha256hashed`,
# `aes256encrypted` (walk 20's keeper: a state, not a value).
_DONE_WITH = re.compile(rf"(?i)(?:{_PRIMITIVE}|base(?:16|32|58|64|85)|utf-?(?:8|16|32))[-_]?[a-z]{{3,}}(?:ed|ing)")
_LETTER_DIGIT = re.compile(r"(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])")


# One word and a number joined, the commonest weak password ("gattonero_1987", "summer-2024"): a name of words
# elsewhere, a password right after "password is" (not a thing that is numbered: "ticket-4821", "build_2024").
_WORD_AND_NUMBER = re.compile(
    r"(?!(?:issue|ticket|build|version|release|step|page|line|port|jira|item|task|story|chapter|section|rule|test"
    r"|case|node|shard|replica|host|server|worker|user|group|policy|level|round|phase|sprint)s?[_-])"
    r"[a-z]{4,}[_-]\d{2,6}"
)


def _plain_password(value: str) -> bool:
    """A password told right after its name and a verb or a colon ("the router password is still hunter22",
    "wifi: Tangerine-Vespa-88"): letters and a digit, 6 to 40 characters, and none of what a value there is
    when it is not a password: a name of words, a version, an algorithm's or an encoding's name, a path, code,
    a placeholder. Capitals and digits (`7XK2M9QP`) count only when they alternate like a random string's,
    not a standard's (`AES256`, `ISO27001`, `PBKDF2`)."""
    value = value.strip("'\"`.,;()*")
    if not 6 <= len(value) <= 40 or not any(c.isalpha() for c in value):
        return False
    if FAMOUS_PASSWORD.fullmatch(value):  # `letmein`, `qwerty`: no digit, and the commonest passwords there are
        return True
    if not any(c.isdigit() for c in value) and not _random_case(value):
        return False
    # (capitalised words and digits are a class's name elsewhere, `Cohere2ForCausalLM`; right after "password:" they
    # are a password, `Cobalt77Wolf`, unless a word of code is among them)
    if _name_like(value, class_names=False) and not _WORD_AND_NUMBER.fullmatch(value):
        return False
    if _ALGORITHM.fullmatch(value) or _PRIMITIVE_WORD.fullmatch(value) or _DONE_WITH.fullmatch(value):
        return False
    if _CLASS_NAME.fullmatch(value) and (_CODE_WORD.search(value) or len(re.findall(r"[A-Z][a-z]{2,}", value)) > 2):
        return False
    if _VERSION.fullmatch(value) or _CODE.fullmatch(value):
        return False
    if _STANDARD_OR_CLASS.fullmatch(value) and len(_LETTER_DIGIT.findall(value)) < 3:
        return False
    if value.startswith(_REFERENCE) or _CALL.match(value) or "/" in value and _PATH.fullmatch(value):
        return False
    return _told_not_placeholder(value)


# A login's or a password's word earlier in the same sentence (for `random-word-near-login`).
_LOGIN_BEFORE = re.compile(
    r"(?i)\b(?:logins?|log[ -]?(?:in|on)|sign[ -]?in|creds|credentials?|pass?(?:w(?:or|ro|r)|ow?r|or)d|passwd|pw|pwd"
    r"|pass|passphrase|accounts?|username)\b[^.\n]{0,80}$"
)


# An id of a type's capitals then hex (Twilio's `AC…`, `SK…`, `MG…` sids: "messages for account AC<32 hex>"): its
# capitals are a label, not drawn at random (set 20's keeper); the secret that goes with it is another value.
_TYPED_HEX_ID = re.compile(r"[A-Z]{2,4}[0-9a-f]{24,}")


def _random_mixed(value: str) -> bool:
    """Letters of both cases and digits drawn at random (`Vq7mLp2xR9wt`): two of each, and the kind of character
    changes at most steps (half of them or more; a name's words change it at their edges: `iPhone15ProMax`)."""
    if min(sum(c.isupper() for c in value), sum(c.islower() for c in value), sum(c.isdigit() for c in value)) < 2:
        return False
    if _TYPED_HEX_ID.fullmatch(value):
        return False
    kinds = ["u" if c.isupper() else "l" if c.islower() else "d" for c in value]
    changes = sum(a != b for a, b in zip(kinds, kinds[1:], strict=False))
    return changes >= 0.5 * (len(value) - 1) and entropy(value) >= 3.0


def _generated(value: str) -> bool:
    """A generator's password with symbols or few digits (symbols between letters of both cases, or two digits among
    them): 12 characters or more, two capitals, two small letters and two others, and the kind of character changing
    at two steps in five or more."""
    kinds = ["u" if c.isupper() else "l" if c.islower() else "o" for c in value]
    if len(value) < 12 or min(kinds.count("u"), kinds.count("l"), kinds.count("o")) < 2 or entropy(value) < 3.3:
        return False
    changes = sum(a != b for a, b in zip(kinds, kinds[1:], strict=False))
    return changes >= 0.4 * (len(value) - 1)


_EMAIL_BEFORE = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+:$")
_EMAIL_SLASH_BEFORE = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+[ \t]+[/|][ \t]+$")
_BEAN_NAME = re.compile(r"[a-z]+(?:[A-Z][a-z]+)+|(?:[A-Z][a-z]+){2,}|[\w$]+(?:\.[\w$]+){2,}")
_ORACLE_CLIENT = re.compile(
    r"(?i)\b(?:sqlplus|sqlldr|rman|expdp|impdp|dgmgrl|conn(?:ect)?|userid=)(?:\s+-\w+)*\s*['\"]?[\w$#.]+/$"
)


# A call whose name says it takes credentials, still open (no `)` after its `(`, a nested pair allowed).
_CREDENTIAL_CALL = re.compile(
    # (and an SDK's client made or configured with its keys: `Razorpay::Client.new('rzp_live_…', 'X')`,
    # `braintree.Configuration.configure(env, merchant, public, 'X')`; set 20)
    r"(?i)(?:auth|login|logon|credential|connect|bind|signin|sign_in|pdo|smtp\w*|client|configure)\w*"
    r"(?:(?:\.|::)new)?\s*(?:=\s*)?\("
    r"(?:[^()\n]|\([^()\n]*\))*$"
)


def _argument_password(value: str) -> bool:
    """A call's quoted argument that looks like a password: letters, a digit, both cases or a symbol, random enough,
    and not a name (an address, a host, a path, a name of words)."""
    # (not `_name_like`: `Pebble8Finch` is a class's name there, a password here, where the call says credentials)
    if (
        # (an `@` is an address's only with a host's dot after it: `_634v@qKym=z` is a password)
        re.search(r"[/:\\]|@[\w-]+\.\w|\.[a-z]{2,5}$", value)
        or _IDENTIFIER.fullmatch(value)
        or not any(c.isdigit() for c in value)
    ):
        return False
    # (a private key of 32 hex digits or more, Braintree's: a call that takes credentials is given no digest)
    if _HEX_KEY.fullmatch(value) and len(value) >= 32:
        return True
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value) or not value.isalnum()):
        return False
    return _assigned_secret(value) and not _VERSION.fullmatch(value) and not _PRIMITIVE_WORD.fullmatch(value)


def _basic_pair(value: str) -> bool:
    """Base64 of `user:password` (HTTP basic auth), the password not a placeholder."""
    decoded = _decoded(value)
    if decoded is None or ":" not in decoded:
        return False
    user, _, password = decoded.partition(":")
    return bool(user) and not any(c.isspace() for c in decoded) and len(password) >= 3 and _url_password(password)


def _random_humps(value: str) -> bool:
    """A class name's shape drawn at random (`TILyccnHCmtJqckQceF40EiN`): 16 characters or more, a digit, and most of
    its capitalised runs no word (no vowel: `Cmt`, `Jqck`), where a class's are words (`Http`, `Vl`, `Hf` aside:
    `Lfm2VlProcessorKwargs` has two of four)."""
    humps = _HUMP_ANY.findall(value)
    voiceless = sum(not _VOWEL.search(h) for h in humps)
    if len(value) < 16 or not any(c.isdigit() for c in value):
        return False
    # (or three runs of three capitals or more, which a class's one acronym is not: `CGWlcQreLteRHDvxbIdF8BMB`)
    return voiceless >= 2 and 2 * voiceless > len(humps) or voiceless >= 1 and len(_CAPITALS_3.findall(value)) >= 3


_HUMP_ANY = re.compile(r"[A-Z][a-z]+")
_CAPITALS_3 = re.compile(r"[A-Z]{3,}")
_VOWEL = re.compile(r"[aeiou]", re.IGNORECASE)


def _token_nearby(value: str) -> bool:
    """A token a few words after its name: random enough for a key, and not name-like."""
    value = value.strip("'\"`.,;()*")
    return (_random_letters(value) or _random_humps(value) or not _name_like(value)) and _told_token(value)


def _query_secret(value: str) -> bool:
    return _assigned_secret(unquote(value))

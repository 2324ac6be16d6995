"""Secret scanning: the one check every write path shares (docs/security.md).

`find_secret(text)` names the kind of the first secret found (never the secret itself);
`validation.refuse_secrets` calls it for MCP, REST, the admin, import, dreaming's operations and the
CLI, and `sync.schema` for teammates' events. `redact(text)` cuts secrets out of conversation turns
before they are buffered or reach a reasoner.

The rules are gitleaks' default rule set (MIT, `secret_rules/gitleaks.toml`, kept as the upstream
data file: update it by copying a newer one), translated from RE2 to Python's `re` when loaded and
applied as gitleaks applies them (keyword prefilter, secret group, entropy floor, allowlists and
stopwords), plus a few rules of ours (`OURS`) for forms gitleaks leaves to its file-path context or
does not cover: bare private-key bodies, Authorization headers, passwords in URLs (also with `/`),
`NAME=value` assignments of secret-looking names, passwords and tokens told in a sentence, keys in a
URL's query, clients' short password options, and bare high-entropy tokens.

Each text is scanned in several views, so a secret cannot hide by its spelling: folded (NFKC,
invisible characters removed, look-alike letters mapped to ASCII: `yullu_core.textnorm`), with line
breaks inside a token joined (a key split over two lines), and base64 / percent-encoded segments
decoded (a token that decodes to a secret is one).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
import threading
import tomllib
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import unquote

import ahocorasick

from yullu_core.textnorm import fold_with_origin


@dataclass(frozen=True)
class Allow:
    """A gitleaks allowlist: a finding it matches is not a secret."""

    target: str  # "secret" (default), "match" or "line": what the regexes are applied to
    regexes: tuple[re.Pattern[str], ...]
    stopwords: tuple[str, ...]
    all_of: bool  # condition = "AND": every kind of check given must hold

    def allows(self, secret: str, match: str, line: str) -> bool:
        text = {"match": match, "line": line}.get(self.target, secret)
        by_regex = any(r.search(text) for r in self.regexes)
        lowered = secret.lower()
        by_stopword = any(w in lowered for w in self.stopwords)
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


# ---------------------------------------------------------------------------------------------
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


def _gitleaks_rule(r: dict[str, Any]) -> Rule:
    pattern, name_prefix = _without_name_prefix(r["regex"])
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


# ---------------------------------------------------------------------------------------------
# ours

PLACEHOLDER = re.compile(
    r"(?i)^(?:x{3,}|\*{3,}|\.{3,}|<[^>]*>|\[[^\]]*\]|\{[^}]*\}|\$\{[^}]*\}?|\$\(.*|\$[A-Z_][A-Z0-9_]*|%[A-Z_]+%"
    r"|(?:my|your|some)[-_][\w-]*|change[-_]?me\w*|example\w*|dummy\w*|placeholder\w*|redacted\w*"
    r"|none|null|nil|true|false|undefined|password\d{0,3}|passwd|pass|secret|token|pwd|test|admin|root|user"
    r"|hunter2|letmein|qwerty\w*|12345\w*)$"
)
# (an AWS ARN, `arn:aws:secretsmanager:…:secret:prod/db-AbCdEf`, names where a secret lives)
_REFERENCE = (
    *("os.environ", "os.getenv", "process.env", "settings.", "env(", "env.", "ENV[", "getenv", "secrets."),
    *("arn:aws:", "arn:aws-"),
)


# get_secret("db"), env("X"): where the value comes from. The callee is a name (a letter or `_` first):
# an OCI auth token's `8x(Zq;k3…` is not a call. Its arguments look like code (a string, a name, a number, a
# literal, or nothing yet): a Django key's `zf(_643wnfylx_7v2^ipnu!&z639+s!)…` or `t(Uv@CQkg…` is no call.
_CALL = re.compile(
    r"[\[(]*[A-Za-z_][\w.\[\]'\"]*\((?:$|[\"'){\[*]|[A-Za-z_][\w.]*\s*(?:$|[,)=.(\[:])|-?\d[\d.]*\s*(?:$|[,)*/+ -]))"
)


# "/etc/app/pw2", "~/.pgpass", "kv/payments/stripe-2", "config/credentials.yml.enc", "src/auth.py:42":
# where a secret lives, not one. Lower case only: a base64 key has `/` too, and capitals.
_PATH = re.compile(r"(?:~?/)?[a-z0-9._-]+(?:/[a-z0-9._-]+)+/?(?::\d+)?|(?:~?/)?[a-z0-9_-]*\.[a-z0-9]{1,8}(?::\d+)?")
_ADDRESS = re.compile(r"[a-z][a-z0-9+.-]*://")


# Code, not a value: `st.tokenizer.backend_tokenizer`, `token[:-1]`, `INJECT_BUDGET`,
# `pygit2.enums.DeltaStatus.RENAMED` (a memory quoting `tokens = block.tokens` holds no secret): an
# object's attribute (a lower-case name, then words as code spells them: lower case, CONSTANT or
# CamelCase; a random key mixes its cases), a subscript, a CONSTANT_NAME. `Summer.Winter24` stays a
# password.
_WORD = r"(?:[a-z_][a-z0-9_]*|[A-Z][A-Z0-9_]*|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*)"
# (a class's constant too: Android's `BuildConfig.MAPS_API_KEY`; JavaScript's optional chaining:
# `req.headers.authorization?.split(`)
_CODE = re.compile(
    rf"[a-z_][a-z0-9_]*(?:\??\.{_WORD})+(?:\[.*|\(.*)?|{_WORD}\[.*|[A-Z][A-Z0-9]*_[A-Z0-9_]+"
    r"|(?:[A-Z][a-z0-9]+){2,}\.[A-Z][A-Z0-9]*_[A-Z0-9_]+"
)


def _not_placeholder(secret: str) -> bool:
    return not PLACEHOLDER.match(secret.strip("'\"`.,;"))


# The next `Name=` of a connection string (`AccountKey=<key>;EndpointSuffix=…`): where a value ends.
_NEXT_SETTING = re.compile(r";(?=[A-Za-z][A-Za-z ]{1,30}=)")


# A lower-case name of the secret itself (`new_password`, `db-secret-2`): a variable's or a file's name, not a value.
# (also a name whose part is `auth` or `credentials`, `staging-basic-auth`, `orders-db-credentials`: a Kubernetes
# Secret's name after ingress-nginx's `auth-secret:`, as `secretName:` names one)
_SECRETS_NAME = re.compile(
    r"[a-z0-9_-]*(?:password|passwd|passphrase|secret|token|api[_-]?key)[a-z0-9_-]*"
    r"|(?:[a-z0-9]+[_-])+(?:auth|credentials?|creds)(?:[_-][a-z0-9]+)*|(?:auth|credentials?|creds)(?:[_-][a-z0-9]+)+"
)
# A file's path from a variable or a file argument (`$HOME/.ssh/id_ed25519`, `${CERT_DIR}/tls.key`, `@key.pub`:
# curl's and vault's `@file`): where a key lives, not a key.
_VARIABLE_PATH = re.compile(r"@?(?:\$\{?[A-Z_][A-Z0-9_]*\}?|~)?(/[a-z0-9._-]+)+|@[a-z0-9._/-]+")


def _assigned_secret(value: str) -> bool:
    """A value assigned to a secret-looking name is a secret unless it is a placeholder, a reference
    to where the secret lives, or too plain to be one (a word, a number, a duration, code)."""
    value = _NEXT_SETTING.split(value, 1)[0].strip("'\"`.,;").rstrip(")}")
    if _ADDRESS.match(value) and (_placeholder_credentials(value) or _plain_url(value)):
        return False
    if not _not_placeholder(value) or value.startswith(_REFERENCE) or _CALL.match(value) or value.startswith("{"):
        return False
    if value.isdigit() or value.isalpha() and value.islower() or "/" in value and _PATH.fullmatch(value):
        return False
    if _VARIABLE_PATH.fullmatch(value) and (value.lstrip("@")[:1] in "$~" or _PATH.fullmatch(value.lstrip("@"))):
        return False
    if _CODE.fullmatch(value) or value.startswith(PUBLIC_KEY_PREFIXES) or _SECRETS_NAME.fullmatch(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    has_other = any(not c.isalnum() for c in value)
    kinds = sum((has_digit, has_alpha and any(c.isupper() for c in value), any(c.islower() for c in value), has_other))
    h = entropy(value)
    return (len(value) >= 12 and h >= 3.2) or (len(value) >= 8 and h >= 2.75 and kinds >= 3)


# A URL's `user:password@`: its credentials alone say whether a URL given as a value is a secret.
_URL_CREDENTIALS = re.compile(r"[a-z][a-z0-9+.-]*://([^\s:@/]*):([^\s@/]*)@")


# A URL's part of words (`wiki`, `Hash-based_message_authentication_code`, `en.wikipedia.org`), not a token's.
_PLAIN_PART = re.compile(r"(?:[A-Za-z][a-z]*|\d+)(?:[-_.](?:[A-Za-z][a-z]*|\d+))*")


def _plain_url(url: str) -> bool:
    """`.. _HMAC: http://en.wikipedia.org/wiki/Hash-based_message_authentication_code` (a link named after a
    secret's word): no credentials, no query, and every part of its host and path a word's, so nothing in it
    is a capability (a webhook's random path part is refused)."""
    if "@" in url or "?" in url:
        return False
    rest = url.split("://", 1)[-1].rstrip("/")
    return all(_PLAIN_PART.fullmatch(part) for part in rest.split("/"))


def _placeholder_credentials(url: str) -> bool:
    """`postgres://user:password@localhost/db` (a README's DSN): both halves of the URL's credentials are
    placeholders, and nothing else in it is secret-looking."""
    m = _URL_CREDENTIALS.match(url)
    if m is None or "?" in url:
        return False
    return not (_not_placeholder(m.group(1)) or _not_placeholder(m.group(2)))


def _url_password(password: str) -> bool:
    # "host:8080/path@x" is a port, not a password; "user:${DB_PASSWORD}@" a template
    if re.match(r"\d{1,5}(?:/|$)", password):
        return False
    return _not_placeholder(password) and not password.startswith(("$", "%", "{", "<"))


# The symbols people put inside a password. Not `+ / = - _ .` (base64, paths, versions, names) and
# `%` only when it starts no percent-escape.
_PASSWORD_SYMBOLS = frozenset("!#$%&*^~?@")
_LEET = str.maketrans("@0134$5!7", "aoieassit")


def _password_shaped(token: str) -> bool:
    """A word of 10 to 64 characters with a capital, two small letters, two digits and a password
    symbol inside it (not first: a hashtag, a mention; a last `!` or `?` ends the sentence), random
    enough (entropy ≥ 3), and not an address, an e-mail, code (`=`, `%20`, `file.py#L42`) or a
    spelled-out placeholder (`P@ssw0rd123!`, `Example#2024`)."""
    token = token.rstrip(".,;:!?").strip("*_~")  # (markdown's emphasis around a word)
    inner = token[1:]
    if not any(c in _PASSWORD_SYMBOLS for c in inner):
        return False
    if sum(c.isupper() for c in token) < 1 or sum(c.islower() for c in token) < 2:
        return False
    if sum(c.isdigit() for c in token) < 2 or entropy(token) < 3.0:
        return False
    if re.match(r"[A-Za-z][a-z]+#\d", token):  # "Release#2024Q3", "Issue#1234": a numbered thing
        return False
    if "$$" in token or re.search(r"[a-z]\$[A-Z][a-z]", token):  # a JVM class: `Outer$Inner2`, CGLIB's `$$`
        return False
    if "=" in token or re.search(r"%[0-9A-Fa-f]{2}|#L\d|\.[a-z]{1,5}#|^[\w.+-]+@[\w-]+\.[\w.-]+$", token):
        return False
    # Code and math (`-R2.y*R2.e_x`, `A_m0^a1_d2`, `\x0b\x32`), a metric at k (`Recall@10`): a password is
    # one word with a symbol or three, not an expression.
    others = [c for c in token if not c.isalnum()]
    if (
        len(others) > 3
        or sum(c in "._" for c in others) > 1
        or "\\" in token
        or re.fullmatch(r"[A-Za-z]+@\d{1,3}", token)
    ):
        return False
    plain = token.lower().translate(_LEET)
    return not any(w in plain for w in ("password", "passw", "example", "changeme", "secret", "letmein"))


# A path of words (`Feed/Queries/RecentActivity.graphql`): each part a word or CamelCase words, where a
# base64 key's parts mix capitals and digits at random.
_PATH_WORD = r"(?:[A-Z]?[a-z]+(?:[A-Z][a-z]+)*\d*|[a-z][a-z0-9]*(?:[_-][a-z0-9]+)*|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)"
# (a path of words as code and docs spell them: `America/Vancouver`, `include/numkong/spatial/README.md`,
# `cron_descriptor/locale/YOUR_LOCALE_CODE.mo`; a base64 key's parts mix their cases)
_WORDS_PATH = re.compile(rf"(?:{_PATH_WORD}/)+{_PATH_WORD}(?:\.[a-z0-9]{{1,8}})?")


# "the public key RWQf6LRC…" (minisign's, age's recipient, a wallet's), "the token program TokenkegQfe…", "the
# IPFS CID QmXoypiz…", "the USDC mint EPjFWdd5…": a token its words call public, an address, an id on a chain;
# PKCE's "code_challenge E9Melhoa…", sent in the authorization URL (its verifier stays refused); a request's or a
# trace's id (S3's `x-amz-id-2: vlR7PnpV…`).
_PUBLIC_NAMED = re.compile(
    r"(?i)\b(?:public[ _-]?key|pubkey|address(?:es)?|cid|program(?:[ _-]?id)?|mint|(?:code[ _-]?)?challenge"
    r"|(?:request|trace|span|correlation|event)[ _-]?id|x-amz-id-2)\b"
    r"[^\w\n]{0,3}"
    r"(?:\s+(?:is|was|are))?[\s:=\"'`]*$"
)


# A JSON Web Key's public members (`"n"`, the RSA modulus; `"x"`, `"y"`, an EC point): a JWKS publishes them. A
# private JWK's own members (`"d"`, `"p"`, `"q"` …) are still read as bare keys.
_JWK_PUBLIC_MEMBER = re.compile(r"[\"'](?:n|x|y)[\"']\s*:\s*[\"']$")


def _named_public(before: str) -> bool:
    """For the bare-token rule: true unless the words just before call the token a public key or an address, a
    digest of a key (`_DIGEST_OF_KEY`), or it is a JSON Web Key's public member."""
    if _PUBLIC_NAMED.search(before) or _DIGEST_OF_KEY.search(before):
        return False
    return not ('"kty"' in before and _JWK_PUBLIC_MEMBER.search(before))


# `//grafana.acme.net/d/8f3kQ2/api-latency` (the token rule starts after `https:`): a host, then a path. The
# whole is mixed-case with digits and `/`, like a base64 key; its parts are not.
# (also without its `//`: a Go module's `github.com/acme/sdk/go/v2`, a site's `acme.github.io/Docs`; the host's dot:
# no base64 key has one)
_HOST = r"(?:[a-z0-9-]+\.)+[a-z0-9-]+"
_URL_PATH = re.compile(rf"//(?:{_HOST}|localhost)(?:/[^/]*)*|{_HOST}(?:/[^/]*)+")
# `LF+AI+Day+-ONNX+Community+Virtual+Meetup` (a form-encoded title in a URL): words joined by `+`, each a word's
# shape (a base64 key's runs between its `+` are not).
_JOINED_WORDS = re.compile(r"(?:-?(?:[A-Z]?[a-z]+|[A-Z]+|\d+)?\+){3,}-?(?:[A-Z]?[a-z]+|[A-Z]+|\d+)")
RANDOM_TOKEN = 32  # the bare-token rule's shortest token


# A model's id on a hub (`cross-encoder/mmarco-mMiniLMv2-L12-H384-v1`, `Qwen/Qwen2.5-Coder-32B-Instruct-GPTQ-Int4`):
# an owner, one `/`, and short pieces joined by `-`, `_` or `.` (a base64 key has no `-`, `_` or `.`; a URL-safe
# one no `/`).
_MODEL_ID = re.compile(
    rf"(?:{_PATH_WORD}|[a-z0-9]+(?:[-_.][a-z0-9]+)*)/[A-Za-z0-9]{{1,12}}(?:[-_.][A-Za-z0-9]{{1,12}})+"
)
_HUMP = re.compile(r"[A-Z][a-z]{2,}")
# A class by its module's dotted path (`django.contrib.auth.hashers.PBKDF2PasswordHasher`): two lower-case modules
# or more, then a class's name (no base64 key has a dot, nor lower-case runs only after capitals).
_DOTTED_CLASS = re.compile(r"(?:[a-z_][a-z0-9_]*\.){2,}(?:[A-Z]++[a-z]*+\d*+)++")


def _long_class_name(token: str) -> bool:
    """`PPOCRV5MobileRecForTextRecognitionOutput`, `Qwen3VLMoeCausalLMOutputWithPast`: a class's name, mostly
    capitalised words of three letters or more, three quarters of it (a random key's such runs are a fifth)."""
    return bool(_CLASS_NAME.fullmatch(token)) and sum(map(len, _HUMP.findall(token))) >= 0.75 * len(token)


def _random_looking(token: str) -> bool:
    """A bare token of ≥ 32 characters from a key alphabet with upper and lower case, and a digit or
    `+` / `/`, whose entropy is that of random bytes (an AWS secret access key, a base64 key)."""
    if token.startswith(PUBLIC_KEY_PREFIXES) or _ssh_public_key(token) or _public_der(token) or _CODE.fullmatch(token):
        return False
    if _URL_PATH.fullmatch(token):  # a URL after its scheme: only a long part of its own can be a key
        return any(_random_looking(part) for part in token.split("/") if len(part) >= RANDOM_TOKEN)
    if _WORDS_PATH.fullmatch(token) or _JOINED_WORDS.fullmatch(token) or _encoded_file(token):
        return False
    if _MODEL_ID.fullmatch(token) or _long_class_name(token) or _DOTTED_CLASS.fullmatch(token):
        return False
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token)):
        return False
    if not any(c.isdigit() or c in "+/" for c in token) and not _random_letters(token):
        return False
    return entropy(token) >= 4.2 and not _encoded_text(token)


# A file's first bytes (PNG, JPEG, GIF, PDF, gzip, zip, WebAssembly, WOFF): `data:image/png;base64,iVBORw0KGgo…`
# in a README's badge is an image, not a key.
_FILE_MAGIC = (
    *(b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"%PDF-", b"\x1f\x8b\x08", b"PK\x03\x04"),
    *(b"\x00asm", b"wOFF", b"wOF2"),
)


def _encoded_file(token: str) -> bool:
    head = token[:12]
    try:
        raw = base64.b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return raw.startswith(_FILE_MAGIC)


def _encoded_text(token: str) -> bool:
    """Base64 of words (a fixture's greeting) or of a JSON document (a JWT's header alone,
    `{"alg":"HS256","typ":"JWT"}`): readable text, not random bytes. Its decoded text is scanned as a
    view of its own, so a key encoded inside it is still found."""
    decoded = _decoded(token) if "=" not in token.rstrip("=") else None  # (padding inside: two glued tokens)
    if decoded is None:
        return False
    if decoded.count(" ") >= 2:
        return True
    if decoded.lstrip()[:1] not in ("{", "["):
        return False
    try:
        return isinstance(json.loads(decoded), dict | list)
    except ValueError:
        return False


# Keys published by design: a Stripe publishable key is embedded in every checkout page (gitleaks'
# Stripe rule leaves `pk_` out too), so our catch-all must not refuse one; nor a subresource-integrity
# hash (`sha512-…` in package-lock.json).
# (Mapbox's public token `pk.eyJ…` too: its secret one is `sk.eyJ…`)
PUBLIC_KEY_PREFIXES = ("pk_test_", "pk_live_", "pk.eyJ", "sha256-", "sha384-", "sha512-")


def _ssh_public_key(token: str) -> bool:
    """An SSH public key's base64 blob (`ssh-ed25519 AAAAC3Nza…`): its wire format starts with the
    key type's length and name. A private key never looks like this (OpenSSH's starts with
    `openssh-key-v1`)."""
    if not token.startswith("AAAA"):
        return False
    try:
        head = base64.b64decode(token[:40] + "=" * (-len(token[:40]) % 4))
    except (binascii.Error, ValueError):
        return False
    size = int.from_bytes(head[:4], "big")
    return 7 <= size <= 40 and head[4 : 4 + size].startswith((b"ssh-", b"ecdsa-", b"sk-"))


def _public_der(body: str) -> bool:
    """A certificate's or public key's DER (`MIIBIjANBg…`, `MIIDdzCCAl+g…`): a SEQUENCE whose first
    element is another SEQUENCE. A private key's (PKCS#1, PKCS#8) starts with its INTEGER version."""
    if not body.startswith("MII"):
        return False
    try:
        head = base64.b64decode(body[:8])
    except (binascii.Error, ValueError):
        return False
    return head[:2] == b"\x30\x82" and head[4:5] == b"\x30"


# An armored block that is public by definition (a certificate, a public key, a signature): its body
# is base64 like a private key's, so it is blanked before the rules run (same length: spans still map).
# Only base64 lines count as its body, so a sentence after an unterminated block is still scanned.
_PUBLIC_BLOCK = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*(?:CERTIFICATE(?: REQUEST)?|PUBLIC KEY(?: BLOCK)?|SIGNATURE|X509 CRL))-----"
    r"(?:\s|\\n)*(?:[A-Za-z-]+: [^\n]*(?:\r?\n|\\n))*"
    r"(?:[ \t]*[A-Za-z0-9+/=]+[ \t]*(?:\r?\n|\\n|$|(?=-----END)))*"
    r"(?:-----END \1-----)?"
)


# A password hash in crypt's notation (`$1$…`, `$2b$12$…`, `$6$rounds=…$…`, `$argon2id$v=19$…`, `$y$…`): a hash,
# stored as the `password_hash` column's values are (a Cisco `secret 5 $1$…`, a shadow line), blanked like a public
# block.
_CRYPT_HASH = re.compile(
    r"\$(?:1|2[abxy]?|5|6|7|y|gy|argon2(?:id|i|d)|scrypt|pbkdf2(?:-sha\d+)?|sha1|md5)\$[^\s'\"`]{8,}"
)


def _without_public_blocks(view: str) -> str:
    if "$" in view:
        view = _CRYPT_HASH.sub(lambda m: " " * len(m.group(0)), view)
    if "-----BEGIN" not in view:
        return view
    return _PUBLIC_BLOCK.sub(lambda m: " " * len(m.group(0)), view)


# A name, not a secret: lower-case words joined by `-`, `_` or `.`, digits only in short parts of their
# own (a region, a host, a slug: "eu-central-1b", "db-prod-01"). A hex token mixes digits into its
# letters ("3cd2023e-0bd7-…"), a password its words ("river48-tundra07").
_SLUG = re.compile(r"[a-z]{2,}(?:[-_.](?:[a-z]{2,}|\d{1,3}[a-z]?))+")


# "pass" is a verb too: a password only after whose it is ("root pass X") or a list's comma ("wifi: X,
# pass Y"). Lookbehinds, so the match starts at "pass" and re tries few starts.
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
_PASS_AFTER = "(?:" + "|".join(f"(?<={w} )" for w in (*_PASS_OWNERS, ",", ";")) + ")"


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


def _told_token(value: str) -> bool:
    """A token named in a sentence: random enough for a key (≥ 16 characters, entropy ≥ 3.0)."""
    value = value.strip("'\"`.,;)")
    if len(value) < 16 or _encoded_text(value):
        return False
    if _SHORT_HEX.fullmatch(value):  # (16 random hex digits often repeat some: entropy 2.9)
        return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and entropy(value) >= 2.5
    return entropy(value) >= 3.0 and (_told_secret(value) or _random_letters(value))


_SHORT_SMALL_RUN = re.compile(r"(?<![a-z])[a-z]{1,2}(?![a-z])")
_CAPITALS_RUN = re.compile(r"[A-Z]{2,}")


def _random_letters(value: str) -> bool:
    """Letters of both cases drawn at random: a key with no digit (1–2 % of random 20–40 character keys,
    `WhzIGFAjhAxywkraRuOziDHL…`), where `_told_secret` wants one. Many short runs of small letters and of
    capitals; a class's name is capitalised words (`AbstractSingletonProxyFactoryBean`)."""
    if len(value) < 20 or not (value.isascii() and value.isalpha()) or entropy(value) < 3.8:
        return False
    return len(_SHORT_SMALL_RUN.findall(value)) >= 3 and len(_CAPITALS_RUN.findall(value)) >= 2


# What follows a secret's name a few words on and is not a secret: a path, a URL or host:port, an e-mail,
# code (`(time_cost=3`: an `=` before the end, where base64's pad is not; `env).strip().splitlines()[-1]`),
# a file name, or an identifier of lower-case words (`test_mcp_without_a_token_is_401`; a token's parts are
# not all words).
_IDENTIFIER = re.compile(r"[a-z0-9]+(?:[_-][a-z0-9]+)+")


# A class's name: capitalised words and acronyms with digits between (`Cohere2ForCausalLM`, `X509WorkloadIdentity`).
_CLASS_NAME = re.compile(r"(?:[A-Z]++[a-z]*+\d*+)++")  # (possessive: no backtracking)


def _name_like(value: str, class_names: bool = True) -> bool:
    """A name, not a secret: a class's (unless `class_names` is off), a path, an address, code, words joined."""
    if class_names and _CLASS_NAME.fullmatch(value) and len(re.findall(r"[A-Z][a-z]{2,}", value)) >= 2:
        return True
    if (
        any(c in value for c in "/:()[]{}*\\")
        or "=" in value.rstrip("=")
        or re.search(r"@[\w-]+\.|\.[a-z]{2,5}$", value)
    ):
        return True
    return bool(_IDENTIFIER.fullmatch(value)) and _words_joined(value)


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
    if not 6 <= len(value) <= 40 or not any(c.isdigit() for c in value) or not any(c.isalpha() for c in value):
        return False
    # (capitalised words and digits are a class's name elsewhere, `Cohere2ForCausalLM`; right after "password:" they
    # are a password, `Cobalt77Wolf`, unless a word of code is among them)
    if _name_like(value, class_names=False) and not _WORD_AND_NUMBER.fullmatch(value):
        return False
    if _ALGORITHM.fullmatch(value) or _PRIMITIVE_WORD.fullmatch(value):
        return False
    if _CLASS_NAME.fullmatch(value) and (_CODE_WORD.search(value) or len(re.findall(r"[A-Z][a-z]{2,}", value)) > 2):
        return False
    if _VERSION.fullmatch(value) or _CODE.fullmatch(value):
        return False
    if _STANDARD_OR_CLASS.fullmatch(value) and len(_LETTER_DIGIT.findall(value)) < 3:
        return False
    if value.startswith(_REFERENCE) or _CALL.match(value) or "/" in value and _PATH.fullmatch(value):
        return False
    return _not_placeholder(value)


# A login's or a password's word earlier in the same sentence (for `random-word-near-login`).
_LOGIN_BEFORE = re.compile(
    r"(?i)\b(?:logins?|log[ -]?(?:in|on)|sign[ -]?in|creds|credentials?|pass?(?:w(?:or|ro|r)|ow?r|or)d|passwd|pw|pwd"
    r"|pass|passphrase|accounts?|username)\b[^.\n]{0,80}$"
)


def _random_mixed(value: str) -> bool:
    """Letters of both cases and digits drawn at random (`Vq7mLp2xR9wt`): two of each, and the kind of character
    changes at most steps (half of them or more; a name's words change it at their edges: `iPhone15ProMax`)."""
    if min(sum(c.isupper() for c in value), sum(c.islower() for c in value), sum(c.isdigit() for c in value)) < 2:
        return False
    kinds = ["u" if c.isupper() else "l" if c.islower() else "d" for c in value]
    changes = sum(a != b for a, b in zip(kinds, kinds[1:], strict=False))
    return changes >= 0.5 * (len(value) - 1) and entropy(value) >= 3.0


_EMAIL_BEFORE = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+:$")
_BEAN_NAME = re.compile(r"[a-z]+(?:[A-Z][a-z]+)+|(?:[A-Z][a-z]+){2,}|[\w$]+(?:\.[\w$]+){2,}")
_ORACLE_CLIENT = re.compile(
    r"(?i)\b(?:sqlplus|sqlldr|rman|expdp|impdp|dgmgrl|conn(?:ect)?|userid=)(?:\s+-\w+)*\s*['\"]?[\w$#.]+/$"
)


# A call whose name says it takes credentials, still open (no `)` after its `(`, a nested pair allowed).
_CREDENTIAL_CALL = re.compile(
    r"(?i)(?:auth|login|logon|credential|connect|bind|signin|sign_in|pdo|smtp\w*)\w*\s*(?:=\s*)?\("
    r"(?:[^()\n]|\([^()\n]*\))*$"
)


def _argument_password(value: str) -> bool:
    """A call's quoted argument that looks like a password: letters, a digit, both cases or a symbol, random enough,
    and not a name (an address, a host, a path, a name of words)."""
    # (not `_name_like`: `Pebble8Finch` is a class's name there, a password here, where the call says credentials)
    if (
        re.search(r"[@/:\\]|\.[a-z]{2,5}$", value)
        or _IDENTIFIER.fullmatch(value)
        or not any(c.isdigit() for c in value)
    ):
        return False
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
    return len(value) >= 16 and any(c.isdigit() for c in value) and voiceless >= 2 and 2 * voiceless > len(humps)


_HUMP_ANY = re.compile(r"[A-Z][a-z]+")
_VOWEL = re.compile(r"[aeiou]", re.IGNORECASE)


def _token_nearby(value: str) -> bool:
    """A token a few words after its name: random enough for a key, and not name-like."""
    value = value.strip("'\"`.,;()*")
    return (_random_letters(value) or _random_humps(value) or not _name_like(value)) and _told_token(value)


def _query_secret(value: str) -> bool:
    return _assigned_secret(unquote(value))


_PASSWORD_IN_OTHER_LANGUAGES = (
    "mot de passe",
    "passwort",
    "kennwort",
    "contraseña",
    "contrasena",
    "senha",
    "wachtwoord",
    "lösenord",
    "adgangskode",
    "salasana",
    "hasło",
    "haslo",
    "parola",
    "heslo",
    "jelszó",
    "şifre",
    "sifre",
    "пароль",
    "парола",
    "лозинка",
    "lozinka",
    "geslo",
    "parool",
    "slaptažodis",
    "clave",
    "contrasinal",
    "mật khẩu",
    "mat khau",
    "kata sandi",
    "κωδικός",
    "κωδικό",
    "συνθηματικό",
    "סיסמה",
    "סיסמא",
    "كلمة المرور",
    "كلمة السر",
    "كلمة مرور",
    "पासवर्ड",
    "รหัสผ่าน",
    "пapoль",  # as the scanner sees it: folding maps the Cyrillic р, а, о that look Latin to Latin
    "パスワード",
    "密码",
    "密碼",
    "비밀번호",
)
_TOKEN_WORDS_IN_LANGUAGES = (
    "token",
    "jeton",
    "токен",
    "令牌",
    "トークン",
    "토큰",
    "cookie",
    "2fa seed",
    "totp seed",
    "otp seed",
    "mfa seed",
    "hmac",
    "signing key",
    "signing secret",
    "secret key",
    "api key",
    "apikey",
    "clé",
    "clave de api",
    "chiave",
    "schlüssel",
    "sleutel",
    "ключ",
    "密钥",
    "秘密鍵",
    "シークレット",
    # as they are mistyped in a hurry ("stripe secert key for the sandbox: X")
    "secert",
    "sercet",
    "secrect",
    "secrte",
    "toekn",
    "tokne",
    "api kye",
)
# English words in another language's sentence ("la password del database è X"), or with words between
# the noun and the value no English rule reads ("I set the admin password to X").
_PASSWORD_NEARBY = (
    *_PASSWORD_IN_OTHER_LANGUAGES,
    "password",
    "passwd",
    "passphrase",
    # secrets people choose like passwords: SNMP's community string, a VPN's or RADIUS' shared secret, the
    # answer to a security question
    "community string",
    "shared secret",
    "security answer",
    "secret answer",
    "security question answer",
)


def _words(words: tuple[str, ...]) -> tuple[str, str, tuple[str, ...]]:
    """An alternation of `words`, their first letters (a lookahead that lets re skip most positions)
    and the keywords that wake the rule, all spelled as the scanned view spells them (folded: a Greek
    or Cyrillic word has letters that fold to Latin look-alikes)."""
    folded = tuple(fold_with_origin(w)[0].lower() for w in words)
    return "|".join(re.escape(w) for w in folded), "".join(sorted({w[0] for w in folded})), folded


_TOKEN_WORDS, _TOKEN_WORD_INITIALS, _TOKEN_KEYWORDS = _words(_TOKEN_WORDS_IN_LANGUAGES)
_PASSWORD_WORDS, _PASSWORD_INITIALS, _PASSWORD_KEYWORDS = _words(_PASSWORD_IN_OTHER_LANGUAGES)
_NEARBY_WORDS, _NEARBY_INITIALS, _NEARBY_KEYWORDS = _words(_PASSWORD_NEARBY)
# A word between a linking verb and the value: "the prod redis pw is literally X", "the key is currently X".
_ADVERB = (
    r"(?:now|still|just|literally|actually|currently|simply|really|basically|always|also|again|temporarily"
    r"|(?:set|changed|reset) to)"
)
# "is", "ist", "est", "set to", ":", "=": between a secret's name and its value, in the languages of the
# PIN and passphrase rules.
_LINKING = (
    # (a whole word: "la password deve essere lunga …" has no "es" in it)
    rf"(?:\s(?:is|was|are|ist|est|es|é|è)\b(?:\s+{_ADVERB})?"
    r"|\s(?:set|changed|reset) to|[:=：])"
)
# Names of a PIN or a numeric code (`PIN` in capitals is read apart, and "pin" in lower case, a wire or a
# version pin too, needs a verb or a colon).
_PIN_NAMES = (
    "pin code",
    "pin-code",
    "pincode",
    "pin number",
    "passcode",
    "pass code",
    "unlock code",
    "door code",
    "alarm code",
    "gate code",
    "keypad code",
    "lock code",
    "safe code",
    "code pin",
    "código pin",
    "codigo pin",
    "codice pin",
    "geheimzahl",
    "пин-код",
    "пин",
    "暗証番号",
    "密码",
)
_PIN_WORDS, _PIN_INITIALS, _PIN_KEYWORDS = _words(_PIN_NAMES)

# A value told in a sentence: six or more characters, not ending in the sentence's punctuation.
# (Chinese, Japanese and Korean text has no spaces: a value ends at their letters and punctuation, so
# "パスワードは12文字以上です" tells a length, "数据库密码是Marmot57$copper60" a password)
_CJK = "\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TOLD_VALUE = rf"[^\s\"'`{_CJK}]{{5,}}[^\s\"'`.,;:){_CJK}]"
# "the password is X", "PW for the NAS: X", "the admin pw for grafana was changed to X": a linking verb
# or a colon after the noun, with a few words between (not a sentence's end or an assignment, which
# secret-assignment reads when the name is one word).
_TOLD_VERB = (
    r"[^.\n=:]{0,40}?"
    rf"(?:(?:\s(?:(?:is|was|are|were|has been)(?:\s+{_ADVERB})?|(?:set|changed|reset) to)"
    # "PW for the NAS: X", "token for CI: X", "AES-128 key used by the legacy export = X" (a name of words
    # before `=`, which secret-assignment does not read)
    r"|:|\s=)\s+"
    # (Chinese and Japanese copulas, spaced or not: "AccessKey Secret 是 X", "APIキーはX")
    r"|\s*(?:是|为|為|は)\s*)"
    rf"[\"'`「『]?({_TOLD_VALUE})"
)
# "the password policy is NIST-800-63b": the sentence is about something else of passwords.
_ABOUT = (
    r"(?!\s+(?:polic|length|reset|hash|rule|field|manager|flow|requirement|strength|complexity|format|valid"
    r"|expir|rotation|hint|prompt|input|check|min|max|storage|protect|encrypt|scope|permission|lifetime|ttl"
    r"|ids?\b|fingerprint))"
)
_TOKEN_NOUN = (
    # (the lookahead lets re skip most positions at once: a third of this rule's time on long texts)
    r"(?=[abcdilprst])"
    r"(?:(?:auth|access|api|bot|refresh|session|bearer|deploy|license|app|client|service|integration)[ _-]?"
    r"(?:token|key|secret)|client[ _-]?secret|secret[ _-]?key|secret|token|personal[ _-]access[ _-]token|pat"
    # a VPN's pre-shared key
    r"|psk|pre[ _-]?shared[ _-]?key)"
)
# A short option that is a password after a `login` subcommand (docker, podman, helm registry, oc, cf,
# az …) and for sshpass (`-p` is a port for docker run and ssh), `-a` for redis-cli.
_PASSWORD_SHORT_OPTION = (
    r"(?i)\b(?=[ls])(?:login|sshpass)"
    r"\b[^\n|;&]{0,120}?\s-p[= ]?['\"]?([^\s'\"]{4,})"
    r"|\b(?=r)redis-cli\b[^\n|;&]{0,120}?\s-a\s+['\"]?([^\s'\"]{4,})"
    # OpenLDAP's tools take the bind password as `-w`; mongo's shell as `-p`
    r"|\b(?=l)ldap\w+\b[^\n|;&]{0,160}?\s-w\s+['\"]?([^\s'\"]{4,})"
    r"|\b(?=m)mongo(?:sh)?\b[^\n|;&]{0,120}?\s-p\s+['\"]?([^\s'\"]{4,})"
)
# Clients whose option or argument is a password or a token: (command, option) as regexes; the value
# follows the option after a space, an `=` or glued on (7-Zip's `-pX`), quoted or not.
_CLIENT_PASSWORD_OPTIONS = (
    (r"sqlcmd|bcp|osql", r"-P\s+"),
    (r"keytool", r"-(?:src|dest)?(?:storepass|keypass)\s+"),
    (r"ssh-keygen", r"-[NP]\s+"),
    (r"7za?|7zz", r"-p"),
    (r"zip|unzip|zipcloak", r"-P\s+"),
    (r"vault", r"login\s+(?:-method=token\s+)?"),
    (r"net", r"user\s+[^\s/]+\s+"),
    # (`net use Z: \\srv\share /user:DOM\name X`; not a further switch: `/persistent:no`)
    (r"net", r"/user:\S+\s+(?!/)"),
    (r"htpasswd", r"-b\w*\s+\S+\s+\S+\s+"),
    (r"ConvertTo-SecureString", r"(?:-String\s+)?"),
)
_CLIENT_PASSWORD = (
    r"(?<![\w-])(?:"
    + "|".join(rf"(?:{cmd})\b[^\n|;&]{{0,160}}?\s{opt}" for cmd, opt in _CLIENT_PASSWORD_OPTIONS)
    # (not another option, nor a variable)
    + r")['\"]?([^\s'\"$-][^\s'\"]{3,})"
)
# mysql's `-p` takes its password glued on; `-p shop` prompts and `shop` is the database, so a value
# after a space must look more like a password than a database name does (a capital or a symbol).
_MYSQL_PASSWORD = r"(?i)\b(?:mysql\w*|mariadb\w*)\b[^\n|;&]{0,120}?\s-p(?:['\"]?([^\s'\"]{4,})|\s['\"]?([^\s'\"]{4,}))"


_SMALL_WORDS_TEXT = (
    "the is a an to of and in it you your with for on be are that this not never we our should or if "
    "so do has have was what when where which who will can its them they into from by as at"
)
_SMALL_WORDS = frozenset(_SMALL_WORDS_TEXT.split())


def _no_small_words(words: str) -> bool:
    return not _SMALL_WORDS.intersection(re.split(r"[ \t,]+", words.lower()))


def _mysql_password(value: str) -> bool:
    return _assigned_secret(value) and any(c.isupper() or not (c.isalnum() or c in "_-.") for c in value)


# Words a sentence about a password has and a passphrase of words does not: the small words of several
# languages, and what says where a password lives or what happens to it ("password: see the vault entry",
# "Password: rotated every quarter", "the wifi password: ask IT helpdesk").
_NOT_PASSPHRASE_TEXT = (
    "see ask check use used uses using via stored kept saved managed required optional empty blank unset none "
    "encoded decoded encoding hashing hash salted before after during "
    "missing hidden masked encrypted hashed rotated expired expires changed reset set same default unknown "
    "only also just any all each every per no yes but than then there here like must may might need needs "
    "please sent shared given provided generated random different new old current below above "
    "vault 1password bitwarden lastpass keepass keychain manager path file env variable config settings "
    "dashboard console portal sso ldap okta entry field value secret secrets token password passwords "
    "min max minimum maximum length characters chars digits words letters symbols "
    # what a list of accounts names ("Other passwords: grafana admin account")
    "account accounts admin administrator user users username login server servers database db prod production "
    "staging dev test service app api key keys ssh root team personal email mail system site repo repository "
    "project cluster host machine box vm instance community string "
    # German, French, Spanish, Portuguese, Italian small words ("das Passwort ist im Tresor")
    "der die das ist und mit im den dem zu auf für von nicht le la les est et de du des un une dans pour "
    "sur avec pas el los las es y del en una para con o os é do da em um uma com não il lo è di per non "
    # ("Passwort: wird beim ersten Start abgefragt", "wachtwoord: wordt bij de eerste login gevraagd")
    "wird werden wurde beim bei nach vom zum zur aus oder aber auch noch nur kein keine siehe hier dort wie als "
    "ein eine einen einem einer erst ersten au aux ce se sa son ses qui que lors al lo le se ao na no nos pelo "
    "pela della del nel alla al si het een van voor niet wordt bij op "
    # where it is written ("WLAN-Passwort: steht am Router", "wachtwoord: staat op de router")
    "am steht liegt befindet voir trouve ver está esta fica vedi sta trova staat ligt zie "
    # a rule of length in those languages ("la password è lunga almeno 12 caratteri")
    "almeno lunga lungo caratteri cifre mindestens zeichen ziffern moins caractères chiffres caracteres "
    "dígitos digitos tekens cijfers minimo mínimo deve debe muss doit moet"
)
_NOT_PASSPHRASE_WORDS = _SMALL_WORDS | frozenset(_NOT_PASSPHRASE_TEXT.split())
_PASSPHRASE_WORD = re.compile(r"[A-Za-z0-9!#$%&*?@'-]+")


def _phrase_words(words: str, most: int) -> list[str] | None:
    """The words of a run shaped like a passphrase (three to `most` words of a password's characters, twelve
    characters or more, mostly lower case), else None."""
    parts = words.split()
    if not 3 <= len(parts) <= most or len(words) < 12:
        return None
    if not all(_PASSPHRASE_WORD.fullmatch(w) for w in parts):
        return None
    # (a heading's or a name's words are capitalised: "Grafana Admin Account"; a passphrase's mostly not)
    if 2 * sum(w.islower() or w.isdigit() for w in parts) < len(parts):
        return None
    return parts


def _passphrase(words: str) -> bool:
    """Three to eight words of a passphrase ("purple monkey dishwasher lantern seven", "sunny meadow 42
    tulips"), none of them a word that makes the run a sentence about the password."""
    parts = _phrase_words(words, 8)
    return parts is not None and not any(w.lower().strip("'") in _NOT_PASSPHRASE_WORDS for w in parts)


def _phrase_of_words(words: str) -> bool:
    """A passphrase told after a phrase's name and a colon ("the unlock phrase for the HSM backup is: seven
    orange kites over the harbour"): as `_passphrase`, but small words may be among its words, up to ten, as
    long as fewer than its other words (three or more): a phrase is words of a sentence, and the colon says
    the phrase itself follows, not a sentence about it."""
    parts = _phrase_words(words, 10)
    if parts is None:
        return False
    lowered = [w.lower().strip("'") for w in parts]
    small = sum(w in _SMALL_WORDS for w in lowered)
    if any(w in _NOT_PASSPHRASE_WORDS and w not in _SMALL_WORDS for w in lowered):
        return False
    return len(parts) - small >= 3 and small < len(parts) - small


# A password read aloud or dictated ("tango seven bravo nine", "capital M mango dash four four dash river"): the
# phonetic alphabet, digits, symbols and case said as words.
_SPELLING_TEXT = (
    "alfa alpha bravo charlie delta echo foxtrot golf hotel india juliet juliett kilo lima mike november oscar papa "
    "quebec romeo sierra tango uniform victor whiskey whisky xray x-ray yankee zulu "
    "dash hyphen underscore dot period hash pound exclamation bang star asterisk dollar percent ampersand plus "
    "equals slash backslash colon tilde caret capital uppercase upper lowercase lower small caps"
)
_SPELLING_WORDS = frozenset(_SPELLING_TEXT.split())
_DIGITS_TEXT = "zero one two three four five six seven eight nine niner"
_DIGIT_WORDS = frozenset(_DIGITS_TEXT.split())


def _dictated(words: str) -> bool:
    """Four or more words, most of them spelling a password out (and two or more letters or symbols, not digits
    alone: "at least eight characters, one digit" is a rule), up to the last spelled word ("…dash zulu, exactly
    like that")."""
    parts = [w for w in re.split(r"[ \t,]+", words) if w]
    spelled = [w.lower() in _SPELLING_WORDS or len(w) == 1 and w.isalnum() and w not in "ai" for w in parts]
    marks = [s or w.lower() in _DIGIT_WORDS for s, w in zip(spelled, parts, strict=True)]
    while marks and not marks[-1]:
        marks.pop()
    return len(marks) >= 4 and sum(marks) >= 0.6 * len(marks) and sum(spelled[: len(marks)]) >= 2


# What names a PIN before it: `PIN` or `PUK` in capitals (a chip's pin is a wire) or another name of a
# numeric code (`passcode`, `door code`, `code PIN`, `Geheimzahl` …) a few words before; `pin` in lower case
# (a version pin too) with a verb or a colon. Inside a lookahead, so every name is tried, not only the first:
# "After the PIN policy review the door code is 4821" (the first name's words say policy, the last's do not).
_PIN_NAMED = re.compile(
    # (`(?![a-z])`, not `\b`: `暗証番号は` has no word boundary)
    rf"(?=(?:\b(?:PIN|PUK)(?:s|-?[Cc]ode|-?Nummer)?\b|(?i:(?:{_PIN_WORDS})(?![a-z])))([^\n.;]{{0,40}})$"
    rf"|(?i:\bpin\b){_ABOUT}([^\n.=:;]{{0,30}}?)" + _LINKING[:-1] + r"|は|是)\s*[\"'`]?$)"
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
        r"(?<!foreign )(?<!partition )(?<!sort )(?<!idempotency )(?<!object )(?<!row )(?<!lookup )"
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


def _hex_key_before(text: str) -> bool:
    return any(not _NOT_A_KEY_BETWEEN.search(m.group(1)) for m in _KEY_WORD.finditer(text))


# The same for a key written in groups, whose sentence often says why it is spaced ("api key for the geocoder,
# spaced so slack doesn't linkify it: aaf5 fad4 …"): a token's word too, further off.
_KEY_WORD_FAR = _key_word(_KEY_WORDS + "|tokens?", 90)


def _grouped_key_before(text: str) -> bool:
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
    rf"s?{_ABOUT}(?:\s+(?:for|of|on|at|to|für|de|del|di|da|van|voor)\s[^.\n=:;]{{0,40}}?)?"
    rf"(?:\s(?:is|was|ist|est|es|é|è|lautet)(?:\s+{_ADVERB})?"
    # (a dash or an arrow too, spaced: "Password — X", "password -> X")
    rf"|\s(?:set|changed|reset) to|\s*[:=：]|\s*(?:是|は|为)|\s+(?:—|–|--?>?|=>)\s)\s*[\"'`«„“「『]?({_TOLD_VALUE})"
)


OURS: tuple[Rule, ...] = (
    Rule(
        "private-key-header",
        "a private key",
        re.compile(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"),
        ("-----begin",),
    ),
    # A key's base64 body without its BEGIN line: DER keys start with a SEQUENCE ("MII..."),
    # OpenSSH keys with "openssh-key-v1".
    Rule(
        "private-key-body",
        "a private key",
        re.compile(r"(?<![A-Za-z0-9+/])(?:MII[A-Za-z0-9+/]{60,}|b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/]{20,})={0,2}"),
        ("mii", "b3blbnnzac1rzxktdje"),
        entropy=4.0,
        check=lambda body: not _public_der(body),
    ),
    Rule(
        "authorization-header",
        "an Authorization header credential",
        re.compile(
            # (`[:=]`, or only spaces: nginx's `proxy_set_header Authorization "Basic X"`, Apache's `RequestHeader set`)
            r"(?i)\b(?:proxy-)?authorization\b[\"']?(?:\s*[:=]\s*|\s+)[\"']?(?:bearer|basic|token|digest|apikey|sso-key)\s+"
            r"([A-Za-z0-9._~+/=:-]{8,})"
        ),
        ("authorization",),
        check=_not_placeholder,
    ),
    Rule(
        "bearer-token",
        "a bearer token",
        re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)"),
        ("bearer",),
        entropy=3.0,
        check=_not_placeholder,
    ),
    Rule(
        "url-password",
        "a password in a URL",
        re.compile(r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:@/]{0,100}:([^\s@]{3,200})@[^\s@/]"),
        ("://",),
        check=_url_password,
    ),
    Rule(
        "user-password-option",
        "a password on a command line",
        # curl -u user:pass, smbclient -U user%pass, lftp -u user,pass
        re.compile(r"(?:\s-[uU]|--user)[= ]\s*['\"]?[^\s:%,'\"]{1,64}[:%,]([^\s'\"]{3,})"),
        ("-u", "--user"),
        check=_url_password,
    ),
    Rule(
        "password-option",
        "a password on a command line",
        re.compile(
            r"(?i)(?<![\w-])--?(?:password|passwd|pass|token|secret|api-key|auth-token)[= ]\s*['\"]?([^\s'\"]{6,})"
        ),
        ("pass", "token", "secret", "api-key"),
        check=_assigned_secret,
    ),
    Rule(
        "secret-assignment",
        "a secret assignment",
        re.compile(
            # Starts at the secret-looking part of the name (no `\b[A-Z0-9_.-]*` before it: Python's re
            # tried that at every word, 1.5 ms on an 8,000-character memory).
            # ("set DJANGO_SECRET_KEY to 'X'": `to` reads as the operator only after a name in capitals and
            # before a quote: "the token is passed to 'AuthMiddleware2'" is prose)
            # (not a field that names the secret: Kubernetes' `secretName: tls-cert-2024`, `secretRef:`; nor its id,
            # WebAuthn's `credential_id=…`; nor its kind: `auth_type`, `auth_method`)
            # (nor Helm's `existingSecret: orders-db-credentials`, `auth.existingSecret=`, `existingSecretPasswordKey:`:
            # the name of a Kubernetes Secret that holds the value, as `secretName`)
            rf"(?i)(?<!existing)(?<!existingsecret){_SECRET_NAME}(?:(?!existingsecret)[A-Z0-9_.-])*(?<!name)(?<!ref)(?<!credential_id)(?<!type)(?<!method)(?<!mode)(?<!scheme)[\"']?(?:\s*(?:=|:=|:(?!:|//)|=>|->)\s*(?:[\"'`]|b[\"'])?|(?-i:(?<=[A-Z0-9]))\s+to\s+[\"'])"
            # (not the next key of a mapping: `DB_PASSWORD` / `valueFrom:` / `secretKeyRef:` in a Kubernetes
            # manifest; the match starts again at that key, so `secretKeyRef: X` is still read)
            # (`::` is a path's, not an operator: pytest's `test_secret_paths.py::test_x`, C++'s, Rust's; nor `://`,
            # a URI's scheme: `otpauth://totp/…`)
            # (nor the next line's empty `NAME=` of an env file: `DJANGO_SECRET_KEY=` / `STRIPE_SECRET_KEY=`)
            r"(?![A-Za-z_][A-Za-z_-]*:(?:\s|$)|(?-i:[A-Z][A-Z0-9]*_[A-Z0-9_]*=))([^\s\"'`]{6,})"
        ),
        ("secret", "token", "pass", "pwd", "key", "credential", "auth", "salt", "dsn", "cookie", "hmac"),
        check=_assigned_secret,
    ),
    # A password told in a sentence: "the staging password is 'Sup3rS3cret!2024'" (no `=` or `:` for the
    # assignment rule to see). The value must look like a password, so "the password is hashed" passes.
    Rule(
        "password-in-prose",
        "a password",
        # (Redis' `requirepass` and `masterauth` are its password's names: "requirepass is X")
        re.compile(
            rf"(?i)\b(?:pass?(?:w(?:or|ro|r)|ow?r|or)d|passwd|passphrase|passcode|pw|pwd|requirepass|masterauth)s?\b{_ABOUT}{_TOLD_VERB}"
        ),
        ("passw", "pasw", "passo", "passphrase", "passcode", "pw", "requirepass", "masterauth"),
        check=lambda value: _assigned_secret(value) and not _VERSION.fullmatch(value.strip("'\"`.,;")),
        before=lambda text: not _NAMED_BY_FIELD.search(text),
    ),
    # Named without a verb: "Office wifi passphrase Marmot57$copper60", a .netrc's "password X".
    # (Not "pwd": the shell command is followed by paths and words.)
    Rule(
        "password-named",
        "a password",
        re.compile(
            # (OpenLDAP's `rootpw X`, nslcd's `bindpw X`, sssd's `ldap_default_authtok = X` is an assignment's)
            rf"(?i)\b(?=[pbr])(?:pass?(?:w(?:or|ro|r)|ow?r|or)d|passwd|passphrase|passcode|pw|bindpw|rootpw|bind_?pw|{_PASS_AFTER}pass"
            rf"|{_PWD_AFTER}pwd)\b[ \t]+"
            rf"[\"'`]?({_TOLD_VALUE})"
        ),
        ("passw", "pasw", "passo", "passphrase", "passcode", "pw", "pass", "pwd"),
        check=_told_secret,
    ),
    # The same in other languages: "le mot de passe est X", "Das Passwort ist X", "пароль: X", "密码是X".
    Rule(
        "password-in-other-languages",
        "a password",
        re.compile(
            # (the lookahead: the words' first letters, so re skips most positions at once)
            rf"(?i)(?=[{_PASSWORD_INITIALS}])(?:{_PASSWORD_WORDS})[^.\n=:：]{{0,30}}?"
            r"(?:\s*[:=：]\s*|\s+(?:est|ist|lautet|es|era|é|è|er|är|on|jest|je|is|был|было)\s+|\s*(?:是|は|为|為|는|은)\s*|\s+)"
            rf"[\"'`«„“「『]?({_TOLD_VALUE})"
        ),
        _PASSWORD_KEYWORDS,
        check=_told_secret,
    ),
    # The same with more words between ("I set the admin password to X", "la password del database di
    # produzione è X", "staging db creds -> app_rw X"): a value further off must look more like a
    # password (ten characters or a symbol: "Passwords are hashed with Argon2id" names an algorithm).
    Rule(
        "password-nearby",
        "a password",
        re.compile(
            rf"(?i)(?=[{_NEARBY_INITIALS}])(?:{_NEARBY_WORDS})s?+{_ABOUT}"
            # (the value on the next line only right after the name: "API token" / X, not a CSV header's
            # `token_prefix;created` / its first row)
            rf"(?:[^.\n=]{{0,60}}?(?:\s*[:：]\s*|[ \t]+)|[ \t]*\r?\n\s*)"
            rf"[\"'`«„“「『]?({_TOLD_VALUE})"
        ),
        _NEARBY_KEYWORDS,
        check=_told_password,
    ),
    # "Jenkins login: admin / Orchid84%river70", "creds are deploy:Xk9#mP2v", "Login for the Grafana box is
    # admin / X" (a few words saying what it logs in to before the verb), "log in to the VPN box as deploy / X"
    # (the verb, then `as` the pair).
    Rule(
        "login-pair",
        "a password",
        re.compile(
            r"(?i)\b(?=[lscwarzi])(?:logins?|log[ -]?(?:in|on)|sign[ -]?(?:in|on)|credentials?|creds|wi-?fi|admin"
            # (the credentials' word in German, French, Spanish, Portuguese, Italian, Dutch)
            r"|account|root|zugangsdaten|anmeldedaten|identifiants|credenciales|credenciais|credenziali"
            r"|inloggegevens)\b"
            r"(?:[^\n.:=/]{0,40}?(?:\s(?:is|are|was|ist|sind|est|sont|es|son|é|são|è|sono|zijn|as)|:))?\s*[^\w\s]{0,2}\s*"
            r"[\w.@+-]{1,64}"
            # (`admin : X` spaced on both sides; not `SSID: AcmeGuest-5G`, a name and its value)
            rf"(?:\s*/\s*|:|[ \t]+:[ \t]+)({_TOLD_VALUE})"
        ),
        (
            *("login", "log-in", "log in", "log on", "sign", "credential", "creds", "wifi", "wi-fi", "admin"),
            *("account", "root"),
            *("zugangsdaten", "anmeldedaten", "identifiants", "credenciales", "credenciais", "credenziali"),
            "inloggegevens",
        ),
        # (`admin/X` unspaced is a path's too: `/admin/memories/memory/?q=…`, so no `/ ? =` in X)
        check=lambda value: not re.search(r"[/?=]", value) and _told_secret(value),
    ),
    # "use admin/Tundra55#falcon to log in": the pair before what it is for.
    Rule(
        "login-pair-before",
        "a password",
        re.compile(rf"(?i)(?<=[\w.@+-])\s?/\s?({_TOLD_VALUE})\s+(?:to|for)\s+(?:log|sign)[ -]?(?:in|on)\b"),
        ("log in", "log-in", "login", "logon", "log on", "sign in", "sign-in", "signin", "sign on"),
        check=_mysql_password,
    ),
    # A password right after its name and a verb or a colon, weak or not: "the router admin password is still
    # hunter22", "pw: sunflower88", "das Passwort ist Tulpe2024" (`password-in-prose` wants a stronger value,
    # since it reads one a few words on; here nothing stands between the name and the value).
    Rule(
        "password-told-plainly",
        "a password",
        re.compile(
            r"(?i)(?=[pwcl])\b(?:pass?(?:w(?:or|ro|r)|ow?r|or)d|passwd|passphrase|passcode|pw|pwd"
            r"|(?:wi-?fi|wlan)[ -](?:pass|pw|key|code)"
            r"|(?:code|cl[ée])[ -]wi-?fi)" + _TOLD_PLAINLY
        ),
        ("passw", "pasw", "passo", "passphrase", "passcode", "pw", "wifi", "wi-fi", "wlan"),
        check=_plain_password,
    ),
    # (apart: its words are rare, so the keywords skip most texts; together they cost 0.3 ms an 8,000-character
    # memory, most of it trying the other languages' initials at every position)
    Rule(
        "password-told-plainly-in-other-languages",
        "a password",
        re.compile(rf"(?i)(?=[{_PASSWORD_INITIALS}])(?:{_PASSWORD_WORDS})" + _TOLD_PLAINLY),
        _PASSWORD_KEYWORDS,
        check=_plain_password,
    ),
    # The network's name stands for its password: "the guest wifi at the Lisbon office is 'Tangerine-Vespa-88'",
    # "WLAN: Fjord-Lantern-7" (not its SSID, name, router or security mode: "wifi SSID: AcmeGuest-5G",
    # "wifi: WPA2-Enterprise").
    Rule(
        "wifi-password",
        "a password",
        re.compile(
            r"(?i)\b(?=[wW])(?:wi-?fi|wlan)\b"
            r"((?:(?!\s*(?:ssid|network|name|router|channel|band|standard|chip|card|adapter|driver|module|mac|ip)\b)"
            r"[^.\n=:;]){0,40}?)"
            # (after `is`, only a quoted value: "the office wifi is Ubiquiti-U6-Pro", "is 5GHz-only" name the network)
            rf"(?:\s(?:is|was)(?:\s+{_ADVERB})?\s*[\"'`«„“「『]|:\s*[\"'`«„“「『]?)"
            rf"(?!wpa|wep|802\.)({_TOLD_VALUE})"
        ),
        ("wifi", "wi-fi", "wlan"),
        group=2,
        check=_plain_password,
    ),
    # "SMTP creds: mailer@acme.io Violet-Dusk-42": a login and its password after a colon, a space between.
    Rule(
        "login-pair-spaced",
        "a password",
        re.compile(
            r"(?i)\b(?=[lcaiz])(?:logins?|creds|credentials?|zugangsdaten|anmeldedaten|identifiants|credenciales"
            r"|credenciais|credenziali|inloggegevens)\b[^\n.:=/]{0,40}?:[ \t]*[\w.@+-]{1,64}[ \t]+"
            rf"[\"'`]?({_TOLD_VALUE})[\"'`]?(?=[ \t]*(?:$|[,;.(]))"
        ),
        ("login", "creds", "credential", "zugangsdaten", "anmeldedaten", "identifiants", "credenciales"),
        check=lambda value: not re.search(r"[/?=]", value) and _told_password(value),
    ),
    # HTTP basic credentials after "Basic" anywhere (a route's option, a config value): base64 of `user:password`.
    Rule(
        "basic-credentials",
        "an Authorization header credential",
        re.compile(r"(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])"),
        ("basic",),
        check=lambda value: _basic_pair(value),
    ),
    # The same pair told in prose near "basic" ("Basic auth for the manifest endpoint (base64): ZGVw…"):
    # any base64 word of a text naming basic auth that decodes to `user:password` (found on walk 7).
    Rule(
        "basic-credentials-told",
        "an Authorization header credential",
        re.compile(r"(?<![\w+/=])([A-Za-z0-9+/]{12,}={0,2})(?![\w+/=])"),
        ("basic",),
        check=lambda value: _basic_pair(value),
    ),
    # Oracle's `user/password@db` after its clients (`sqlplus scott/X@orcl`, `expdp`, `rman`) or `CONNECT`.
    Rule(
        "oracle-connect",
        "a password on a command line",
        # (`user/X@db` first, then the command before it: the commands' names start too many words)
        re.compile(r"(?<=[\w$#])/([^\s@/'\"]{4,})@\w"),
        ("@",),
        check=_assigned_secret,
        before=lambda text: bool(_ORACLE_CLIENT.search(text)),
    ),
    # An element named by a key attribute, valued by its text: Java's XML properties `<entry key="password">X</entry>`,
    # `<property name="db.password">X</property>`.
    Rule(
        "keyed-element",
        "a secret assignment",
        re.compile(
            rf"(?i)<([\w:-]+)\s+(?:key|name)\s*=\s*[\"'][\w.:-]{{0,40}}?{_SECRET_NAME}[\w.:-]{{0,40}}[\"'][^>]{{0,80}}>"
            r"([^<\n]{4,200})</\1>"
        ),
        ("</",),
        group=2,
        # (not a bean's or a class's name: Spring's `<property name="passwordEncoder">bcryptEncoder</property>`)
        check=lambda value: not _BEAN_NAME.fullmatch(value) and _assigned_secret(value),
    ),
    # A password as a call's argument, after another one: `requests.get(url, auth=("svc", "X"))`, `server.login("me",
    # "X")`, `DriverManager.getConnection(url, "sa", "X")`, `new PDO($dsn, 'root', 'X')`, `smtp.PlainAuth("", "me",
    # "X", host)`, `new NetworkCredential("svc", "X")`, `ldap.simple_bind_s(dn, "X")`. The quoted value first (it
    # must look like a password), then the call before it (its name says auth, login, credential, connect, bind).
    Rule(
        "call-credential-argument",
        "a password",
        re.compile(r"(?<=,)[ \t]*([\"'])([^\"'\s]{6,64})\1"),
        (",",),
        group=2,
        check=lambda value: _argument_password(value),
        before=lambda text: bool(_CREDENTIAL_CALL.search(text)),
    ),
    # `echo 'deploy:X' | chpasswd` (a user's name, a colon, the password, piped to chpasswd).
    Rule(
        "chpasswd",
        "a password on a command line",
        re.compile(r"\b(?:echo|printf)\s+(?:-\w+\s+)*['\"]?[\w.-]+:([^\s'\":]{4,})['\"]?\s*\|\s*(?:sudo\s+)?chpasswd"),
        ("chpasswd",),
        check=_assigned_secret,
    ),
    # `u: admin p: X`, `user=deploy pass=X`, `login: ops pw: X`: a pair whose password's name is short.
    Rule(
        "user-pass-pair",
        "a password",
        re.compile(
            r"(?i)\b(?=[ul])(?:u|usr|user|username|login)[ \t]*[:=][ \t]*[\w.@+-]{1,64}[ \t,;|]+"
            rf"(?:p|pw|pwd|pass)[ \t]*[:=][ \t]*[\"'`]?({_TOLD_VALUE})"
        ),
        # (the password's short name wakes it: "user" alone is in most texts)
        ("p:", "p=", "p :", "pw:", "pw=", "pw :", "pass:", "pass=", "pass :", "pwd:", "pwd=", "pwd :"),
        check=_plain_password,
    ),
    # "creds (deploy, X)", "login: (ops, X)": a pair in parentheses.
    Rule(
        "login-pair-parenthesised",
        "a password",
        re.compile(
            r"(?i)\b(?=[lc])(?:logins?|creds|credentials?)\b[^\n.(]{0,20}?\(\s*[\w.@+-]{1,64}\s*,\s*[\"'`]?"
            rf"({_TOLD_VALUE})[\"'`]?\s*\)"
        ),
        ("login", "creds", "credential"),
        check=_told_password,
    ),
    # "I reset the grafana admin pw to X", "changed the wifi password to X": the verb before the name.
    Rule(
        "password-set-to",
        "a password",
        re.compile(
            r"(?i)\b(?=[srcu])(?:set|reset|changed?|updated?|rotated?)\b[^.\n]{0,40}?\b(?:pass?(?:w(?:or|ro|r)|ow?r|or)d|passwd|passphrase|pw|pwd)s?"
            rf"\s+to\s+[\"'`]?({_TOLD_VALUE})"
        ),
        ("passw", "pasw", "passo", "passphrase", "pw"),
        check=_plain_password,
    ),
    # Apple's app-specific password (`abcd-efgh-ijkl-mnop`) and Google's app password (`abcd efgh ijkl mnop`):
    # four groups of four small letters after their name.
    Rule(
        "app-password",
        "a password",
        re.compile(
            r"(?i)\bapp(?:-specific|lication)?[ -]?passwords?\b[^\n.]{0,30}?[:\s]\s*[\"'`]?"
            r"([a-z]{4}(?:[- ][a-z]{4}){3})\b"
        ),
        ("app password", "app-password", "app-specific", "application password", "apppassword"),
        check=lambda value: not _NOT_PASSPHRASE_WORDS.intersection(re.split(r"[- ]", value.lower())),
    ),
    # An authenticator's setup key written in groups (`avum yr7l kbdj ctw6 …`): base32 in groups of four.
    Rule(
        "otp-setup-key",
        "a credential (a 2FA seed)",
        re.compile(
            r"(?i)\b(?=[s2tomar])(?:setup|secret|2fa|totp|otp|mfa|authenticator|recovery)"
            r"[ -]?(?:key|seed|secret|code)s?\b[^\n.]{0,20}?"
            r"[:\s]\s*[\"'`]?([a-z2-7]{4}(?:[ -][a-z2-7]{4}){3,})\b"
        ),
        (
            "setup key",
            "setup-key",
            "setupkey",
            "secret key",
            "secret-key",
            "2fa",
            "otp",
            "mfa",
            "authenticator",
            "recovery",
        ),
        check=lambda value: any(c.isdigit() for c in value) or len(value) >= 31,
    ),
    # An HTML password field with its value: `<input type="password" name="pw" value="X">`.
    Rule(
        "html-password-input",
        "a password",
        re.compile(
            r"(?i)<input\b(?=[^>]*\btype\s*=\s*[\"']?password\b)[^>]*?\bvalue\s*=\s*[\"']([^\"'\n]{4,200})[\"']"
        ),
        ("password",),
        check=_assigned_secret,
    ),
    # A password-reset, magic-login or invitation link's token: who has the link has the account.
    Rule(
        "account-link-token",
        "a credential (an account link)",
        re.compile(
            r"(?i)\bhttps?://\S*?/(?:reset|password[-_]?reset|reset[-_]?password|magic[-_]?link|magic|invite|invitation"
            r"|login[-_]?link|set[-_]?password)/(?:[\w-]{1,12}/)?([A-Za-z0-9_-]{20,})"
        ),
        ("reset", "magic", "invit", "login-link", "login_link", "set-password", "set_password"),
        check=lambda token: any(c.isdigit() for c in token) and entropy(token) >= 3.0 and not _words_joined(token),
    ),
    # A network device's configuration (Cisco IOS): `enable password X`, `username admin privilege 15 password 0 X`,
    # `snmp-server community X RW`, type 7 too (reversible); not type 5, 8, 9 (a hash) nor `public` / `private`.
    Rule(
        "device-config-secret",
        "a password",
        re.compile(
            r"(?i)\b(?=[esu])(?:snmp-server\s+community|enable\s+(?:password|secret)|username\s+\S+(?:\s+privilege\s+\d+)?"
            r"\s+(?:password|secret))\s+(?:[07]\s+)?([^\s$]\S{3,})"
        ),
        ("snmp-server", "enable", "username"),
        check=_assigned_secret,
    ),
    # `alerts@acme.io:X`: an e-mail address and its password (postfix's sasl_passwd, a credentials list), when the
    # password has a capital or a symbol (not a port, `me@host.io:8080`).
    Rule(
        "email-password",
        "a password",
        re.compile(r"(?<=[\w-])\.[a-z]{2,24}:([^\s:@/'\"`]{6,64})(?=\s|$|[,;)])"),
        ("@",),
        check=_mysql_password,
        before=lambda text: bool(_EMAIL_BEFORE.search(text)),
    ),
    # "the safe combination is 24-61-07": a combination's numbers.
    Rule(
        "combination",
        "a PIN",
        re.compile(r"(?i)\bcombination\b[^\n.]{0,30}?(?:\s(?:is|was)|:)\s*(\d{1,3}(?:[- ]\d{1,3}){2,4})\b"),
        ("combination",),
    ),
    # "Tundra55#falcon is the password for the staging db": the value first.
    Rule(
        "password-before",
        "a password",
        re.compile(
            rf"(?i)(?<![^\s\"'`(])[\"'`]?({_TOLD_VALUE})[\"'`]?\s+(?:is|was|are)\s+(?:the|our|my|your|its)\s+"
            rf"(?:[\w-]+\s+){{0,3}}?(?:pass?(?:w(?:or|ro|r)|ow?r|or)d|passwd|passphrase|pw)s?\b{_ABOUT}"
        ),
        ("passw", "pasw", "passo", "passphrase", "pw"),
        check=_told_secret,
    ),
    # A setter called without parentheses, as Gradle, Groovy and Ruby write it: `storePassword 'X'`, `keyPassword "X"`,
    # `auth_token 'X'` (a name in camelCase or snake_case that ends in a password's or a token's word, a space, a
    # quoted value; secret-assignment wants `=` or `:`).
    Rule(
        "setter-quoted",
        "a secret assignment",
        re.compile(
            r"(?<![\w$])(?=[a-z])(?:[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)*(?:Password|Passwd|Passphrase|Secret|Token)"
            r"|[a-z][a-z0-9]*_(?:password|passwd|passphrase|secret|token))[ \t]+([\"'])([^\"'\n]{6,200})\1"
        ),
        ("password", "passwd", "passphrase", "secret", "token"),
        group=2,
        # (not a name of words: "the signing_secret 'webhooks-v2' is rotated")
        check=lambda value: not _words_joined(value) and _assigned_secret(value),
    ),
    # A passphrase of words or an app password quoted after a password's name: `EMAIL_HOST_PASSWORD = 'qwvt mzpk rhlx
    # bnde'`, `passphrase: "amber fox over seven hills"` (secret-assignment reads one word: a value with spaces is
    # not one).
    Rule(
        "phrase-assignment",
        "a secret assignment",
        re.compile(
            r"(?i)(?<!existing)(?=[ps])(?:pass(?:word|wd|phrase)?|pwd|secret)[\w.-]{0,20}[\"']?[ \t]*(?:=|:|=>)[ \t]*"
            r"([\"'])([^\"'\n]{12,80})\1"
        ),
        ("pass", "pwd", "secret"),
        group=2,
        check=_passphrase,
    ),
    # "the value is X for the redis password", "use X as the admin token": the value first, after a verb,
    # then what it is for. X as `password-nearby` wants it (a word of words, `oauth2-proxy`, is a name).
    Rule(
        "secret-before-its-name",
        "a credential",
        re.compile(
            r"(?i)\b(?=[bistuwaecp])(?:is|was|are|were|be|use[ds]?|using|try|tried|set|type|enter|paste|put)\s+"
            rf"[\"'`]?({_TOLD_VALUE})[\"'`]?,?\s+(?:for|as)\s+(?:the|our|my|your|its|a|an)\s+(?:[\w-]+\s+){{0,3}}?"
            rf"(?:{_SECRET_NOUN})s?\b{_ABOUT}"
        ),
        ("passw", "pasw", "passo", "passphrase", "passcode", "pw", "secret", "token", "key", "credential"),
        check=_told_password,
    ),
    # "(login acmeftp, X as the pass)", "with X as my password": the value first, then `as` what it is, no verb
    # before it (`secret-before-its-name` wants one).
    Rule(
        "secret-as-its-name",
        "a credential",
        re.compile(
            r"(?i)(?<![^\s\"'`(,])(?=[^\s]{6,64}\s+as\s)"
            rf"[\"'`]?({_TOLD_VALUE})[\"'`]?\s+as\s+(?:(?:the|our|my|your|its|a|an)\s+)?(?:[\w-]+\s+){{0,3}}?"
            rf"(?:{_SECRET_NOUN}|pass)s?\b{_ABOUT}"
        ),
        ("passw", "pasw", "passo", "pass", "pw", "secret", "token", "key", "credential", "creds"),
        check=_told_password,
    ),
    # "The cookie secret in config/prod.yml is 'X'": a secret's name, where it lives (a path's dots do
    # not end the sentence), then a quoted value. Not when the words between say the value is the
    # secret's name, path or header ("the secret's name is 'db-creds-v2'").
    Rule(
        "secret-named-quoted",
        "a credential",
        re.compile(
            rf"(?i)\b(?=[acpst])(?:{_SECRET_NOUN})s?\b{_ABOUT}"
            # (the naming words are looked for only after a space: per character, they cost twice the rule)
            rf"(?:[^\s.=:!?;\"'`]|[ \t](?!{_NAMING_WORD})|\.(?=\S)|(?<=\w)'s\b){{0,60}}?"
            r"\s(?:is|was|are|were|(?:is\s+|was\s+)?(?:now\s+)?(?:set|changed|reset)\s+to)\s+[\"'`]([^\s\"'`]{6,200})[\"'`]"
        ),
        ("passw", "pasw", "passo", "passphrase", "passcode", "secret", "token", "key", "credential"),
        check=_assigned_secret,
    ),
    # "the encryption key is a4c1…", "the key is 2547…": a bare "key" with a verb (without one, "the GPG
    # key 3AA5C343…" names a public key id).
    Rule(
        "key-in-prose",
        "a credential",
        re.compile(
            rf"(?i)(?=k)(?<!public )(?<!publishable )(?<!host )(?<!gpg )(?<!pgp )(?<!object )(?<!cache )(?<!primary )"
            rf"(?<!foreign )(?<!partition )(?<!sort )(?<!idempotency )(?<!row )(?<!lookup )\bkeys?\b{_ABOUT}"
            r"(?!\s+(?:pair|ring|board|chain|word|stroke|note|point|frame|signature|size|name|alias"
            rf"|type|server|vault|store|file|path)\b){_TOLD_VERB}"
        ),
        ("key",),
        check=_told_token,
        before=lambda text: not _DIGEST_OF_KEY.search(text),
    ),
    # A .pgpass line: host:port:database:user:password.
    Rule(
        "pgpass-line",
        "a password",
        re.compile(r"(?m)^[ \t]*[\w.*-]+:(?:\d{1,5}|\*):[\w.*-]+:[\w.@*-]+:(\S{6,})[ \t]*$"),
        (),
        check=_told_secret,
    ),
    # GitHub's `gh secret set NAME --body X` (and `-b X`).
    Rule(
        "gh-secret-body",
        "a secret on a command line",
        re.compile(r"(?i)\bgh\s+secret\s+set\b[^\n|;&]{0,120}?\s(?:-b|--body)[= ]\s*['\"]?([^\s'\"]{6,})"),
        ("secret set",),
        check=_assigned_secret,
    ),
    # "Twilio ... auth token af98...", "the api key is 0a1b...", "client secret X".
    Rule(
        "token-in-prose",
        "a credential",
        # (not a noun denied: "Stripe ids are not secrets: cus_PqR7…", "account ids are no secret: arn:aws:…")
        re.compile(
            rf"(?i)(?<!\bnot )(?<!\bnot a )(?<!\bno )(?<!\bnon-)\b{_TOKEN_NOUN}s?\b{_ABOUT}"
            rf"(?:{_TOLD_VERB}|:?[ \t]+[\"'`]?({_TOLD_VALUE}))"
        ),
        ("token", "key", "secret", "pat", "psk"),
        check=_told_token,
    ),
    # The same as the last word of a name: Razorpay's "key_secret X", "bot_token X" (`_` is a word character, so
    # `\b` missed it; apart, so its keywords skip most texts).
    Rule(
        "token-after-name",
        "a credential",
        re.compile(
            rf"(?i)(?<=[a-z0-9]_)(?=[skt])(?:secret|token|key)s?\b{_ABOUT}"
            rf"(?:{_TOLD_VERB}|:?[ \t]+[\"'`]?({_TOLD_VALUE}))"
        ),
        ("_secret", "_token", "_key"),
        check=_told_token,
    ),
    # A key-like value a few words after a token's name, in any language or word order: "el token de la
    # API es X", "the session cookie for the admin is X", "2FA seed for the shared admin: X". Only a value
    # random enough for a key counts (the words between are refused by that check and skipped).
    Rule(
        "token-named-nearby",
        "a credential",
        re.compile(
            rf"(?i)(?=[{_TOKEN_WORD_INITIALS}])(?:{_TOKEN_WORDS})s?+{_ABOUT}"
            # (the value on the next line only right after the name: "API token" / X, not a CSV header's
            # `token_prefix;created` / its first row)
            rf"(?:[^.\n=]{{0,60}}?(?:\s*[:：]\s*|[ \t]+)|[ \t]*\r?\n\s*)"
            rf"[\"'`«„“「『]?({_TOLD_VALUE})"
        ),
        _TOKEN_KEYWORDS,
        check=_token_nearby,
        # ("the token program TokenkegQfe…": an id on a chain, named so just before it)
        before=_named_public,
    ),
    Rule(
        "password-short-option",
        "a password on a command line",
        re.compile(_PASSWORD_SHORT_OPTION),
        ("login", "sshpass", "redis-cli", "ldap", "mongo"),
        check=_assigned_secret,
    ),
    Rule(
        "mysql-password-option",
        "a password on a command line",
        re.compile(_MYSQL_PASSWORD),
        ("mysql", "mariadb"),
        check=_mysql_password,
    ),
    # A key or signature in a URL's query: an Azure SAS `sig=`, `?api_key=`, `&access_token=`, OpenWeather's
    # `appid=`; the value percent-decoded before the randomness test.
    Rule(
        "url-query-secret",
        "a credential in a URL",
        re.compile(
            r"(?i)[?&;](?:sig|signature|x-amz-signature|x-goog-signature|key|api[_-]?key|apikey|appid|app[_-]?key"
            r"|app[_-]?secret|access[_-]?token|auth[_-]?token|token|secret|client[_-]?secret|password|passwd|pwd|auth)"
            r"=([^&\s#\"'`<>]{8,})"
        ),
        ("=",),
        check=_query_secret,
    ),
    # A webhook whose URL is its only secret (anyone who has it can post): Zapier's catch hook, Make's
    # (Integromat's), IFTTT's maker key, Pipedream's endpoint, a Mattermost-style `/hooks/<26 characters>`.
    # (Slack's, Discord's and Teams' are gitleaks' rules.)
    Rule(
        "webhook-url",
        "a credential (a webhook URL)",
        re.compile(
            r"(?i)\bhttps?://(?:hooks\.zapier\.com/hooks/catch/\d+/([a-z0-9]{5,})"
            r"|hook\.(?:[a-z0-9]+\.)?(?:make|integromat)\.com/([a-z0-9]{20,})"
            r"|maker\.ifttt\.com/(?:trigger/[^/\s]+/(?:json/)?with/)?key/([\w-]{12,})"
            r"|([a-z0-9]{16,})\.m\.pipedream\.net"
            r"|[\w.-]+(?::\d+)?/hooks/([a-z0-9]{26})(?![\w-]))"
        ),
        ("hooks.zapier", "make.com", "integromat", "ifttt", "pipedream", "/hooks/"),
        check=lambda path: any(c.isdigit() for c in path) and any(c.isalpha() for c in path),
    ),
    # age's key announces itself; gitleaks wants its exact bech32 alphabet, a hand-typed or fake-looking
    # one (any capital letter or digit) is as much a key to refuse.
    Rule(
        "age-secret-key",
        "a credential (age-secret-key)",
        re.compile(r"(?i)\bAGE-SECRET-KEY-1[0-9A-Z]{50,}"),
        ("age-secret-key-1",),
    ),
    # New Relic's user key: gitleaks wants the word "newrelic" near it, but the prefix names it.
    Rule(
        "new-relic-user-api-key",
        "a credential (new-relic-user-api-key)",
        re.compile(r"\bNRAK-[A-Z0-9]{27}\b"),
        ("nrak-",),
    ),
    # "root:Tundra55#falcon@10.0.0.9": a URL's credentials without its scheme (then the password must
    # have a capital or a symbol: "mailto:john.smith99@example.com" is an address).
    Rule(
        "host-password",
        "a password in a URL",
        # (matched from the colon: the user's name is not needed, and re tries far fewer starts)
        # (Go's MySQL driver: `root:X@tcp(127.0.0.1:3306)/db`, `@unix(/run/mysqld.sock)`)
        re.compile(r"(?<=[\w.-]):([^\s:@/'\"`]{6,})@(?:(?:[\w-]+\.)+[\w-]+|(?:tcp6?|udp|unix)\()"),
        ("@",),
        check=_mysql_password,
    ),
    # A PIN told in a sentence: "The SIM PIN for the test phone is 7391", "Yubikey PIN: 904512", "use PIN 2846
    # to unlock", "le code PIN est 4821". The number first (4 to 8 digits, not a decimal, a date's or a
    # version's part, nor a quantity: `PIN retries: 1000 attempts`), then what names it (`_pin_before`).
    Rule(
        "pin-in-prose",
        "a PIN",
        re.compile(
            r"(?=\d)(?<![\w#.,/:-])(?<!\bin )(?<!since )(?<!from )(?<!until )(?<!after )(?<!before )(?<!version )"
            r"(?<!port )(?<!line )(?<!issue )(?<!page )(?<!step )(?<!top )"
            r"(\d{4,8})(?![\w@]|[.,:/-]\d|\s*(?:%|ms\b|s\b|sec|min|hour|day|px|bytes?\b|[kmg]b\b|attempts|tries"
            r"|times|digits|characters|chars|users|devices|requests))"
        ),
        ("pin", "puk", *_PIN_KEYWORDS),
        before=_pin_before,
    ),
    # A passphrase of words told after its name: "The GPG key passphrase is: purple monkey dishwasher lantern
    # seven", "Office wifi password: sunny meadow 42 tulips", "unseal passphrase = 'amber fox jumps quietly
    # over 7 hills'". Quoted, or three to eight words running to the end of the sentence or line; none of them
    # a small word or one saying where the password lives ("password: see the vault entry").
    Rule(
        "passphrase-of-words",
        "a password",
        re.compile(
            # (not an option's or a variable's name: `--password-stdin, never as an argument: ps shows argv`)
            # (one password: "Passwords: …" heads a list)
            # (`WLAN-Passwort` is a password's name)
            rf"(?im)(?<!--)(?<!_)(?=[{_NEARBY_INITIALS}])(?:{_NEARBY_WORDS}|pass ?phrase|wi-?fi key)\b(?![-_]){_ABOUT}"
            r"[^.\n=:：,;]{0,40}?" + _LINKING + r"\s*:?\s*"
            r"(?:[\"'`«„“「『]([^\"'`\n»”]{12,80})[\"'`»”]"
            # (unquoted, 15 characters or more to the sentence's end: `: ps shows argv.` ends a sentence)
            r"|(?=[^\n.;,)(]{15})"
            r"((?:[A-Za-z0-9!#$%&*?@'-]+[ \t]+){2,7}[A-Za-z0-9!#$%&*?@'-]+)(?=[ \t]*(?:$|[.;,)(]|\s[-–—]\s)))"
        ),
        (*_NEARBY_KEYWORDS, "pass phrase", "wifi key", "wi-fi key"),
        check=_passphrase,
    ),
    # A password spelled out after its name: "the staging admin password is capital M mango dash four four dash
    # river dash zulu" (`_dictated`; more words than a passphrase has).
    Rule(
        "dictated-password",
        "a password",
        re.compile(
            rf"(?i)(?=[{_NEARBY_INITIALS}])(?:{_NEARBY_WORDS}|pass ?phrase)\b(?![-_]){_ABOUT}"
            r"[^.\n=:：,;]{0,40}?" + _LINKING + r"\s*:?\s*((?:[A-Za-z0-9-]+[ \t,]+){3,24}[A-Za-z0-9-]+)"
        ),
        (*_NEARBY_KEYWORDS, "pass phrase"),
        check=_dictated,
    ),
    # A phrase's name, then a colon, then its words, small words among them ("the unlock phrase for the HSM
    # backup is: seven orange kites over the harbour", "master passphrase = tall ships in the quiet bay"),
    # which `passphrase-of-words` refuses (without the colon, "the passphrase is long and hard to type").
    Rule(
        "phrase-of-words",
        "a password",
        re.compile(
            r"(?i)\b(?=[pumsvbrae])(?:pass|unlock|master|secret|vault|backup|recovery|access|unseal|encryption)"
            rf"[ -]?phrase\b{_ABOUT}[^.\n=:,;]{{0,40}}?(?:\s(?:is|was))?\s*[:=]\s*"
            r"(?=[^\n.;,)(]{15})((?:[A-Za-z0-9!#$%&*?@'-]+[ \t]+){2,9}[A-Za-z0-9!#$%&*?@'-]+"
            # (or its words joined by `-`: "the pass phrase we agreed on: purple-elephant-dances-at-noon-42")
            r"|[A-Za-z0-9]+(?:-[A-Za-z0-9]+){3,9})(?=[ \t]*(?:$|[.;,)(]))"
        ),
        ("phrase",),
        check=lambda words: _phrase_of_words(words.replace("-", " ") if " " not in words else words),
    ),
    # Twilio's account SID and its auth token as a pair (`AC…:…`, the basic-auth form of its API).
    Rule(
        "twilio-sid-token",
        "a credential (twilio)",
        re.compile(r"\bAC[0-9a-f]{32}:([0-9a-f]{32})\b"),
        ("ac",),
    ),
    # Hex of a key a few words after a word of keys, secrets or signing: "callbacks are signed with 3f9a…",
    # "the export's AES key, 9c1e…". The hex first, then what names it (`_hex_key_before`).
    Rule(
        "hex-key-nearby",
        "a credential",
        # (`0x…`: a wallet's private key as Ethereum tools print it)
        re.compile(r"(?<![\w/.:-])(?:0x)?(?=[0-9a-fA-F]{32})([0-9a-fA-F]{32,128})(?![\w/.-])"),
        ("key", "secret", "crypt", "sign", "hmac", "salt", "pepper", "passphrase", "cipher"),
        check=_hex_key,
        before=_hex_key_before,
    ),
    # A key's hex written in groups of four to eight, so a chat does not link or wrap it ("api key, spaced: aaf5
    # fad4 e05d 311f 04ba dbfb 8e93 23fb"): the groups joined are a key's hex, named as hex-key-nearby's are.
    Rule(
        "grouped-hex-key",
        "a credential",
        re.compile(r"(?<![\w:/.-])((?:[0-9a-fA-F]{4,8} ){3,15}[0-9a-fA-F]{4,8})(?![\w:/-])"),
        ("key", "secret", "token", "crypt", "sign", "hmac", "salt", "pepper", "passphrase", "cipher"),
        check=_grouped_hex_key,
        before=_grouped_key_before,
    ),
    # A wallet's recovery words: 12 to 24 short lower-case words after the name, none of them the small
    # words a sentence about the phrase would have.
    Rule(
        "seed-phrase",
        "a wallet seed phrase",
        re.compile(
            r"(?i)\b(?=[bmrsw])(?:seed|recovery|mnemonic|backup|secret|wallet)[ _-]?(?:phrase|words|mnemonic)\b"
            r"[^\n:=]{0,20}?"
            r"(?:\s*[:=]\s*|\s+(?:is|are)\s+)[\"'`]?((?:[a-z]{3,8}[ \t,]+){11,23}[a-z]{3,8})"
        ),
        ("phrase", "words", "mnemonic"),
        check=_no_small_words,
    ),
    Rule(
        "client-password-option",
        "a password on a command line",
        re.compile(_CLIENT_PASSWORD),
        (
            "sqlcmd",
            "bcp",
            "osql",
            "keytool",
            "ssh-keygen",
            "7z",
            "zip",
            "vault",
            "net use",  # (and "net user")
            "htpasswd",
            "securestring",
        ),
        check=_assigned_secret,
    ),
    # A password piped into a client's `--password-stdin` (docker, podman, helm registry login).
    Rule(
        "password-stdin",
        "a password on a command line",
        re.compile(r"\b(?:echo|printf)\s+(?:-n\s+)?['\"]?([^\s'\"|]{6,})['\"]?\s*\|[^\n;&]{0,120}?--password-stdin"),
        ("password-stdin",),
        check=_assigned_secret,
    ),
    # SQL and Redis: `IDENTIFIED BY 'X'`, `requirepass X`, `masterauth X`, `AUTH X` (the command, in capitals).
    Rule(
        "sql-redis-password",
        "a password",
        re.compile(
            r"(?i:\bidentified\s+(?:with\s+\w+\s+)?by\s+['\"]([^'\"]{4,})['\"]"
            r"|\b(?:requirepass|masterauth)\s+['\"]?([^\s'\"]{4,}))"
            r"|\bAUTH\s+(?:\w+\s+)?['\"]?([^\s'\"]{8,})"
        ),
        ("identified", "requirepass", "masterauth", "auth "),
        check=_assigned_secret,
    ),
    # HashiCorp Vault's tokens name themselves (`hvs.`, `hvb.`, `hvr.`); gitleaks wants the long form.
    Rule(
        "vault-token",
        "a credential (vault-token)",
        re.compile(r"(?<![\w.])hv[sbr]\.[A-Za-z0-9_-]{24,}"),
        ("hvs.", "hvb.", "hvr."),
        entropy=3.5,
    ),
    # A secret's name and its value as a setter's two quoted arguments: PHP's `define('AUTH_KEY', 'X')`,
    # `os.environ.setdefault("API_TOKEN", "X")`, `putenv`, Java's `setProperty` and `put`, JS's `setItem`
    # (the `secret-assignment` test; a list of quoted names is no pair).
    Rule(
        "quoted-name-value",
        "a secret assignment",
        re.compile(
            r"(?i)\b(?=[dspa])(?:define|setenv|putenv|setdefault|set|put|add|setproperty|setitem|setstring)\s*\(\s*"
            rf"[\"'][\w.:-]{{0,40}}?{_SECRET_NAME}[\w.:-]{{0,40}}[\"']\s*,\s*[\"']([^\"'\n]{{6,200}})[\"']"
        ),
        ("define", "setenv", "putenv", "setdefault", "set", "put", "add", "setproperty", "setitem", "setstring"),
        check=_assigned_secret,
    ),
    # An XML element named like a secret: Maven's `<password>X</password>`, `<clientSecret>X</clientSecret>`.
    Rule(
        "xml-secret-element",
        "a secret assignment",
        re.compile(rf"(?i)<([\w.:-]{{0,40}}?{_SECRET_NAME}[\w.:-]{{0,40}})>([^<\n]{{6,200}})</\1>"),
        ("</",),
        group=2,
        check=lambda value: not _name_like(value) and _assigned_secret(value),  # (`min-length-12`: a name)
    ),
    # Two-factor recovery or backup codes: two or more codes (4 to 10 letters and digits, or two such groups
    # joined by `-`, each with a digit) after their name.
    Rule(
        "recovery-codes",
        "a credential (recovery codes)",
        re.compile(
            r"(?i)\b(?:recovery|backup|2fa|mfa|scratch|one-time|emergency)[ -]codes?\b[^\n.:=]{0,40}?"
            r"(?:\s(?:is|are)|:|[ \t]*(?=\r?\n))\s*(?:[-*•][ \t]+|\d{1,2}[.)][ \t]+)?"
            # (codes on a line, or one a line, bulleted or numbered as a download lists them)
            r"((?:[A-Za-z0-9]{4,10}(?:-[A-Za-z0-9]{4,10})?"
            r"(?:[ \t,;]+|[ \t]*\r?\n[ \t]*(?:[-*•][ \t]+|\d{1,2}[.)][ \t]+)?)){1,15}"
            r"[A-Za-z0-9]{4,10}(?:-[A-Za-z0-9]{4,10})?)"
        ),
        ("codes",),
        check=lambda codes: sum(any(c.isdigit() for c in w) for w in _RECOVERY_CODE.findall(codes)) >= 2,
    ),
    # A setting named in one attribute and valued in the next (.NET's `<add key="DbPassword" value="X" />`).
    Rule(
        "key-value-attributes",
        "a secret assignment",
        re.compile(
            rf"(?i)\b(?:key|name)\s*=\s*[\"'][\w.:-]{{0,40}}?{_SECRET_NAME}[\w.:-]{{0,40}}[\"']"
            r"\s+value\s*=\s*[\"']([^\"']{6,})[\"']"
        ),
        ("value",),
        check=_assigned_secret,
    ),
    # OpenAI-compatible providers' keys start `sk-` (OpenRouter's `sk-or-v1-…`, DeepSeek's, a proxy's):
    # gitleaks' OpenAI rule wants OpenAI's own marker inside.
    Rule(
        "sk-prefixed-key",
        "a credential (an API key)",
        re.compile(r"(?<![\w-])sk-(?:[a-z0-9]{1,8}-){0,3}([A-Za-z0-9_-]{32,})(?![\w-])"),
        ("sk-",),
        entropy=3.5,
        check=lambda body: not _words_joined(body),
    ),
    # A vendor's prefix and a long hex body (Supabase's `sbp_…`, many newer tokens); not a hash's name
    # before a digest (`sha256_…`, `commit-…`).
    Rule(
        "prefixed-hex-token",
        "a credential (a prefixed token)",
        re.compile(
            r"(?<![\w-])(?!(?:sha|md|blake|commit|rev|hash|digest|build|cache|etag|id|uuid|git)[\d_-])"
            r"[a-z][a-z0-9]{1,5}_([0-9a-f]{32,64})(?![\w-])"
        ),
        ("_",),
        entropy=3.3,
    ),
    # Mailchimp's API key carries its datacenter (`-us6`); gitleaks wants the word "mailchimp" and an `=`.
    Rule(
        "mailchimp-api-key",
        "a credential (mailchimp-api-key)",
        re.compile(r"\b[0-9a-f]{32}-us\d{1,2}\b"),
        ("-us",),
    ),
    # A person's password with nothing naming it ("ssh admin@10.0.0.5 with Falcon56#river12",
    # "root/Falcon56#river12 works"): capitals, small letters, digits and a symbol inside one word.
    Rule(
        "password-shaped",
        "a password",
        # (the word ends before a sentence's `.`, `!` or `?`)
        re.compile(r"(?<![^\s\"'`(/,;:])[^\s\"'`/,;:()<>\[\]{}|]{10,64}(?<![.!?])(?![^\s\"'`/,;:)|.!?])"),
        (),
        check=_password_shaped,
    ),
    # A short random string in a sentence about a login ("The replica login is reporting_ro and it currently uses
    # Vq7mLp2xR9wt until …"): no verb or colon ties it to a name, but people write nothing else that random there.
    Rule(
        "random-word-near-login",
        "a password",
        re.compile(
            r"(?<![\w/.:@=+%#$-])(?=[A-Za-z0-9]{10,40}(?![\w/@=+%-]))(?=[a-z0-9]{0,39}[A-Z])"
            r"([A-Za-z0-9]{10,40})"
        ),
        (
            "login",
            "logon",
            "log in",
            "sign in",
            "creds",
            "credential",
            "passw",
            "pasw",
            "passo",
            "pw",
            "pass",
            "account",
            "username",
        ),
        check=_random_mixed,
        before=lambda text: bool(_LOGIN_BEFORE.search(text)),
    ),
    Rule(
        "high-entropy-token",
        "a high-entropy token (a bare key)",
        re.compile(
            r"(?<![A-Za-z0-9+/_=.-])[A-Za-z0-9+/_-][A-Za-z0-9+/_.-]{30,}[A-Za-z0-9+/_-]={0,2}(?![A-Za-z0-9+/_=-])"
        ),
        (),
        check=_random_looking,
        before=_named_public,
    ),
)


# ---------------------------------------------------------------------------------------------
# scanning


@cache
def _rules() -> tuple[tuple[Rule, ...], tuple[Allow, ...], Any]:
    """All rules, the global allowlist, and an Aho-Corasick automaton of the rules' keywords whose matches are the
    indexes of the rules each keyword wakes. (Testing each of the ~470 keywords with `in` was 33 of a typical text's
    57 µs; one pass of the automaton over the text is 2.5 µs.)"""
    theirs, glob = gitleaks()
    # Theirs first: a specific rule names the kind better than our catch-alls (last).
    rules = (*theirs, *OURS)
    by_keyword: dict[str, list[int]] = {}
    for i, rule in enumerate(rules):
        for k in rule.keywords:
            by_keyword.setdefault(k, []).append(i)
    keywords = ahocorasick.Automaton()
    for k, ids in by_keyword.items():
        keywords.add_word(k, tuple(ids))
    keywords.make_automaton()
    return rules, glob, keywords


def _line(text: str, start: int) -> str:
    begin = text.rfind("\n", 0, start) + 1
    end = text.find("\n", start)
    return text[begin : end if end >= 0 else len(text)]


def _secret_span(rule: Rule, m: re.Match[str]) -> tuple[int, int]:
    if rule.group and rule.group <= (m.re.groups or 0):
        return m.span(rule.group)
    for i in range(1, (m.re.groups or 0) + 1):
        if m.group(i):
            return m.span(i)
    return m.span()


# A vendor's documented sample key (AWS's `…EXAMPLE`) or published test key (Stripe's docs' `sk_test_4eC3…`,
# jwt.io's example) is refused like any key when a rule finds it: people paste them as stand-ins for
# real keys, and nothing tells a quote of the docs from a key (docs/security.md).
def _passes(rule: Rule, secret: str) -> bool:
    if not secret or rule.entropy and entropy(secret) <= rule.entropy:
        return False
    return rule.check is None or rule.check(secret)


# A rule's value after a keyword ("Das Passwort für den Staging-Server lautet X") is the first word the
# regex can take, and the lazy gap before it stops at the first one long enough ("Staging-Server"). When
# the checks refuse that word, it is blanked (same length: spans still map) and the rule tried again
# from the same start, so the gap reaches the next word: a refused word no longer hides the value.
RETRIES = 6
_BLANK = '"'  # in no rule's value, in every rule's gap


def _candidates(rule: Rule, view: str) -> Iterator[tuple[re.Match[str], int, int]]:
    """Each match of `rule` in `view` whose secret passes the rule's checks, with the secret's span."""
    for m in rule.regex.finditer(view):
        start, end = _secret_span(rule, m)
        text, at, tries = view, m.start(), 0
        found: re.Match[str] | None = m
        while found is not None and not _passes(rule, view[start:end]):
            tries += 1
            if tries > RETRIES or not (m.re.groups or 0) or end <= start:
                found = None
                break
            text = text[:start] + _BLANK * (end - start) + text[end:]
            found = rule.regex.match(text, at)
            if found is not None:
                start, end = _secret_span(rule, found)
        if found is not None:
            yield found, start, end


BEFORE = 100
# A digest in OpenSSH's and Docker's notation (`SHA256:nThbg6kX…`, a host key's fingerprint; `sha256:…`, an
# image's digest) is public, whatever rule reads the value after it.
_DIGEST_NOTATION = re.compile(r"(?i)(?:sha1|sha256|sha384|sha512|md5|(?<![\w-])h1):$")


# `password_env = "DB_PASSWORD"`, `token_var: GITHUB_TOKEN`: a field that names the environment variable holding
# the secret, given a variable's name (gitleaks' `hashicorp-tf-password` took the name for a password).
_ENV_FIELD = re.compile(r"(?i)[_-](?:env|env_?var|var|variable)[\"']?[ \t]*(?:=|:|=>)[ \t]*[\"'`]?$")
_ENV_NAME = re.compile(r"[\"'`]?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+[\"'`]?")


def _env_reference(view: str, start: int, secret: str) -> bool:
    quoted = secret[:1] in "\"'`"  # (gitleaks' secret group holds the quotes, ours not)
    return bool(_ENV_NAME.fullmatch(secret) and _ENV_FIELD.search(view, max(0, start - 40), start + quoted))


# `token_type_ids=token_type_ids`, `self.credentials = credentials`, `token = config.token`: a variable
# passed on under its own name is code (a keyword argument, a constructor), whatever its name says.
_ASSIGNED_NAME = re.compile(r"([A-Za-z_]\w*)[\"']?[ \t]*(?:=|:|=>)[ \t]*[\"'`]?$")


def _own_name(view: str, start: int, secret: str) -> bool:
    """(also an enum's member valued by its own name in small letters: `MISSING_AUTH = "missing_auth"`)"""
    m = _ASSIGNED_NAME.search(view, max(0, start - 60), start)
    value = secret.strip("\"'`").rstrip(",;)").strip("\"'`")
    return m is not None and (value.lower() == m.group(1).lower() or value.endswith("." + m.group(1)))


# `def __init__(self, token: TokenInterface, …)`, `credentials: _Credentials | None = None`: a parameter's or a
# field's type (a class's name) after its colon, not an assigned value. Only in code's places: before `)`, `|`
# (a union) or a default's `=`, or before `,` inside an open parenthesis ("password: HorseBatteryStaple, user
# admin" in prose stays refused).
_TYPE_NAME = re.compile(r"_?(?:[A-Z][a-z]+\d?)+")  # (`Credentials`, `Http2Connection`; not `Winter2024`)
_AFTER_TYPE = re.compile(r"\)|[ \t]*(?:\|[ \t]*[A-Za-z_]|=[ \t]*[^=\s])")
_ASSIGNMENT_RULES = ("secret-assignment", "generic-api-key")


# `ZoneInfo(key='America/Vancouver')`, `tz: Europe/Berlin`: a path of plain words (no word's case mixed inside it,
# as a password's `xIftrk/GbqXba` is).
_PLAIN_WORDS_PATH = re.compile(r"(?:[A-Z]?[a-z]{2,}(?:[_-][A-Za-z][a-z]+)*/)+[A-Z]?[a-z]{2,}(?:[_-][A-Za-z][a-z]+)*")


def _code_value(view: str, start: int, secret: str) -> bool:
    return bool(_PLAIN_WORDS_PATH.fullmatch(secret.strip("'\"`"))) or _type_annotation(view, start, secret)


# `grant_type=urn:ietf:params:oauth:grant-type:device_code`, `arn:aws:secretsmanager:…:secret:prod/db`: a secret's
# word as a segment of a URN or an ARN (a name of colon-separated parts), not a name and its value.
_URN_BEFORE = re.compile(r"(?i)\b[ua]rn:(?:[\w.-]*:)*[\w.-]*$")


def _urn_segment(view: str, begin: int) -> bool:
    return bool(_URN_BEFORE.search(view, max(0, begin - 120), begin))


def _type_annotation(view: str, start: int, secret: str) -> bool:
    name = secret.rstrip(",)")
    if not _TYPE_NAME.fullmatch(name) or not view[max(0, start - 40) : start].rstrip(" \t").endswith(":"):
        return False
    if _AFTER_TYPE.match(view, start + len(name)):
        return True
    before = view[max(0, start - 200) : start]
    return view.startswith(",", start + len(name)) and before.count("(") > before.count(")")


def _matches(view: str) -> Iterator[Finding]:
    """Every finding of every rule in `view`, as gitleaks decides them (spans in `view`)."""
    rules, glob, keywords = _rules()
    view = _without_public_blocks(view)
    woken = {i for _, ids in keywords.iter(view.lower()) for i in ids}
    for i, rule in enumerate(rules):
        if rule.keywords and i not in woken:
            continue
        for m, start, end in _candidates(rule, view):
            secret = view[start:end]
            begin = m.start()
            if rule.name_prefix:
                while begin > 0 and m.start() - begin < 50 and _NAME_CHAR.match(view, begin - 1):
                    begin -= 1
            if _DIGEST_NOTATION.search(view, max(0, start - 7), start) or _env_reference(view, start, secret):
                continue
            if _own_name(view, start, secret) or rule.id in _ASSIGNMENT_RULES and _code_value(view, start, secret):
                continue
            if rule.id == "secret-assignment" and _urn_segment(view, begin):
                continue
            if rule.before is not None and not rule.before(view[max(0, start - BEFORE) : start]):
                continue
            line = _line(view, begin)
            if any(a.allows(secret, view[begin : m.end()], line) for a in (*glob, *rule.allows)):
                continue
            yield Finding(rule.id, rule.kind, start, end)


# A line break inside a token: token characters on both sides (a key wrapped at 64 columns, a
# token split over two lines, a trailing backslash).
# Also string literals glued in code: `'ghp_' + 'wKqi…'`, Python's implicit `"abc"\n    "def"`, PHP's `.`,
# VB's `&`, Lua's `..` (a token split so that a pre-commit hook does not see it).
# (not a line of code after a line of code: `status.HTTP_503_SERVICE_UNAVAILABLE` / `default_detail = "…"` is an
# assignment, `name = ` or `call(`, which no wrapped key's next line is: a key has no space and no parenthesis;
# nor a mapping's next key, `DB_PASSWORD_FILE: /run/secrets/db` / `SECRET_KEY_FILE: …`, glued into one token)
_WRAP = re.compile(
    r"(?<=[A-Za-z0-9+/=_-])(?:\\?[ \t]*\r?\n[ \t]*"
    r"(?![A-Za-z_][\w.]*(?:[ \t]+[-+*/|&]?=[ \t]|\()|[A-Za-z_][\w.-]*:(?:[ \t]|\r?\n|$))"
    r"|([\"'`])\s*(?:\+|\.\.?|&|\|\|)?\s*\1)(?=[A-Za-z0-9+/=_-])"
)
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{20,}={0,2}(?![A-Za-z0-9+/=_-])")
_PERCENT = re.compile(r"\S*%[0-9A-Fa-f]{2}\S*")


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")
# A join matters when the token it makes is long enough to be a key (prose lines ending and starting
# with short words are left alone), and only the text around it is scanned again.
MIN_JOINED_TOKEN = 20
JOIN_CONTEXT = 300


def _token_run(text: str, at: int, step: int) -> int:
    """How many token characters (up to MIN_JOINED_TOKEN) run from `at` forwards (step 1) or end
    just before it (step -1)."""
    i, n = (at - 1 if step < 0 else at), 0
    while 0 <= i < len(text) and text[i] in _TOKEN_CHARS and n < MIN_JOINED_TOKEN:
        i, n = i + step, n + 1
    return n


# `["8f3k", "9vLx", "4tW1"].join("")`, `"".join(["8f3k", "9vLx"])`: a token split into a list of literals and
# joined again. Inside such a list the quotes and commas between literals are joins, however short the parts.
_JOINED_LIST = re.compile(
    r"\[([^\[\]\n]{1,2000})\]\s*\.join\(\s*([\"'])\2\s*\)|([\"'])\3\.join\(\s*[\[(]([^\[\]()\n]{1,2000})[\])]\s*\)"
)
_LIST_SEPARATOR = re.compile(r"(?<=[A-Za-z0-9+/=_-])([\"'])\s*,\s*\1(?=[A-Za-z0-9+/=_-])")


def _separators(text: str) -> list[tuple[int, int]]:
    """The spans to cut out of `text` to join a token: line breaks and glued literals inside a long token,
    and the separators of a list of literals joined again."""
    spans = [
        m.span()
        for m in _WRAP.finditer(text)
        if _token_run(text, m.start(), -1) + _token_run(text, m.end(), 1) >= MIN_JOINED_TOKEN
    ]
    if ".join(" in text:
        for m in _JOINED_LIST.finditer(text):
            group = 1 if m.group(1) is not None else 4
            at = m.start(group)
            inside = [(at + s.start(), at + s.end()) for s in _LIST_SEPARATOR.finditer(m.group(group))]
            if inside:  # (and the list's bracket: `secret = ["8f3k…"` reads as `secret = "8f3k…`)
                spans += [(at - 1, at), *inside]
    return sorted(spans)


def _joined(text: str) -> tuple[str, list[int], list[tuple[int, int]]] | None:
    """`text` with line breaks inside long tokens removed, each character's index in `text`, and
    the windows of the joined text around the joins (the only places a new match can appear)."""
    if "\n" not in text and not ("'" in text or '"' in text or "`" in text):
        return None
    parts: list[str] = []
    origin: list[int] = []
    joins: list[int] = []
    pos = size = 0
    for start, end in _separators(text):
        if start < pos:
            continue
        parts.append(text[pos:start])
        origin.extend(range(pos, start))
        size += start - pos
        joins.append(size)
        pos = end
    if not joins:
        return None
    parts.append(text[pos:])
    origin.extend(range(pos, len(text)))
    windows: list[tuple[int, int]] = []
    for at in joins:
        start, end = max(0, at - JOIN_CONTEXT), min(len(origin), at + JOIN_CONTEXT)
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
    return "".join(parts), origin, windows


# A Markdown table's row: cells between pipes.
_TABLE_ROW = re.compile(r"(?m)^[ \t]*\|(.*)\|[ \t]*$")
_TABLE_RULE = re.compile(r"[ \t]*:?-{3,}:?[ \t]*")


# A CSV or TSV header naming a secret's column ("email,password", "user\tpassword"): names only.
# (a name per cell, no spaces in it: `from .models import DreamOp, DreamPass` is code)
_DELIMITED_HEADER = re.compile(r"(?m)^[ \t]*([A-Za-z_][\w.-]{0,40}(?:([,;\t])[ \t]*[A-Za-z_][\w.-]{0,40})+)[ \t]*$")
_SECRET_HEADER = re.compile(
    rf"(?i){_NEARBY_WORDS}|{_PIN_WORDS}|{_TOKEN_WORDS}|pass|pwd|\bpin\b|\bpuk\b|secret|\bkey\b|credential"
)
# A column about a secret, not of one: its hash or digest (`password_hash`, `pin_sha256`), its prefix, its
# length, its expiry … (one rule for CSV and Markdown: a hash column held a bcrypt string in one and not the other)
_COLUMN_ABOUT = re.compile(
    r"(?i)(?<![a-z])(?:hash(?:ed|es)?|digest|sha\d*|md5|bcrypt|argon2\w*|scrypt|fingerprint|prefix|suffix|last[_ -]?4"
    r"|length|len|policy|hint|ids?|names?|type|kind|expir\w*|created|updated|rotated|count|strength|required)(?![a-z])"
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATOR = re.compile(r"[_.-]")


def _secret_column(name: str) -> bool:
    """Whether a table's or a CSV's column names a secret (`password`, `API key`, `db_pass`), not something
    about one (`password_hash`, `token_prefix`, `Key length`)."""
    # (`passwordHash`, `api_key`, `db.pass` as words: `password Hash`, `api key`, `db pass`)
    spaced = _SEPARATOR.sub(" ", _CAMEL.sub(" ", name))
    return bool(_SECRET_HEADER.search(spaced)) and not _COLUMN_ABOUT.search(spaced)


def _table_view(text: str) -> tuple[str, list[int]] | None:
    """A Markdown table read as sentences, each cell after its column's name ("password: X"), so the rules
    that read a value after its name read a table's (`| grafana | admin | X |` under `| service | user |
    password |`); CSV and TSV rows under a header that names a secret's column too; with each character's
    index in `text`."""
    out: list[str] = []
    origin: list[int] = []
    _delimited_rows(text, out, origin)
    if "|" in text and "---" in text:
        _markdown_rows(text, out, origin)
    if not out:
        return None
    return "".join(out), origin


def _cell(name: str, value: str, start: int, out: list[str], origin: list[int]) -> None:
    """`name: value` and a line break, mapped to the value's characters (the name to its first)."""
    out.append(f"{name}: ")
    origin.extend([start] * (len(name) + 2))
    out.append(value + "\n")
    origin.extend([*range(start, start + len(value)), start + len(value) - 1])


def _delimited_rows(text: str, out: list[str], origin: list[int]) -> None:
    if "," not in text and "\t" not in text:
        return
    read = 0  # where the last table's rows ended: a row is never read again as another header's
    for head in _DELIMITED_HEADER.finditer(text):
        if head.start() < read:
            continue  # (each line a header of the lines below it made the view quadratic: 8,000 characters
            # of `user,password` lines, a view of millions and minutes of scanning)
        sep = head.group(2)
        names = [n.strip() for n in head.group(1).split(sep)]
        # only the secret's columns, as a Markdown table's (a CSV of 300 rows read whole doubled its scan)
        secret = [_secret_column(n) for n in names]
        if not any(secret):
            continue
        pos = head.end() + 1
        while pos < len(text):
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            line = text[pos:end]
            if line.count(sep) != len(names) - 1:
                break
            at = pos
            for name, is_secret, value in zip(names, secret, line.split(sep), strict=True):
                stripped = value.strip()
                if is_secret and stripped:
                    _cell(name, stripped, at + value.index(stripped), out, origin)
                at += len(value) + 1
            pos = end + 1
        read = pos


def _split_cells(row: str) -> list[tuple[int, str]]:
    """A table row's cells between pipes, with their offsets in the row."""
    cells, at = [], 0
    for cell in row.split("|"):
        cells.append((at, cell))
        at += len(cell) + 1
    return cells


def _markdown_rows(text: str, out: list[str], origin: list[int]) -> None:
    """Only the columns whose name says secret (a table of 20 columns of figures costs nothing)."""
    rows = list(_TABLE_ROW.finditer(text))
    secret_columns: dict[int, str] = {}
    for i, row in enumerate(rows):
        cells = _split_cells(row.group(1))
        if all(_TABLE_RULE.fullmatch(c) for _, c in cells):
            names = [c.strip() for _, c in _split_cells(rows[i - 1].group(1))] if i else []
            secret_columns = {k: n for k, n in enumerate(names) if _secret_column(n)}
            continue
        for k, name in secret_columns.items():
            if k < len(cells):
                at, cell = cells[k]
                value = cell.strip()
                if value:
                    _cell(name, value, row.start(1) + at + cell.index(value), out, origin)


def _decoded(segment: str) -> str | None:
    """A base64 segment's text when it decodes to readable UTF-8 (else None)."""
    padded = segment + "=" * (-len(segment) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            raw = decode(padded)
        except (binascii.Error, ValueError):
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text and sum(c.isprintable() or c in "\n\r\t" for c in text) >= 0.95 * len(text):
            return text
    return None


def _scan_views(text: str, depth: int = 0) -> Iterator[tuple[Finding, int, int]]:
    """Findings with the span of `text` they cover: a secret's own span in the folded or joined
    views, the whole encoded segment for a decoded one."""
    folded, origin = fold_with_origin(text)

    def back(i: int, j: int, table: list[int] | None) -> tuple[int, int]:
        if table is None:
            return i, j
        return table[i], table[j - 1] + 1

    for f in _matches(folded):
        yield (f, *back(f.start, f.end, origin))
    joined = _joined(folded)
    if joined is not None:
        jtext, jorigin, windows = joined
        for a, b in windows:
            for f in _matches(jtext[a:b]):
                s, e = back(a + f.start, a + f.end, jorigin)
                yield (f, *back(s, e, origin))
    table = _table_view(folded)
    if table is not None:
        ttext, torigin = table
        for f in _matches(ttext):
            s, e = back(f.start, f.end, torigin)
            yield (f, *back(s, e, origin))
    if depth >= 2:
        return
    for m in _BASE64.finditer(folded):
        decoded = _decoded(m.group(0))
        if decoded is not None:
            for f, _, _ in _scan_views(decoded, depth + 1):
                yield (f, *back(m.start(), m.end(), origin))
    if "%" in folded:
        for m in _PERCENT.finditer(folded):
            plain = unquote(m.group(0))
            if plain != m.group(0):
                for f, _, _ in _scan_views(plain, depth + 1):
                    yield (f, *back(m.start(), m.end(), origin))


def find_secret(text: str) -> str | None:
    """The kind of the first secret in `text`, or None. Never returns the secret itself."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _VERDICTS_LOCK:
        if key in _VERDICTS:
            _VERDICTS.move_to_end(key)
            return _VERDICTS[key]
    kind = next((finding.kind for finding, _, _ in _scan_views(text)), None)
    with _VERDICTS_LOCK:
        _VERDICTS[key] = kind
        if len(_VERDICTS) > VERDICTS_KEPT:
            _VERDICTS.popitem(last=False)
    return kind


# The last verdicts, by a digest of the text (the cache holds no text, so no secret stays in
# memory): an import checks each row before its batch is written and the write path checks it
# again, which scanned every text twice (a sixth of an import of 2,000 rows with vectors). The
# rules are fixed for the process's life, so a verdict cannot go out of date. 8,192 covers a batch
# of 2,000 rows with their tags.
VERDICTS_KEPT = 8192
_VERDICTS: OrderedDict[bytes, str | None] = OrderedDict()
_VERDICTS_LOCK = threading.Lock()


def first_secret(*texts: str) -> str | None:
    """The kind of the first secret in any of `texts`: the one check of every write path and of a
    teammate's event (sync.schema)."""
    for text in texts:
        if kind := find_secret(text):
            return kind
    return None


def redact(text: str) -> str:
    """`text` with every secret replaced by `[REDACTED <rule>]`; the prose around it is kept."""
    spans = sorted({(s, e, f.rule) for f, s, e in _scan_views(text)})
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for start, end, rule in spans:
        if end <= pos:
            continue
        out.append(text[pos : max(pos, start)])
        out.append(f"[REDACTED {rule}]")
        pos = end
    out.append(text[pos:])
    return "".join(out)

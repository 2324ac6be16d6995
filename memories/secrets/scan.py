"""Every rule applied to one view of a text, as gitleaks applies them: keyword prefilter, secret group,
entropy floor, checks, allowlists; plus what makes a value code or a reference in its context."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import ahocorasick

from . import (
    rules_assigned,
    rules_entry,
    rules_formats,
    rules_kinds,
    rules_named,
    rules_plain,
    rules_spoken,
    rules_wrapped,
)
from .gitleaks import _NAME_CHAR, gitleaks
from .model import Allow, Finding, Rule, entropy
from .names import _told_digest
from .shapes import _named_public, _without_public_blocks
from .values import _PASSWORD_MANAGER, STORE_REFERENCE, VARIABLE_NAME, _told_not_placeholder, public_value

# Ours after theirs, in this order: the first rule to find a secret names its kind.
OURS: tuple[Rule, ...] = (
    *rules_assigned.RULES,
    *rules_named.RULES,
    *rules_formats.RULES,
    *rules_entry.RULES,
    *rules_wrapped.RULES,
    *rules_spoken.RULES,
    *rules_kinds.RULES,
    *rules_plain.RULES,
)


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


# A shell variable alone is where a secret comes from, never one, whichever rule reads it (gitleaks'
# `curl-auth-user` took `curl -u "${API_KEY}:"` for a user and password: its allowlist reads `$X` as the password only).
_VARIABLE_ONLY = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$" + VARIABLE_NAME)


# A vendor's documented sample key (AWS's `…EXAMPLE`) or published test key (Stripe's docs' `sk_test_4eC3…`,
# jwt.io's example) is refused like any key when a rule finds it: people paste them as stand-ins for
# real keys, and nothing tells a quote of the docs from a key (docs/security.md).
def _passes(rule: Rule, secret: str) -> bool:
    if not secret or rule.entropy and entropy(secret) <= rule.entropy:
        return False
    if _VARIABLE_ONLY.fullmatch(secret.strip("'\"`:")):
        return False
    return rule.check is None or rule.check(secret)


# A rule's value after a keyword ("Das Passwort für den Staging-Server lautet X") is the first word the
# regex can take, and the lazy gap before it stops at the first one long enough ("Staging-Server"). When
# the checks refuse that word, it is blanked (same length: spans still map) and the rule tried again
# from the same start, so the gap reaches the next word: a refused word no longer hides the value.
RETRIES = 6
_BLANK = '"'  # in no rule's value, in every rule's gap


# A retry reads the text from a little before its match (the rules' look-behinds) to a little past the refused word:
# blanking the word in a copy of the whole text made each retry cost the text's length, the square of it for a text
# of such words (`password ` × 7,200: 12 times the CPU of × 900 for 8 times the text). A match that reaches the
# window's end is tried again on the whole text.
RETRY_BEHIND = 200
RETRY_AHEAD = 2_000
REACHED = (-1, -1, -1, -1)  # a retry's match ran to its window's end


def _candidates(rule: Rule, view: str) -> Iterator[tuple[int, int, int, int]]:
    """Each match of `rule` in `view` whose secret passes the rule's checks: the match's span, then the secret's."""
    # A word refused once is refused again: the retries of the matches that follow read the same words (`password `
    # × 900 checked each word 3.5 times; the checks were two thirds of that text's cost, set 21's left-over).
    verdicts: dict[str, bool] = {}

    def passes(secret: str) -> bool:
        if (verdict := verdicts.get(secret)) is None:
            verdict = verdicts[secret] = _passes(rule, secret)
        return verdict

    for m in rule.regex.finditer(view):
        start, end = _secret_span(rule, m)
        if passes(view[start:end]):
            yield m.start(), m.end(), start, end
        elif (m.re.groups or 0) and end > start:
            lo = max(0, m.start() - RETRY_BEHIND)
            hi = min(len(view), end + RETRY_AHEAD)
            found = _retried(rule, view, m.start(), (start, end), (lo, hi), passes)
            if found is REACHED:
                found = _retried(rule, view, m.start(), (start, end), (0, len(view)), passes)
            if found is not None:
                yield found


def _retried(
    rule: Rule, view: str, at: int, span: tuple[int, int], window: tuple[int, int], passes: Callable[[str], bool]
) -> tuple[int, int, int, int] | None:
    """The match of `rule` at `at` with its refused words blanked one by one (same length: spans still map), in
    `window` of `view`; REACHED when a match ran to the window's end before the text's."""
    lo, hi = window
    text = view[lo:hi]
    start, end = span
    for _ in range(RETRIES):
        text = text[: start - lo] + _BLANK * (end - start) + text[end - lo :]
        found = rule.regex.match(text, at - lo)
        if found is None:
            return None
        if hi < len(view) and found.end() + lo >= hi:
            return REACHED
        start, end = (i + lo for i in _secret_span(rule, found))
        if end <= start:
            return None
        if passes(view[start:end]):
            return found.start() + lo, found.end() + lo, start, end
    return None


BEFORE = 100
# What may stand around a password manager's name read as a value: quotes, brackets, a placeholder's `<…>`.
_AROUND_NAME = "'\"`<>()[]「」『』«»,.;:"
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
_ASSIGNMENT_RULES = ("secret-assignment", "generic-api-key", "name-value-pair", "secret-pair")


# `ZoneInfo(key='America/Vancouver')`, `tz: Europe/Berlin`: a path of plain words (no word's case mixed inside it,
# as a password's `xIftrk/GbqXba` is).
_PLAIN_WORDS_PATH = re.compile(r"(?:[A-Z]?[a-z]{2,}(?:[_-][A-Za-z][a-z]+)*/)+[A-Z]?[a-z]{2,}(?:[_-][A-Za-z][a-z]+)*")


# `const apiKeyHeader = "X-Api-Key"`: an HTTP header's name (an `X-` name of words, as headers spell them), the
# header a key is sent in, not the key (set 17's keeper).
_HEADER_NAME = re.compile(r"X(?:-(?:[A-Z][a-z]+|[A-Z]+))+")  # (`X-API-Key` mixes the two: set 21)


def _code_value(view: str, start: int, secret: str) -> bool:
    value = secret.strip("'\"`")
    return bool(_PLAIN_WORDS_PATH.fullmatch(value) or _HEADER_NAME.fullmatch(value)) or _type_annotation(
        view, start, secret
    )


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


# `(?i)(authorization:\s*bearer\s+)[A-Za-z0-9._~+/-]+=*` after "the redaction regex for bearer tokens:": a regular
# expression's syntax (an escaped class with its count, a group's flags, a range in a class then its count), twice or
# more. A key or a password has none of them.
_REGEX_SYNTAX = re.compile(
    r"\\[sdwbSDWB](?:[*+?]|\{\d)|\(\?(?:[imsx]+\)|[:!=]|<[=!])|\[[^\]\s]{0,20}?\w-\w[^\]\s]*\](?:[*+?]|\{\d)"
)


# "The secret's version id in Secrets Manager is 5f1c2a9e-…", "x-request-id: …", "trace_id=…": a value an id's name
# stands just before, for an id no one keeps secret (a request's, a version's, a commit's …; not a session's, a
# client's or a secret's own id: Vault's `secret_id` is one).
# (and, set 18, what a cloud's or an app store's console shows as ids: `"projectId": "prj_…"`, `"orgId"`, `siteId`,
# "Issuer ID 57246542-…", a tenant's, a subscription's, a workspace's id)
_ID_JUST_BEFORE = re.compile(
    r"(?i)\b(?:request|trace|span|correlation|event|version|revision|commit|build|job|run|order|invoice|ticket|message"
    r"|project|org|organi[sz]ation|team|site|account|tenant|subscription|workspace|issuer|installation|deployment)"
    r"[ _-]?ids?\b[^\w\n]{0,3}(?:\s+(?:is|was))?[\s:=\"'`]*$"
)


# "BitLocker recovery key ID: 3A7F2C1B-9D4E-…", "kid: 0f3c…-…": a key's id in a GUID's shape names which key, as
# a fingerprint does (set 17's keeper); the key itself is never a GUID named an id.
_GUID = re.compile(r"[{(]?[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}[})]?")
_KEY_ID_JUST_BEFORE = re.compile(r"(?i)\b(?:key[ _-]?id|kid)\b[^\w\n]{0,3}(?:\s+(?:is|was))?[\s:=\"'`]*$")


# A JSON Web Key's or a JWT header's `kid` names which key signed, in any shape ("the new kid is 'NjVBRjY5…'", a JWKS's
# base64 thumbprint; set 18's keeper): a key's id, never the key. (Not "key id" in any shape: AWS' access key id is
# refused by policy.)
_JWT_KID_JUST_BEFORE = re.compile(r"(?i)(?<![\w-])kid\b[^\w\n]{0,3}(?:\s+(?:is|was))?[\s:=\"'`]*$")


def _key_id(view: str, start: int, secret: str, kid: bool) -> bool:
    """(`kid`: whether the view has the word at all, found once per view)"""
    if kid and _JWT_KID_JUST_BEFORE.search(view, max(0, start - 60), start):
        return True
    return bool(_GUID.fullmatch(secret.strip("'\"`,;"))) and bool(
        _KEY_ID_JUST_BEFORE.search(view, max(0, start - 60), start)
    )


# A key's fingerprint in colon-separated hex pairs (`3f:9a:12:…:af`, OCI's and OpenSSH's MD5 notation, a certificate's
# SHA-1) named so before it: a digest of a public key (set 18's keeper). Sixteen pairs or more: a Wi-Fi WEP key's five
# or thirteen are not read as one.
_COLON_HEX = re.compile(r"(?:[0-9A-Fa-f]{2}:){15,}[0-9A-Fa-f]{2}")
# (named as a digest within the words before it: "the AES key is 3f:9a:…", "psk: 3f:9a:…" stay keys)
_DIGEST_NAMED_BEFORE = re.compile(r"(?i)fingerprint|thumbprint|sha-?(?:1|224|256|384|512)\b|md5|digest|hash")


def _fingerprint(view: str, start: int, secret: str) -> bool:
    return bool(_COLON_HEX.fullmatch(secret.strip("'\"`,;"))) and bool(
        _DIGEST_NAMED_BEFORE.search(view, max(0, start - 80), start)
    )


# `badge.svg?token=Pk8G9gg3y9` in a README's Codecov badge: the read-only token a badge's or a graph's image is served
# with, published in every README that shows it (the false-positive hunt over installed packages' READMEs, set 17).
_IMAGE_TOKEN_BEFORE = re.compile(r"(?i)(?:/badge[\w.-]*|\.(?:svg|png|gif))\?(?:[^\s?#]*&)?token=$")


# Vault's token accessor (`vault token revoke -accessor X`, `token_accessor  X` in `vault token lookup`): a token's
# handle to look it up or revoke it, which logs in nowhere (set 19's keeper); the token itself is `hvs.…`.
_ACCESSOR_JUST_BEFORE = re.compile(r"(?i)(?<![a-z])accessor\b[^\w\n]{0,3}(?:\s+(?:is|was))?[\s:=\"'`]*$")


# A key the vendor publishes by design, named so just before it: a search-only key (Algolia's, Typesense's,
# Meilisearch's, in every page that searches), a CAPTCHA's site key (reCAPTCHA's, hCaptcha's, Turnstile's
# `data-sitekey`, `RECAPTCHA_SITE_KEY=`; their secret keys are named secret keys). Set 19's keepers.
_PUBLIC_KEY_NAME_JUST_BEFORE = re.compile(
    r"(?i)(?<![a-z])(?:(search)[ _-]?(?:only[ _-]?)?(?:api[ _-]?)?key|site[ _-]?key)s?\b[\"']?[^\w\n]{0,3}"
    r"(?:\s+(?:is|was))?[\s:=\"'`]*$"
)
# "Search key" alone is no proof: Azure AI Search's, Brave's and Bing's search keys are paid or admin keys (review
# 22: `the search key is <40 random characters>` was stored). Public only on a line that says search-only or names
# a vendor whose search keys are published (Algolia, Typesense, Meilisearch), and says nothing of admin or write.
_PUBLIC_SEARCH_SAID = re.compile(r"(?i)search[ _-]?only|algolia|typesense|meili")
_PRIVILEGED_SAID = re.compile(r"(?i)admin|master|write|private|secret")


# Supabase's (PostgREST's) anon key: a JWT whose role is `anon`, the key every browser client holds; a
# `service_role` one is the secret (set 19's keeper).
_JWT = re.compile(r"eyJ[\w-]*\.(eyJ[\w-]*)\.[\w-]*")


def _anon_jwt(secret: str) -> bool:
    m = _JWT.fullmatch(secret.strip("'\"`,;"))
    if m is None:
        return False
    try:
        claims = json.loads(base64.urlsafe_b64decode(m.group(1) + "=" * (-len(m.group(1)) % 4)))
    except (ValueError, binascii.Error):
        return False
    return isinstance(claims, dict) and claims.get("role") == "anon"


# The rules that take a value for a secret because of the name before it (not its own shape): only theirs may be
# overruled by a name that says the value is public (`site_key: hvs.…` is still Vault's token, by its shape).
_READ_BY_ITS_NAME = frozenset(
    (
        *("generic-api-key", "algolia-api-key", "secret-assignment", "secret-assignment-typed", "name-value-pair"),
        *("token-in-prose", "token-after-name", "token-named-nearby", "key-in-prose", "quoted-name-value"),
        *("hex-key-nearby", "hex-key-named-after", "secret-named-quoted", "high-entropy-token"),
    )
)


def _public_by_design(rule: str, view: str, start: int, secret: str) -> bool:
    """A key published by design, by its shape (whichever rule read it) or by its name (only for a rule that read the
    value for its name)."""
    if public_value(secret) or _anon_jwt(secret):
        return True
    if rule not in _READ_BY_ITS_NAME:
        return False
    before = view[max(0, start - 60) : start]
    if _ACCESSOR_JUST_BEFORE.search(before):
        return True
    named = _PUBLIC_KEY_NAME_JUST_BEFORE.search(before)
    if named is None:
        return False
    if named.group(1) is None:  # a site key
        return True
    after = start + len(secret)
    stop = view.find("\n", after)
    line = before + view[after : min(after + 80, stop if stop >= 0 else len(view))]
    return bool(_PUBLIC_SEARCH_SAID.search(line)) and not _PRIVILEGED_SAID.search(line)


# A key drawn at random holds one of gitleaks' 1,400 stopwords by chance (a Zulip key `…TWordYP5a4m…`: 2 of 40 of set
# 20's fillings): the word allows the value only when what is left is not drawn at random too: 24 characters or more,
# both cases and a digit, entropy 4 or more, the kind of character changing at a third of the steps or more (about
# three in five for a drawn key), and five consonants in a row, which words in camel case seldom have
# (`ExampleApiKeyForDocsOnly12345678`'s rest has three at most).
_FIVE_CONSONANTS = re.compile(r"(?i)[b-df-hj-np-tv-z]{5}")


def _drawn(rest: str) -> bool:
    rest = rest.strip("'\"`")
    if len(rest) < 24 or not (any(c.isupper() for c in rest) and any(c.islower() for c in rest)):
        return False
    if not any(c.isdigit() for c in rest) or entropy(rest) < 4.0 or not _FIVE_CONSONANTS.search(rest):
        return False
    kinds = ["u" if c.isupper() else "l" if c.islower() else "o" for c in rest]
    return sum(a != b for a, b in zip(kinds, kinds[1:], strict=False)) >= 0.35 * (len(rest) - 1)


# A value in a vendor's token format (its prefix, length and alphabet: `ghp_` and 36, `AKIA` and 16, `sk-ant-api03-`)
# is a secret however plain its body: an outside tester types `ghp_abcdefghijklmnopqrstuvwxyz0123456789` or
# `AKIA1234567890ABCDEF` by hand, and gitleaks' stopwords (`abcdefghijklmnopqrstuvwxyz`, 1,400 words) let such fakes
# through (set "fake": 65 of 92 stored). For these rules a stopword allows nothing; only an obvious placeholder does
# (one character repeated, `<…>`, `...`, `${…}`, `{{…}}`, EXAMPLE / REDACTED / PLACEHOLDER / YOUR_…), and the
# allowlists' patterns still apply. The rules are the ones matched by their own prefix, not by a name before a value.
_NOT_VENDOR_FORMATS = ("curl-", "jwt", "private-key", "kubernetes-", "nuget-", "sidekiq-", "planetscale-password")
_OUR_VENDOR_FORMATS = frozenset({"vendor-key-prefix", "sk-prefixed-key", "aws-key-id-typed", "discord-webhook-url"})


@cache
def _vendor_rules() -> frozenset[str]:
    theirs, _ = gitleaks()
    own = {r.id for r in theirs if not r.name_prefix and not r.id.startswith(_NOT_VENDOR_FORMATS)}
    return frozenset(own | _OUR_VENDOR_FORMATS)


# A plain value given to a secret's name (rules_plain) is judged by its own placeholder test; a stopword in it
# (`abcdefghijklmnopqrstuvwxyz`, `password`) does not make it one.
_PLAIN_VALUE_RULES = frozenset({"plain-secret-assigned"})

_VENDOR_PLACEHOLDER = re.compile(
    r"(.)\1{7,}|<|\.\.\.|…|\$\{|\{\{|(?i:example|redacted|placeholder|your[-_]|dummy|changeme)"
)


def _vendor_placeholder(secret: str) -> bool:
    return _VENDOR_PLACEHOLDER.search(secret) is not None


def _always_drawn(_rest: str) -> bool:
    """A vendor format's body is a secret's whatever word it holds: no stopword allows it."""
    return True


def _regex_value(secret: str) -> bool:
    return len(_REGEX_SYNTAX.findall(secret)) >= 2


def _matches(view: str) -> Iterator[Finding]:
    """Every finding of every rule in `view`, as gitleaks decides them (spans in `view`)."""
    rules, glob, keywords = _rules()
    view = _without_public_blocks(view)
    lowered = view.lower()
    woken = {i for _, ids in keywords.iter(lowered) for i in ids}
    kid = "kid" in lowered
    for i, rule in enumerate(rules):
        if rule.keywords and i not in woken:
            continue
        for m_start, m_end, start, end in _candidates(rule, view):
            secret = view[start:end]
            begin = m_start
            if rule.name_prefix:
                while begin > 0 and m_start - begin < 50 and _NAME_CHAR.match(view, begin - 1):
                    begin -= 1
            if _DIGEST_NOTATION.search(view, max(0, start - 7), start) or _env_reference(view, start, secret):
                continue
            if _told_digest(view[max(0, start - BEFORE * 2) : start], secret) or _regex_value(secret):
                continue
            if _ID_JUST_BEFORE.search(view, max(0, start - 60), start) or _key_id(view, start, secret, kid):
                continue
            if _IMAGE_TOKEN_BEFORE.search(view, max(0, start - 120), start) or _public_by_design(
                rule.id, view, start, secret
            ):
                continue
            # (a password manager's name where a value would be: "storePassword=<store password from 1Password>",
            # "パスワードは1Passwordの…にあります", where the password is; set 18's keepers; or a secret store's
            # reference, `password: vault:secret/data/prod/db#password`, set 22's keeper)
            if (
                ":" in secret
                and _fingerprint(view, start, secret)
                or _PASSWORD_MANAGER.fullmatch(secret.strip(_AROUND_NAME))
                or STORE_REFERENCE.fullmatch(secret.strip(_AROUND_NAME))
            ):
                continue
            if rule.id == "generic-api-key" and not _named_public(view[max(0, start - BEFORE) : start]):
                continue
            if _own_name(view, start, secret) or rule.id in _ASSIGNMENT_RULES and _code_value(view, start, secret):
                continue
            if rule.id == "secret-assignment" and _urn_segment(view, begin):
                continue
            if rule.before is not None and not rule.before(view[max(0, start - BEFORE) : start]):
                continue
            line = _line(view, begin)
            vendor = rule.id in _vendor_rules()
            if vendor and _vendor_placeholder(secret):
                continue
            # (a template's word given to a password's name, `password: "changeme"`: gitleaks' Terraform rule takes
            # any 8 to 20 small letters; ours keep that placeholder and refuse a breach list's `password123`; set 23)
            if rule.name_prefix and not _told_not_placeholder(secret):
                continue
            drawn = _always_drawn if vendor or rule.id in _PLAIN_VALUE_RULES else _drawn
            if any(a.allows(secret, view[begin:m_end], line, drawn) for a in (*glob, *rule.allows)):
                continue
            yield Finding(rule.id, rule.kind, start, end)

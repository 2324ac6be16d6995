"""What a bare token is when it is no key: a path or a URL of words, a model's id, a class's name, a public
key or certificate, a password hash; and what random bytes look like (`_random_looking`)."""

from __future__ import annotations

import base64
import binascii
import re

from .decoding import _encoded_file, _encoded_text
from .model import entropy
from .names import _DIGEST_OF_KEY
from .told import _CLASS_NAME, _random_letters
from .values import _CODE, PUBLIC_KEY_PREFIXES

# A path of words (`Feed/Queries/RecentActivity.graphql`): each part a word or CamelCase words, where a
# base64 key's parts mix capitals and digits at random.
# (a word's part may go on with small pieces after `-` or `_`, `WindSafe-arm64.apk`: a build's file, walk 20; a base64
# key has no `-`, a URL-safe one no `/`)
_PATH_WORD = (
    r"(?:[A-Z]?[a-z]+(?:[A-Z][a-z]+)*\d*(?:[-_][a-z0-9]+)*|[a-z][a-z0-9]*(?:[_-][a-z0-9]+)*"
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)"
)
# (a path of words as code and docs spell them: `America/Vancouver`, `include/numkong/spatial/README.md`,
# `cron_descriptor/locale/YOUR_LOCALE_CODE.mo`; a base64 key's parts mix their cases)
# (from the root too, its parts words joined by `-`: `/docs/execution-providers/NNAPI-ExecutionProvider.md`, the
# false-positive hunt of set 17)
# (a part may be words joined by dots, as .NET names projects and build folders: `tests/Acme.Billing.E2E/bin/Debug/
# net8.0/playwright.ps1`, `src/MyCompany.Api/bin/Release/net8.0/publish/`; set AN's memory, held out, was refused: a
# base64 key has no dot, and a JWT's dotted parts have no `/` between them)
_DOTTED_WORD = rf"(?>{_PATH_WORD})(?:\.(?>{_PATH_WORD}|\d+))*+"
_WORDS_PATH = re.compile(
    rf"/?(?:{_DOTTED_WORD}(?:-{_DOTTED_WORD})*/)+{_DOTTED_WORD}(?:-{_DOTTED_WORD})*(?:\.[a-z0-9]{{1,8}})?/?"
)
# A URL's part of a hex digest named by words (`250cf8b51c773f3f8dc8b4be867a9a02-Abstract.html`, a paper's page): the
# words and the extension say what it is; only the rest is weighed as a key.
_WORDS_AFTER_HEX = re.compile(r"(?<=[0-9a-f])(?:[-_.][A-Za-z][a-z]+)+$")


# "the public key RWQf6LRC…" (minisign's, age's recipient, a wallet's), "the token program TokenkegQfe…", "the
# IPFS CID QmXoypiz…", "the USDC mint EPjFWdd5…": a token its words call public, an address, an id on a chain;
# PKCE's "code_challenge E9Melhoa…", sent in the authorization URL (its verifier stays refused); a request's or a
# trace's id (S3's `x-amz-id-2: vlR7PnpV…`).
# (also a key's thumbprint or fingerprint, "thumbprint NzbLsXh8…"; an idempotency key, a request's id its client
# draws; "the WireGuard public key of the office peer: xTIBA5rb…")
_PUBLIC_NAMED = re.compile(
    r"(?i)\b(?:public[ _-]?key(?:\s+(?:of|for)\s[^.\n:=]{0,40}?)?|pubkey|address(?:es)?|cid|program(?:[ _-]?id)?|mint"
    r"|(?:code[ _-]?)?challenge|(?:request|trace|span|correlation|event)[ _-]?id|x-amz-id-2|thumbprint|fingerprint"
    r"|idempotency[ _-]?key)\b"
    r"[^\w\n]{0,3}"
    r"(?:\s+(?:is|was|are))?[\s:=\"'`]*$"
)


# A JSON Web Key's public members (`"n"`, the RSA modulus; `"x"`, `"y"`, an EC point): a JWKS publishes them. A
# private JWK's own members (`"d"`, `"p"`, `"q"` …) are still read as bare keys.
_JWK_PUBLIC_MEMBER = re.compile(r"[\"'](?:n|x|y)[\"']\s*:\s*[\"']$")
# (`"kty"` may be further back than the words before a token are read: an EC key's `"y"` follows its `"crv"`, `"kid"`,
# `"use"` and `"x"`; set 18's keeper. Another JWK member, not the token's own: `{"x": "<key>"}` alone is no JWK)
_JWK_BEFORE = re.compile(r"[\"'](?:kty|crv|kid|use|alg|key_ops)[\"']\s*:")


def _named_public(before: str) -> bool:
    """For the bare-token rule: true unless the words just before call the token a public key or an address, a
    digest of a key (`_DIGEST_OF_KEY`), or it is a JSON Web Key's public member."""
    if _PUBLIC_NAMED.search(before) or _DIGEST_OF_KEY.search(before):
        return False
    return not (_JWK_BEFORE.search(before) and _JWK_PUBLIC_MEMBER.search(before))


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


# `BCryptSHA256PasswordHasher-compatible`, `SQLAlchemy2-style`: a class's name then words joined by `-`. Matched on the
# reversed token from its start: searched for at the end (`(?:-[a-z]{3,})+$`), it was tried from every `-` to the end,
# the square of the length of a run of such words (`key-key-…`, 8,000 characters: 0.3 s; `test_secrets_21`).
_WORDS_AFTER_REVERSED = re.compile(r"(?:[a-z]{3,}-)+")


def _long_class_name(token: str) -> bool:
    """`PPOCRV5MobileRecForTextRecognitionOutput`, `Qwen3VLMoeCausalLMOutputWithPast`: a class's name, mostly
    capitalised words of three letters or more, three quarters of it (a random key's such runs are a fifth); the
    small words joined after it count as words."""
    after = _WORDS_AFTER_REVERSED.match(token[::-1])
    tail = len(after.group(0)) if after else 0
    name = token[: len(token) - tail]
    words = sum(map(len, _HUMP.findall(name))) + tail
    return bool(_CLASS_NAME.fullmatch(name)) and words >= 0.75 * len(token)


def _random_looking(token: str) -> bool:
    """A bare token of ≥ 32 characters from a key alphabet with upper and lower case, and a digit or
    `+` / `/`, whose entropy is that of random bytes (an AWS secret access key, a base64 key)."""
    if token.startswith(PUBLIC_KEY_PREFIXES) or _ssh_public_key(token) or _public_der(token) or _CODE.fullmatch(token):
        return False
    if _signify_public_key(token) or _encoded_public_block(token):
        return False
    if _URL_PATH.fullmatch(token):  # a URL after its scheme: only a long part of its own can be a key
        parts = (_WORDS_AFTER_HEX.sub("", part) for part in token.split("/"))
        return any(_random_looking(part) for part in parts if len(part) >= RANDOM_TOKEN)
    if _WORDS_PATH.fullmatch(token) or _JOINED_WORDS.fullmatch(token) or _encoded_file(token):
        return False
    if _MODEL_ID.fullmatch(token) or _long_class_name(token) or _DOTTED_CLASS.fullmatch(token):
        return False
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token)):
        return False
    if not any(c.isdigit() or c in "+/" for c in token) and not _random_letters(token):
        return False
    return entropy(token) >= 4.2 and not _encoded_text(token)


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


def _signify_public_key(token: str) -> bool:
    """A minisign or signify public key (`RWQf6LRC…`, 56 characters): 42 bytes, `Ed`, the key's id, the public key.
    Their secret keys start the same way and are longer (set 18's keeper)."""
    if len(token) != SIGNIFY_PUBLIC_CHARS or not token.startswith("RW"):
        return False
    try:
        return base64.b64decode(token, validate=True)[:2] == b"Ed"
    except (binascii.Error, ValueError):
        return False


SIGNIFY_PUBLIC_CHARS = 56
# base64 of "-----BEGIN ": a PEM block encoded again (a kubeconfig's `certificate-authority-data`).
_ENCODED_ARMOUR = "LS0tLS1CRUdJTi"
_PUBLIC_LABEL = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*(?:CERTIFICATE(?: REQUEST)?|PUBLIC KEY(?: BLOCK)?|X509 CRL)-----"
)


def _encoded_public_block(token: str) -> bool:
    """A certificate's or a public key's PEM in base64 (`certificate-authority-data: LS0tLS1CRUdJTiBDRVJU…`): public,
    as the block itself is (set 18's keeper); a private key's (`client-key-data`) is still read."""
    if not token.startswith(_ENCODED_ARMOUR):
        return False
    try:
        head = base64.b64decode(token[:60])
    except (binascii.Error, ValueError):
        return False
    return bool(_PUBLIC_LABEL.match(head.decode("ascii", "replace")))


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


# A password hash in crypt's notation (`$1$…`, `$2b$12$…`, `$6$rounds=…$…`, `$argon2id$v=19$…`, `$y$…`, Apache's
# `$apr1$…` in an .htpasswd, phpass' `$P$…` / `$H$…` in WordPress' and phpBB's users tables): a hash,
# stored as the `password_hash` column's values are (a Cisco `secret 5 $1$…`, a shadow line), blanked like a public
# block.
# (only where a token starts: a password that has `$6$` after its first characters is not a hash)
_CRYPT_HASH = re.compile(
    r"(?<![^\s'\"`:=,;(\[{}|>$])\$(?:1|2[abxy]?|5|6|7|y|gy|apr1|[PH]|argon2(?:id|i|d)|scrypt|pbkdf2(?:-sha\d+)?|sha1|md5)\$[^\s'\"`]{8,}"
)


# A SOPS-encrypted value (`ENC[AES256_GCM,data:…,iv:…,tag:…,type:str]`): ciphertext, committed by design, that only
# its KMS or age key opens; blanked like a public block (set 19's keeper).
_SOPS_VALUE = re.compile(r"ENC\[AES256_GCM,data:[A-Za-z0-9+/=]*,iv:[A-Za-z0-9+/=]+,tag:[A-Za-z0-9+/=]+,type:[a-z]+\]")


# A Sealed Secret's `encryptedData:` values (kubeseal's output, `Ag` and a few hundred base64 characters: a session
# key sealed to the cluster's public key, then the value): ciphertext committed by design, as SOPS' (set 20's keeper).
# Each entry of the mapping, YAML or JSON, is blanked; a key that is not such ciphertext ends the run.
_SEALED_VALUES = re.compile(
    r"(?<=encryptedData)[\"']?:[ \t]*\{?"
    r"(?:\s*[\"']?[\w.-]+[\"']?[ \t]*:[ \t]*[\"']?Ag[A-Za-z0-9+/]{300,}+={0,2}[\"']?,?)++"
)


def _without_public_blocks(view: str) -> str:
    if "encryptedData" in view:
        view = _SEALED_VALUES.sub(lambda m: " " * len(m.group(0)), view)
    if "$" in view:
        view = _CRYPT_HASH.sub(lambda m: " " * len(m.group(0)), view)
    if "ENC[" in view:
        view = _SOPS_VALUE.sub(lambda m: " " * len(m.group(0)), view)
    if "-----BEGIN" not in view:
        return view
    return _PUBLIC_BLOCK.sub(lambda m: " " * len(m.group(0)), view)

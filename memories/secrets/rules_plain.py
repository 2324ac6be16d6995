"""A plain value given to a secret's name in config, an env file, JSON, YAML or TOML is a secret (set "fake",
secrets27): `DB_PASSWORD=supersecret`, `JWT_SECRET=secret`, `API_KEY=1234567890`, `password: letmein`,
`{"password": "admin123"}`. The other rules ask a value given to a name to look drawn at random (`values.
_assigned_secret`), so a dictionary word, a short number or `password123` was stored; an outside tester types exactly
those. Kept: placeholders (`<…>`, `${…}`, `$VAR`, `{{…}}`, `xxx`, `***`, `...`, EXAMPLE / REDACTED / YOUR_… / …_HERE),
type annotations (`password: str`), code's references (`password = user_password`, `Client(api_key=api_key)`,
an environment lookup, `settings.X`, a call), and the words a setting's value names a state with (`token: expired`)."""

from __future__ import annotations

import re

from .model import Rule
from .values import _REFERENCE, PLACEHOLDER, _famous_password

# The name: up to four words joined by `_`, `.` or `-` (`MYSQL_ROOT_PASSWORD`, `auth.client_secret`) ending in a
# secret's word; nothing of a word before it (`bypass`, `max_tokens` are not).
_NAME = (
    r"(?<![\w.-])(?:[A-Za-z0-9]+[_.-]){0,4}"
    r"(?i:password|passwd|pwd|secret|secret[_-]?key|secret[_-]access[_-]key|api[_-]?key|token|private[_-]?key|passphrase)"
    r"(?![\w-])"
)
_END = r"(?=[ \t]*(?:[,;}\]]|[ \t]#|$))"
# (no `%`: a percent-encoded or Windows-variable value, `%DB_PASS%`, is read by the rules that decode it)
_VALUE = r"[^\s\"'`,;(){}\[\]<>=%]{1,64}"
_PLAIN_ASSIGNED = re.compile(
    r"(?m)"
    # a quoted value, after `=` or `:` (`password = "welcome1"`, `"api_key": "testkey123"`; not psql's `PASSWORD :'v'`)
    rf"{_NAME}[\"']?(?:[ \t]*=|:)[ \t]*(?:\"(?P<double>{_VALUE})\"|'(?P<single>{_VALUE})'){_END}"
    # YAML's or a header's `name: value`, the name first on its line (`  password: letmein`) or after a comma
    # (`username: admin, password: admin`)
    rf"|(?:^[ \t]*-?|,)[ \t]*{_NAME}:[ \t]+(?P<yaml>{_VALUE}){_END}"
    # an env file's or a shell's `NAME=value`, the name in capitals (`DB_PASSWORD=supersecret`)
    rf"|(?-i:(?<![\w.-])(?:[A-Z0-9]+_){{0,4}}(?:PASSWORD|PASSWD|PWD|SECRET|SECRET_KEY|SECRET_ACCESS_KEY|API_KEY|APIKEY"
    rf"|TOKEN|PRIVATE_KEY|PASSPHRASE))=(?P<env>{_VALUE}){_END}"
    # `name=value` in small letters with a digit or a symbol in the value (`passwd=hunter22`): without one it reads
    # as code passing a variable (`Client(api_key=api_key)`)
    # (the look-ahead bounded to a value's length: unbounded, it read on to the end of a run with no space from every
    # name, `pwd==pwd=…` quadratic)
    rf"|{_NAME}[ \t]*=[ \t]*(?P<code>(?=[^\s\"'`]{{0,64}}[\d!@#%^&*+?~])(?![\d.]+[ \t]*[,;)]){_VALUE}){_END}"
)
# The words a setting's value names a type or a state with, not a secret's.
_STATE_WORDS = re.compile(
    r"(?i)(?:str|string|int|bytes|bool|boolean|any|secretstr|secret_str|optional|required|none|null|nil|true|false"
    r"|yes|no|on|off|empty|unset|hidden|masked|set|undefined|missing|expired|invalid|revoked|rotated|tbd|todo|n/a"
    r"|auto|env|vault|omitted|same|default|see|below|above|here|inherit|ask|prompt|sha256|base64"
    # (a schema's column types: a table of a `users` table read as `password: text`, review 7's keeper)
    r"|text|varchar|char|blob|bytea|hash|hashed|uuid|integer|number|json"
    # (the defaults a container or an emulator documents and accepts from anyone: `POSTGRES_PASSWORD: postgres` in a
    # CI service, LocalStack's `AWS_SECRET_ACCESS_KEY=test`; sets 18's and review 9's keepers)
    r"|postgres|test|guest|minioadmin)"
)
# (a dotted name without a digit is code's attribute, `settings.SECRET_KEY`; Doppler's `dp.st.…` token has digits)
_NAMED_REFERENCE = re.compile(r"(?!.*\d)[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+|\$.*|%\w+%|.*_here|.*example.*|your[-_].*")


# One character repeated (`ghp_xxxx…`), stars or an ellipsis (`sk-***`, `sk-…`): a vendor's prefix before a placeholder.
_FILLER = re.compile(r"(.)\1{5,}|\*\*\*|\.\.\.|…")
# A version (`password: v2.4.1`) or a product's name in capitals and no digit (`password: PostgreSQL`, an auth method's
# backend): the near misses of sets 2 and 10.
_VERSION_OR_NAME = re.compile(r"v?\d+(?:\.\d+)+|[A-Z][a-z]+(?:[A-Z][A-Za-z]*)+")


def _plain_secret(value: str) -> bool:
    """A value that is no placeholder, no type or state word, and no reference to where a secret lives."""
    if len(value) < 3 or _FILLER.search(value) or PLACEHOLDER.match(value) and not _weak_password(value):
        return False
    if len(set(value)) == 1 or _STATE_WORDS.fullmatch(value) or _VERSION_OR_NAME.fullmatch(value):
        return False
    if value.startswith(_REFERENCE):
        return False
    return not _NAMED_REFERENCE.fullmatch(value.lower())


# The values the placeholder list took for words of a template that are a secret when given to a secret's name: a
# weak password is still the password (`password: password123`, `JWT_SECRET=secret`, `admin`, `root`).
_WEAK_WORDS = re.compile(r"(?i)passwd|secret|admin|root|pass")


def _weak_password(value: str) -> bool:
    return bool(_WEAK_WORDS.fullmatch(value)) or _famous_password(value)


RULES: tuple[Rule, ...] = (
    Rule(
        "plain-secret-assigned",
        "a secret assignment",
        _PLAIN_ASSIGNED,
        ("password", "passwd", "pwd", "secret", "api_key", "api-key", "apikey", "token", "private_key", "passphrase"),
        check=_plain_secret,
    ),
)

"""Our rules, seventh part: secrets of particular systems, known by how those systems write them (held-out set 17):
a password stored in the clear under a `{PLAIN}` scheme, a passphrase of several words quoted after a command's
option, an Erlang distribution cookie, and a long number told as a password or a Wi-Fi key; and (held-out set 18) a
key's raw bytes as a JSON array, a Kubernetes bootstrap token, and a Terraform `random_password`'s result in a state
file; and (set 23) a secret's variable echoed in a log with its value on the next line."""

from __future__ import annotations

import re

from .model import Rule
from .names import _SECRET_NAME
from .phrases import _passphrase
from .told import _told_secret
from .values import _assigned_secret, _not_placeholder, _random_case
from .words import _ABOUT, _NEARBY_INITIALS, _NEARBY_KEYWORDS, _NEARBY_WORDS

# The length of the number `digits-told-as-password` wants: a router's 16- or 20-digit Wi-Fi key, a numeric
# password; shorter numbers are PINs, which the PIN rules read, or lengths, counts and years.
MIN_TOLD_DIGITS = 10


def _plain_value(value: str) -> bool:
    return _not_placeholder(value) and not value.startswith("$")


def _quoted_passphrase(words: str) -> bool:
    """Several words in quotes after a passphrase's option: a passphrase of words (not `$VAR`, not `<phrase>`)."""
    return " " in words.strip() and _plain_value(words) and _passphrase(words)


def _long_number(value: str) -> bool:
    digits = re.sub(r"[ -]", "", value)
    return len(digits) >= MIN_TOLD_DIGITS and len(set(digits)) >= 3


# How many of a key's bytes (of 32 or 64 random ones) must be distinct, and how many above 127: a key's bytes spread
# over the whole range, a list of scores, ports or ages does not.
MIN_DISTINCT_KEY_BYTES = 0.6
MIN_HIGH_KEY_BYTES = 0.25


def _key_bytes(numbers: str) -> bool:
    """32 or 64 numbers of 0-255 spread as random bytes are: a Solana `id.json`, a `Uint8Array` secret key."""
    values = [int(n) for n in re.findall(r"\d+", numbers)]
    if len(values) not in (32, 64) or max(values) > 255:
        return False
    high = sum(v > 127 for v in values)
    return len(set(values)) >= MIN_DISTINCT_KEY_BYTES * len(values) and high >= MIN_HIGH_KEY_BYTES * len(values)


# An app-specific password's letters are drawn at random: eight distinct of sixteen or more (a placeholder's x's, a
# word's repeated letters are fewer).
MIN_APP_PASSWORD_LETTERS = 8
_APP_PASSWORD_BEFORE = re.compile(rf"(?i)(?:password|app[ -]specific)s?{_ABOUT}[^\n]{{0,60}}$")


_SQL_VALUE = re.compile(r"\s*(?:'((?:[^']|'')*)'|\"([^\"]*)\"|([^,]*?))\s*(?:,|$)")
_PASSWORD_COLUMN = re.compile(r"(?i)[\"`]?\w*(?:password|passwd|pwd|secret|token|api_?key)[\"`]?")
_NOT_CLEAR_COLUMN = re.compile(r"(?i)hash|digest|salt|crypt|_id\b|expire|reset|type|name")


def _inserted_password(statement: str) -> bool:
    """`email, password, role) VALUES ('a@b.c', 'X', 'admin'`: the value under a password's column looks like one."""
    parts = re.split(r"(?i)\)\s*values\s*\(", statement, maxsplit=1)
    if len(parts) != 2:
        return False
    columns, values = parts
    names = [c.strip() for c in columns.split(",")]
    cells = [next(g for g in m.groups() if g is not None) for m in _SQL_VALUE.finditer(values) if m.group(0)]
    for name, cell in zip(names, cells, strict=False):
        if _PASSWORD_COLUMN.fullmatch(name) and not _NOT_CLEAR_COLUMN.search(name) and _assigned_secret(cell):
            return True
    return False


# A name in snake_case (`refresh_token_v2`, a migration's `0012_alter_user_…`): code's, not a secret.
_SNAKE_NAME = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)+")

RULES: tuple[Rule, ...] = (
    # Dovecot's, nginx's and LDAP's scheme for a password kept in the clear: `deploy:{PLAIN}X` in an .htpasswd,
    # `userPassword: {CLEARTEXT}X` (a hash's scheme, `{SSHA}`, `{PLAIN-MD5}`, names a hash: kept).
    Rule(
        "plain-scheme-password",
        "a password",
        re.compile(r"(?i)\{(?:plain|clear|cleartext)\}([^\s'\"`]{4,})"),
        ("{plain}", "{clear"),
        check=_plain_value,
    ),
    # gpg's, age's or a backup tool's passphrase as several quoted words: `--passphrase 'canyon tackle uncle journey'`
    # (the one-word option rule wants a value without spaces).
    Rule(
        "passphrase-option",
        "a password on a command line",
        re.compile(r"(?i)(?<![\w-])--?(?:passphrase|pass-phrase|password|passwd)[= ]\s*(['\"])([^'\"\n]{6,200})\1"),
        ("pass",),
        group=2,
        check=_quoted_passphrase,
    ),
    # An Erlang node's cookie (RabbitMQ's, a cluster's): whoever has it runs code on every node. Twenty capitals as
    # Erlang makes it, which the told-token rules take for an acronym's word.
    Rule(
        "erlang-cookie",
        "a credential (erlang cookie)",
        re.compile(
            r"(?i)(?:erlang[ _.-]?cookie|\.erlang\.cookie|-setcookie)(?:[^.\n=:]{0,40}?(?:\s(?:is|was)|[:=])\s*|\s+)"
            r"[\"'`]?([A-Za-z0-9]{16,})(?![\w-])"
        ),
        ("cookie",),
        check=_not_placeholder,
    ),
    # "WLAN-Schlüssel der Fritzbox: 4392 1243 9734 1891 4603", "the password is 8302746615": a long number told as a
    # password or a Wi-Fi key (the told-password rules keep numbers, which are mostly lengths, counts and dates).
    Rule(
        "digits-told-as-password",
        "a password",
        re.compile(
            rf"(?i)(?=[{_NEARBY_INITIALS}wnck])(?:{_NEARBY_WORDS}|wlan[ -]?schlüssel|netzwerkschlüssel|wi-?fi[ -]key"
            rf"|wpa2?[ -](?:key|psk)|network key|clé (?:wi-?fi|wpa)|clave (?:wi-?fi|wpa))\b{_ABOUT}"
            r"[^.\n=:]{0,40}?(?:\s(?:is|was|ist|lautet|est|es|é|è|wa)\s+|\s*[:=]\s*)"
            r"[\"'`]?(\d{4,}(?:[ -]\d{3,}){0,7})(?![\w.,/-]?\d)"
        ),
        (*_NEARBY_KEYWORDS, "wlan", "wi-fi", "wifi", "wpa", "network key", "netzwerkschlüssel", "clé", "clave"),
        check=_long_number,
    ),
    # A private key's raw bytes as a JSON array (`~/.config/solana/id.json`: 64 numbers; a 32-byte seed), which no rule
    # of letters reads (set 18).
    Rule(
        "key-bytes-array",
        "a private key (raw bytes)",
        re.compile(r"\[\s*(\d{1,3}(?:\s*,\s*\d{1,3}){31,63})\s*\]"),
        ("[",),
        check=_key_bytes,
    ),
    # A Kubernetes bootstrap token, six and sixteen small letters and digits (`kubeadm join … --token abcdef.0123…`,
    # `kubeadm token create` prints one): it joins a node to the cluster. After the word "token" or "join", and
    # with a digit among the sixteen (a host's two words are no token; set 18).
    Rule(
        "bootstrap-token",
        "a credential (a cluster's bootstrap token)",
        re.compile(
            r"(?i:token|join)[^\n]{0,40}?(?<![\w.-])([a-z0-9]{6}\.(?=[a-z]*\d)(?=\d*[a-z])[a-z0-9]{16})(?![\w.-])"
        ),
        ("token", "join"),
    ),
    # A Terraform state's `random_password` keeps the password it made in the clear under `result` (set 18).
    Rule(
        "terraform-random-password",
        "a password (in Terraform state)",
        re.compile(r'"type":\s*"random_password"[^\]]{0,600}?"result":\s*"([^"\s]{4,})"'),
        ("random_password",),
        check=_plain_value,
    ),
    # An Apple ID's app-specific password, four groups of four small letters (`kezi-zoso-chgx-tdak`), after a password's
    # word, notarytool's or altool's option, fastlane's variable: a password whose letters are all small, which the
    # randomness tests take for words (other fillings of set 18's forms). `xxxx-xxxx-xxxx-xxxx` is the placeholder.
    Rule(
        "app-specific-password",
        "a password",
        re.compile(r"(?<![\w-])([a-z]{4}-[a-z]{4}-[a-z]{4}-[a-z]{4})(?![\w-])"),
        ("password", "app-specific", "app specific"),
        check=lambda value: len(set(value) - {"-"}) >= MIN_APP_PASSWORD_LETTERS,
        before=lambda text: bool(_APP_PASSWORD_BEFORE.search(text)),
    ),
    # An environment variable's name and value as a list's two keys (other fillings of sets 15's forms): Kubernetes'
    # `- name: DB_PASSWORD` / `value: "X"`, an ECS task's `{"name": "API_TOKEN", "value": "X"}` (`valueFrom:` and a
    # `${VAR}` are where the value comes from); Postman's and Insomnia's `{"key": "password", "value": "X"}` (set 21).
    Rule(
        "name-value-pair",
        "a secret assignment",
        re.compile(
            rf"(?i)[\"']?\b(?:name|key)[\"']?[ \t]*[:=][ \t]*[\"']?[\w.-]*{_SECRET_NAME}[\w.-]*[\"']?[ \t]*"
            r"(?:,[ \t]*|\r?\n[ \t]*)"
            r"[\"']?value[\"']?[ \t]*[:=][ \t]*[\"']?([^\"'\s,}]{6,})"
        ),
        ("value",),
        check=_assigned_secret,
    ),
    # A secret's name and its value as a pair: Erlang's and Elixir's `{password, "X"}`, `{:password, "X"}`, a Python
    # tuple `("api_key", "X")`, a Ruby or PHP pair in brackets (set 21's other fillings: `{password, "-PRvh…"}`).
    Rule(
        "secret-pair",
        "a secret assignment",
        re.compile(
            # (the name says a secret, not only whose: Django's migration `("auth", "0012_alter_user_…")`)
            # (the name's runs around its secret word are bounded, as secret-assignment's NAME_RUN: unbounded, a bracket
            # before 16,000 characters of `token` was read from each word to the end, 32-41 times the CPU of 2,000)
            r"(?i)[{(\[][ \t]*:?[\"']?[\w.-]{0,100}"
            r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api_?key|access_?key|private_?key)[\w.-]{0,100}[\"']?"
            r"[ \t]*,[ \t]*[bf]?[\"']([^\"'\s]{6,})[\"'][ \t]*[})\]]"
        ),
        ("secret", "token", "pass", "pwd", "key"),
        # (nor a snake_case name for a value: `("token", "refresh_token_v2")`)
        check=lambda value: not _SNAKE_NAME.fullmatch(value) and _assigned_secret(value),
    ),
    # A Postman collection's auth, exported: an array named by the auth's type whose entries are key/value pairs, and
    # for an API key the entry keyed `value` holds the key (`"apikey": [{"key": "value", "value": "X"}, {"key": "key",
    # "value": "X-API-Key"}]`; set 21). The other types' entries are keyed by what they hold (`token`, `password`),
    # which `name-value-pair` reads.
    Rule(
        "auth-array-value",
        "a secret assignment",
        re.compile(
            r"(?i)[\"'](?:apikey|bearer|basic|digest|oauth1|oauth2|hawk|awsv4|ntlm|akamai|edgegrid|jwt|asap)[\"']"
            r"[ \t]*:[ \t]*\[[^\]]{0,300}?[\"']key[\"'][ \t]*:[ \t]*[\"']value[\"'][ \t]*,"
            r"\s*[\"']value[\"'][ \t]*:[ \t]*[\"']([^\"'\s]{6,})"
        ),
        ("apikey", "bearer", "basic", "digest", "oauth", "hawk", "awsv4", "ntlm", "akamai", "edgegrid", "jwt", "asap"),
        check=_assigned_secret,
    ),
    # "SMTP for alerts: user alerts@acme.io pass X": `pass` after a user's name and its login (the word alone is a verb
    # too; `password-named` reads it only after whose it is; other fillings of set 15's forms).
    Rule(
        "user-then-pass",
        "a password",
        re.compile(
            r"(?i)\b(?:user(?:name)?|login)[ \t]*[:=]?[ \t]+[^\s,;]{1,64}[ \t]*[,;]?[ \t]+pass[ \t]*[:=]?[ \t]+"
            r"[\"'`]?(\S{6,})"
        ),
        ("pass",),
        check=lambda value: _told_secret(value) or _random_case(value.strip("'\"`.,;)")),
    ),
    # A password in the clear in an SQL `INSERT` (a seed file, a fixture): the value in the place of a column named a
    # password, a secret or a token, not its hash (other fillings of set 17's forms; `password_hash` is a hash).
    Rule(
        "sql-insert-password",
        "a password",
        re.compile(r"(?i)\binsert\s+into\s+[\w.\"`]+\s*\(([^()\n]{1,300}\)\s*values\s*\([^()\n]{1,600})\)"),
        ("insert",),
        check=lambda statement: _inserted_password(statement),
    ),
    # A secret's variable echoed in a CI log or a terminal, its value on the next line: `$ echo $DEPLOY_TOKEN` then
    # `[deploy] vjia5b14…` (a job's prefix in brackets may start the line; set 23). A masked `***`, a word, a number
    # or an address is kept by the value's test.
    Rule(
        "echoed-secret-variable",
        "a secret echoed in a log",
        re.compile(
            r"(?i)\b(?:echo|printenv|print)[ \t]+[\"']?\$?\{?[a-z0-9_]{0,40}"
            r"(?:token|secret|passw(?:or)?d|pass|pwd|api_?key|key|credentials?)[a-z0-9_]{0,40}\}?[\"']?[ \t]*\r?\n"
            r"(?:\[[^\]\n]{1,40}\][ \t]*)?([^\s]{12,})[ \t]*(?:\r?\n|$)"
        ),
        ("echo", "printenv", "print"),
        # (an address printed there is a base URL's setting, `echo $API_KEY_URL`, not the key)
        check=lambda value: "://" not in value and _assigned_secret(value),
    ),
    # A chat's question naming a password, a key or a token, and the next turn's answer nothing but a value:
    # "Q: root password for bastion?" / "A: BGYg…", "[user] whats the wifi pw" / "[assistant] XQAh…" (a probe after
    # set 23). The answer's line holds the value alone, so "A: we use SSH keys only" is a sentence, not a value.
    Rule(
        "secret-asked-then-answered",
        "a password",
        re.compile(
            r"(?im)\b(?:pass?(?:w(?:or|ro|r)|ow?r|or)d|passwd|passphrase|pw|pwd|api[ _-]?key|token|secret)s?\b"
            r"[^\n]{0,60}?\r?\n[ \t]*(?:\[(?:a|assistant|ai|bot)\]|(?:a|answer|assistant|ai|bot)[ \t]*:|<)[ \t]*"
            r"[\"'`]?([^\s\"'`]{8,})[\"'`]?[ \t]*$"
        ),
        ("passw", "pasw", "passo", "passphrase", "pw", "pwd", "api", "token", "secret"),
        check=lambda value: _assigned_secret(value) and _random_case(value.strip("'\"`.,;)")) or _told_secret(value),
    ),
)

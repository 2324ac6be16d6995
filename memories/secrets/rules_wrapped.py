"""Our rules, fifth part: secrets that their wrapping names, not a word before them (held-out set 10): a Wi-Fi QR
code's `P:` field, wpa_supplicant's `psk="…"`, a Terraform variable named for a secret with its `default`, a value
echoed into a file or a command that keeps secrets, Go's MySQL DSN, and a login pair told with `and` or ` / `."""

from __future__ import annotations

import re

from .model import Rule
from .phrases import _joined_words
from .told import _plain_password, _told_password, _told_secret
from .values import _assigned_secret, _not_placeholder, _url_password
from .words import _TOLD_VALUE

# A file or a command that keeps what is written to it: `~/.vault_pass.txt`, `/etc/app/api-token`, `secrets.env`,
# `| docker login --password-stdin`, `| kubectl create secret …`, `| gh secret set X`.
_SECRET_SINK = (
    r"(?:>>?[ \t]*[\"']?[^\s\"'|;&]*(?:pass|secret|token|cred|pwd|apikey|api[_-]key)[^\s\"'|;&]*"
    r"|\|[ \t]*(?:sudo[ \t]+)?(?:docker|podman|helm|kubectl|oc|gh|vault|aws|az|gcloud|op|pass|security)\b"
    r"[^\n|;&]{0,80}?(?:--password-stdin|\bsecret\b|\bpassword\b|\binsert\b|\bput\b))"
)

# A word of a sentence about a password rather than one of a passphrase's: a participle, an adverb, a quantifier.
_SENTENCE_WORD = re.compile(
    r"(?i)(?:ed|ing|ly)(?![^\W\d_])|(?<![^\W\d_])(?:every|each|never|only|always|per|after|before)(?![^\W\d_])"
)

RULES: tuple[Rule, ...] = (
    # The Wi-Fi QR code's payload (`WIFI:T:WPA;S:HomeNet;P:X;;`): its `P:` field is the network's password
    # (`;`, `,`, `:` and `\` escaped with a backslash inside it).
    Rule(
        "wifi-qr-password",
        "a password",
        re.compile(r"(?i)\bWIFI:(?:[^\n;]*;){0,4}?P:((?:\\.|[^;\\\n]){5,63});"),
        ("wifi:",),
        check=_not_placeholder,
    ),
    # wpa_supplicant's network block: `psk="X"` is the passphrase (8 to 63 characters), a bare `psk=` 64 hex digits.
    Rule(
        "wpa-supplicant-psk",
        "a password",
        re.compile(r"(?i)(?<![\w-])psk[ \t]*=[ \t]*(?:\"([^\"\n]{8,63})\"|([0-9a-f]{64})\b)"),
        ("psk",),
        check=lambda value: _not_placeholder(value) and not value.startswith(("$", "<", "{")),
    ),
    # Terraform's `variable "db_password" { … default = "X" }`: the block's label names the secret, its default
    # is the value (secret-assignment reads `default`, a word of no secret).
    Rule(
        "terraform-secret-default",
        "a secret assignment",
        re.compile(
            r"(?i)\bvariable[ \t]+\"[\w-]*"
            r"(?:secret|token|pass|pwd|api_?key|access_?key|private_?key|credential)[\w-]*\""
            r"[ \t]*\{[^}]{0,300}?\bdefault[ \t]*=[ \t]*\"([^\"\n]{6,})\""
        ),
        ("variable",),
        check=_assigned_secret,
    ),
    # `echo 'X' > ~/.vault_pass.txt`, `printf '%s' X | docker login -u me --password-stdin`: a value written into
    # a file named for a secret or piped to a command that stores one (not a variable: `echo "$TOKEN" > …`).
    Rule(
        "echoed-into-a-secret",
        "a secret written to a file",
        re.compile(
            r"\b(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+|(?:'%s'|\"%s\")[ \t]+)*"
            r"(?:'([^'\n]{6,200})'|\"([^\"\n]{6,200})\"|([^\s'\"|>;&]{6,200}))[ \t]*" + _SECRET_SINK
        ),
        ("echo", "printf"),
        check=_assigned_secret,
    ),
    # Go's MySQL driver's DSN, `app:X@tcp(10.0.0.5:3306)/orders`: the `@tcp(` says the colon's value is a password
    # (host-password wants a stronger value, since `name:x@host` is an address's shape too).
    Rule(
        "go-dsn-password",
        "a password in a URL",
        re.compile(r"(?<=[\w.-]):([^\s:@/'\"`]{3,})@(?:tcp6?|udp|unix)\("),
        ("@tcp", "@udp", "@unix"),
        check=lambda value: _url_password(value) and not value.isdigit(),
    ),
    # "router login is admin and X btw", "creds: ops and X": a login's name and verb, the user, `and`, the password.
    Rule(
        "login-and-password",
        "a password",
        re.compile(
            r"(?i)\b(?=[lcu])(?:logins?|log[ -]?in|creds|credentials?|user(?:name)?)\b[ \t]+(?:is|are|was|:)[ \t]+"
            r"[\w.@+-]{1,64}[ \t]+and[ \t]+(?:(?:the[ \t]+)?(?:password|pw|pass)[ \t]+(?:is[ \t]+)?)?"
            rf"[\"'`]?({_TOLD_VALUE})"
        ),
        ("login", "log in", "log-in", "creds", "credential", "user"),
        check=lambda value: "/" not in value and (_plain_password(value) or _told_password(value)),
    ),
    # "creds for the grafana box: jdoe / =O!4Yx2v7jEq!0": the pair spaced around `/` may hold `=` and `?` (login-pair
    # refuses them, for a path's `admin/memories/?q=`, which has no spaces around its slash).
    Rule(
        "login-pair-slashed",
        "a password",
        re.compile(
            r"(?i)\b(?=[lcsa])(?:logins?|log[ -]?in|sign[ -]?in|creds|credentials?|account)\b[^\n.:=/]{0,40}?:[ \t]*"
            rf"[\w.@+-]{{1,64}}[ \t]+/[ \t]+[\"'`]?({_TOLD_VALUE})"
        ),
        ("login", "log in", "log-in", "sign", "creds", "credential", "account"),
        check=lambda value: "/" not in value and not re.search(r"\?\w+=", value) and _told_secret(value),
    ),
    # A password manager's passphrase of words joined by `-` ("master password is arrow-alarm-eager-fever"): four
    # words or more right after a password's name and its verb (too plain for the assignment's randomness test).
    Rule(
        "password-of-joined-words",
        "a password",
        re.compile(
            r"(?i)\b(?=[pm])(?:pass?(?:w(?:or|ro|r)|ow?r|or)d|passphrase|master[ \t]+pass(?:word|phrase)?)"
            r"[ \t]+(?:is|was|:)[ \t]+[\"'`]?([^\W\d_]{3,12}(?:[-._][^\W\d_]{3,12}){3,5})(?![\w-])"
        ),
        ("passw", "pasw", "passo", "passphrase", "master"),
        # (not words of a sentence about it: "the password is rotated-every-ninety-days", "is auto-generated-on-
        # first-login")
        check=lambda value: _joined_words(value, 4) and not _SENTENCE_WORD.search(value),
    ),
)

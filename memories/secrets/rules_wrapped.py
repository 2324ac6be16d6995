"""Our rules, fifth part: secrets that their wrapping names, not a word before them (held-out set 10): a Wi-Fi QR
code's `P:` field, wpa_supplicant's `psk="…"`, a Terraform variable named for a secret with its `default`, a value
echoed into a file or a command that keeps secrets, Go's MySQL DSN, and a login pair told with `and` or ` / `; and
the known leftovers of the sets before it (a session's or a secret's id given as a UUID, a PIN of letters, quoted
words after "the key is", a host then a login pair, a password told after "which is" or "so" about an account)."""

from __future__ import annotations

import re

from .model import Rule, entropy
from .phrases import _joined_words, _passphrase
from .told import _generated, _name_like, _plain_password, _random_mixed, _told_password, _told_secret, _told_token
from .values import _assigned_secret, _not_placeholder, _password_shaped, _url_password
from .words import _ADVERB, _NEARBY_WORDS, _TOLD_VALUE

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

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# What an account's password is told about, earlier on its line: a login, an account, an app or a service people
# log in to ("Grandma's Netflix: same as her email, which is X", "Mum's bank app login is …, so X").
_ACCOUNT_BEFORE = re.compile(
    r"(?i)\b(?:logins?|log-?in|account|netflix|spotify|hulu|disney\+?|icloud|gmail|e-?mail|bank|banking|app|wi-?fi"
    r"|router|laptop|phone|portal|password|pw)\b"
)
# A password made of capitalised words and a number ("RosesAreRed1951"), or a date's digits and a name ("140362Rex").
_WORDS_AND_NUMBER = r"(?-i:(?:[A-Z][a-z]+){2,4}\d{2,6}|\d{4,8}[A-Z][a-z]{2,12})"

# A password wrapped right after its label, each half on its own line and too short for the joined-lines view (which
# joins a token of 20+ characters): "db password (too long for one line in the ticket):\nhlkUvNGBe\nu3Y^V+4%I" (the
# leftover of set eleven). Two or three lines of one word each, then the text's or the line's end.
_OVER_TWO_LINES = re.compile(
    rf"(?i)\b(?:{_NEARBY_WORDS}|pass|pw|pin|secret)s?\b[^\n]{{0,60}}?(?:[:=]|\bis)[ \t]*\n"
    r"[ \t]*(\S{3,40}(?:[ \t]*\n[ \t]*\S{3,40}){1,2})[ \t]*(?:\n|$)"
)


# A text that is nothing but `user:password`: what HTTP Basic auth encodes, so mostly the decoded view of a base64
# segment ("creds (base64): ZGVwbG95OjJXY25KTHNER0FVZjkh", set twelve at other fillings), where nothing names it.
# (not `git@host:Org/repo.git`; not the product's own tag `session:<id>`, whose id is a client's session id, a
# UUID as often as not, which reads as random as a password: every store with a session was refused)
_PAIR_ALONE = re.compile(r"\A(?!session:)[\w.+-]{1,64}:([^\s:/]{6,128})\Z")
# An id written as hex or as a UUID names a record or a session: a person's password is not spelled so.
_HEX_ID = re.compile(r"\A(?:[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9a-f]{12,64})\Z", re.I)


def _pair_password(value: str) -> bool:
    return not _HEX_ID.match(value) and (_told_password(value) or _generated(value) or _random_mixed(value))


def _arrow_pair_password(value: str) -> bool:
    """A password after a host's arrow and a user: drawn at random, or told with a symbol (`Tq7-mark-19!`); a region,
    a branch or a release told so is a name (`prod / Eu-West-1`, `main / Release2024Q3`)."""
    # (nor a type: `name: str | os.PathLike[str]`, a union read as a user and its password)
    if _HEX_ID.match(value) or re.search(r"[\[\](){}<>]", value):
        return False
    if _random_mixed(value) or _generated(value) or _password_shaped(value):
        return True
    # (a metric at k is no password: `recall@5 / recall@10`)
    if re.fullmatch(r"[A-Za-z]+@\d{1,3}", value):
        return False
    return _told_password(value) and any(c in "!@#$%^&*+=?~" for c in value)


def _split_password(lines: str) -> bool:
    """The lines joined are a password: told (a digit, random enough) or drawn at random (both cases, digits or
    symbols); a list of words, names or placeholders is kept."""
    joined = "".join(lines.split())
    if _told_password(joined) or _random_mixed(joined) or _plain_password(joined) or _generated(joined):
        return True
    # (a generator's letters of both cases, with `=` or `-` that read as code elsewhere: `czDYQaqcv` / `nspjQVhzG`)
    return (
        len(joined) >= 14
        and any(c.isupper() for c in joined)
        and any(c.islower() for c in joined)
        and entropy(joined) >= 3.6
        and not _name_like(joined.replace("=", "").replace("-", ""))
    )


def _account_before(text: str) -> bool:
    return bool(_ACCOUNT_BEFORE.search(text.rsplit("\n", 1)[-1]))


_HOST_THEN_USER = re.compile(
    r"(?<![\w.])(?:\d{1,3}(?:\.\d{1,3}){3}|[a-z][\w-]*(?:\.[\w-]+)*\.(?:local|lan|internal|intranet|corp|home"
    r"|com|net|org|io|dev|cloud))(?::\d{1,5})?[ \t]*[,;][ \t]*[\w.@-]{1,32}[ \t]*[,;/][ \t]*[\"'`]?$"
)


def _host_login_value(value: str) -> bool:
    """A password after a host and a user ("10.0.0.4, admin, Ember-cactus8990"): words joined with a number, or a
    password's shape (not a version, `Ubuntu-22.04`, nor a name of plain words, `eu-west-1a`)."""
    value = value.strip("'\"`.,;")
    if re.search(r"\d\.\d", value):
        return False
    return _joined_words(value, words_alone=4) or _plain_password(value) and any(c in "!@#$%^&*+=?~" for c in value)


_LEET_WORD = re.compile(r"[A-Za-z]\d[a-z]")  # (a letter for a digit inside a word; not `Deploy2Prod`)


def _leet_password(value: str) -> bool:
    """A person's password in a bare pair: 10 to 40 characters, both cases, a digit inside a word (`Wint3r`) or a
    password's symbol (`!`, `#` …), and a password told plainly by `_plain_password` (not a version, a path, code)."""
    if not 10 <= len(value) <= 40 or "/" in value or value == value.lower() or value == value.upper():
        return False
    if not (_LEET_WORD.search(value) or any(c in "!#$%&*^~?@" for c in value[1:])):
        return False
    return _plain_password(value)


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
    # (host-password wants a stronger value, since `name:x@host` is an address's shape too). The driver reads the
    # password up to the last `@`, so one may hold an `@` (`etl:XZRMH^v5d9Dd@Tun2n@tcp(…)`; set 21's other fillings).
    Rule(
        "go-dsn-password",
        "a password in a URL",
        re.compile(r"(?<=[\w.-]):([^\s:/'\"`]{3,}?)@(?:tcp6?|udp|unix)\("),
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
    # refuses them, for a path's `admin/memories/?q=`, which has no spaces around its slash). After "is" as after a
    # colon: "the Grafana admin login is admin / K88J43jFZ?4F" (set sixteen).
    Rule(
        "login-pair-slashed",
        "a password",
        re.compile(
            r"(?i)\b(?=[lcsa])(?:logins?|log[ -]?in|sign[ -]?in|creds|credentials?|account)\b[^\n.:=/]{0,40}?"
            r"(?::|\s(?:is|was|are|were)\b)[ \t]*"
            rf"[\w.@+-]{{1,64}}[ \t]+/[ \t]+[\"'`]?({_TOLD_VALUE})"
        ),
        ("login", "log in", "log-in", "sign", "creds", "credential", "account"),
        check=lambda value: "/" not in value and not re.search(r"\?\w+=", value) and _told_secret(value),
    ),
    # A bare pair, a user's name spaced around `/` from a password-shaped value, with no word of logging in (a tag:
    # "grafana admin / Wint3r-Is-Coming-2024", walk 20): the value must look like a person's password, a word with a
    # digit inside it or a password's symbol, both cases (`_leet_password`); not "read / write", "CI / CD",
    # "Q3-Roadmap-2024 / planning", "release/2024-Q3-Hotfix".
    Rule(
        "user-password-pair",
        "a password",
        # (nor two objects' ids of a typed notation listed, Stripe's "cus_… / pi_…": set 20's keeper)
        re.compile(
            r"(?<![\w./-])(?![a-z]{2,6}_[A-Za-z0-9]{8,}[ \t]+/[ \t]+[a-z]{2,6}_[A-Za-z0-9]{8,}(?![\w-]))"
            rf"[a-z][\w.@+-]{{1,31}}[ \t]+/[ \t]+[\"'`]?({_TOLD_VALUE})"
        ),
        (" /",),
        check=lambda value: _leet_password(value.strip("'\"`.,;()")),
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
    # The known leftovers of the sets before this one (secrets13).
    # `session_id=<uuid>`, `JSESSIONID=X`: a session's id given as a cookie or a query's value is who is logged in
    # (the cookie rule wants `Cookie:`); not its name alone ("session_id is a UUID4 made per request"), nor a JSON
    # field (`"session_id": "…"`: a CLI's conversation id in its output).
    Rule(
        "session-id-value",
        "a credential (a session id)",
        re.compile(
            r"(?i)\b(?:session[_-]?(?:id|key|token)|sess_?id|php_?sessid|jsessionid)[ \t]*=[ \t]*[\"'`]?"
            rf"({_UUID}|[A-Za-z0-9_-]{{20,}})"
        ),
        ("session", "sessid", "sess_id"),
        check=lambda value: value.count("-") == 4 or _told_token(value),
    ),
    # "the secret id is <uuid>", `secret_id: <uuid>`: Vault's AppRole secret id is the secret half of a login (not a
    # secret's version id, which `_ID_JUST_BEFORE` reads, nor `secret_id_accessor`).
    Rule(
        "secret-id-value",
        "a credential (a secret id)",
        re.compile(
            r"(?i)\bsecret[ _-]?id\b[\"']?(?:[ \t]+(?:is|was)|[ \t]*[:=])[ \t]*[\"'`]?"
            rf"({_UUID}|[A-Za-z0-9_-]{{20,}})"
        ),
        ("secret id", "secret_id", "secret-id", "secretid"),
        check=lambda value: value.count("-") == 4 or _told_token(value),
    ),
    # "her pin is Xk3mP9qL2vRt": a PIN of letters and digits drawn at random (pin-in-prose reads digits only; "the pin
    # is GPIO17", a wire's, is no random mix).
    Rule(
        "pin-of-letters",
        "a PIN",
        re.compile(
            rf"(?i)\bpin(?:[ -]?code)?s?(?:[ \t]+(?:is|was)(?:[ \t]+{_ADVERB})?|[ \t]*:)[ \t]*"
            r"[\"'`]?([A-Za-z0-9]{6,40})\b"
        ),
        ("pin",),
        check=_random_mixed,
    ),
    # `the key is "amber otter violet ridge"`: four words or more quoted after "the key is" (unquoted, "the key is to
    # batch the writes" is an idiom), none a word of a sentence.
    Rule(
        "quoted-words-after-key",
        "a passphrase",
        re.compile(
            rf"(?i)\bkey[ \t]+(?:is|was)(?:[ \t]+{_ADVERB})?[ \t]*:?[ \t]*[\"'`“‘]"
            r"([A-Za-z]+(?:[ \t]+[A-Za-z]+){3,7})[\"'`”’]"
        ),
        ("key is", "key was"),
        check=_passphrase,
    ),
    # "the NAS is at 10.0.0.4, admin, Ember-cactus8990": an address (an IPv4 one or a host's name with its domain; not
    # code's `torch.int8, torch.int16, …`), a user, then the password, comma-separated.
    Rule(
        "host-then-login-pair",
        "a password",
        # (matched from the comma, the address read before it: tried at every word, the address cost 8 µs a text)
        re.compile(rf"[,;][ \t]*[\w.@-]{{1,32}}[ \t]*[,;/][ \t]*[\"'`]?({_TOLD_VALUE})"),
        (",", ";"),
        before=lambda text: bool(_HOST_THEN_USER.search(text)),
        check=_host_login_value,
    ),
    # "Grandma's Netflix: same as her email, which is RosesAreRed1951", "Mum's bank app login is her birthday then
    # 'Rex', so 140362Rex": a password's usual shape after "which is" or "so", about an account earlier on the line.
    Rule(
        "told-after-which-is",
        "a password",
        re.compile(
            r"(?i)(?=[wt,;s])(?:\b(?:which|that)[ \t]+(?:is|was)|(?:^|[,;])[ \t]*so|\bso[ \t]+it'?s)[ \t]+[\"'`]?"
            rf"({_WORDS_AND_NUMBER})(?=[\"'`]?(?:[\s.,;!?)]|$))"
        ),
        ("which is", "which was", "that is", "that was", ", so ", "; so ", "so it"),
        before=_account_before,
    ),
    # `DB_PASSWORD=hunter22`, `POSTGRES_PASSWORD: "Igloo?4444"`: a weak password assigned to a name that ends in a
    # password's word (secret-assignment wants a random value, as a key's or a token's name needs; a password's name
    # says what the value is, so a value as `password-told-plainly` wants it is one). Not a setting about passwords:
    # the name must end there (`PASSWORD_RESET_TIMEOUT`, `password_min_length` go on).
    Rule(
        "password-assigned-plainly",
        "a password",
        re.compile(
            r"(?i)(?=[p])(?:pass(?:word|wd)?|pwd)[\"']?[ \t]*(?:=|:(?!:|//)|=>)[ \t]*[\"'`]?"
            r"([^\s\"'`,;]{6,40})(?=[\"'`]?(?:[\s,;]|$))"
        ),
        ("pass", "pwd"),
        check=_plain_password,
    ),
    Rule(
        "password-over-two-lines",
        "a password",
        _OVER_TWO_LINES,
        ("pass", "pw", "pin", "secret", "mot de passe", "contraseña", "senha", "wachtwoord", "hasło", "haslo", "şifre"),
        check=_split_password,
    ),
    # "staging → admin / Kx82pLmQr9", "grafana: admin | Tq7-mark-19!": where a login goes (an arrow or a colon after a
    # host or an environment), then the user and the password spaced around `/` or `|`, with no word of logging in
    # (`login-pair-slashed` wants one). The password drawn at random or told as one ("admin / staff roles", "read /
    # write", "CI → build / deploy" kept). (set thirteen's leftover, secrets17)
    Rule(
        "arrow-login-pair",
        "a password",
        re.compile(
            r"(?:→|->|=>|⇒|⟶|(?<=[\w)])[ \t]*:)[ \t]*[\w.@+-]{1,64}[ \t]+[/|][ \t]+"
            rf"[\"'`]?({_TOLD_VALUE})(?=[\"'`]?(?:\s|$|[,;)]))"
        ),
        ("→", "->", "=>", "⇒", "⟶", ":"),
        check=lambda value: "/" not in value and not re.search(r"\?\w+=", value) and _arrow_pair_password(value),
    ),
    # "admin: Kx82pLmQr9", "root - Zx9!kLm2Qw", "prod db → svc_app : Kx82pLmQr9": a superuser's name at a line's start
    # (or any user after a host's arrow), a colon or a dash, then a password drawn at random or told with a symbol
    # ("admin: true", "root: /var/www", "admin - Maria" kept). (secrets17's probing)
    Rule(
        "account-then-password",
        "a password",
        re.compile(
            r"(?im)(?:^[ \t]*(?:admin|administrator|root|superuser|sa|postgres|sysadmin|ubuntu|ec2-user)"
            r"|(?:→|->|=>|⇒|⟶)[ \t]*[\w.@+-]{1,64})"
            rf"(?:[ \t]*:[ \t]+|[ \t]+:[ \t]*|[ \t]+[-–—][ \t]+)[\"'`]?({_TOLD_VALUE})(?=[\"'`]?(?:\s|$|[,;)]))"
        ),
        ("admin", "root", "superuser", "sa", "postgres", "sysadmin", "ubuntu", "ec2-user", "→", "->", "=>", "⇒", "⟶"),
        check=lambda value: "/" not in value and not re.search(r"\?\w+=", value) and _arrow_pair_password(value),
    ),
    # "ERROR invalid credentials for admin:Kx82pLmQr9", "auth failed with ops:Tq7-mark-19!": a log line's
    # `user:password` after a word of credentials and "for", "with", "as" or "=" (`credential-pair-alone` wants the
    # pair alone).
    # (secrets17's probing)
    Rule(
        "logged-user-password",
        "a password",
        re.compile(
            r"(?i)\b(?=[claub])(?:credentials?|creds|login|log-?in|auth\w*|user|basic)\b[^\n]{0,30}?"
            r"(?:\s(?:for|with|as|using)|=)[ \t]*[\"'`]?[\w.@+-]{1,64}:([^\s:@/'\"`]{6,64})(?=[\"'`]?(?:\s|$|[,;)]))"
        ),
        ("credential", "creds", "login", "log-in", "auth", "user", "basic"),
        check=lambda value: not re.search(r"\?\w+=", value) and _arrow_pair_password(value),
    ),
    Rule(
        "credential-pair-alone",
        "a password",
        _PAIR_ALONE,
        (":",),
        check=_pair_password,
    ),
)

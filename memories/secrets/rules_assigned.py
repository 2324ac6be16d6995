"""Our rules, first part: private keys, Authorization headers, passwords in URLs and options, secret
assignments, and passwords told after their names (the order of `scan.OURS` is the order of the
kinds named: the first rule to find a secret names it)."""

from __future__ import annotations

import re

from .model import Rule
from .names import _NAMED_BY_FIELD, _SECRET_NAME, _TOLD_PLAINLY
from .phrases import _joined_words
from .shapes import _public_der
from .told import (
    _PASS_AFTER,
    _PRIMITIVE_WORD,
    _PWD_AFTER,
    _VERSION,
    _basic_pair,
    _generated,
    _name_like,
    _plain_password,
    _told_password,
    _told_secret,
    _told_token,
)
from .values import _assigned_secret, _not_placeholder, _random_case, _url_password
from .words import (
    _ABOUT,
    _ADVERB,
    _NEARBY_INITIALS,
    _NEARBY_KEYWORDS,
    _NEARBY_WORDS,
    _PASSWORD_INITIALS,
    _PASSWORD_KEYWORDS,
    _PASSWORD_WORDS,
    _TOLD_VALUE,
    _TOLD_VERB,
    _mysql_password,
)

# "la contraseña del wifi es naranja-limon-77": words of the language joined by `-`, `.` or `_` with a number at one
# end, a password manager's or a person's passphrase (set sixteen). `_plain_password` reads it as a slug's name (an
# `api-server-77` is a name in English config); right after a password's name and its verb it is the password, as
# `password-in-prose` reads it in English.
_WORDS_WITH_A_NUMBER = re.compile(
    r"[^\W\d_]{3,}(?:[-._][^\W\d_]{3,})+[-._]?\d{1,6}|\d{1,6}[-._]?[^\W\d_]{3,}(?:[-._][^\W\d_]{3,})+"
)


def _words_joined_with_a_number(value: str) -> bool:
    value = value.strip("'\"`.,;()*")
    return bool(_WORDS_WITH_A_NUMBER.fullmatch(value)) and _not_placeholder(value)


# A password of one word ("the ssh key passphrase for deploy@ci is tulip", 'the shared drive password is "acme"'):
# read only where a sentence about a password's state cannot be (walk 15's limit). What a password is said to be
# instead: its state, its kind, where it is, whose it is ("required", "case-sensitive", "rotated", "here", "mine").
_STATE_OF_A_PASSWORD = re.compile(
    r"(?i)(?:required|optional|mandatory|wrong|right|correct|incorrect|invalid|valid|empty|blank|unset|set|none|null"
    r"|nil|same|different|new|old|weak|strong|long|short|secure|insecure|unknown|known|default|temporary|private"
    r"|public|personal|shared|hidden|visible|unique|simple|complex|random|generic|standard|common|obvious|trivial"
    r"|here|there|below|above|attached|inside|elsewhere|ready|fine|ok|okay|good|bad|gone|lost|it|this|that|what"
    r"|mine|yours|ours|theirs|his|hers|nothing|something|anything|everything|whatever|secret|confidential|easy|hard"
    r"|simple|plain|plaintext|cleartext|trust|peer|ident|reject|disabled|enabled|locked|unlocked|irrelevant|useless"
    r"|the|a|an|too|not|also|still|now|then|fixed|static|dynamic|stale|fresh|current|previous|next|first|last"
    r"|[a-z]+(?:ed|able|ible|ive|ous|ful|less|al|ic|ent|ant|ary|ory|ing|ly|ish|ise|ize))"
)


def _one_word_password(word: str) -> bool:
    return not _STATE_OF_A_PASSWORD.fullmatch(word) and not _PRIMITIVE_WORD.fullmatch(word)


_SMALL_WORDS_JOINED = re.compile(r"[a-z]+(?:[-_.][a-z]+)*")
_TOKEN_RUN = re.compile(r"(?=[A-Za-z]*\d)[A-Za-z0-9]{16,}")
_WORDS_NUMBER = re.compile(r"(?:[A-Z][a-z]{2,}){1,3}\d{2,6}[!#$%*?]?")


# A network's or a device's words: an SSID or what joins it, not its key ("wifi: AcmeGuest2024", "wifi: FritzBox7590").
_NOT_A_WIFI_KEY = re.compile(
    r"(?i)guest|office|corp|visitor|staff|public|home|net|wifi|wlan|iot|mesh|router|fritz|box|link|gear|orbi|eero"
    r"|ubiquiti|unifi|airport|book|phone|pad|pro|max|mini|hotspot|lan|wpa|ssid"
)


def _wifi_key_of_words(value: str) -> bool:
    """Capitalised words and a number after a wifi's name and a colon (`office wifi: BlueHeron2024`; set thirteen's
    leftover, secrets17): a class's name elsewhere, so `_plain_password` keeps it; here the key, unless a word of a
    network's or a device's name is among them."""
    value = value.strip("'\"`")
    return (
        bool(_WORDS_NUMBER.fullmatch(value))
        and len(re.findall(r"[A-Z]", value)) >= 2
        and not _NOT_A_WIFI_KEY.search(value)
    )


def _mixed(value: str) -> bool:
    """Letters with a capital or a digit among them (`tfwD-CJLq-QlLy`, `hunter2-x`), not a word of prose."""
    return any(c.isalpha() for c in value) and (any(c.isupper() for c in value[1:]) or any(c.isdigit() for c in value))


RULES: tuple[Rule, ...] = (
    Rule(
        "private-key-header",
        "a private key",
        re.compile(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"),
        ("-----begin",),
    ),
    # A PuTTY key file (`.ppk`) has no BEGIN line: its private half follows `Private-Lines: N`, and its `Private-MAC:`
    # only a file holding the private half has (held-out set 13). Both names appear nowhere else.
    Rule(
        "putty-private-key",
        "a private key",
        re.compile(
            r"(?i)\bPrivate-(?:Lines:[ \t]*\d+[ \t]*\r?\n[ \t]*([A-Za-z0-9+/]{16,}={0,2})"
            r"|MAC:[ \t]*([0-9a-f]{40,128}))\b"
        ),
        ("private-lines", "private-mac"),
        entropy=3.0,
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
        # (a password may hold an unescaped `@` when another follows: `mongodb+srv://u:D@bOfus…@cluster0…`, set twelve)
        re.compile(r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:@/]{0,100}:((?:[^\s@]|@(?=[^\s/@]*@)){3,200})@[^\s@/]"),
        ("://",),
        check=_url_password,
    ),
    Rule(
        "user-password-option",
        "a password on a command line",
        # curl -u user:pass, smbclient -U user%pass, lftp -u user,pass
        # (httpie's `--auth user:pass`; secrets12's probing)
        re.compile(r"(?:\s-[uU]|--user|--auth)[= ]\s*['\"]?[^\s:%,'\"]{1,64}[:%,]([^\s'\"]{3,})"),
        ("-u", "--user", "--auth"),
        check=_url_password,
    ),
    # An API key as curl's user with no password (`curl -u <key>: https://api…`, how Stripe, Mailgun and others
    # document their basic auth): the user is the secret when it is a key's shape (secrets9's set).
    Rule(
        "user-key-option",
        "a credential on a command line",
        re.compile(r"(?:\s-u|--user)[= ]\s*['\"]?([A-Za-z0-9_.-]{16,}):(?=['\"]?(?:\s|$))"),
        ("-u", "--user"),
        # (a key's run of 16 letters and digits, not a login of words: `ci-bot-2024-reporting:`)
        check=lambda user: bool(_TOKEN_RUN.search(user)) and _told_token(user),
    ),
    # A user and password as a client's two quoted arguments: requests' `auth=('api', 'X')`, `HTTPBasicAuth('u', 'X')`,
    # Go's `SetBasicAuth("u", "X")`, .NET's `NetworkCredential("u", "X")` (secrets9's probing).
    Rule(
        "basic-auth-arguments",
        "a password",
        re.compile(
            r"(?i)(?:\bauth[ \t]*[=:][ \t]*[(\[]|\b(?:HTTP(?:Basic|Digest|Proxy)Auth|SetBasicAuth|NetworkCredential)\()"
            r"[ \t]*[bf]?[\"'][^\"'\s]{1,64}[\"'][ \t]*,[ \t]*[bf]?[\"']([^\"'\s]{6,})[\"']"
        ),
        ("auth", "credential"),
        check=_assigned_secret,
    ),
    Rule(
        "password-option",
        "a password on a command line",
        re.compile(
            r"(?i)(?<![\w-])--?(?:password|passwd|pass|token|secret|api-key|auth-token)[= ]\s*['\"]?"
            # (not BuildKit's `--secret id=npmrc,src=$HOME/.npmrc`, `--secret id=gh,env=GH_TOKEN`: which file or
            # variable holds it)
            r"(?!(?:id|src|source|env|type|target|required)=)([^\s'\"]{6,})"
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
            # (not a field that names the secret: Kubernetes' `secretName: tls-cert-2024`, `secretRef:`, a form's or a
            # datasource's `passwordField: secureJsonData`; nor its id,
            # WebAuthn's `credential_id=…`; nor its kind: `auth_type`, `auth_method`)
            # (nor a list of the classes that handle it: Django's `AUTH_PASSWORD_VALIDATORS`, `PASSWORD_HASHERS`,
            # `AUTHENTICATION_BACKENDS`, whose values are classes' names, `MinimumLengthValidator`; secrets12's set)
            # (nor Helm's `existingSecret: orders-db-credentials`, `auth.existingSecret=`, `existingSecretPasswordKey:`:
            # the name of a Kubernetes Secret that holds the value, as `secretName`)
            rf"(?i)(?<!existing)(?<!existingsecret){_SECRET_NAME}(?:(?!existingsecret)[A-Z0-9_.-])*(?<!name)(?<!ref)(?<!credential_id)(?<!type)(?<!method)(?<!mode)(?<!scheme)(?<!field)(?<!validators)(?<!hashers)(?<!backends)[\"']?(?:\s*(?:=|:=|:(?!:|//)|=>|->)\s*(?:[\"'`]|b[\"'])?|(?-i:(?<=[A-Z0-9]))\s+to\s+[\"'])"
            # (not the next key of a mapping: `DB_PASSWORD` / `valueFrom:` / `secretKeyRef:` in a Kubernetes
            # manifest; the match starts again at that key, so `secretKeyRef: X` is still read)
            # (`::` is a path's, not an operator: pytest's `test_secret_paths.py::test_x`, C++'s, Rust's; nor `://`,
            # a URI's scheme: `otpauth://totp/…`)
            # (nor the next line's empty `NAME=` of an env file: `DJANGO_SECRET_KEY=` / `STRIPE_SECRET_KEY=`)
            # (the value ends before the next setting of a connection string, `;MultipleActiveResultSets=False`: read
            # on, gitleaks' allowlist took the whole for a `false` and let the password through; secrets12's set)
            r"(?![A-Za-z_][A-Za-z_-]*:(?:\s|$)|(?-i:[A-Z][A-Z0-9]*_[A-Z0-9_]*=))"
            r"((?:(?!;[A-Za-z][A-Za-z ]{1,30}=)[^\s\"'`]){6,})"
        ),
        ("secret", "token", "pass", "pwd", "key", "credential", "auth", "salt", "dsn", "cookie", "hmac"),
        check=_assigned_secret,
    ),
    # The same with a type between the name and `=` (Rust's `const DD_API_KEY: &str = "…"`, Python's
    # `API_KEY: str = "…"`), a subscript's quoted key (Ruby's `ENV["SECRET_KEY_BASE"] = "…"`), or a setter's
    # call (`setApiKey("…")`, Go's `option.WithAPIKey("…")`, a builder's `.password("…")`): the assignment rule
    # reads the type, the `"]` or the `(` as the value and lets a hex key through (secrets9's set).
    # "chore: set SMTP_PASS to QxPyHe$brGu0 for staging": a verb of setting, a variable's name in capitals with a
    # secret's word in it, `to` and an unquoted value (`secret-assignment` reads `to` only before a quote: "the
    # token is passed to AuthMiddleware2" is prose, where no `set` comes before the name). (held-out set 13)
    Rule(
        "set-name-to-value",
        "a secret assignment",
        re.compile(
            r"(?i)\b(?:set|change|changed|rotate|rotated|update|updated|reset)\s+(?:the\s+)?"
            rf"(?-i:[A-Z][A-Z0-9_]*(?:{_SECRET_NAME})[A-Z0-9_]*)\s+to\s+([^\s\"'`]{{6,}})"
        ),
        ("set", "change", "rotate", "update", "reset"),
        check=lambda value: _told_password(value) or _told_token(value),
    ),
    Rule(
        "secret-assignment-typed",
        "a secret assignment",
        re.compile(
            rf"(?i){_SECRET_NAME}[A-Z0-9_.-]*(?:[ \t]*:[ \t]*&?(?:'static[ \t]+)?(?:str|string|bytes)"
            rf"|[\"']\])[ \t]*=[ \t]*[bf]?[\"'`]([^\s\"'`]{{6,}})"
        ),
        ("secret", "token", "pass", "pwd", "key", "credential", "auth", "salt", "hmac"),
        # (not small words joined: a config field's `num_hidden_layers_key: str = "num_hidden_layers"`, a test's
        # `env["OPENAI_API_KEY"] = "sk-test-not-a-real-key"`)
        check=lambda value: not _SMALL_WORDS_JOINED.fullmatch(value) and _assigned_secret(value),
    ),
    Rule(
        "secret-setter-call",
        "a secret assignment",
        re.compile(rf"(?i)(?:\b(?:set|with|use)_?|\.){_SECRET_NAME}[ \t]*\([ \t]*[bf]?[\"'`]([^\s\"'`]{{8,}})[\"'`]"),
        ("secret", "token", "pass", "pwd", "key", "credential", "auth"),
        # (a token's shape: a run of 16 letters and digits with a digit, not a name such as
        # `setToken("session-cookie")`, `useAuth("github-oauth2")`)
        check=lambda value: bool(_TOKEN_RUN.search(value)) and _assigned_secret(value),
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
    # "pass" for a password, told: "pass for the vpn: tfwD-CJLq-QlLy", "the wifi pass is Tq7-mark-19" (walk 13).
    # "pass" is also a verb and a ticket ("the tests pass: all 212", "the pass is complete"), so the value must
    # look like a password twice over: a secret's shape, and capitals or digits among its letters.
    Rule(
        "pass-in-prose",
        "a password",
        re.compile(rf"(?i)\bpass\b{_ABOUT}{_TOLD_VERB}"),
        ("pass",),
        check=lambda value: _assigned_secret(value) and _mixed(value.strip("'\"`.,;")),
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
        # (letters only when they are random: "pw WMXsmVbgZt for the staging box")
        check=lambda value: _told_secret(value) or _random_case(value.strip("'\"`.,;)")),
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
            r"(?i)\b(?=[lscwarzige])(?:logins?|log[ -]?(?:in|on)|sign[ -]?(?:in|on)|credentials?|creds|wi-?fi|admin"
            # (the credentials' word in German, French, Spanish, Portuguese, Italian, Dutch)
            r"|account|root|zugangsdaten|anmeldedaten|identifiants|credenciales|credenciais|credenziali"
            r"|inloggegevens"
            # (the verb of logging in: "Inloggen op het portaal gaat met finance / X"; held-out set 11)
            r"|inloggen|einloggen|anmelden|connexion|iniciar sesi[oó]n|logowanie|zaloguj|giri[sş]"
            r"|accesso|acceso|acesso|accès)\b"
            # (or an arrow: "creds for staging → ops / X"; secrets12's probing)
            r"(?:[^\n.:=/]{0,40}?(?:\s(?:is|are|was|ist|sind|est|sont|es|son|é|são|è|sono|zijn|as|with"
            r"|met|mit|avec|con|com|ile|usa|use|utiliza|utilisez|utilizza|gebruik)"
            r"|:|\s*(?:→|->|=>)))?"
            r"\s*[^\w\s]{0,2}\s*"
            r"[\w.@+-]{1,64}"
            # (`admin : X` spaced on both sides; not `SSID: AcmeGuest-5G`, a name and its value; `reporter // X`,
            # `ops | X`, `ops, X`: the other separators people put between a login and its password)
            rf"(?:\s*//?\s*|[ \t]*[|,][ \t]*|:|[ \t]+:[ \t]+)({_TOLD_VALUE})"
        ),
        (
            *("login", "log-in", "log in", "log on", "sign", "credential", "creds", "wifi", "wi-fi", "admin"),
            *("account", "root"),
            *("zugangsdaten", "anmeldedaten", "identifiants", "credenciales", "credenciais", "credenziali"),
            "inloggegevens",
            *(
                "inloggen",
                "einloggen",
                "anmelden",
                "connexion",
                "iniciar sesi",
                "logowanie",
                "zaloguj",
                "giriş",
                "giris",
            ),
            *("accesso", "acceso", "acesso", "accès"),
        ),
        # (`admin/X` unspaced is a path's too: `/admin/memories/memory/?q=…`, so no `/ ? =` in X)
        # (or a generator's password with symbols and no digit: `Vk^dTfIu^UmSir`)
        # (not a session's or a record's UUID: "user: admin with session:8f14e45f-…", the product's own tag; secrets17)
        check=lambda value: (
            not re.search(r"[/?=]", value)
            and not re.fullmatch(r"(?:session:)?[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", value)
            and (_told_secret(value) or _generated(value) and not _name_like(value))
        ),
    ),
    # "Grafana admin → X", "root -> X", "admin + X": an account's word, an arrow or a spaced `+`, the value (as
    # `password-nearby` or `password-told-plainly` want it; `root((D1 + sqrt(…` is code).
    Rule(
        "login-arrow",
        "a password",
        re.compile(
            r"(?i)\b(?=[larc])(?:logins?|admin|root|creds|credentials?)(?:[ \t]*(?:→|->|=>)|[ \t]+\+)[ \t]*"
            rf"[\"'`]?({_TOLD_VALUE})"
        ),
        ("→", "->", "=>", " + "),
        check=lambda value: not re.search(r"[/?=]", value) and (_told_password(value) or _plain_password(value)),
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
            r"(?i)(?=[pwcla])\b(?:pass?(?:w(?:or|ro|r)|ow?r|or)d|passwd|passphrase|passcode|pw|pwd"
            r"|(?:wi-?fi|wlan)[ -](?:pass|pw|key|code)"
            r"|(?:code|cl[ée])[ -]wi-?fi|access[ -]code)" + _TOLD_PLAINLY
        ),
        (
            "passw",
            "pasw",
            "passo",
            "passphrase",
            "passcode",
            "pw",
            "wifi",
            "wi-fi",
            "wlan",
            "access code",
            "access-code",
        ),
        check=_plain_password,
    ),
    # (apart: its words are rare, so the keywords skip most texts; together they cost 0.3 ms an 8,000-character
    # memory, most of it trying the other languages' initials at every position)
    Rule(
        "password-told-plainly-in-other-languages",
        "a password",
        re.compile(rf"(?i)(?=[{_PASSWORD_INITIALS}])(?:{_PASSWORD_WORDS})" + _TOLD_PLAINLY),
        _PASSWORD_KEYWORDS,
        check=lambda value: _plain_password(value) or _words_joined_with_a_number(value),
    ),
    # One word, after a password's name, what it is for and "is", ending the sentence ("the ssh key passphrase for
    # deploy@ci is tulip"), or quoted after "is" with or without what it is for ('the shared drive password is
    # "acme"'): a weak password is still one (walk 15's limit, secrets19). Not a word of its state or kind
    # (`_STATE_OF_A_PASSWORD`), nor without what it is for when unquoted ("the password is tulip" reads as an example's
    # as often), nor "password 'hunter2'" with no verb (an example's shape).
    Rule(
        "one-word-password",
        "a password",
        re.compile(
            r"(?i)\b(?=[pm])(?:(?:master[ \t]+)?pass(?:word|phrase|code)|pw)\b"
            r"(?:[ \t]+(?:for|of|on|to)[ \t]+(?:[^.\n=:;\"'`]|\.(?=\w)){1,40}?[ \t]+(?:is|was)[ \t]+([a-z]{3,20})"
            r"(?=[ \t]*(?:[.!;]|$))"
            r"|(?:[ \t]+(?:for|of|on|to)[ \t]+(?:[^.\n=:;\"'`]|\.(?=\w)){1,40}?)?[ \t]+(?:is|was)[ \t]+[\"'“‘]"
            r"([A-Za-z]{3,20})[\"'”’](?=[ \t]*(?:[.!;,]|$)))"
        ),
        ("passw", "passphrase", "passcode", "pw"),
        check=_one_word_password,
    ),
    # The network's name stands for its password: "the guest wifi at the Lisbon office is 'Tangerine-Vespa-88'",
    # "WLAN: Fjord-Lantern-7" (not its SSID, name, router or security mode: "wifi SSID: AcmeGuest-5G",
    # "wifi: WPA2-Enterprise").
    Rule(
        "wifi-password",
        "a password",
        re.compile(
            # (or Windows' German name of a wifi's key: "Netzwerkschlüssel: X"; secrets17)
            r"(?i)(?:\b(?=[wW])(?:wi-?fi|wlan)\b|(?<![^\W\d_])(?:wlan-)?netzwerkschlüssel)"
            r"((?:(?!\s*(?:ssid|network|name|router|channel|band|standard|chip|card|adapter|driver|module|mac|ip)\b)"
            r"[^.\n=:;]){0,40}?)"
            # (after `is`, only a quoted value: "the office wifi is Ubiquiti-U6-Pro", "is 5GHz-only" name the network)
            rf"(?:\s(?:is|was)(?:\s+{_ADVERB})?\s*[\"'`«„“「『]|:\s*[\"'`«„“「『]?)"
            rf"(?!wpa|wep|802\.)({_TOLD_VALUE})"
        ),
        ("wifi", "wi-fi", "wlan", "netzwerkschlüssel"),
        group=2,
        check=lambda value: _plain_password(value) or _wifi_key_of_words(value),
    ),
    # The security mode names the network's key: "WPA2 key Garnetraven3362", "WPA-PSK passphrase: X" (its value right
    # after, with or without a verb or a colon; not a mode or a cipher: "WPA2 key WPA3-SAE", "PSK key AES-128")
    # (secrets12's set).
    Rule(
        "wpa-key",
        "a password",
        re.compile(
            r"(?i)\b(?=[wp])(?:wpa[23]?(?:[ -]?psk)?|psk)[ -](?:key|pass(?:word|phrase)?|code)\b"
            rf"(?:\s+(?:is|was)(?:\s+{_ADVERB})?|\s*[:=]|\s+(?:—|–|->))?\s*[\"'`]?"
            rf"(?!(?:wpa|wep|802|aes|tkip|ccmp|sae))({_TOLD_VALUE})"
        ),
        ("wpa", "psk"),
        check=_plain_password,
    ),
    # A network named, then its key: "Network AcmeGuest, key pepper-meadow-fjord69", "SSID Lab-5G key Orchid7Lamp"
    # (a password's value or words joined; not "key management", "key WPA2"). (secrets12's probing)
    Rule(
        "network-key",
        "a password",
        re.compile(
            r"(?i)\b(?=[nsw])(?:network|ssid|wi-?fi|wlan)\b[^\n.;]{0,40}?[ \t,;]key(?:[ \t]+is|[ \t]*[:=])?[ \t]*"
            rf"[\"'`]?(?!(?:wpa|wep|802|aes|tkip|ccmp|sae))({_TOLD_VALUE})"
        ),
        ("network", "ssid", "wifi", "wi-fi", "wlan"),
        check=lambda value: _plain_password(value) or _joined_words(value.strip("'\"`.,;")),
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
        # (or capitalised words and a number, a name elsewhere: "Login for the vendor portal: ops@acme.io
        # HarborFox1232"; secrets12's probing)
        check=lambda value: (
            not re.search(r"[/?=]", value) and (_told_password(value) or bool(_WORDS_NUMBER.fullmatch(value)))
        ),
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
)

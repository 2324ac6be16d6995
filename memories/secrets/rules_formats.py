"""Our rules, third part: command lines, URLs and webhooks, vendors' prefixes, PINs, phrases, hex keys,
and passwords and tokens nothing names."""

from __future__ import annotations

import re

from .model import Rule
from .money import CARD, NAMED_CARD, SEED_WORDS, _card_named_before, _luhn_card, _not_a_test_card, _seed_words
from .names import (
    _NOT_A_KEY_BETWEEN,
    _RECOVERY_CODE,
    _SECRET_NAME,
    _grouped_hex_key,
    _grouped_key_before,
    _hex_key,
    _hex_key_before,
    _pin_before,
)
from .phrases import (
    _NOT_PASSPHRASE_WORDS,
    _capitalised_phrase,
    _capitalised_with_small_words,
    _dictated,
    _four_capitalised,
    _passphrase,
    _phrase_of_words,
)
from .shapes import _named_public, _random_looking
from .told import _LOGIN_BEFORE, _name_like, _query_secret, _random_letters, _random_mixed, _told_token, _words_joined
from .values import (
    _assigned_or_famous_password,
    _assigned_secret,
    _famous_password,
    _glued_password,
    _not_placeholder,
    _password_shaped,
    _url_password,
)
from .words import (
    _ABOUT,
    _CLIENT_PASSWORD,
    _LINKING,
    _MYSQL_PASSWORD,
    _NEARBY_INITIALS,
    _NEARBY_KEYWORDS,
    _NEARBY_WORDS,
    _PASSWORD_SHORT_OPTION,
    _PIN_KEYWORDS,
    _USER_THEN_PASSWORD,
    _WHICH_OTP,
    _mysql_password,
    _no_small_words,
)

# A random-looking word a login's sentence names as an id just before it ("after login the request id is
# Vq7mLp2xR9wt", "login ticket id: Xk3mP9qL2vRt", "the login's trace id was …"): an id, not the password (a
# session's id is a bearer's secret: not one of these).
_ID_NAMED_JUST_BEFORE = re.compile(
    r"(?i)\b(?:(?:request|trace|span|correlation|event|ticket|order|invoice|job|run|build|commit|user|account|login)"
    r"[ _-]?ids?|uuid|ulid|ref(?:erence)?|revision)\b[^\w\n]{0,3}(?:\s+(?:is|was|were|are))?[\s:=\"'`]*$"
    # ("the 12-character login id for the test tenant is Xk3mP9qL2vRt": what it is for first, then the verb; no
    # secret's word between, "the account id 48211 and the password is …")
    r"|\b(?:login|user|account)[ _-]?ids?\b(?:(?!pass|pw|secret|token|key|pin\b)[^.\n,;:]){0,40}?\s(?:is|was)"
    r"\s*[\"'`]?$"
)


# A vendor's key prefix and the body such keys have: OpenAI (`sk-`, `sk-proj-`), Anthropic (`sk-ant-`),
# GitHub (`ghp_`, `github_pat_` …), GitLab, Slack, Hugging Face, npm, PyPI, Stripe. gitleaks' rules also ask the
# body to look random; a key told to a teammate is a key whatever its letters (walk 13: "the api key is sk-proj-"
# and "Ab3" twenty times was stored). Only a placeholder's body is let through: one character repeated or x's.
_VENDOR_PREFIX = (
    r"sk-(?:proj|svcacct|admin|ant-(?:api|admin)\d\d)-|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|hf_|npm_|pypi-"
    r"|[rs]k_(?:live|test)_"
    # (set 20: Checkout.com's sandbox secret key, `sk_sbox_…`; its public one is `pk_sbox_…`)
    r"|sk_sbox_"
    # (set 18: Stripe's webhook signing secret, Netlify's, DigitalOcean's, GitLab's runner and deploy tokens, Sonar's,
    # Buildkite's, Shopify's and Render's, whose bodies may have no digit: `whsec_WuCJVvCVklPRrDFAUNPshmkb…`)
    r"|whsec_|nfp_|dop_v1_|glrt-|gldt-|squ_|bkua_|shpat_|rnd_"
    # (set "fake": Groq's key, `gsk_` and 52 letters and digits)
    r"|gsk_"
    # (set 19: Honeycomb's ingest and management keys, `hcaik_…`, `hcxmk_…`)
    r"|hc[ax][im]k_"
)
_VENDOR_KEY = re.compile(rf"(?<![\w-])(?:sk-([A-Za-z0-9]{{20,}})|(?:{_VENDOR_PREFIX})([A-Za-z0-9_-]{{20,}}))")
# The same prefixes (and AWS's `AKIA`) with the key's body split by spaces, so that no scanner sees one token:
# "the stripe key is sk_live_ hCiPD8Rjsfbc Kyrsst6AAHWD" (walk 20). Chunks of three characters or more, joined
# (`_split_key_body` judges them joined); "keys start with sk_live_ in production" has no random chunk.
_SPLIT_VENDOR_KEY = re.compile(
    rf"(?<![\w-])(?:{_VENDOR_PREFIX}|sk-|(?-i:AKIA|ASIA))"
    r"((?:[ \t]*[A-Za-z0-9_-]{3,})(?:[ \t]+[A-Za-z0-9_-]{3,}){1,7})"
)


def _split_key_body(body: str) -> bool:
    """The chunks joined make a key's body: 16 characters or more, not a placeholder's or words', and one chunk
    random-looking (a digit and a letter, both cases or capitals only: `hCiPD8Rjsfbc`, `IOSFODNN7`)."""
    chunks = body.split()
    joined = "".join(chunks)
    if not body[:1].isspace() and len(chunks[0]) >= 20:  # (a whole key then prose: `vendor-key-prefix`'s)
        return False
    # (AWS's documented example, `AKIAIOSFODNN7EXAMPLE`, is kept whole, as gitleaks' allowlist keeps it)
    if len(joined) < 16 or not _vendor_key_body(joined) or "EXAMPLE" in joined:
        return False
    return any(
        any(c.isdigit() for c in chunk) and (chunk.isupper() or chunk != chunk.lower() != chunk.upper() != chunk)
        for chunk in chunks
    )


_HYPHENATED_WORDS = re.compile(r"[a-z]+(?:[-_][a-z0-9]+){2,}")


def _vendor_key_body(body: str) -> bool:
    """Not a placeholder's body (one character repeated, x's) nor words strung together
    (`sk_test_should-never-leave-1234` is a test's name for a fake)."""
    return len(set(body.lower()) - {"x", "-", "_", "*", "."}) >= 3 and not _HYPHENATED_WORDS.fullmatch(body)


RULES: tuple[Rule, ...] = (
    Rule(
        "vendor-key-prefix",
        "a credential (a vendor's key)",
        _VENDOR_KEY,
        (
            *("sk-", "gh", "github_pat_", "glpat-", "xox", "hf_", "npm_", "pypi-", "k_live_", "k_test_"),
            *("whsec_", "nfp_", "dop_v1_", "glrt-", "gldt-", "squ_", "bkua_", "shpat_", "rnd_"),
            *("hcaik_", "hcxik_", "hcamk_", "hcxmk_", "sk_sbox_", "gsk_"),
        ),
        check=_vendor_key_body,
    ),
    # An AWS access key id as people type a fake one: `AKIA` / `ASIA`, 16 capitals or digits (`AKIA1234567890ABCDEF`).
    # gitleaks' rule wants the real ids' base32 (no 0, 1, 8, 9), so a hand-typed id with them was stored (set "fake").
    # Its placeholders (`AKIA0000000000000000`, AWS's documented `AKIAIOSFODNN7EXAMPLE`) are kept by the vendor
    # formats' placeholder test (scan._vendor_placeholder).
    Rule(
        "aws-key-id-typed",
        "a credential (aws-access-token)",
        re.compile(r"(?<![A-Za-z0-9])(?-i:AKIA|ASIA)([A-Z0-9]{16})(?![A-Za-z0-9])"),
        ("akia", "asia"),
    ),
    # A Discord webhook's URL: its id and its token (anyone holding it posts to the channel). A random token was found
    # as a bare key only, a hand-typed one (`…/123456789012345678/abcdefghijklmnopqrstuvwxyz0123456789`) not at all.
    Rule(
        "discord-webhook-url",
        "a credential (discord-webhook-url)",
        re.compile(r"(?i)discord(?:app)?\.com/api/webhooks/\d{17,20}/([A-Za-z0-9_-]{30,})"),
        ("discord",),
    ),
    # Honeycomb's classic key goes in the `x-honeycomb-team` header, whose name says "team", not key or token: an
    # OpenTelemetry exporter's `OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team=X`, a collector's `headers:` (set 19).
    Rule(
        "honeycomb-key",
        "a credential (honeycomb-key)",
        re.compile(r"(?i)\bx-honeycomb-team[\"']?[ \t]*[:=][ \t]*[\"']?([A-Za-z0-9_]{20,})"),
        ("x-honeycomb-team",),
        check=_assigned_secret,
    ),
    # Resend's key, `re_` then 8 and 24 random letters and digits (set 19; `re_` alone starts many of code's names, so
    # the shape and both cases are asked for: `re_compile_patterns_…` is a name).
    Rule(
        "resend-api-key",
        "a credential (resend-api-key)",
        re.compile(r"(?<![\w-])re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}(?![\w-])"),
        ("re_",),
        check=lambda key: any(c.isupper() for c in key) and any(c.islower() for c in key),
    ),
    # A Telegram bot's token, `<bot id>:AA<33 characters>`: its shape names it, with or without the word (gitleaks
    # wants "telegr" before it; `telebot.TeleBot("…")` has none). Set 19's other fillings.
    Rule(
        "telegram-bot-token",
        "a credential (telegram-bot-token)",
        re.compile(r"(?<![\w:])\d{8,10}:AA[A-Za-z0-9_-]{33}(?![\w-])"),
        (":aa",),
    ),
    # Vault's service token before 1.10, `s.` and 24 letters and digits, named by the word "vault" before it; gitleaks
    # lets one with no digit through (its allowlist), 1 in 70 of them (set 19's other fillings).
    Rule(
        "vault-legacy-token",
        "a credential (vault-token)",
        re.compile(r"(?<![\w.])s\.([A-Za-z0-9]{24})(?![\w.-])"),
        ("vault",),
        check=_random_letters,
        before=lambda text: "vault" in text.lower(),
    ),
    # Render's deploy hook: the URL is the secret, its `key=` of 8 characters or more, with or without a digit.
    Rule(
        "render-deploy-hook",
        "a credential (a webhook URL)",
        re.compile(r"(?i)\bapi\.render\.com/deploy/srv-[a-z0-9]+\?key=([\w-]{8,})"),
        ("api.render.com/deploy",),
        check=_not_placeholder,
    ),
    # Braintree's (PayPal's) access token names its environment and merchant between `$`s:
    # `access_token$production$<16 small letters and digits>$<32 hex>`; no name is needed before it (set 19).
    Rule(
        "braintree-access-token",
        "a credential (braintree-access-token)",
        re.compile(
            r"(?<![\w$])access_token\$(?:production|sandbox|development|qa)\$[0-9a-z]{16}\$[0-9a-f]{32}(?![0-9a-f])"
        ),
        ("access_token$",),
    ),
    Rule(
        "vendor-key-split",
        "a credential (a vendor's key)",
        _SPLIT_VENDOR_KEY,
        ("sk-", "gh", "github_pat_", "glpat-", "xox", "hf_", "npm_", "pypi-", "k_live_", "k_test_", "akia", "asia"),
        check=_split_key_body,
    ),
    Rule(
        "password-short-option",
        "a password on a command line",
        re.compile(_PASSWORD_SHORT_OPTION),
        ("login", "sshpass", "redis-cli", "ldap", "mongo"),
        check=_assigned_or_famous_password,
    ),
    Rule(
        "user-then-password-option",
        "a password on a command line",
        re.compile(_USER_THEN_PASSWORD),
        ("-u ",),
        # (a letter in it: a port, `8080:80`, is none; and a capital or a symbol, as mysql's `-p X` wants: `mysql -u
        # reporting -p reporting_db` prompts, and the word is the database)
        check=lambda value: any(c.isalpha() for c in value) and _mysql_password(value),
    ),
    # A famous weak password right after a password's name, no verb between ("ssh in with password Welcome123", "the
    # default password admin123"): a placeholder only in an example's shape elsewhere (`values._famous_password`).
    # (Not after `pass`: a verb, "pass 12345 as the seed"; nor quoted, `password 'hunter2'`, an example's shape.)
    Rule(
        "famous-password-named",
        "a password",
        re.compile(r"(?i)\b(?:password|passwd|pwd|passcode)\s+([A-Za-z0-9]{4,32})\b"),
        ("password", "passwd", "pwd", "passcode"),
        check=_famous_password,
    ),
    # A login told as `user:password` or `user/password` after what names it ("credentials are admin:admin123", "sign
    # in as ops/Welcome1"): the pair's password when it is one of the breach lists' or random-looking; a path's word
    # after the slash (`google/oauth`, `auth/login`) is neither, and a local stack's `admin/admin` stays a default.
    Rule(
        "login-pair-told",
        "a password",
        re.compile(
            r"(?i)\b(?:credentials?|creds|log\s?in|sign\s?in|logon)\b"
            r"(?:\s+(?:is|are|with|as|via|using))?[ \t]*[:=]?[ \t]*"
            r"[\"'`]?(?:[A-Za-z][\w.@-]{1,40})[:/]([^\s'\"`/:]{3,64}?)[\"'`]?(?=[\s,;)]|[.!?](?:\s|$)|$)"
        ),
        ("credential", "creds", "login", "log in", "sign in", "signin", "logon"),
        check=lambda value: _famous_password(value) or _assigned_secret(value),
    ),
    # mysql's password glued to its `-p` (`-pfoobar123`, `-pXy7#kq2`): nothing else is written there (the port is `-P`),
    # so any value that is no placeholder or variable is the password, however short or plain (set "fake"'s left-overs).
    Rule(
        "mysql-password-glued",
        "a password on a command line",
        re.compile(r"(?i)\b(?:mysql\w*|mariadb\w*)\b[^\n|;&]{0,120}?\s(?-i:-p)(?=[^\s-])['\"]?([^\s'\"]{3,64})"),
        ("mysql", "mariadb"),
        check=_glued_password,
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
    # An OAuth authorization code in a redirect's query ("https://app.acme.io/oauth/callback?state=x&code=4/0AfJ…"):
    # whoever holds it before it is redeemed gets the user's tokens. `code=` only on a callback's or an authorize
    # path, and random (a status, a country, a promo or an error code is none: "?code=200", "/auth?code=US";
    # secrets19).
    Rule(
        "oauth-code-in-url",
        "a credential in a URL (an OAuth code)",
        re.compile(
            # (and an Azure Function's key on its `/api/` path: `…azurewebsites.net/api/orders?code=X`; set 18)
            r"(?i)/[\w./-]*(?:callback|redirect|oauth2?|authori[sz]e|signin|sso|(?<![a-z])api/)[\w./-]*\?"
            r"(?:[^\s#?]*?&)?code="
            r"([^&\s#\"'`<>]{16,})"
        ),
        ("code=",),
        # (letters and digits, not a word's or a promo's capitals: "code=invalid_request_uri", "code=SUMMER2024PROMO1")
        check=lambda value: (
            any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value)
            and not value.isupper()
            and _query_secret(value)
        ),
    ),
    # A session cookie's value given to a client or echoed by a server: `curl -b 'sessionid=X'`, `--cookie`,
    # `Cookie: connect.sid=X`, `Set-Cookie: session=X`, PHP's `PHPSESSID=X` (who has it is logged in).
    Rule(
        "session-cookie",
        "a credential (a session cookie)",
        re.compile(
            # (each earlier pair read possessively and the pairs bounded: `[^;]*` and `[ \t]*` both took a pair's
            # spaces, so `Cookie: a=1; ` × 30 backtracked exponentially, review 25; and every `cookie:` read on
            # to the text's end was quadratic)
            r"(?i)(?:\s-b|--cookie|\bcookie:)[ \t]*+['\"]?(?:[^'\"\n;]{0,300}+;[ \t]*+){0,60}?"
            r"(?:[\w.-]*sess(?:ion)?(?:id)?[\w.-]*|sid|connect\.sid|remember_token|auth_token|jwt)=([^;'\"\s]{16,})"
        ),
        ("-b", "--cookie", "cookie:"),
        check=_told_token,
    ),
    # A session cookie's signed value with no `Cookie:` before it (`session=<payload>.<time>.<signature>` copied from
    # the browser's storage; set 22): the name of a session, `=`, and a value in a signing library's shape, base64url
    # parts joined by dots (Flask's itsdangerous, a JWT), data and a hex signature after `--` (Rails), or Express's
    # `s%3A<id>.<signature>`. `session=anon`, `session_timeout=3600`, `session=abc123` have no such shape.
    # (No name starts inside a value: Rails' run of base64 takes `=`, `+`, `/` and `%`, and `sid=sid=…` read again from
    # every `sid` was quadratic, 1.4 s of CPU for 32 KB.)
    Rule(
        "session-cookie-signed",
        "a credential (a session cookie)",
        re.compile(
            r"(?i)(?<![\w.%+/=-])(?:[\w-]{0,30}sess(?:ion)?(?:id)?|sid|connect\.sid)=['\"]?"
            r"((?:s%3A|s:)?[A-Za-z0-9_-]{16,}+(?:\.[A-Za-z0-9_%-]{4,}+){1,2}(?![\w.%-])"
            r"|[A-Za-z0-9%+/=]{16,}+--[0-9a-f]{40}(?![\w-]))"
        ),
        ("sess", "sid"),
        check=lambda value: _told_token(value.replace(".", "")),
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
            # (or `pw`, as a note shortens it: "grafana admin pw = Blue Heron Sunset 7"; not `pwd`, the shell's command;
            # secrets18's probing)
            rf"(?im)(?<!--)(?<!_)(?=[{_NEARBY_INITIALS}])(?:{_NEARBY_WORDS}|pass ?phrase|wi-?fi key|(?<![\w-])pw)"
            rf"\b(?![-_]){_ABOUT}"
            # (a file's name between is no sentence's end: "the passphrase for backups.tar.gpg is …")
            r"(?:[^.\n=:：,;]|\.(?=\w)){0,40}?" + _LINKING + r"\s*:?\s*"
            r"(?:[\"'`«„“「『]([^\"'`\n»”]{12,80})[\"'`»”]"
            # (unquoted, 15 characters or more to the sentence's end: `: ps shows argv.` ends a sentence)
            r"|(?=[^\n.;,)(]{15})"
            r"((?:[A-Za-z0-9!#$%&*?@'-]+[ \t]+){2,7}[A-Za-z0-9!#$%&*?@'-]+)(?=[ \t]*(?:$|[.;,)(]|\s[-–—]\s)))"
        ),
        (*_NEARBY_KEYWORDS, "pass phrase", "wifi key", "wi-fi key", "pw"),
        # (or capitalised words with a number, as generators write them: "… is 'Quartz Meadow Violin 31'"; or four
        # capitalised words or more without one, as `passphrase-after-its-label` reads them: "the demo account
        # password is Correct Horse Battery Staple, all capitalised", held-out set 13; three are a heading's)
        check=lambda words: _passphrase(words) or _capitalised_phrase(words) or _four_capitalised(words),
    ),
    # A passphrase of capitalised words on its own line below a bare label, blank lines between ("password:" /
    # "" / "Pelican Ruby Stone Nine"): the label alone on its line says the next line is its value, not a heading.
    Rule(
        "passphrase-below-its-label",
        "a password",
        re.compile(
            rf"(?im)^[ \t]*(?:[\w-]+[ \t]+){{0,3}}?(?:{_NEARBY_WORDS}|pass ?phrase)[ \t]*[:：][ \t]*\r?\n"
            r"(?:[ \t]*\r?\n)*[ \t]*[\"'`]?((?:[A-Za-z0-9]+[ \t]+){2,7}[A-Za-z0-9]+)[\"'`]?[ \t]*$"
        ),
        (*_NEARBY_KEYWORDS, "pass phrase"),
        check=lambda words: _capitalised_phrase(words, number=False),
    ),
    # A password spelled out after its name: "the staging admin password is capital M mango dash four four dash
    # river dash zulu" (`_dictated`; more words than a passphrase has).
    Rule(
        "dictated-password",
        "a password",
        re.compile(
            rf"(?i)(?=[{_NEARBY_INITIALS}])(?:{_NEARBY_WORDS}|pass ?phrase|pwd?)\b(?![-_]){_ABOUT}"
            r"[^.\n=:：,;]{0,40}?"
            # (or how it is said, after a comma: "password, phonetically: Papa Seven …", set twelve's leftover)
            r"(?:,[ \t]*(?:phonetically|phonetic|spelled(?:[ \t]+out)?|spelt(?:[ \t]+out)?|dictated|read[ \t]+aloud"
            r"|letter[ \t]+by[ \t]+letter|in[ \t]+(?:the[ \t]+)?(?:nato|phonetic|radio)(?:[ \t]+alphabet)?)[ \t]*)?"
            + _LINKING
            + r"\s*:?\s*((?:[A-Za-z0-9-]+[ \t,]+){3,24}[A-Za-z0-9-]+)"
        ),
        (*_NEARBY_KEYWORDS, "pass phrase", "pw"),
        check=_dictated,
    ),
    # The same said before its name: "Papa Seven Kilo Echo Nine Whiskey Delta Two is the router password" (from a
    # line's start or after a colon, then "is the … password"). (held-out set 13)
    Rule(
        "dictated-before-its-name",
        "a password",
        re.compile(
            r"(?im)(?:^|[:;][ \t]+)[ \t\"'`]*((?:[A-Za-z0-9-]+[ \t,]+){3,24}?[A-Za-z0-9-]+)[\"'`]?"
            r"[ \t]+(?:is|was)[ \t]+"
            r"(?:the|my|our|your|their|his|her)[ \t]+(?:[\w'-]+[ \t]+){0,3}?"
            # (or what the password opens: "Yankee Two Bravo Zulu Seven is the guest wifi")
            r"(?:password|passphrase|passcode|pin|pw|wi-?fi|wlan|vpn|router|door|alarm)\b"
        ),
        ("password", "passphrase", "passcode", "pin", "pw", "wifi", "wi-fi", "wlan", "vpn", "router", "door", "alarm"),
        check=_dictated,
    ),
    # German capitalises its nouns, so a passphrase of nouns after `Passwort` / `Kennwort` is capitalised ("Passwort:
    # Tanne Regen Lampe Vogel"), where `passphrase-of-words` takes capitalised words for a heading's; none of them
    # a word of a sentence about the password ("Passwort: Siehe Tresor Eintrag").
    Rule(
        "german-noun-passphrase",
        "a password",
        re.compile(
            r"(?i)(?<!--)(?<!_)(?:passwort|kennwort)\b(?![-_])[^.\n=:,;]{0,40}?(?:" + _LINKING + r"|\slautet)\s*:?\s*"
            r"(?-i:((?:[A-ZÄÖÜ][a-zäöüß]{2,}[ \t]+){2,7}[A-ZÄÖÜ][a-zäöüß]{2,}))(?=[ \t]*(?:$|[.;,)(]))"
        ),
        ("passwort", "kennwort"),
        check=lambda words: len(words) >= 15 and not _NOT_PASSPHRASE_WORDS.intersection(words.lower().split()),
    ),
    # A passphrase of capitalised words after a password's name in another language, its articles and prepositions
    # capitalised among them ("mot de passe : Soleil Levant Sur Paris", "la contraseña es Luna Azul Sobre Madrid", "la
    # password del router è Sole Alto Sul Mare"), where `passphrase-of-words` takes a small word for a sentence's.
    # (set thirteen's leftover, secrets17)
    Rule(
        "capitalised-passphrase-in-other-languages",
        "a password",
        re.compile(
            r"(?i)(?<!--)(?<!_)(?:mot de passe|passwort|kennwort|contraseña|contrasena|senha|palavra[- ]passe"
            r"|wachtwoord|parola|clave|hasło|haslo|lösenord|adgangskode|salasana|heslo|geslo|parool|lozinka|şifre"
            r"|sifre|code d'accès|(?<![\w-])password(?=[^.\n=:：,;]{0,40}?\s(?:est|es|ist|lautet|é|è|era|jest|är)\s))"
            r"(?![-_])[^.\n=:：,;]{0,40}?"
            r"(?:\s*[:：=]\s*|\s(?:est|es|ist|lautet|é|è|is|era|était|war|jest|er|är|on|je)\s+)[\"'`«„“]?"
            r"(?-i:((?:[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+|\d{1,4})(?:[ \t]+(?:[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+|\d{1,4})){2,7}))"
            r"[\"'`»”]?(?=[ \t]*(?:$|[.;,)(!]))"
        ),
        (
            *("mot de passe", "passwort", "kennwort", "contraseña", "contrasena", "senha", "palavra", "wachtwoord"),
            *("parola", "clave", "hasło", "haslo", "lösenord", "adgangskode", "salasana", "heslo", "geslo", "parool"),
            *("lozinka", "şifre", "sifre", "code d'accès", "password"),
        ),
        check=_capitalised_with_small_words,
    ),
    # A phrase's name, then a colon, then its words, small words among them ("the unlock phrase for the HSM
    # backup is: seven orange kites over the harbour", "master passphrase = tall ships in the quiet bay"),
    # which `passphrase-of-words` refuses (without the colon, "the passphrase is long and hard to type").
    # After "is" with no colon only quoted: the quotes say the phrase itself follows ("vault unseal phrase is 'copper
    # lantern orbit velvet anchor'", walk 14's leftover, secrets18), not a sentence about it.
    Rule(
        "phrase-of-words",
        "a password",
        re.compile(
            r"(?i)\b(?=[pumsvbrae])(?:pass|unlock|master|secret|vault|backup|recovery|access|unseal|encryption)"
            rf"[ -]?phrase\b{_ABOUT}[^.\n=:,;]{{0,40}}?(?:(?:\s(?:is|was))?\s*[:=]|\s(?:is|was)(?=\s*[\"'`“‘]))\s*"
            r"[\"“‘`]?(?=[^\n.;,)(]{15})((?:[A-Za-z0-9!#$%&*?@'-]+[ \t]+){2,9}[A-Za-z0-9!#$%&*?@'-]+"
            # (or its words joined by `-`: "the pass phrase we agreed on: purple-elephant-dances-at-noon-42")
            r"|[A-Za-z0-9]+(?:-[A-Za-z0-9]+){3,9})[\"”’`]?(?=[ \t]*(?:$|[.;,)(]))"
        ),
        ("phrase",),
        check=lambda words: _phrase_of_words(words.replace("-", " ") if " " not in words else words),
    ),
    # Twilio's account SID and its auth token as a pair (`AC…:…`, the basic-auth form of its API), also as two
    # arguments or a pair told (`TwilioClient.Init("AC…", "…")`, `AC… / …`: a C# call was stored, secrets9's set).
    Rule(
        "twilio-sid-token",
        "a credential (twilio)",
        re.compile(r"\bAC[0-9a-f]{32}\b[\"'`]?[ \t]*[,:/][ \t]*[\"'`]?([0-9a-f]{32})\b"),
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
            # (or a bare "seed" / "mnemonic" before "is" or a colon: "my seed is …"; secrets12's probing)
            r"(?i)\b(?=[bmrsw])(?:(?:seed|recovery|mnemonic|backup|secret|wallet)[ _-]?(?:phrase|words|mnemonic)"
            r"|seed|mnemonic)\b"
            r"[^\n:=]{0,20}?"
            r"(?:\s*[:=]\s*|\s+(?:is|are)\s+)[\"'`]?((?:[a-z]{3,8}[ \t,]+){11,23}[a-z]{3,8})"
        ),
        ("phrase", "words", "mnemonic"),
        check=_no_small_words,
    ),
    # Recovery words with no name before them ("wallet seed: ocean tiger ...", a numbered list): twelve
    # BIP-39 words in a row (money._seed_words).
    Rule("bip39-words", "a wallet seed phrase", re.compile(SEED_WORDS), (), check=_seed_words),
    # A passphrase of capitalised words after its bare label on the same line ("password: Correct Horse Battery
    # Staple"): the label starts the line and the words end it, four or more with no number (three are a
    # heading's: "Password: Rotated Every Quarter"), none a word about the password ("Password: Ask The Platform
    # Team"). (HELD_OUT_8's leftovers, secrets12)
    Rule(
        "passphrase-after-its-label",
        "a password",
        re.compile(
            rf"(?im)^[ \t]*(?:[\w-]+[ \t]+){{0,3}}?(?:{_NEARBY_WORDS}|pass ?phrase)[ \t]*[:：][ \t]*"
            r"[\"'`]?((?:[A-Za-z0-9]+[ \t]+){3,7}[A-Za-z0-9]+)[\"'`]?[ \t]*$"
        ),
        (*_NEARBY_KEYWORDS, "pass phrase"),
        check=lambda words: _capitalised_phrase(words, number=False),
    ),
    # A key's hex named only after it ("- Datadog: `8f3a…` (api key)", "`9c1e…` - the signing secret"): the name of a
    # key, a secret or a token right after the value, in parentheses or after a dash or a comma, ending the note.
    # (HELD_OUT_8's leftovers, secrets12)
    Rule(
        "hex-key-named-after",
        "a credential (a key's hex)",
        re.compile(
            r"(?m)(?<![\w-])[\"'`]?([0-9a-f]{32,128}|[0-9A-F]{32,128})[\"'`]?[ \t]*(?:[(\[,]|[-–—]+)[ \t]*"
            r"(?i:(?:the|its|our|my|an?)[ \t]+)?(?i:[\w-]+[ \t]+)?"
            r"(?i:(?:api|app|application|secret|private|signing|encryption|access|master|client|admin|auth|webhook)"
            r"[ _-]?(?:key|secret|token)|secret|token|password|credential)s?\b"
            # (the name ends the note: "(api key)", "- the signing secret."; not "- token refresh failed")
            r"(?=[ \t]*(?:[)\],.;]|$))"
        ),
        ("key", "secret", "token", "password", "credential"),
        check=_hex_key,
        before=lambda before: not _NOT_A_KEY_BETWEEN.search(before.rsplit("\n", 1)[-1]),
    ),
    # LaunchDarkly's server-side SDK key and mobile key (`sdk-<uuid>`, `mob-<uuid>`) told anywhere: a uuid with
    # that prefix is nothing else. (HELD_OUT_8's leftovers, secrets12)
    Rule(
        "launchdarkly-key",
        "a credential (launchdarkly)",
        re.compile(r"(?<![\w-])((?:sdk|mob)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![\w-])"),
        ("sdk-", "mob-"),
    ),
    # A payment card with its expiry or security code (Luhn-valid; not one labelled a test card).
    Rule(
        "payment-card",
        "a payment card",
        re.compile(CARD),
        # (what must follow the number: an expiry's slash or a security code's name)
        ("/", "cvv", "cvc", "csc", "cid", "security code"),
        check=_luhn_card,
        before=_not_a_test_card,
    ),
    # A card named by its brand or as a card, with its expiry or security code after, whose number fails Luhn's
    # check ("Visa 4984 1855 1761 2319 exp 09/28"): a number mistyped or made up is still given as a card's, and
    # an order's or an invoice's number has neither the name nor the expiry. (secrets12's probing)
    # A BitLocker recovery key: eight groups of six digits, a format nothing else has. (secrets12's probing)
    Rule(
        "bitlocker-recovery-key",
        "a recovery key",
        re.compile(r"(?<![\d-])(\d{6}(?:-\d{6}){7})(?![\d-])"),
        (),
    ),
    # An authenticator's seed in one piece after its name ("MFA seed: YDDLPPSKQLWWSOKE", "2FA secret JBSWY3DP…"):
    # base32 in capitals, 16 to 64 characters. (secrets12's probing)
    Rule(
        "otp-seed",
        "a credential (a 2FA seed)",
        re.compile(
            r"(?i)\b(?=[2tomah])(?:2fa|totp|otp|mfa|authenticator|hotp)[ _-]?"
            rf"(?:{_WHICH_OTP}[ _-])?(?:seed|secret|key|setup key)s?\b"
            r"[^\n.]{0,30}?(?:[:=]|\s(?:is|was))\s*[\"'`]?(?-i:([A-Z2-7]{16,64}))(?![\w=])"
        ),
        ("2fa", "totp", "otp", "mfa", "authenticator", "hotp"),
        check=lambda seed: len(set(seed)) >= 8,
    ),
    Rule(
        "payment-card-told",
        "a payment card",
        re.compile(CARD),
        ("/", "cvv", "cvc", "csc", "cid", "security code"),
        check=lambda number: len(set(number) - {" ", "-"}) >= 3,
        before=_card_named_before,
    ),
    # A Solana keypair as solana-keygen writes it: a JSON array of 64 bytes, after a key's or a wallet's name.
    Rule(
        "byte-array-keypair",
        "a private key",
        re.compile(
            r"(\[[ \t\n]*(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)[ \t\n]*,[ \t\n]*){31}(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)"
            r"[ \t\n]*,[ \t\n]*){0,32}(?:25[0-5]|2[0-4]\d|1?\d?\d)[ \t\n]*\])"
        ),
        ("keypair", "key pair", "private key", "secret key", "secret_key", "wallet", "signer", "seed"),
        check=lambda array: array.count(",") in (31, 63),
        before=lambda before: bool(
            re.search(
                r"(?i)\b(?:keypair|key ?pair|private[ _-]?key|secret[ _-]?key|wallet|signer|seed)\b", before[-80:]
            )
        ),
    ),
    Rule(
        "payment-card-named",
        "a payment card",
        re.compile(NAMED_CARD),
        ("visa", "mastercard", "master card", "amex", "american express", "discover", "card"),
        check=_luhn_card,
        before=_card_named_before,
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
            "openssl",
            "poetry",
            "oathtool",
            "signtool",
            "rabbitmqctl",
            "certutil",
            "keychain",
            "-password",
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
            # (Oracle's password may go unquoted: `ALTER USER scott IDENTIFIED BY 7vZsmq5R0z;`, held-out set 13; not
            # `IDENTIFIED BY VALUES '…'`, a hash, nor a bind variable's `:pw`)
            r"(?i:\bidentified\s+(?:with\s+\w+\s+)?by\s+(?:['\"]([^'\"]{4,})['\"]|(?!values\b)([^\s'\":;,)]{4,})(?=[\s;,)]|$))"
            r"|\b(?:requirepass|masterauth)\s+['\"]?([^\s'\"]{4,}))"
            r"|\bAUTH\s+(?:\w+\s+)?['\"]?([^\s'\"]{8,})"
        ),
        ("identified", "requirepass", "masterauth", "auth "),
        check=_assigned_secret,
    ),
    # Oracle's thin and OCI JDBC URLs put the login before the host: `jdbc:oracle:thin:scott/FiYcsAI6LU@//ora-prod:1521/
    # ORCLPDB1` (a `user/password@`, where other URLs have `user:password@`; held-out set 13).
    Rule(
        "oracle-jdbc-password",
        "a password in a URL",
        re.compile(r"(?i)\bjdbc:oracle:(?:thin|oci\d*|kprb):[\"']?[\w$#.]+/([^\s@/\"']{3,})@"),
        ("jdbc:oracle",),
        check=_url_password,
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
            r"(?i)\b(?:(?:recovery|backup|2fa|mfa|scratch|one-time|emergency)[ -]codes?"
            # (the same in French, Spanish, Portuguese, Italian, German, Dutch, Polish, Turkish: "Codes de
            # récupération du compte Google : 8338 2937, …"; held-out set 11)
            r"|c[oó]d(?:e|igo)s?\s+de\s+(?:r[ée]cup[ée]ration|secours|recuperaci[oó]n|recupera[cç][aã]o|respaldo|backup)"
            r"|codici\s+di\s+(?:recupero|backup)|wiederherstellungs-?codes?|backup-?codes?|herstelcodes?"
            r"|kody\s+(?:zapasowe|odzyskiwania)|kurtarma\s+kodlar[ıi]|yedek\s+kodlar[ıi])\b[^\n.:=]{0,40}?"
            r"(?:\s(?:is|are)|:|[ \t]*(?=\r?\n))\s*(?:[-*•][ \t]+|\d{1,2}[.)][ \t]+)?"
            # (codes on a line, or one a line, bulleted or numbered as a download lists them)
            r"((?:[A-Za-z0-9]{4,10}(?:-[A-Za-z0-9]{4,10})?"
            r"(?:[ \t,;]+|[ \t]*\r?\n[ \t]*(?:[-*•][ \t]+|\d{1,2}[.)][ \t]+)?)){1,15}"
            r"[A-Za-z0-9]{4,10}(?:-[A-Za-z0-9]{4,10})?)"
        ),
        ("codes", "códigos", "codigos", "codici", "kody", "kodlar"),
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
        before=lambda text: bool(_LOGIN_BEFORE.search(text)) and not _ID_NAMED_JUST_BEFORE.search(text),
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

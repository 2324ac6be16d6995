"""Held-out set twelve: secret forms and near-secret keepers written before reading the scanner.

Written blind by lane secrets15 (the scanner and sets 1-11 unread), as a judge would pick them: the
plain forms first (.env lines, exports, "the staging password is", curl -u, DSNs, cloud and vendor keys,
PEM blocks, JWTs, TOTP seeds, cards, seed phrases), then the sneaky ones (a secret inside a longer note,
tables, YAML/TOML/INI/JSON/XML, shell history, code literals, chat, words, split or masked values,
base64 and URL-encoded credentials, ten languages). Random values come from one seeded generator so
each has the right length and alphabet and the set is the same on every run.

AKIAIOSFODNN7EXAMPLE (AWS's documentation key) is in neither list: refusing or keeping it is fine.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable

_R = random.Random(1512)
_ALNUM = string.ascii_letters + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_B64URL = _ALNUM + "-_"
_B32 = string.ascii_uppercase + "234567"


def _s(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_R.choice(alphabet) for _ in range(n))


def _pw(n: int = 14) -> str:
    """A human-ish strong password: letters, digits and one or two symbols."""
    body = list(_s(n - 2) + _R.choice("!@#$%&*?") + _R.choice(string.digits))
    _R.shuffle(body)
    return "".join(body)


def _card(prefix: str, length: int = 16) -> str:
    digits = [int(c) for c in prefix] + [_R.randrange(10) for _ in range(length - len(prefix) - 1)]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 0:
            d *= 2
            d = d - 9 if d > 9 else d
        total += d
    digits.append((10 - total % 10) % 10)
    return "".join(map(str, digits))


def _grouped(number: str) -> str:
    return " ".join(number[i : i + 4] for i in range(0, len(number), 4))


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _b64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _jwt(payload: str) -> str:
    head = _b64url('{"alg":"HS256","typ":"JWT"}')
    return f"{head}.{_b64url(payload)}.{_s(43, _B64URL)}"


def _pem_body(lines: int) -> str:
    return "\n".join(_s(64, _B64) for _ in range(lines)) + "\n" + _s(40, _B64) + "=="


def _uuid() -> str:
    h = _s(32, _HEX)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def _build(seed: int) -> dict[str, list[str]]:
    """Every text of the set, its random values drawn from `seed` (1512: the texts of the first run)."""
    global _R
    _R = random.Random(seed)
    # ---- values -------------------------------------------------------------------------------------

    _AWS_ID = "AKIA" + _s(16, _UPPER_DIGITS)
    _AWS_SECRET = _s(40, _B64)
    _AWS_ID2 = "ASIA" + _s(16, _UPPER_DIGITS)
    _AWS_SECRET2 = _s(40, _B64)
    _GHP = "ghp_" + _s(36)
    _GH_FINE = "github_pat_" + _s(22) + "_" + _s(59)
    _GLPAT = "glpat-" + _s(20, _B64URL)
    _SLACK_BOT = f"xoxb-{_s(12, string.digits)}-{_s(13, string.digits)}-{_s(24)}"
    _SLACK_HOOK = f"https://hooks.slack.com/services/T{_s(8, _UPPER_DIGITS)}/B{_s(10, _UPPER_DIGITS)}/{_s(24)}"
    _STRIPE = "sk_live_" + _s(99)
    _STRIPE_RK = "rk_live_" + _s(24)
    _OPENAI = "sk-proj-" + _s(48, _B64URL) + "T3BlbkFJ" + _s(48, _B64URL)
    _ANTHROPIC = "sk-ant-api03-" + _s(93, _B64URL) + "AA"
    _HF = "hf_" + _s(34, string.ascii_letters)
    _GOOGLE = "AIza" + _s(35, _B64URL)
    _AZURE_ACCOUNT_KEY = _s(86, _B64) + "=="
    _AZURE_CLIENT_SECRET = _s(3) + "8Q~" + _s(34, _ALNUM + "~._-")
    _NPM = "npm_" + _s(36)
    _PYPI = "pypi-AgEIcHlwaS5vcmc" + _s(60, _B64URL)
    _SENDGRID = f"SG.{_s(22, _B64URL)}.{_s(43, _B64URL)}"
    _TWILIO_SID = "AC" + _s(32, _HEX)
    _TWILIO_TOKEN = _s(32, _HEX)
    _DO = "dop_v1_" + _s(64, _HEX)
    _DATADOG = _s(32, _HEX)
    _TELEGRAM = f"{_s(10, string.digits)}:AA{_s(33, _B64URL)}"
    _DISCORD = f"{_b64url(_s(18, string.digits))}.{_s(6, _B64URL)}.{_s(38, _B64URL)}"
    _SHOPIFY = "shpat_" + _s(32, _HEX)
    _TOTP = _s(32, _B32)
    _TOTP2 = _s(16, _B32)
    _CARD_VISA = _card("4")
    _CARD_MC = _card("5")
    _CARD_AMEX = _card("37", 15)
    _JWT = _jwt('{"sub":"8842","name":"ops-bot","role":"admin","iat":1764201600,"exp":1795737600}')
    _JWT2 = _jwt('{"iss":"https://auth.yullu.dev","sub":"svc-billing","scope":"payments:write"}')
    _SEED = "orbit tunnel maple fragile cousin velvet harbor quiz dilemma ostrich wagon lemon"
    _SEED24 = (
        "echo canvas lizard hurdle pepper tribe vacuum orange siren gospel elbow mirror "
        "tragic rookie fiber census marble ketchup wisdom alpha dinner spray lobster nation"
    )
    _HEX64 = _s(64, _HEX)
    _HEX40 = _s(40, _HEX)

    # ---- secrets: plain forms -----------------------------------------------------------------------

    _PLAIN = [
        f"DATABASE_PASSWORD={_pw(18)}",
        f"export OPENAI_API_KEY={_OPENAI}",
        f"the staging password is {_pw(12)}",
        f"api key: {_s(32, _HEX)}",
        f"curl -u deploy:{_pw(16)} https://ci.yullu.dev/api/json",
        f'curl -H "Authorization: Bearer {_JWT}" https://api.yullu.dev/v1/me',
        f"DATABASE_URL=postgres://yullu_app:{_pw(20)}@db-prod.internal:5432/yullu",
        f"AWS_ACCESS_KEY_ID={_AWS_ID}\nAWS_SECRET_ACCESS_KEY={_AWS_SECRET}",
        f"GitHub token for the release bot: {_GHP}",
        f"gitlab deploy token {_GLPAT}",
        f"SLACK_BOT_TOKEN={_SLACK_BOT}",
        f"STRIPE_SECRET_KEY={_STRIPE}",
        f"ANTHROPIC_API_KEY={_ANTHROPIC}",
        f"huggingface read token: {_HF}",
        f"GOOGLE_MAPS_API_KEY={_GOOGLE}",
        "-----BEGIN RSA PRIVATE KEY-----\n" + _pem_body(12) + "\n-----END RSA PRIVATE KEY-----",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        + _pem_body(5)
        + "\n-----END OPENSSH PRIVATE KEY-----",
        f"JWT for the admin service account: {_JWT2}",
        f"otpauth://totp/Yullu:ops@yullu.dev?secret={_TOTP}&issuer=Yullu",
        f"card {_grouped(_CARD_VISA)} exp 09/28 cvv 413",
        f"wallet seed phrase: {_SEED}",
        f"my bank PIN is {_s(4, string.digits)}",
        f"GitHub recovery codes: {_s(5, _HEX)}-{_s(5, _HEX)} {_s(5, _HEX)}-{_s(5, _HEX)} "
        f"{_s(5, _HEX)}-{_s(5, _HEX)} {_s(5, _HEX)}-{_s(5, _HEX)}",
        f"gpg passphrase: {_R.choice(['amber', 'cobalt', 'violet'])}-kettle-sunrise-{_s(3, string.digits)}",
    ]

    # ---- secrets: configs, files, tables ------------------------------------------------------------

    _CONFIG = [
        "apiVersion: v1\nkind: Config\nusers:\n- name: ci-deployer\n  user:\n    token: "
        + _s(20, _B64URL)
        + "."
        + _s(40, _B64URL),
        '{\n  "auths": {\n    "registry.yullu.dev": {\n      "auth": "'
        + _b64("robot$ci:" + _pw(22))
        + '"\n    }\n  }\n}',
        '[database]\nhost = "db.internal"\nuser = "reporting"\npassword = "' + _pw(16) + '"\nport = 5432',
        "[smtp]\nserver=smtp.sendgrid.net\nusername=apikey\npassword=" + _SENDGRID,
        "services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: app\n"
        "      POSTGRES_PASSWORD: " + _pw(15),
        "<settings>\n  <servers>\n    <server>\n      <id>nexus-releases</id>\n      <username>deployer</username>\n"
        "      <password>" + _pw(17) + "</password>\n    </server>\n  </servers>\n</settings>",
        '<appSettings>\n  <add key="PaymentApiKey" value="' + _s(40, _B64URL) + '" />\n</appSettings>',
        "| service | user | password |\n|---|---|---|\n| grafana | admin | "
        + _pw(13)
        + " |\n| rabbitmq | ops | "
        + _pw(12)
        + " |",
        "machine api.heroku.com\n  login ops@yullu.dev\n  password " + _s(8, _HEX) + "-" + _uuid()[9:],
        f"db-replica.internal:5432:analytics:readonly:{_pw(16)}",
        '{\n  "type": "service_account",\n  "project_id": "yullu-prod-381204",\n  "private_key_id": "'
        + _s(40, _HEX)
        + '",\n  "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + _s(64, _B64)
        + "\\n"
        + _s(64, _B64)
        + '\\n-----END PRIVATE KEY-----\\n",\n'
        + '  "client_email": "deployer@yullu-prod-381204.iam.gserviceaccount.com"\n}',
        "DefaultEndpointsProtocol=https;AccountName=yullustorage;AccountKey="
        + _AZURE_ACCOUNT_KEY
        + ";EndpointSuffix=core.windows.net",
        f"AZURE_CLIENT_ID={_uuid()}\nAZURE_TENANT_ID={_uuid()}\nAZURE_CLIENT_SECRET={_AZURE_CLIENT_SECRET}",
        f"[default]\naws_access_key_id = {_AWS_ID2}\naws_secret_access_key = {_AWS_SECRET2}\n"
        f"aws_session_token = {_s(120, _B64)}",
        f"//registry.npmjs.org/:_authToken={_NPM}",
        f"[pypi]\n  username = __token__\n  password = {_PYPI}",
        f"spring.datasource.password={_pw(14)}",
        f"REDIS_URL=redis://:{_s(32, _ALNUM)}@cache-1.internal:6379/0",
        f"mongodb+srv://analytics:{_pw(16)}@cluster0.x7k2p.mongodb.net/events?retryWrites=true",
        f"amqp://worker:{_pw(14)}@mq.internal:5672/%2F",
        f"SENTRY_DSN=https://{_s(32, _HEX)}@o{_s(6, string.digits)}.ingest.sentry.io/{_s(7, string.digits)}",
        f"SLACK_WEBHOOK_URL={_SLACK_HOOK}",
        f"TWILIO_ACCOUNT_SID={_TWILIO_SID}\nTWILIO_AUTH_TOKEN={_TWILIO_TOKEN}",
        f"DIGITALOCEAN_TOKEN={_DO}",
        f"DD_API_KEY={_DATADOG}",
        f"telegram bot token {_TELEGRAM}",
        f"DISCORD_TOKEN={_DISCORD}",
        f"shopify admin api access token: {_SHOPIFY}",
    ]

    # ---- secrets: code and shell history ------------------------------------------------------------

    _CODE = [
        f'client = OpenAI(api_key="{_OPENAI[:40]}{_s(60, _B64URL)}")',
        f"const stripe = require('stripe')('{_STRIPE_RK}');",
        f'token := "{_GHP[:4]}{_s(36)}"\nreq.Header.Set("Authorization", "token "+token)',
        f'private static final String DB_PASSWORD = "{_pw(15)}";',
        f'var conn = "Server=sql01;Database=Billing;User Id=billing_app;Password={_pw(16)};";',
        f"mysql -h db.internal -u root -p{_pw(12)} yullu_prod",
        f"sshpass -p '{_pw(12)}' ssh admin@10.0.4.17",
        f"echo '{_pw(20)}' | docker login registry.yullu.dev -u ci --password-stdin",
        f"  512  export PGPASSWORD={_pw(14)}\n  513  psql -h db.internal -U postgres",
        f"htpasswd -b -c /etc/nginx/.htpasswd admin {_pw(12)}",
        f"kubectl create secret generic stripe --from-literal=api-key={_STRIPE_RK[:8]}{_s(24)}",
        f'headers = {{"X-API-Key": "{_s(40, _ALNUM)}"}}',
        f'fetch(url, {{ headers: {{ Authorization: "Basic {_b64("admin:" + _pw(12))}" }} }})',
        f"git remote set-url origin https://oauth2:{_GLPAT[:6]}{_s(20, _B64URL)}@gitlab.com/yullu/api.git",
    ]

    # ---- secrets: prose, chat, words, split, encodings ----------------------------------------------

    _PW_A = _pw(12)
    _SPLIT_A, _SPLIT_B = "Gx7!pQ", "vR2#mZ"
    _PROSE = [
        "Spent the afternoon on the billing migration. The old cron box is still needed until Friday. "
        f"If it falls over, log in as root with {_pw(13)} and restart the exporter. After Friday we "
        "delete the VM and the DNS record.",
        "Notes from the onboarding call: the vendor sandbox lives at sandbox.payfast.example. They gave us "
        f"a merchant key, {_s(13, string.ascii_lowercase + string.digits)}, and a passphrase "
        f"'{_pw(14)}'. The webhook needs to be whitelisted by IP.",
        f"hey, pw for the jenkins box is {_pw(11)} — don't share it outside the team",
        f"fyi the new wifi password in the office is {_R.choice(['Meadow', 'Harbor'])}{_s(4, string.digits)}Guest!",
        "The password is the word falcon in capital letters followed by the year 2019 and an exclamation mark.",
        f"Stripe key first half: {_STRIPE[:30]}\nsecond half: {_STRIPE[30:]}",
        f"password: {_SPLIT_A}\n{_SPLIT_B}",
        f"creds (base64): {_b64('deploy:' + _pw(14))}",
        f"https://admin:{_pw(10).replace('@', '%40').replace('#', '%23')}%21@grafana.internal.yullu.dev/login",
        f"Use the admin account, i.e. {_pw(12)}, only for the migration.",
        f"Reminder for future me: vault unseal key 1 is {_s(44, _B64)}",
        f"2FA backup secret for the AWS root account: {' '.join(_TOTP2[i : i + 4] for i in range(0, 16, 4))}",
        f"Amex {_CARD_AMEX}, expires 11/27, security code 7721",
        f"company card: {_CARD_MC} 04/29 CVC {_s(3, string.digits)}",
        f"Ledger recovery phrase (24 words): {_SEED24}",
        f"SIM PUK: {_s(8, string.digits)}, PIN {_s(4, string.digits)}",
        f"the API key ends in ...{_s(4, _HEX)} but the full thing is {_s(40, _HEX)}",
        f"Prod DB pw was rotated today. New one: {_PW_A}. Old one stops working at midnight.",
        "The root password is my daughter's name capitalized plus the house number 42 plus a hash sign.",
        "pw = first letters of 'My cat Lola sleeps 14 hours in Berlin!' → McLs14hiB!",
        f"Jira API token (for the sync script): ATATT3xFfGF0{_s(180, _B64URL)}={_s(8, _HEX).upper()}",
        f"Cloudflare API token {_s(40, _B64URL)} (zone edit on yullu.dev)",
    ]

    # ---- secrets: other languages -------------------------------------------------------------------

    _LANGS = [
        f"Das Passwort für den Staging-Server lautet {_pw(13)}.",
        f"La contraseña de la base de datos de producción es {_pw(12)}",
        f"Le mot de passe de l'admin WordPress est {_pw(12)}, à changer après la démo.",
        f"A senha do servidor de e-mail é {_pw(11)}",
        f"La password del router è {_pw(12)}",
        f"Het wachtwoord voor de VPN is {_pw(12)}",
        f"Hasło do panelu administracyjnego: {_pw(12)}",
        f"Sunucunun root şifresi: {_pw(12)}",
        f"本番データベースのパスワードは {_pw(14)} です。",
        f"生产环境的 API 密钥是 {_s(32, _HEX)}",
        f"Пароль от сервера: {_pw(12)}",
        f"Der API-Schlüssel für Mailgun: key-{_s(32, _HEX)}",
        f"Clave de acceso AWS: {_AWS_ID} / secreta: {_s(40, _B64)}",
        f"Mon code PIN de carte bancaire est le {_s(4, string.digits)}.",
    ]

    # ---- keepers ------------------------------------------------------------------------------------

    HELD_OUT_12_KEEP_TEXTS = [
        "Auth uses OAuth2 authorization code with PKCE; the access token lives in memory only and is "
        "refreshed every 15 minutes from the httpOnly refresh cookie.",
        "Passwords must be at least 12 characters, include a digit, and not appear in the HIBP breach list.",
        f"The bcrypt hash stored for the fixture user is $2b$12${_s(53, _ALNUM + './')} (a hash, not the password).",
        f"sha256 of yullu-2.4.1.tar.gz: {_HEX64}",
        f"Fixed in commit {_HEX40}; the regression came from the cache key change.",
        f"Memory record {_uuid()} was merged into {_uuid()} by the dedupe job.",
        "Set STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET in the environment before running the billing worker.",
        "Rotate the Stripe key in Vault at path secret/data/payments/stripe and restart the billing pods.",
        "export GITHUB_TOKEN=<token>  # replace <token> with a PAT that has repo scope",
        "api_key = os.environ['OPENAI_API_KEY']",
        'curl -H "Authorization: Bearer ${API_TOKEN}" https://api.yullu.dev/v1/me',
        "DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/DBNAME goes in .env.example",
        "export GITHUB_TOKEN=$(gh auth token)",
        "AWS account 123456789012 owns the role arn:aws:iam::123456789012:role/yullu-deploy.",
        "Stripe customer cus_NffrFeUfNV2Hib has three failed invoices; see in_1OtZ9kLkdIwHu7ixq0eLPs2Q.",
        f"Docker image digest: sha256:{_s(64, _HEX)}",
        f'"integrity": "sha512-{_s(86, _B64)}=="',
        "Bumped django from 5.2.7 to 5.2.8 and psycopg to 3.2.12.",
        "The password reset link expires after 30 minutes and can be used once.",
        "The PIN entry screen locks the card after 3 wrong tries.",
        "The token bucket limiter refills 10 tokens per second with a burst of 50.",
        "Max tokens for the summariser is 4096; the tokenizer is cl100k_base.",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + _s(43, _B64) + " ops@laptop (public key, add to authorized_keys)",
        "Keys live in AWS KMS; the app only ever sees data keys, and CloudTrail logs every Decrypt call.",
        "The test fixtures create three users with random passwords from factory_boy; none are hard-coded.",
        "Use 4242 4242 4242 4242 with any future expiry and any CVC for Stripe test mode.",
        "password_hash column added to users; argon2id with time_cost=3, memory_cost=64MB.",
        "base64 of the config blob: " + _b64('{"theme": "dark", "lang": "en", "beta": false}'),
        "Das Passwort muss mindestens 12 Zeichen lang sein und eine Zahl enthalten.",
        "La contraseña se guarda en Vault y nunca en el repositorio.",
        "Le mot de passe oublié : l'utilisateur reçoit un lien valable 30 minutes.",
        "パスワードは12文字以上にしてください。",
        "密码必须至少包含12个字符。",
        "hey, I rotated the jenkins pw — it's in 1Password under 'CI / jenkins'.",
        "The JWT payload carries sub, exp and scope; we verify with RS256 against the JWKS endpoint.",
        "kubectl create secret generic db --from-literal=password=$DB_PASSWORD",
        "env:\n- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password",
        '[database]\nhost = "db.internal"\nuser = "reporting"\npassword = "${DB_PASSWORD}"',
        "The API key header is X-API-Key; keys are 40 characters and are shown once at creation.",
        "Renamed the setting SECRET_KEY_FALLBACKS to support key rotation without logging everyone out.",
        "git log shows 4f2a9c1 as the last green build on main.",
        f"Request id {_s(26, _UPPER_DIGITS)} timed out at the gateway after 30s.",
        "The password field on the signup form now shows a strength meter (zxcvbn score >= 3 to submit).",
        "The Slack channel C024BE91L gets the deploy notifications.",
        "Our GCP project id is yullu-prod-381204 and the region is europe-west1.",
        "The wifi network is called Yullu-Guest; the password is on the whiteboard in the kitchen.",
        "Card numbers are tokenised by Stripe Elements; we only ever store the last four digits (e.g. 4242).",
        "The seed for the test data generator is 1512 so the fixtures are reproducible.",
        "Recovery codes are shown once after enabling 2FA; users should store them in a password manager.",
        "Use xxx-xxx-xxx as the placeholder licence key in screenshots.",
        "Vault token TTL is 1h and the renewal job runs every 30 minutes.",
        "Added the header Authorization: Bearer <jwt> to the Postman collection's docs.",
        "md5 checksum of the fixture dump: " + _s(32, _HEX),
        "otpauth URIs are parsed by the pyotp library; we never log them.",
        "The mnemonic field in the wallet UI is masked and never leaves the device.",
        "Il codice PIN va cambiato ogni 90 giorni secondo la policy interna.",
        "Het wachtwoordbeleid vereist 2FA voor alle beheerders.",
    ]
    return {
        "plain": _PLAIN,
        "config": _CONFIG,
        "code": _CODE,
        "prose": _PROSE,
        "lang": _LANGS,
        "keep": HELD_OUT_12_KEEP_TEXTS,
    }


Form = tuple[str, Callable[[random.Random], str]]  # bench.secret_forms.Form, without the import cycle

_SECRET_GROUPS = ("plain", "config", "code", "prose", "lang")
AS_RUN = _build(1512)  # the texts the first live run sent
HELD_OUT_12_TEXTS: list[str] = [text for group in _SECRET_GROUPS for text in AS_RUN[group]]
HELD_OUT_12_KEEP_TEXTS: list[str] = AS_RUN["keep"]


def _filled(group: str, index: int) -> Callable[[random.Random], str]:
    """A form: its text with fresh random values drawn from the caller's generator."""
    return lambda rng: _build(rng.getrandbits(32))[group][index]


def _as_run(text: str) -> Callable[[random.Random], str]:
    return lambda _rng: text


HELD_OUT_12: list[Form] = [
    (f"s12 {group} {i + 1}", _filled(group, i)) for group in _SECRET_GROUPS for i in range(len(AS_RUN[group]))
]
HELD_OUT_12_KEEP: list[Form] = [(f"k12 keep {i + 1}", _filled("keep", i)) for i in range(len(AS_RUN["keep"]))]
# The same forms with the first run's values (what `python -m bench.secret_live` sent before any fix).
HELD_OUT_12_AS_RUN: list[Form] = [
    (f"s12 {group} {i + 1}", _as_run(text)) for group in _SECRET_GROUPS for i, text in enumerate(AS_RUN[group])
]
HELD_OUT_12_KEEP_AS_RUN: list[Form] = [(f"k12 keep {i + 1}", _as_run(t)) for i, t in enumerate(AS_RUN["keep"])]

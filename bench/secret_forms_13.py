"""Held-out set 13: secret forms written before reading the scanner (lane secrets16).

Every random value comes from a seeded generator, so the set is the same on every run.
The plainest forms come first (what a judge would try first), then the sneaky ones: a
secret told as a teammate's memory, inside a commit message, a log line, a stack trace,
a Dockerfile, CI YAML, Terraform, Helm, Ansible, a notebook cell, SQL, connection
strings, phonetic spelling, door/safe codes, capitalised words, other languages.
The keepers sit close to secrets and must stay storable.
"""

from __future__ import annotations

import base64
import json
import random

from bench.secret_fill import fixed
from bench.secret_forms_9 import Form

_R = random.Random(1313)

_UP = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LO = "abcdefghijklmnopqrstuvwxyz"
_DIG = "0123456789"
_ALNUM = _UP + _LO + _DIG
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_URL = _ALNUM + "-_"
_B32 = _UP + "234567"


def _s(alphabet: str, n: int) -> str:
    return "".join(_R.choice(alphabet) for _ in range(n))


def _pw(n: int = 14) -> str:
    """A password a person or a generator would pick: letters, digits, one symbol."""
    body = _s(_ALNUM, n - 2)
    return body[: n // 2] + _R.choice("!#%*@$") + body[n // 2 :] + _R.choice(_DIG)


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _jwt(payload: dict[str, object]) -> str:
    head = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64url(json.dumps(payload).encode())
    return f"{head}.{body}.{_s(_URL, 43)}"


def _luhn(prefix: str, length: int = 16) -> str:
    digits = prefix + _s(_DIG, length - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            d = d - 9 if d > 9 else d
        total += d
    return digits + str((10 - total % 10) % 10)


def _groups(number: str, size: int = 4, sep: str = " ") -> str:
    return sep.join(number[i : i + size] for i in range(0, len(number), size))


def _pem(kind: str, lines: int = 6) -> str:
    body = "\n".join(_s(_B64, 64) for _ in range(lines))
    return f"-----BEGIN {kind}-----\nMII{body[3:]}\n{_s(_B64, 20)}==\n-----END {kind}-----"


_CARD = _luhn("453914")
_CARD2 = _luhn("55", 16)
_AMEX = _luhn("37", 15)

HELD_OUT_13_TEXTS: list[str] = [
    # --- the plainest: env lines, exports, sentences, headers, DSNs -------------------
    f"STRIPE_SECRET_KEY=sk_live_{_s(_ALNUM, 24)}",
    f'export OPENAI_API_KEY="sk-proj-{_s(_URL, 48)}"',
    f"the staging password is {_pw(12)}",
    f"mailgun api key: key-{_s(_HEX, 32)}",
    f"curl -u deploy:{_pw(10)} https://ci.internal.example.com/api/json",
    f'curl -H "Authorization: Bearer {_s(_ALNUM, 40)}" https://api.partner.io/v2/orders',
    f"DATABASE_URL=postgres://app_user:{_s(_ALNUM, 18)}@db.prod.internal:5432/orders",
    "users:\n- name: ci-bot\n  user:\n    token: "
    + _jwt({"iss": "kubernetes/serviceaccount", "sub": "system:serviceaccount:ci:bot"}),
    '{"auths": {"ghcr.io": {"auth": "' + base64.b64encode(f"octo-ci:{_pw(16)}".encode()).decode() + '"}}}',
    f"[default]\naws_access_key_id = AKIA{_s(_UP + '234567', 16)}\naws_secret_access_key = {_s(_B64, 40)}",
    f"GITHUB_TOKEN=ghp_{_s(_ALNUM, 36)}",
    f"gitlab token glpat-{_s(_URL, 20)}",
    f"SLACK_BOT_TOKEN=xoxb-{_s(_DIG, 12)}-{_s(_DIG, 13)}-{_s(_ALNUM, 24)}",
    f"stripe restricted key rk_live_{_s(_ALNUM, 99)}",
    f"ANTHROPIC_API_KEY=sk-ant-api03-{_s(_URL, 93)}AA",
    f"hf token for the private model: hf_{_s(_ALNUM, 34)}",
    f"TWILIO_ACCOUNT_SID=AC{_s(_HEX, 32)}\nTWILIO_AUTH_TOKEN={_s(_HEX, 32)}",
    f"SENDGRID_API_KEY=SG.{_s(_URL, 22)}.{_s(_URL, 43)}",
    f"DD_API_KEY={_s(_HEX, 32)}",
    f"//registry.npmjs.org/:_authToken=npm_{_s(_ALNUM, 36)}",
    f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{_s(_URL, 140)}",
    _pem("RSA PRIVATE KEY"),
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    + _s(_B64, 70)
    + "\n"
    + _s(_B64, 70)
    + "\n-----END OPENSSH PRIVATE KEY-----",
    "session cookie for the admin: " + _jwt({"sub": "42", "role": "admin", "exp": 1767225600}),
    f"otpauth://totp/Yullu:ops@example.com?secret={_s(_B32, 32)}&issuer=Yullu",
    f"card {_groups(_CARD)} exp 09/28 cvv {_s(_DIG, 3)}",
    "seed phrase: timber crane velvet ocean pledge dizzy forum rescue orbit hammer salad wrist",
    # --- more vendors ---------------------------------------------------------------
    f"GOOGLE_MAPS_KEY=AIza{_s(_URL, 35)}",
    f"SHOPIFY_ADMIN_TOKEN=shpat_{_s(_HEX, 32)}",
    f"mailchimp key {_s(_HEX, 32)}-us21",
    f"telegram bot token {_s(_DIG, 10)}:AA{_s(_URL, 33)}",
    f"VAULT_TOKEN=hvs.{_s(_URL, 90)}",
    f"github fine-grained PAT: github_pat_11{_s(_UP + _DIG, 20)}_{_s(_ALNUM, 59)}",
    f"Slack webhook: https://hooks.slack.com/services/T{_s(_UP + _DIG, 8)}/B{_s(_UP + _DIG, 10)}/{_s(_ALNUM, 24)}",
    f"DefaultEndpointsProtocol=https;AccountName=yullustore;AccountKey={_s(_B64, 86)}=="
    ";EndpointSuffix=core.windows.net",
    '{"type": "service_account", "project_id": "yullu-prod", "private_key_id": "'
    + _s(_HEX, 40)
    + '", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQ'
    + _s(_B64, 120)
    + '\\n-----END PRIVATE KEY-----\\n"}',
    f"age key: AGE-SECRET-KEY-1{_s(_UP.replace('B', '').replace('I', '').replace('O', '') + '023456789', 58)}",
    f"[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {_s(_B64, 43)}=",
    f"linear api key lin_api_{_s(_ALNUM, 40)}",
    f"NOTION_TOKEN=ntn_{_s(_DIG, 11)}{_s(_ALNUM, 35)}",
    f"POSTMAN_API_KEY=PMAK-{_s(_HEX, 24)}-{_s(_HEX, 34)}",
    f"grafana service account token glsa_{_s(_ALNUM, 32)}_{_s(_HEX, 8)}",
    f"NEW_RELIC_API_KEY=NRAK-{_s(_UP + _DIG, 27)}",
    f"cloudflare api token: {_s(_URL, 40)}",
    f"atlassian api token ATATT3xFfGF0{_s(_URL, 180)}={_s(_HEX, 8).upper()}",
    # --- sneaky: a teammate's memory -------------------------------------------------
    f"remember: the wifi in the office is {_pw(12)}",
    "the shared 1Password master is Velvet Lantern Orchard Ninety",
    f"prod db creds rotated, new ones are admin / {_pw(12)}",
    f"FYI the jenkins admin login is admin, pw {_pw(10)} until IT resets it",
    f"ssh root@10.0.4.12, pw is {_pw(11)}",
    "heads up: the router admin password is Papa Seven Kilo Echo Nine Whiskey Delta Two",
    "the safe is 24-61-07",
    "door code for the server room is 4 8 1 9",
    "the alarm code at the warehouse is 5-5-2-9, disarm within 30 seconds",
    "bike lock combination: 3719",
    "my bank PIN is 7314",
    "admin password is PurpleElephantDancesLoudly",
    "the demo account password is Correct Horse Battery Staple, all capitalised",
    f"GitHub recovery codes: {' '.join(_s(_HEX, 5) + '-' + _s(_HEX, 5) for _ in range(6))}",
    f"GPG passphrase for the release key: {_pw(20)}",
    f"vault unseal key 1: {_s(_B64, 44)}",
    f"apple app-specific password for the CI mail bot: {_s(_LO, 4)}-{_s(_LO, 4)}-{_s(_LO, 4)}-{_s(_LO, 4)}",
    "BitLocker recovery key for the build laptop: " + "-".join(_s(_DIG, 6) for _ in range(8)),
    f"zoom passcode for the incident bridge is {_s(_DIG, 6)}",
    f"wallet private key 0x{_s(_HEX, 64)}",
    f"password is the dog's name plus the year: Biscuit{_s(_DIG, 4)}",
    # --- in a commit message, a log line, a stack trace -------------------------------
    f"commit 9f2c1e7: chore: set SMTP_PASS to {_pw(12)} for staging mailer",
    f"fix(ci): rotate token, old one was ghp_{_s(_ALNUM, 36)} (revoked)",
    f"2024-05-01T10:22:11Z INFO auth.login user=ops password={_pw(11)} status=ok",
    f"[2024-06-03 08:14:55,120] DEBUG urllib3 GET /v1/charges Authorization: Token {_s(_HEX, 40)}",
    'Traceback (most recent call last):\n  File "app/db.py", line 12, in connect\n'
    f"    conn = psycopg.connect('postgresql://billing:{_s(_ALNUM, 16)}@10.1.2.3/billing')\n"
    'psycopg.OperationalError: connection failed: FATAL:  password authentication failed for user "billing"',
    "requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: "
    f"https://api.weather.io/v3/forecast?lat=48.1&api_key={_s(_HEX, 32)}",
    # --- in infra files -----------------------------------------------------------------
    f"FROM python:3.12-slim\nENV REDIS_PASSWORD={_pw(16)}\nRUN pip install -r requirements.txt",
    f"ARG NPM_TOKEN=npm_{_s(_ALNUM, 36)}\nRUN npm ci",
    f"jobs:\n  scan:\n    runs-on: ubuntu-latest\n    env:\n      SONAR_TOKEN: squ_{_s(_HEX, 40)}",
    f'db_username = "app"\ndb_password = "{_pw(16)}"\nregion = "eu-west-1"',
    f"postgresql:\n  auth:\n    username: app\n    password: {_pw(14)}\n    database: yullu",
    f"ansible_user: deploy\nansible_become_pass: {_pw(13)}",
    f'import openai\nopenai.api_key = "sk-{_s(_ALNUM, 48)}"\nopenai.models.list()',
    f"s3 = boto3.client('s3', aws_access_key_id='AKIA{_s(_UP + '234567', 16)}', "
    f"aws_secret_access_key='{_s(_B64, 40)}')",
    f"CREATE USER reporter WITH PASSWORD '{_pw(12)}';",
    f"ALTER USER scott IDENTIFIED BY {_s(_ALNUM, 10)};",
    f"Server=tcp:sql01.corp.local,1433;Database=Sales;User Id=sa;Password={_pw(14)};TrustServerCertificate=True",
    f"jdbc:oracle:thin:scott/{_s(_ALNUM, 10)}@//ora-prod:1521/ORCLPDB1",
    f"mongodb+srv://admin:{_s(_ALNUM, 20)}@cluster0.ab12c.mongodb.net/?retryWrites=true",
    f"REDIS_URL=redis://:{_s(_ALNUM, 24)}@cache.internal:6379/0",
    f"CELERY_BROKER_URL=amqp://yullu:{_s(_ALNUM, 16)}@rabbit:5672/prod",
    f"spring.datasource.password={_pw(14)}",
    '{"AzureAd": {"ClientId": "0b3c9c1e-2a8f-4b8e-9a0d-3f7b7c1d2e4f", "ClientSecret": "'
    + _s(_URL, 8)
    + "~"
    + _s(_URL, 31)
    + '"}}',
    "machine api.heroku.com\n  login ops@example.com\n  password "
    f"{_s(_HEX, 8)}-{_s(_HEX, 4)}-{_s(_HEX, 4)}-{_s(_HEX, 4)}-{_s(_HEX, 12)}",
    f"db.internal:5432:*:app:{_s(_ALNUM, 20)}",
    f"git remote set-url origin https://oauth2:glpat-{_s(_URL, 20)}@gitlab.com/yullu/core.git",
    f"pip install --extra-index-url https://__token__:{_s(_URL, 32)}@pypi.internal.example.com/simple yullu-private",
    f"r = redis.Redis(host='cache', port=6379, password='{_pw(14)}')",
    "Authorization: Basic " + base64.b64encode(f"deploy:{_pw(12)}".encode()).decode(),
    # --- other languages -----------------------------------------------------------------
    f"le mot de passe du serveur de recette est {_pw(12)}",
    f"la contraseña de la base de datos de producción es {_pw(12)}",
    f"Das Passwort für den Router lautet {_pw(12)}",
    f"a senha do wifi do escritório é {_pw(12)}",
    f"サーバーのパスワードは {_pw(12)} です",
    f"数据库密码是 {_pw(12)}",
    f"пароль от админки: {_pw(12)}",
    f"het wachtwoord van de NAS is {_pw(12)}",
    f"la password del database di staging è {_pw(12)}",
    f"kartı {_groups(_CARD2)} son kullanma 11/27 cvc {_s(_DIG, 3)}",
    f"amex {_AMEX[:4]} {_AMEX[4:10]} {_AMEX[10:]} exp 03/29 CID {_s(_DIG, 4)}",
    "Private-Lines: 1\nPuTTY-User-Key-File-3: ssh-ed25519\nPrivate-MAC: " + _s(_HEX, 64),
]

_SHA = _s(_HEX, 40)
_UUID = f"{_s(_HEX, 8)}-{_s(_HEX, 4)}-4{_s(_HEX, 3)}-a{_s(_HEX, 3)}-{_s(_HEX, 12)}"
_SESSION = f"{_s(_HEX, 8)}-{_s(_HEX, 4)}-4{_s(_HEX, 3)}-b{_s(_HEX, 3)}-{_s(_HEX, 12)}"

HELD_OUT_13_KEEP_TEXTS: list[str] = [
    "Auth uses OAuth2 client credentials; the client secret lives in Vault at secret/data/billing/oauth.",
    "Set STRIPE_SECRET_KEY in .env before running the payment tests; never commit it.",
    "API_KEY=<your-key-here>",
    "export OPENAI_API_KEY=$(op read op://dev/openai/api-key)",
    "postgresql:\n  auth:\n    password: ${DB_PASSWORD}",
    "token: {{ .Values.ciToken }}",
    f"deployed commit {_SHA} to staging",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 is the digest of the empty layer",
    f"the request id in the 502 was {_UUID}",
    f"session:{_SESSION}",
    "upgraded psycopg to 3.2.1 and Django to 5.2.4",
    "password policy: at least 12 characters, one digit, one symbol, no reuse of the last 5",
    "call the on-call phone at +1 415 555 0134 if the pager is silent",
    "the release is planned for 2024-06-12",
    "Postgres listens on 5432, Redis on 6379, RabbitMQ on 5672",
    "the bastion host is at 10.0.4.12",
    "the client gets HTTP 401 when the token has expired; refresh and retry once",
    "order #448812 was refunded twice, see ticket PAY-1423",
    "the retro is in room 4.12 on the fourth floor",
    "pin requests to 2.31.0 until the proxy bug is fixed",
    "the door to the server room sticks, push it hard",
    "the office wifi network is called Yullu-Guest",
    "rotate the prod database credentials every 90 days",
    "run `gh auth login`; the token goes to the OS keychain, not to a file",
    "a JWT has three parts: header, payload and signature; we verify them with RS256",
    "AWS access key ids start with AKIA; never paste one in a ticket",
    "CREATE USER reporter WITH PASSWORD :'reporter_pw';  -- psql variable, set from the vault",
    "mongodb://localhost:27017/test",
    "postgres://app@db:5432/orders uses peer auth inside the container",
    "REDIS_URL=redis://redis:6379/0",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFx3m9JqG4yWwQb1d7rV0k2pS8tT6uHcZ9aL5nE3oR7y alice@laptop",
    "kubectl create secret generic db --from-literal=password=$DB_PASSWORD",
    "the 2FA backup codes are in the team 1Password vault under 'GitHub org'",
    "Build 4.12.0-rc.3 failed on arm64 with exit code 137",
    "the CVV field must accept 3 digits, or 4 for Amex",
    "Stripe's test card 4242 4242 4242 4242 works in test mode with any future date",
    "commit message: remove hard-coded password from settings.py",
    "2024-05-01 WARN auth.login failed for user=ops reason=bad_password",
    "KeyError: 'DATABASE_PASSWORD' -- the env var is missing in the worker container",
    "ENV PYTHONUNBUFFERED=1",
    "ARG NPM_TOKEN",
    "      token: ${{ secrets.GITHUB_TOKEN }}",
    "password = var.db_password",
    "la contraseña debe tener al menos 12 caracteres",
    "das Passwort wird im Tresor des Teams gespeichert, nicht im Wiki",
    "the parts list says bin 24-61-07 on aisle 3",
    "ISBN 978-0-13-468599-1 is the refactoring book",
    "the lockfile hash changed after npm install; commit package-lock.json",
    "the GPG key fingerprint is 4AEE 18F8 3AFD EB23",
    "the bcrypt hash in the fixture starts with $2b$12$ and has 60 characters",
    "the password reset email expires after 30 minutes",
    "the meeting id is 812 3345 6789, the passcode is in the calendar invite",
    "Run ansible-vault encrypt group_vars/prod/vault.yml before committing",
    "the safe deploy window is 14:00 to 16:00 UTC",
    "the TOTP secret is base32 and the codes are 6 digits every 30 seconds",
    "invoice INV-2024-0042 was paid on 2024-03-02",
    "tracking number 1Z999AA10123456784 for the replacement disk",
    "We hash passwords with argon2id (m=65536, t=3, p=4) in accounts/hashers.py",
    "the door code changes every Monday; ask reception for it",
    "error E1102: key not found in the vault path secret/data/ci/npm",
]


HELD_OUT_13: list[Form] = [(f"s13 {i + 1}", fixed(t)) for i, t in enumerate(HELD_OUT_13_TEXTS)]
HELD_OUT_13_KEEP: list[Form] = [(f"k13 keep {i + 1}", fixed(t)) for i, t in enumerate(HELD_OUT_13_KEEP_TEXTS)]

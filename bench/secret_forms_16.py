"""Set sixteen: secret forms written before reading the scanner or the earlier sets' texts.

HELD_OUT_16 are texts a developer might paste into an assistant's memory that carry a secret; every one
must be refused. HELD_OUT_16_KEEP are ordinary texts that sit near secrets (auth docs, hashes named as
hashes, ids, placeholders, policies, ports, codes that are not secrets) and must be stored.

The random values are drawn from one seeded generator at import, so the texts are the same on every run
and no live-looking credential sits in the source as a literal. The set leans on what the earlier sets had
least of: secrets told as a teammate's memory, in commit messages, log lines, stack traces and build files,
in URLs (query strings, signed URLs, git remotes), in dotfiles (.netrc, .pgpass, .npmrc, pip.conf), in
headers and cookies, split over lines, escaped in JSON, in YAML block scalars, fenced or tabled markdown, and
in languages other than English.
"""

from __future__ import annotations

import base64
import json
import random

from bench.secret_fill import fixed
from bench.secret_forms_9 import Form

_RNG = random.Random(16_016)

_LOWER = "abcdefghijklmnopqrstuvwxyz"
_UPPER = _LOWER.upper()
_DIGITS = "0123456789"
_ALNUM = _LOWER + _UPPER + _DIGITS
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_B64URL = _ALNUM + "-_"
_B32 = _UPPER + "234567"
_SYMBOLS = "!#$%&*@?"


def _r(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _password(n: int = 12) -> str:
    """A typed password: letters, digits and a symbol or two, the way people make them to pass a policy."""
    body = list(_r(_ALNUM, n - 2) + _r(_DIGITS, 1) + _r(_SYMBOLS, 1))
    _RNG.shuffle(body)
    return _r(_UPPER, 1) + "".join(body)


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _jwt() -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"sub": str(_RNG.randint(10**6, 10**7)), "role": "service", "iat": 1_795_000_000}
    return f"{header}.{_b64url(json.dumps(claims).encode())}.{_r(_B64URL, 43)}"


def _luhn(prefix: str, length: int) -> str:
    digits = prefix + _r(_DIGITS, length - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return digits + str((10 - total % 10) % 10)


def _pem(kind: str, lines: int) -> str:
    body = "\n".join(_r(_B64, 64) for _ in range(lines))
    return f"-----BEGIN {kind}-----\n{body}\n{_r(_B64, 24)}==\n-----END {kind}-----"


def _uuid() -> str:
    h = _r(_HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


_SEED_WORDS = [
    "orbit",
    "lumber",
    "velvet",
    "canyon",
    "pistol",
    "harvest",
    "tumble",
    "oyster",
    "gravity",
    "meadow",
    "salmon",
    "frozen",
    "copper",
    "ladder",
    "whisper",
    "glance",
    "rescue",
    "thunder",
    "bamboo",
    "marble",
    "jungle",
    "zebra",
    "pencil",
    "voyage",
]


def _seed_phrase(n: int) -> str:
    words = list(_SEED_WORDS)
    _RNG.shuffle(words)
    return " ".join(words[:n])


_CARD = _luhn("4", 16)
_CARD_SPACED = " ".join(_CARD[i : i + 4] for i in range(0, 16, 4))
_AMEX = _luhn("37", 15)
_BASIC = base64.b64encode(f"ci-bot:{_password(13)}".encode()).decode()
_DOCKER_AUTH = base64.b64encode(f"acme-bot:ghp_{_r(_ALNUM, 36)}".encode()).decode()
_AWS_ID = "AKIA" + _r(_UPPER + "234567", 16)

# (name, text). Names say where the secret sits; they are for reading results, not for the scanner.
SECRET_TEXTS: list[tuple[str, str]] = [
    # --- the plainest, as pasted ---
    ("dotenv stripe", f"STRIPE_SECRET_KEY=sk_live_{_r(_ALNUM, 24)}"),
    ("export openai", f'export OPENAI_API_KEY="sk-proj-{_r(_B64URL, 48)}"'),
    ("prose staging password", f"the staging password is {_password(14)}"),
    ("api key colon", f"api key: {_r(_HEX, 32)}"),
    ("curl -u", f"curl -u admin:{_password(11)} https://jenkins.internal.acme.io/api/json?pretty=true"),
    ("curl bearer jwt", f'curl -H "Authorization: Bearer {_jwt()}" https://api.acme.io/v2/orders'),
    ("postgres dsn", f"postgresql://billing:{_r(_ALNUM, 14)}@db-prod.internal:5432/billing"),
    (
        "kubeconfig token",
        "users:\n- name: ci-deployer\n  user:\n    token: " + f"{_r(_B64URL, 36)}.{_r(_B64URL, 120)}.{_r(_B64URL, 86)}",
    ),
    ("docker config auth", json.dumps({"auths": {"ghcr.io": {"auth": _DOCKER_AUTH}}})),
    (
        "aws credentials file",
        f"[prod]\naws_access_key_id = {_AWS_ID}\naws_secret_access_key = {_r(_B64, 40)}",
    ),
    ("github pat", f"my github token is ghp_{_r(_ALNUM, 36)}"),
    ("gitlab pat", f"GITLAB_TOKEN=glpat-{_r(_B64URL, 20)}"),
    ("slack bot", f"slack bot token xoxb-{_r(_DIGITS, 12)}-{_r(_DIGITS, 13)}-{_r(_ALNUM, 24)}"),
    (
        "slack webhook",
        f"alerts go to https://hooks.slack.com/services/T{_r(_UPPER + _DIGITS, 10)}/B{_r(_UPPER + _DIGITS, 10)}/"
        f"{_r(_ALNUM, 24)}",
    ),
    ("anthropic key", f"ANTHROPIC_API_KEY=sk-ant-api03-{_r(_B64URL, 93)}AA"),
    ("huggingface", f"hf token for the private models: hf_{_r(_ALNUM, 34)}"),
    ("twilio", f"TWILIO_ACCOUNT_SID=AC{_r(_HEX, 32)}\nTWILIO_AUTH_TOKEN={_r(_HEX, 32)}"),
    ("sendgrid", f"SENDGRID_API_KEY=SG.{_r(_B64URL, 22)}.{_r(_B64URL, 43)}"),
    ("npmrc token", f"//registry.npmjs.org/:_authToken=npm_{_r(_ALNUM, 36)}"),
    ("pypi token", f"[pypi]\n  username = __token__\n  password = pypi-AgEIcHlwaS5vcmc{_r(_B64URL, 120)}"),
    ("pem rsa", _pem("RSA PRIVATE KEY", 8)),
    ("openssh key", _pem("OPENSSH PRIVATE KEY", 6)),
    ("totp uri", f"otpauth://totp/Acme:alice@acme.io?secret={_r(_B32, 32)}&issuer=Acme&digits=6"),
    ("card cvv", f"company card {_CARD_SPACED} exp 09/28 cvv {_r(_DIGITS, 3)}"),
    ("seed phrase 12", f"ledger recovery phrase: {_seed_phrase(12)}"),
    ("datadog keys", f"DD_API_KEY={_r(_HEX, 32)}\nDD_APP_KEY={_r(_HEX, 40)}"),
    # --- told as a memory a teammate would store ---
    ("memory wifi", f"remember: the wifi in the office is Orchard-5G and the password is {_password(12)}"),
    ("memory 1password master", "the shared 1Password master is Quiet Harbor Lantern Ninety Four"),
    ("memory rotated creds", f"prod db creds rotated, new ones are svc_app / {_password(12)}"),
    ("memory grafana", f"Ops note: the Grafana admin login is admin / {_password(11)}"),
    ("memory gpg passphrase", "my passphrase for the release gpg key is 'seven yellow kites over Dunmore'"),
    ("memory bank pin", f"my bank PIN is {_r(_DIGITS, 4)}, don't forget it"),
    ("memory sim pin", f"SIM PIN for the on-call phone: {_r(_DIGITS, 4)}"),
    ("memory pw lowercase", f"jira service account pw {_password(10)}"),
    ("memory guest words", "the guest account password is Blue Canyon Pickle Radio"),
    ("memory safe code", "the safe in the server room is 24-61-07"),
    ("memory door code", "door code for the loading dock: 7 3 9 1 #"),
    ("memory alarm", "alarm code is 5-8-2-0, disarm within 30 seconds"),
    ("memory gate", "the garage gate opens with 1984 star"),
    ("memory nato", "vpn password is Papa Seven Kilo Tango Nine Echo Romeo Two"),
    (
        "memory apple app password",
        f"app-specific password for the CI apple id: {'-'.join(_r(_LOWER, 4) for _ in range(4))}",
    ),
    ("memory recovery codes", "GitHub recovery codes: " + " ".join(f"{_r(_HEX, 5)}-{_r(_HEX, 5)}" for _ in range(6))),
    ("memory seed 24", f"cold wallet seed: {_seed_phrase(24)}"),
    ("memory amex", f"Amex {_AMEX[:4]} {_AMEX[4:10]} {_AMEX[10:]} exp 11/27 CID {_r(_DIGITS, 4)}"),
    # --- in developer artefacts ---
    ("commit message", f'git commit -m "temp: use SMTP pass {_password(10)} until the relay is fixed"'),
    ("log line password", f"2026-11-02T10:14:07Z INFO auth.login user=deploy password={_password(10)} ok"),
    (
        "log line url key",
        f"WARN upstream failed url=https://api.weather.example/v1/forecast?city=Oslo&apikey={_r(_HEX, 32)} status=401",
    ),
    (
        "stack trace dsn",
        'psycopg.OperationalError: connection to server at "10.0.3.7", port 5432 failed: FATAL: password '
        f"authentication failed for user \"etl\" (dsn='host=10.0.3.7 user=etl password={_password(10)}')",
    ),
    (
        "traceback local",
        'Traceback (most recent call last):\n  File "/app/pay.py", line 41, in charge\n'
        f"    client = Stripe(api_key='sk_live_{_r(_ALNUM, 24)}')\nstripe.error.AuthenticationError",
    ),
    ("dockerfile env", f"FROM python:3.12-slim\nENV DB_PASSWORD={_password(12)}\nRUN pip install -r requirements.txt"),
    ("dockerfile arg", f"ARG NPM_TOKEN=npm_{_r(_ALNUM, 36)}\nRUN npm ci"),
    ("actions yaml", f"jobs:\n  scan:\n    env:\n      SONAR_TOKEN: squ_{_r(_HEX, 40)}"),
    ("tfvars", f'region      = "eu-west-1"\ndb_password = "{_password(12)}"'),
    ("helm values", f'postgresql:\n  auth:\n    username: app\n    postgresPassword: "{_password(11)}"'),
    ("ansible plaintext", f"ansible_user: deploy\nansible_become_password: {_password(12)}"),
    ("jupyter cell", f'In [3]: import openai\n       openai.api_key = "sk-{_r(_ALNUM, 48)}"'),
    ("sql create user", f"CREATE USER reporting WITH PASSWORD '{_password(11)}';"),
    ("sql alter role", f"ALTER ROLE app_rw PASSWORD '{_password(12)}' VALID UNTIL '2027-01-01';"),
    (
        "mssql",
        "Server=tcp:sql-prod.database.windows.net,1433;Database=crm;User ID=crmadmin;"
        f"Password={_password(12)};Encrypt=True;",
    ),
    ("oracle sqlplus", f"sqlplus scott/{_password(10)}@//ora-prod.internal:1521/ORCL"),
    ("mongo srv", f"mongodb+srv://analytics:{_r(_ALNUM, 12)}@cluster0.ab1cd.mongodb.net/events?retryWrites=true"),
    ("redis url", f"REDIS_URL=redis://:{_r(_ALNUM, 16)}@cache.internal:6379/0"),
    ("amqp url", f"amqp://orders:{_r(_ALNUM, 14)}@rabbit.internal:5672/prod"),
    (
        "gcp service account",
        json.dumps({"type": "service_account", "private_key_id": _r(_HEX, 40), "private_key": _pem("PRIVATE KEY", 3)}),
    ),
    ("azure client secret", f"AZURE_CLIENT_SECRET={_r(_ALNUM, 3)}8Q~{_r(_ALNUM + '~._-', 34)}"),
    ("stripe webhook", f"whsec_{_r(_ALNUM, 32)} is the signing secret for the prod endpoint"),
    ("shopify", f"SHOPIFY_ADMIN_TOKEN=shpat_{_r(_HEX, 32)}"),
    ("telegram bot", f"bot token {_r(_DIGITS, 10)}:AA{_r(_B64URL, 33)}"),
    ("digitalocean", f"DIGITALOCEAN_TOKEN=dop_v1_{_r(_HEX, 64)}"),
    ("vault token", f"VAULT_TOKEN=hvs.{_r(_B64URL, 24)}"),
    ("age key", f"AGE-SECRET-KEY-1{_r(_UPPER.replace('B', '').replace('I', '').replace('O', '') + '023456789', 58)}"),
    ("wireguard", f"[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {_r(_B64, 43)}="),
    ("django secret", f"SECRET_KEY = 'django-insecure-{_r(_LOWER + _DIGITS + '!@#$%^&*(-_=+)', 50)}'"),
    ("google api key", f'const firebaseConfig = {{ apiKey: "AIza{_r(_B64URL, 35)}", projectId: "acme-prod" }};'),
    ("sshpass", f"sshpass -p '{_password(10)}' ssh deploy@10.0.0.5"),
    ("mysql -p", f"mysql -u root -p{_password(10)} -h db.internal shop"),
    ("powershell", f'$pw = ConvertTo-SecureString "{_password(11)}" -AsPlainText -Force'),
    ("spring properties", f"spring.datasource.username=app\nspring.datasource.password={_password(12)}"),
    # --- not English ---
    ("french", f"le mot de passe du serveur de staging est {_password(11)}"),
    ("german", f"Das Passwort für den Router lautet {_password(11)}"),
    ("spanish", "la contraseña del wifi es naranja-limon-77"),
    ("japanese", f"本番DBのパスワードは {_password(12)} です"),
    ("portuguese", f"a senha do admin é {_password(10)}"),
    ("chinese", f"测试服务器的密码是 {_password(11)}"),
    ("russian", f"пароль от роутера: {_password(10)}"),
    # --- not prose, not config: URLs, dotfiles, headers, splits, escapes, markdown ---
    ("url api_key", f"https://maps.googleapis.com/maps/api/geocode/json?address=Oslo&key=AIza{_r(_B64URL, 35)}"),
    ("url token param", f"dashboard link: https://grafana.acme.io/d/x1?orgId=1&auth_token={_r(_ALNUM, 40)}"),
    (
        "s3 presigned",
        f"https://acme-exports.s3.amazonaws.com/q3.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={_AWS_ID}"
        f"%2F20261127%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261127T101500Z&X-Amz-Expires=604800"
        f"&X-Amz-SignedHeaders=host&X-Amz-Signature={_r(_HEX, 64)}",
    ),
    (
        "gcs signed",
        "https://storage.googleapis.com/acme-backups/db.dump?X-Goog-Algorithm=GOOG4-RSA-SHA256"
        "&X-Goog-Credential=exporter%40acme-prod.iam.gserviceaccount.com%2F20261127%2Fauto%2Fstorage%2Fgoog4_request"
        "&X-Goog-Date=20261127T101500Z&X-Goog-Expires=86400&X-Goog-SignedHeaders=host"
        f"&X-Goog-Signature={_r(_HEX, 512)}",
    ),
    (
        "azure sas",
        "https://acmelogs.blob.core.windows.net/raw?sv=2022-11-02&ss=b&srt=sco&sp=rwdlac&se=2027-01-01T00:00:00Z"
        f"&st=2026-11-01T00:00:00Z&spr=https&sig={_r(_ALNUM, 43)}%3D",
    ),
    (
        "git remote token",
        f"git remote set-url origin https://x-access-token:ghs_{_r(_ALNUM, 36)}@github.com/acme/api.git",
    ),
    ("git remote oauth2", f"git clone https://oauth2:glpat-{_r(_B64URL, 20)}@gitlab.com/acme/infra.git"),
    ("netrc", f"machine api.heroku.com\n  login ops@acme.io\n  password {_uuid()}"),
    ("netrc one line", f"machine nexus.acme.io login deploy password {_password(12)}"),
    ("pgpass", f"db-prod.internal:5432:billing:billing_rw:{_password(12)}"),
    (
        "npmrc github",
        f"@acme:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken=ghp_{_r(_ALNUM, 36)}",
    ),
    ("pip conf", f"[global]\nextra-index-url = https://deploy:{_r(_ALNUM, 16)}@nexus.acme.io/repository/pypi/simple"),
    ("cookie header", f"Cookie: csrftoken={_r(_ALNUM, 32)}; sessionid={_r(_LOWER + _DIGITS, 32)}"),
    ("set-cookie", f"Set-Cookie: __Secure-next-auth.session-token={_jwt()}; Path=/; HttpOnly; Secure"),
    ("basic header", f"Authorization: Basic {_BASIC}"),
    ("split two lines", f"the root password for the NAS is\n{_password(12)}"),
    ("split key halves", f"new jenkins api token (both lines, no space):\n11{_r(_HEX, 15)}\n{_r(_HEX, 17)}"),
    ("json escaped", '{"user": "svc", "password": "' + _password(8) + "\\u0021" + _r(_ALNUM, 4) + '"}'),
    (
        "json escaped slash",
        '{"client_id": "acme-web", "client_secret": "' + _r(_ALNUM, 12) + "\\/" + _r(_ALNUM, 14) + '"}',
    ),
    ("yaml block scalar", f"smtp:\n  host: smtp.acme.io\n  password: |\n    {_password(13)}\n"),
    ("fenced env", f"```\nDATABASE_URL=postgres://app:{_r(_ALNUM, 14)}@db:5432/app\n```"),
    (
        "markdown table",
        "| service | user | password |\n|---|---|---|\n"
        f"| grafana | admin | {_password(10)} |\n| minio | root | {_password(12)} |",
    ),
    ("wifi qr", f"WIFI:T:WPA;S:AcmeGuest;P:{_password(10)};;"),
    ("git credentials store", f"https://deploy-bot:ghp_{_r(_ALNUM, 36)}@github.com"),
]

KEEP_TEXTS: list[tuple[str, str]] = [
    ("auth doc bearer", "Auth docs: pass the token in the Authorization header as `Bearer <token>`."),
    ("basic doc", "Authorization: Basic <base64 of user:pass> is only accepted over TLS"),
    ("bcrypt named", "the user's bcrypt hash is $2b$12$" + _r(_ALNUM + "./", 53) + " (cost 12)"),
    ("sha256 tarball", f"SHA-256 of the release tarball: {_r(_HEX, 64)}"),
    ("md5 checksum", "md5 checksum d41d8cd98f00b204e9800998ecf8427e is the empty file"),
    ("commit sha", f"commit {_r(_HEX, 40)} fixed the login redirect loop"),
    ("request uuid", f"request id {_uuid()} failed with 502 at the load balancer"),
    ("config key no value", "set OPENAI_API_KEY in your shell before running the integration tests"),
    ("vault path", "the billing db secret lives at vault path secret/data/prod/billing/db"),
    ("placeholder", "API_KEY=<your-key-here>"),
    ("actions reference", "password: ${{ secrets.DB_PASSWORD }}"),
    ("env reference", "kubectl create secret generic db --from-literal=password=$DB_PASSWORD"),
    ("version", "version 2.14.3-rc.1 shipped on 2026-11-03"),
    ("policy", "Passwords must be at least 12 characters with one digit and one symbol; rotate every 90 days."),
    ("phone", "Call the front desk at +1 415 555 0132 for badge access"),
    ("date time", "deploy window is 2026-12-04 22:00 UTC, rollback by 23:30"),
    ("ports", "Postgres listens on port 5432 and pgbouncer on 6432"),
    ("ip", "the NAT gateway IP is 203.0.113.17"),
    ("error code", "error code E4012 means the token expired; refresh it and retry"),
    ("order number", "order #558-2291-0043 was refunded on Monday"),
    ("room number", "the standup is in room 4.12 on the fourth floor"),
    ("session tag", f"session:{_uuid()}"),
    ("hex id", f"memory {_r(_HEX, 16)} superseded the old deploy notes"),
    ("ssh public key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_r(_B64, 43)} alice@laptop"),
    ("wifi name only", "The guest wifi network is called AcmeGuest; ask reception for the password"),
    ("safe no code", "the safe in the server room holds the backup tapes"),
    ("git remote ssh", "git remote add origin git@github.com:acme/api.git"),
    ("url query harmless", "https://github.com/acme/api/pull/4312/files?diff=split&w=1"),
    ("url search", "https://duckduckgo.com/?q=token+rotation+best+practice&ia=web"),
    ("presign doc", "pre-signed URLs expire after X-Amz-Expires seconds; we use 3600"),
    ("netrc doc", ".netrc holds machine, login and password fields; chmod 600 it"),
    ("pgpass doc", "`.pgpass` lines are hostname:port:database:username:password"),
    ("jwt header doc", 'the JWT header {"alg":"HS256","typ":"JWT"} is base64url encoded, not encrypted'),
    ("docker login stdin", "docker login ghcr.io -u acme-bot --password-stdin < token.txt"),
    ("totp doc", "We use TOTP (RFC 6238) with 30-second steps and 6 digits"),
    ("card last four", "card ending in 4242 was charged $19.00 on the 3rd"),
    ("stripe prefix doc", "Stripe test keys start with sk_test_ and live keys with sk_live_"),
    ("helm existing secret", "the Helm chart reads postgresPassword from the existing secret `pg-auth`"),
    ("ansible vault doc", "ansible-vault encrypt group_vars/prod/vault.yml before committing"),
    ("terraform sensitive", "Terraform: mark db_password as sensitive = true in variables.tf"),
    ("french policy", "le mot de passe doit contenir au moins 12 caractères"),
    ("german policy", "Das Passwort wird alle 90 Tage geändert."),
    ("jupyter harmless", "In [4]: df.groupby('region').sum()"),
    ("log harmless", "2026-11-02T10:14:07Z INFO auth.login user=deploy ok duration_ms=41"),
    (
        "trace harmless",
        'File "/app/auth.py", line 88, in login\n    raise InvalidToken("token expired")\nInvalidToken: token expired',
    ),
    ("commit harmless", "fix: rotate leaked Slack token and purge it from history"),
    ("pin pad", "the PIN pad at the entrance was replaced on Tuesday"),
    ("ticket", "ticket JIRA-4821: password reset emails land in spam"),
    ("mongo format doc", "Mongo connection string format: mongodb+srv://<user>:<password>@cluster/db"),
    ("redis no password", "REDIS_URL=redis://cache.internal:6379/0"),
    ("base64 hello", "base64 of hello world is aGVsbG8gd29ybGQ="),
    ("ports table", "| service | port |\n|---|---|\n| grafana | 3000 |\n| minio | 9000 |"),
    ("cvv doc", "the CVV is the three digits on the back of the card"),
    ("bip39 doc", "BIP39 seed phrases have 12 or 24 words from a 2048-word list"),
    ("recovery location", "Our recovery codes are stored in the team vault under Ops/GitHub"),
    ("aws region", "export AWS_REGION=eu-west-1"),
    ("aws profile", "export AWS_PROFILE=prod-readonly"),
    ("model id", "embedding model is sentence-transformers/all-MiniLM-L6-v2"),
    ("npm package", "pin @acme/ui@4.2.1 until the button regression is fixed"),
    ("sql create user no pw", "CREATE USER reporting; GRANT SELECT ON ALL TABLES IN SCHEMA public TO reporting;"),
    ("door directions", "The door to room 3.07 is on the left after the lifts"),
    ("rng seed", "the seed for the test RNG is 1616 so the fixtures are stable"),
    ("wifi qr doc", "WIFI: QR codes hold T (auth type), S (SSID) and P (password) fields"),
    ("cookie names", "Django sets the sessionid and csrftoken cookies; SESSION_COOKIE_SECURE is on"),
    ("pip conf no creds", "[global]\nindex-url = https://pypi.org/simple\ntimeout = 30"),
    ("fenced harmless", "```\nmake test TEST_HOME=/tmp/th\n```"),
    ("yaml block harmless", "description: |\n  Stores memories for coding assistants.\n  Searchable by meaning."),
    ("spanish doc", "la contraseña se cambia cada tres meses"),
    ("japanese doc", "パスワードは12文字以上にしてください"),
]


HELD_OUT_16: list[Form] = [(f"s16 {name}", fixed(text)) for name, text in SECRET_TEXTS]
HELD_OUT_16_KEEP: list[Form] = [(f"k16 keep {name}", fixed(text)) for name, text in KEEP_TEXTS]

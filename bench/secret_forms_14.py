"""Held-out set fourteen: secret forms and the ordinary texts beside them.

Written before reading memories/secrets/ or the earlier sets. Every value is drawn from a
seeded generator (random.Random(1714)), with the length and alphabet its issuer uses, so a
run is reproducible and no real credential is in the repository.
"""

from __future__ import annotations

import base64
import random
import string

from bench.secret_fill import fixed
from bench.secret_forms_9 import Form

_R = random.Random(1714)
_LOWER = string.ascii_lowercase
_UPPER = string.ascii_uppercase
_DIGITS = string.digits
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"


def _pick(alphabet: str, n: int) -> str:
    return "".join(_R.choice(alphabet) for _ in range(n))


def _password(n: int = 14) -> str:
    """A human-made-looking password: letters, digits and one or two symbols, all classes present."""
    body = [_R.choice(_UPPER), _R.choice(_LOWER), _R.choice(_DIGITS), _R.choice("!#%&*+-=?@^_")]
    body += [_R.choice(_ALNUM) for _ in range(n - len(body))]
    _R.shuffle(body)
    return "".join(body)


def _luhn(prefix: str, length: int) -> str:
    digits = prefix + _pick(_DIGITS, length - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            d -= 9 if d > 9 else 0
        total += d
    return digits + str((10 - total % 10) % 10)


def _group(value: str, size: int, sep: str = " ") -> str:
    return sep.join(value[i : i + size] for i in range(0, len(value), size))


def _amex() -> tuple[str, str, str]:
    number = _luhn("37", 15)
    return number[:4], number[4:10], number[10:]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _jwt() -> str:
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = f'{{"sub":"{_pick(_HEX, 12)}","role":"service_role","iat":17{_pick(_DIGITS, 8)}}}'
    body = base64.urlsafe_b64encode(claims.encode()).decode().rstrip("=")
    return f"{head}.{body}.{_pick(_URLSAFE, 43)}"


def _pem(label: str, lines: int) -> str:
    rows = [_pick(_B64, 64) for _ in range(lines)]
    return f"-----BEGIN {label}-----\n" + "\n".join(rows) + f"\n-----END {label}-----"


_WORDS = [
    "abandon",
    "ability",
    "able",
    "about",
    "above",
    "absent",
    "absorb",
    "abstract",
    "absurd",
    "abuse",
    "access",
    "accident",
    "account",
    "accuse",
    "achieve",
    "acid",
    "acoustic",
    "acquire",
    "across",
    "act",
    "action",
    "actor",
    "actress",
    "actual",
    "adapt",
    "add",
    "addict",
    "address",
    "adjust",
    "admit",
    "adult",
    "advance",
    "advice",
    "aerobic",
    "affair",
    "afford",
    "afraid",
    "again",
    "age",
    "agent",
    "agree",
    "ahead",
    "aim",
    "air",
    "airport",
    "aisle",
    "alarm",
    "album",
    "alcohol",
    "alert",
    "alien",
    "all",
    "alley",
    "allow",
    "almost",
    "alone",
    "alpha",
    "already",
    "also",
    "alter",
    "always",
    "amateur",
    "amazing",
    "among",
    "amount",
    "amused",
    "analyst",
    "anchor",
    "ancient",
    "anger",
    "angle",
    "angry",
    "animal",
    "ankle",
    "announce",
    "annual",
    "another",
    "answer",
    "antenna",
    "antique",
    "anxiety",
    "any",
    "apart",
    "apology",
    "appear",
    "apple",
    "approve",
    "april",
    "arch",
    "arctic",
]


def _seed_phrase(n: int) -> str:
    return " ".join(_R.choice(_WORDS) for _ in range(n))


# (name, text): each text holds one secret that must never be stored.
SECRET_TEXTS: list[tuple[str, str]] = [
    # --- the plainest forms ---
    ("env line", f"DATABASE_PASSWORD={_password(16)}"),
    ("export openai", f"export OPENAI_API_KEY=sk-proj-{_pick(_URLSAFE, 74)}T3BlbkFJ{_pick(_URLSAFE, 74)}"),
    ("staging password prose", f"the staging password is {_password(12)}"),
    ("api key colon", f"api key: {_pick(_HEX, 32)}"),
    ("curl -u", f"curl -u deploy:{_password(14)} https://ci.example.com/job/build/api/json"),
    ("curl bearer", f'curl -H "Authorization: Bearer {_pick(_URLSAFE, 40)}" https://api.internal.example/v1/jobs'),
    ("postgres dsn", f"postgres://app_rw:{_password(18)}@db-prod.internal:5432/orders"),
    (
        "kubeconfig token",
        "users:\n- name: admin@prod\n  user:\n    token: "
        + f"{_pick(_LOWER + _DIGITS, 6)}.{_pick(_LOWER + _DIGITS, 16)}",
    ),
    (
        "docker config.json",
        '{"auths": {"ghcr.io": {"auth": "' + _b64(f"ci-bot:{_password(16)}".encode()) + '"}}}',
    ),
    (
        "aws credentials file",
        f"[default]\naws_access_key_id = AKIA{_pick(_UPPER + '234567', 16)}\naws_secret_access_key = {_pick(_B64, 40)}",
    ),
    (
        "gcp service account",
        '{"type": "service_account", "project_id": "acme-prod", "private_key_id": "'
        + _pick(_HEX, 40)
        + '", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + _pick(_B64, 64)
        + "\\n"
        + _pick(_B64, 64)
        + '\\n-----END PRIVATE KEY-----\\n"}',
    ),
    (
        "azure storage connection",
        f"DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={_pick(_B64, 86)}==;"
        "EndpointSuffix=core.windows.net",
    ),
    ("github classic pat", f"ghp_{_pick(_ALNUM, 36)}"),
    (
        "github fine-grained pat",
        f"my token for the mirror job: github_pat_11{_pick(_UPPER + _DIGITS, 20)}_{_pick(_ALNUM, 59)}",
    ),
    ("gitlab pat", f"GITLAB_TOKEN=glpat-{_pick(_URLSAFE, 20)}"),
    ("slack bot token", f"SLACK_BOT_TOKEN=xoxb-{_pick(_DIGITS, 13)}-{_pick(_DIGITS, 13)}-{_pick(_ALNUM, 24)}"),
    (
        "slack webhook",
        f"alerts go to https://hooks.slack.com/services/T{_pick(_UPPER + _DIGITS, 10)}/B{_pick(_UPPER + _DIGITS, 10)}/"
        f"{_pick(_ALNUM, 24)}",
    ),
    ("stripe live secret", f"stripe.api_key = 'sk_live_51{_pick(_ALNUM, 97)}'"),
    ("stripe webhook secret", f"STRIPE_WEBHOOK_SECRET=whsec_{_pick(_ALNUM, 32)}"),
    ("anthropic key", f"ANTHROPIC_API_KEY=sk-ant-api03-{_pick(_URLSAFE, 93)}AA"),
    ("huggingface token", f"huggingface-cli login --token hf_{_pick(_ALNUM, 34)}"),
    (
        "twilio",
        f"TWILIO_ACCOUNT_SID=AC{_pick(_HEX, 32)}\nTWILIO_AUTH_TOKEN={_pick(_HEX, 32)}",
    ),
    ("sendgrid", f"SENDGRID_API_KEY=SG.{_pick(_URLSAFE, 22)}.{_pick(_URLSAFE, 43)}"),
    ("datadog", f"DD_API_KEY={_pick(_HEX, 32)}"),
    ("npmrc", f"//registry.npmjs.org/:_authToken=npm_{_pick(_ALNUM, 36)}"),
    ("pypirc", f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{_pick(_URLSAFE, 150)}"),
    ("rsa pem", _pem("RSA PRIVATE KEY", 6)),
    ("openssh key", _pem("OPENSSH PRIVATE KEY", 5)),
    ("jwt alone", _jwt()),
    ("totp uri", f"otpauth://totp/Acme:ops@acme.io?secret={_pick(_B32, 32)}&issuer=Acme"),
    (
        "card with cvv",
        f"corp card {_group(_luhn('4532', 16), 4)} exp 09/28 cvv {_pick(_DIGITS, 3)}",
    ),
    ("seed phrase", f"wallet seed: {_seed_phrase(12)}"),
    # --- told as a memory a teammate would store ---
    ("remember wifi", f"remember: the wifi in the office is {_password(12)}"),
    ("shared 1password master", "the shared 1Password master is Granite Velvet Otter Sunrise 42"),
    ("rotated creds", f"prod db creds rotated, new ones are svc_billing / {_password(16)}"),
    ("jenkins admin fyi", f"FYI the Jenkins admin login is admin / {_password(12)} until SSO lands"),
    ("grafana viewer pw", f"pw for the grafana viewer account: {_password(11)}"),
    ("bastion ssh", f"ssh into the bastion as ubuntu@10.20.4.11, password {_password(13)}"),
    ("vpn psk", f"new vpn psk is {_pick(_ALNUM, 24)}"),
    ("router admin phonetic", "the router admin password is Papa Seven Kilo Echo Two Romeo Niner"),
    ("safe code dashes", "the safe is 24-61-07"),
    ("server room door", "door code for the server room: 4 8 1 9"),
    ("capitalised words passphrase", "the vault passphrase is Purple Lantern Dishwasher Nine"),
    ("ssh key passphrase", "passphrase for my id_ed25519 is tundra-mosaic-lantern-quiver"),
    ("bike cage padlock", "padlock on the bike cage is 381"),
    ("alarm spaced", "the alarm code is 5 5 2 9"),
    ("pin", f"my bank PIN is {_pick(_DIGITS, 4)}"),
    (
        "github recovery codes",
        "GitHub recovery codes: " + " ".join(f"{_pick(_HEX, 5)}-{_pick(_HEX, 5)}" for _ in range(8)),
    ),
    ("gmail app password", f"gmail app password for the alerts mailbox: {_group(_pick(_LOWER, 16), 4)}"),
    (
        "1password secret key",
        f"A3-{_pick(_UPPER + _DIGITS, 6)}-{_pick(_UPPER + _DIGITS, 6)}-"
        + "-".join(_pick(_UPPER + _DIGITS, 5) for _ in range(4)),
    ),
    ("bitlocker recovery", "BitLocker recovery key: " + "-".join(_pick(_DIGITS, 6) for _ in range(8))),
    ("english capitalised wifi", "guest wifi password: Quiet Harbor Falcon Lamp"),
    # --- in commits, logs, traces ---
    ("commit message", f"fix: rotate smtp creds (old pass was {_password(12)}, new one in vault)"),
    (
        "log line",
        f"2026-11-20T10:02:11Z INFO auth: login ok user=ops password={_password(12)} ip=10.0.3.4",
    ),
    (
        "stack trace dsn",
        'psycopg.OperationalError: connection to server at "10.0.0.5", port 5432 failed: FATAL:  password '
        'authentication failed for user "etl"\n'
        f"  conninfo: host=10.0.0.5 user=etl password={_password(15)} dbname=warehouse",
    ),
    (
        "debug headers log",
        f"DEBUG request headers: {{'Accept': 'application/json', 'X-Api-Key': '{_pick(_ALNUM, 32)}'}}",
    ),
    # --- config files ---
    ("dockerfile env", f"ENV REDIS_PASSWORD={_password(20)}"),
    ("dockerfile arg", f"ARG NPM_TOKEN=npm_{_pick(_ALNUM, 36)}"),
    (
        "github actions literal",
        f"jobs:\n  scan:\n    runs-on: ubuntu-latest\n    env:\n      SONAR_TOKEN: {_pick(_HEX, 40)}",
    ),
    ("tfvars", f'db_password = "{_password(18)}"'),
    (
        "terraform provider",
        f'provider "aws" {{\n  access_key = "AKIA{_pick(_UPPER + "234567", 16)}"\n'
        f'  secret_key = "{_pick(_B64, 40)}"\n}}',
    ),
    ("helm values", f"postgresql:\n  auth:\n    postgresPassword: {_password(16)}"),
    ("ansible vault plaintext", f"vault_mysql_root_password: {_password(16)}"),
    ("ansible become", f"web01 ansible_host=10.1.2.3 ansible_user=deploy ansible_become_pass={_password(12)}"),
    ("compose env", f"services:\n  db:\n    environment:\n      MYSQL_ROOT_PASSWORD: {_password(14)}"),
    ("k8s secret stringData", f"kind: Secret\nstringData:\n  password: {_password(16)}"),
    ("k8s secret data", "kind: Secret\ndata:\n  password: " + _b64(_password(16).encode())),
    ("spring properties", f"spring.datasource.password={_password(14)}"),
    ("wordpress", f"define( 'DB_PASSWORD', '{_password(16)}' );"),
    ("django secret key", "SECRET_KEY = 'django-insecure-" + _pick(_LOWER + _DIGITS + "!@#$%^&*(-_=+)", 50) + "'"),
    ("rails master key", f"config/master.key is {_pick(_HEX, 32)}"),
    ("wireguard", f"[Interface]\nPrivateKey = {_pick(_B64, 43)}=\nAddress = 10.8.0.2/24"),
    ("web.config", f'<add key="SmtpPassword" value="{_password(14)}" />'),
    (
        "maven settings",
        f"<server>\n  <id>nexus</id>\n  <username>ci</username>\n  <password>{_password(14)}</password>\n</server>",
    ),
    (
        "netrc heroku",
        "machine api.heroku.com\n  login me@acme.io\n  password "
        + f"{_pick(_HEX, 8)}-{_pick(_HEX, 4)}-{_pick(_HEX, 4)}-{_pick(_HEX, 4)}-{_pick(_HEX, 12)}",
    ),
    (
        "pip extra index",
        f"extra-index-url = https://__token__:glpat-{_pick(_URLSAFE, 20)}@gitlab.acme.io"
        "/api/v4/projects/12/packages/pypi/simple",
    ),
    # --- notebooks, code ---
    ("jupyter minio", f'client = Minio("s3.local:9000", access_key="analytics", secret_key="{_pick(_ALNUM, 40)}")'),
    ("requests auth tuple", f'resp = requests.get(url, auth=("svc-report", "{_password(13)}"))'),
    ("js client apikey", f'const client = new Client({{ apiKey: "{_pick(_ALNUM, 40)}" }});'),
    # --- SQL and connection strings ---
    ("sql create user", f"CREATE USER reporting WITH PASSWORD '{_password(14)}';"),
    ("mysql alter user", f"ALTER USER 'app'@'%' IDENTIFIED BY '{_password(14)}';"),
    ("mssql", f"Server=tcp:sql01.corp.local,1433;Database=Payroll;User Id=payroll_app;Password={_password(16)};"),
    ("oracle sqlplus", f"sqlplus scott/{_password(12)}@//orahost:1521/ORCLPDB1"),
    ("oracle jdbc", f"jdbc:oracle:thin:hr/{_password(12)}@dbhost:1521:XE"),
    ("mongo srv", f"mongodb+srv://analytics:{_password(16)}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true"),
    ("redis url", f"REDIS_URL=redis://:{_pick(_ALNUM, 32)}@cache.internal:6379/0"),
    ("amqp url", f"amqp://celery:{_password(16)}@rabbit.internal:5672/prod"),
    # --- command lines ---
    ("pgpassword", f"PGPASSWORD={_password(14)} psql -h db.internal -U app app"),
    ("mysql -p", f"mysql -u root -p{_password(12)} -h 127.0.0.1 shop"),
    ("sshpass", f"sshpass -p '{_password(12)}' ssh deploy@10.0.4.2"),
    ("docker login", f"docker login -u ci -p {_password(16)} registry.acme.io"),
    ("net use", f"net use Z: \\\\fs01\\share /user:CORP\\svc_backup {_password(14)}"),
    ("git clone token", f"git clone https://acme-bot:ghp_{_pick(_ALNUM, 36)}@github.com/acme/billing.git"),
    ("java keystore flag", f"-Djavax.net.ssl.keyStorePassword={_password(12)}"),
    # --- vendor tokens ---
    ("shopify", f"SHOPIFY_ACCESS_TOKEN=shpat_{_pick(_HEX, 32)}"),
    ("google api key", f"maps key AIza{_pick(_URLSAFE, 35)}"),
    ("digitalocean", f"DIGITALOCEAN_TOKEN=dop_v1_{_pick(_HEX, 64)}"),
    ("vault token", f"VAULT_TOKEN=hvs.{_pick(_URLSAFE, 90)}"),
    ("telegram bot", f"bot token {_pick(_DIGITS, 10)}:AA{_pick(_URLSAFE, 33)}"),
    ("linear", f"LINEAR_API_KEY=lin_api_{_pick(_ALNUM, 40)}"),
    ("postman", f"PMAK-{_pick(_HEX, 24)}-{_pick(_HEX, 34)}"),
    ("age key", f"AGE-SECRET-KEY-1{_pick('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L'.upper(), 58)}"),
    ("openweather appid", f"https://api.openweathermap.org/data/2.5/weather?q=Paris&appid={_pick(_HEX, 32)}"),
    (
        "heroku api key env",
        "HEROKU_API_KEY=" + f"{_pick(_HEX, 8)}-{_pick(_HEX, 4)}-{_pick(_HEX, 4)}-{_pick(_HEX, 4)}-{_pick(_HEX, 12)}",
    ),
    ("cloudflare", f"CF_API_TOKEN={_pick(_URLSAFE, 40)}"),
    ("supabase service role", f"SUPABASE_SERVICE_ROLE_KEY={_jwt()}"),
    ("basic auth header", "Authorization: Basic " + _b64(f"admin:{_password(12)}".encode())),
    (
        "amex in prose",
        "use the team Amex {} {} {}, exp 11/27, CID {}".format(*_amex(), _pick(_DIGITS, 4)),
    ),
    ("seed 24 words", f"recovery phrase for the treasury ledger: {_seed_phrase(24)}"),
    # --- non-English prose ---
    ("german password", f"Das Passwort für den Staging-Server lautet {_password(12)}"),
    ("spanish wifi", f"la contraseña del wifi es {_password(11)}"),
    ("japanese db", f"本番DBのパスワードは {_password(12)} です"),
    ("french gate code", "le code du portail est 4471"),
    ("italian admin", f"la password dell'account admin è {_password(12)}"),
    ("portuguese token", f"o token da API de produção é {_pick(_ALNUM, 32)}"),
    ("french capitalised words", "mot de passe du routeur : Lune Bleue Sur Lyon"),
]

# Ordinary texts near secrets: each must be stored.
KEEP_TEXTS: list[str] = [
    # auth docs and config keys without values
    "Auth uses OAuth2 with PKCE; the access token lives 15 minutes and the refresh token 30 days.",
    "The token endpoint is /oauth/token; tokens are JWTs signed with RS256 and verified against the JWKS.",
    "DATABASE_PASSWORD, STRIPE_SECRET_KEY and OPENAI_API_KEY are read from the environment, never from settings.py.",
    "The API key is read from the env var OPENAI_API_KEY; never commit it.",
    "Set `api_key` in config.toml under [reasoner]; leave it empty to use the env var.",
    # vault paths, placeholders
    "Secrets live in Vault at secret/data/prod/billing/db; the app role reads them at boot.",
    "prod db creds rotated on 2026-11-20, new ones are in Vault at secret/prod/db",
    ".env.example has DATABASE_URL=postgres://user:password@localhost:5432/app as a placeholder.",
    "API_KEY=<your-api-key>",
    "password: ${{ secrets.DB_PASSWORD }}",
    "token: {{ .Values.apiToken }}",
    "PASSWORD=${DB_PASSWORD}",
    "export GITHUB_TOKEN=$(gh auth token)",
    "db_password = var.db_password  # set in the pipeline, not in tfvars",
    # hashes named as hashes, SHAs, UUIDs, checksums
    "sha256 of the release tarball: 9f2c4e1a7b3d5f6081a2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718",
    "The regression came in with commit 3f9a1c7e2b8d4f60a5e1c9d7b3f2a8e4c6d0b1f3.",
    "tenant id 4b0c9e2a-7d1f-4c3e-9a8b-2f6d1e0c5a7b is the demo tenant",
    "session:8f14e45f-ceea-467a-a866-7d3e5b9c1a20",
    "md5 of the fixture file is d41d8cd98f00b204e9800998ecf8427e",
    "image digest sha256:4c7a1e9b2d8f3a6c5e0b1d7f9a2c4e6b8d0f1a3c5e7b9d2f4a6c8e0b1d3f5a7c",
    "The SSH host key fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8.",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl deploy@ci is the public key",
    # versions, ports, IPs, dates, numbers
    "pin psycopg to 3.2.3 and numpy to 1.26.4",
    "version 2024",
    "port 5529",
    "postgres listens on 5433 in dev, 5432 in prod",
    "the bastion is 10.20.4.11 and the NAT gateway 10.20.0.1",
    "the migration ran on 2026-11-20 at 10:02 UTC",
    "support phone: +1 415 555 0132",
    "order #4471-2291 was refunded twice",
    "meeting in room 2417, second floor",
    "error E1102 means the upload exceeded 25 MB",
    "HTTP 401 from the API means the token expired; refresh and retry once",
    "AWS account 123456789012 hosts staging; arn:aws:iam::123456789012:role/deploy",
    "GitHub App id 123456, installation id 7890123",
    "the tokenizer's context is 4096 tokens",
    # password policies
    "Passwords need 12+ characters, one digit and one symbol; rotate every 90 days.",
    "Das Passwort muss mindestens 12 Zeichen haben.",
    "la contraseña se guarda con bcrypt, nunca en claro",
    "mot de passe oublié : cliquez sur le lien de réinitialisation",
    "the CVV field accepts 3 or 4 digits",
    "seed the RNG with 42 so the fixtures are stable",
    # near neighbours of the sneaky forms
    "remember: the staging password expires every 30 days",
    "the wifi in the office is slow on Mondays",
    "the 1Password vault is called Engineering-Shared",
    "commit message: fix: stop logging the password field",
    "auth failed for user=ops reason=bad_password ip=10.0.3.4",
    "ENV PYTHONUNBUFFERED=1",
    "ARG NODE_VERSION=20.11.1",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    'instance_type = "t3.medium"',
    "replicaCount: 3",
    "Server=tcp:sql01.corp.local,1433;Database=Payroll;Integrated Security=true;",
    "mongodb://localhost:27017/test",
    "redis://cache.internal:6379/0",
    "the safe window for deploys is 14:00-16:00 UTC",
    "the alarm is loud",
    "the alarm is set for 7:30",
    "office wifi: Guest network, no password",
    "admin / staff roles",
    "our flight leaves from gate 42",
    "locker number 214 is next to the showers",
    "The secret to good pasta is salting the water.",
    "the key to the fix was the cache TTL",
    "I finally cracked the code on my sourdough starter",
    "Keycloak realm acme, client id web-frontend",
    "staging → prod promotion needs two approvals",
    "use the admin / readonly split for the Grafana folders",
]


HELD_OUT_14: list[Form] = [(f"s14 {name}", fixed(text)) for name, text in SECRET_TEXTS]
HELD_OUT_14_KEEP: list[Form] = [(f"k14 keep {i + 1}", fixed(t)) for i, t in enumerate(KEEP_TEXTS)]

# ruff: noqa: E501  (one form a line: the texts read as a judge wrote them)
"""The ninth held-out set: secret forms written before reading the scanner (lane secrets12).

Each form is (name, build): build takes a seeded random.Random and returns the text an assistant
might store as a memory. Values are random with the right length and alphabet, so no form matches a
literal the scanner could know. HELD_OUT_9_KEEP holds ordinary texts near secrets that must be kept.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable

Form = tuple[str, Callable[[random.Random], str]]

_ALNUM = string.ascii_letters + string.digits
_LOWER_ALNUM = string.ascii_lowercase + string.digits
_UPPER_ALNUM = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_URLSAFE = _ALNUM + "-_"
_B64 = _ALNUM + "+/"
_B32 = string.ascii_uppercase + "234567"
_SYMBOLS = "!#$%&*?@^-_+="
_WORDS = (  # noqa: SIM905 (a word list reads better as words)
    "anchor basil cactus dolphin ember falcon garnet harbor igloo jasmine kettle lantern meadow nutmeg "
    "orchid pepper quartz raven saffron tundra umber velvet willow yonder zephyr cobalt marble thistle "
    "copper juniper"
).split()
_BIP39 = (  # noqa: SIM905 (a word list reads better as words)
    "abandon ability able about above absent absorb abstract absurd abuse access accident account accuse "
    "achieve acid acoustic acquire across act action actor actress actual adapt add addict address adjust "
    "admit adult advance advice aerobic affair afford afraid again age agent agree ahead aim air airport "
    "aisle alarm album alcohol alert alien all alley allow almost alone alpha already also alter always "
    "amateur amazing among amount amused analyst anchor ancient anger angle angry animal ankle announce "
    "annual another answer antenna antique anxiety any apart bacon badge bag balance balcony ball bamboo "
    "banana banner bar barely bargain barrel base basic cabbage cabin cable cactus cage cake call calm "
    "camera camp canal cancel candy cannon canoe"
).split()


def _c(r: random.Random, alphabet: str, n: int) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _b64(r: random.Random, n_bytes: int, urlsafe: bool = False) -> str:
    raw = bytes(r.getrandbits(8) for _ in range(n_bytes))
    return (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()


def _uuid(r: random.Random) -> str:
    h = _c(r, _HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{r.choice('89ab')}{h[17:20]}-{h[20:]}"


def _pw(r: random.Random) -> str:
    """A person's password: a capitalised word, digits, a symbol, sometimes another word."""
    word = r.choice(_WORDS).capitalize()
    tail = r.choice(_WORDS) if r.random() < 0.5 else ""
    return f"{word}{r.choice(_SYMBOLS)}{tail}{r.randint(10, 9999)}"


def _gen_pw(r: random.Random, n: int = 20) -> str:
    """A generated password, as a password manager makes it."""
    return _c(r, _ALNUM + "!#%*-_", n)


def _jwt(r: random.Random, claims: str = '{"sub":"user_8812","role":"admin","exp":1893456000}') -> str:
    def seg(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    header = seg(b'{"alg":"HS256","typ":"JWT"}')
    return f"{header}.{seg(claims.encode())}.{_c(r, _URLSAFE, 43)}"


def _pem(r: random.Random, lines: int = 8) -> str:
    return "\n".join(_b64(r, 48) for _ in range(lines))


def _luhn(r: random.Random, prefix: str, length: int) -> str:
    body = prefix + _c(r, string.digits, length - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return body + str((10 - total % 10) % 10)


def _ed25519_public(r: random.Random) -> str:
    """An OpenSSH ed25519 public key's base64 (its type's name, then 32 bytes), as ssh-keygen writes it. (The
    first run filled 43 random characters after `AAAAI`, which no key has: a refusal of those was the fake's.)"""
    blob = b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + bytes(r.getrandbits(8) for _ in range(32))
    return base64.b64encode(blob).decode()


def _spaced(number: str) -> str:
    return " ".join(number[i : i + 4] for i in range(0, len(number), 4))


_SERVICE_ROLE = '{"iss":"supabase","ref":"qwhxkzplmn","role":"service_role","iat":1700000000}'


def _f(name: str, build: Callable[[random.Random], str]) -> Form:
    return (name, build)


HELD_OUT_9: list[Form] = [
    # --- .env, compose, k8s, terraform, CI -------------------------------------------------------
    _f("env stripe webhook secret", lambda r: f"STRIPE_WEBHOOK_SECRET=whsec_{_c(r, _ALNUM, 32)}"),
    _f(
        "env redis url with password",
        lambda r: (
            f"REDIS_URL=rediss://default:{_c(r, _ALNUM, 32)}@redis-{r.randint(10000, 19999)}"
            f".c{r.randint(1, 300)}.us-east-1-2.ec2.cloud.redislabs.com:{r.randint(10000, 19999)}"
        ),
    ),
    _f(
        "compose postgres password",
        lambda r: (
            "services:\n  db:\n    image: postgres:16\n    environment:\n"
            f'      POSTGRES_USER: app\n      POSTGRES_PASSWORD: "{_pw(r)}"\n'
        ),
    ),
    _f(
        "compose list-style mysql root",
        lambda r: f"environment:\n  - MYSQL_DATABASE=shop\n  - MYSQL_ROOT_PASSWORD={_gen_pw(r, 16)}",
    ),
    _f(
        "k8s secret data base64",
        lambda r: (
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-creds\ntype: Opaque\ndata:\n"
            f"  username: {base64.b64encode(b'api').decode()}\n"
            f"  password: {base64.b64encode(_gen_pw(r, 18).encode()).decode()}"
        ),
    ),
    _f(
        "k8s stringData api key",
        lambda r: f"stringData:\n  OPENAI_API_KEY: sk-proj-{_c(r, _URLSAFE, 156)}",
    ),
    _f("tfvars db password", lambda r: f'# prod.tfvars\nregion      = "eu-west-1"\ndb_password = "{_gen_pw(r, 24)}"'),
    _f("tfvars cloudflare token", lambda r: f'cloudflare_api_token = "{_c(r, _URLSAFE, 40)}"'),
    _f(
        "gh secret set",
        lambda r: f"Set the publish token with `gh secret set NPM_TOKEN --body npm_{_c(r, _ALNUM, 36)}`",
    ),
    _f(
        "gitlab ci variable prose",
        lambda r: f"GitLab CI/CD variable DEPLOY_TOKEN (masked, protected) = gldt-{_c(r, _URLSAFE, 20)}",
    ),
    _f(
        "kubectl from-literal",
        lambda r: f"kubectl create secret generic pg --from-literal=username=app --from-literal=password='{_pw(r)}'",
    ),
    _f(
        "helm set password",
        lambda r: f"helm upgrade --install redis bitnami/redis --set auth.password={_gen_pw(r, 14)}",
    ),
    # --- connection strings ----------------------------------------------------------------------
    _f(
        "mongodb srv",
        lambda r: (
            f"mongodb+srv://svc_reports:{_gen_pw(r, 16)}@cluster0.{_c(r, _LOWER_ALNUM, 5)}"
            ".mongodb.net/reports?retryWrites=true&w=majority"
        ),
    ),
    _f("mysql dsn", lambda r: f"The legacy app connects with mysql://root:{_pw(r)}@10.0.3.14:3306/legacy"),
    _f(
        "azure sql ado.net",
        lambda r: (
            "Server=tcp:acme-prod.database.windows.net,1433;Initial Catalog=orders;Persist Security Info=False;"
            f"User ID=sqladmin;Password={_gen_pw(r, 18)};MultipleActiveResultSets=False;Encrypt=True;"
        ),
    ),
    _f("jdbc sqlserver", lambda r: f"jdbc:sqlserver://db01:1433;databaseName=hr;user=hr_app;password={_pw(r)};"),
    _f("amqp url", lambda r: f"CELERY_BROKER_URL=amqp://worker:{_c(r, _ALNUM, 24)}@rabbit.internal:5672/prod"),
    _f("redis no user", lambda r: f"cache: redis://:{_c(r, _HEX, 32)}@10.1.2.3:6379/0"),
    _f("pgpass line", lambda r: f"~/.pgpass has db.prod.internal:5432:app:app_user:{_gen_pw(r, 20)}"),
    _f(
        "oracle sqlplus",
        lambda r: f"Connect to the warehouse with sqlplus system/{_pw(r)}@//ora-dw:1521/DWPROD",
    ),
    _f(
        "snowflake url",
        lambda r: f"snowflake://etl_user:{_gen_pw(r, 16)}@xy12345.eu-central-1/ANALYTICS/PUBLIC?warehouse=ETL_WH",
    ),
    # --- curl, CLIs ------------------------------------------------------------------------------
    _f(
        "curl bearer",
        lambda r: (
            "curl -s https://api.example-billing.com/v2/invoices "
            f'-H "Authorization: Bearer {_c(r, _ALNUM, 40)}" -H "Accept: application/json"'
        ),
    ),
    _f("curl x-api-key", lambda r: f"curl -H 'x-api-key: {_c(r, _ALNUM, 40)}' https://api.partner.io/v1/orders"),
    _f("curl -u basic", lambda r: f"curl -u admin:{_pw(r)} https://jenkins.internal/job/deploy/build"),
    _f("docker login -p", lambda r: f"docker login -u deploy -p {_gen_pw(r, 22)} registry.acme.dev"),
    _f("mysql -p cli", lambda r: f"mysql -h 10.0.0.12 -u root -p'{_pw(r)}' shop"),
    _f(
        "git remote with token",
        lambda r: f"git remote set-url origin https://x-access-token:ghs_{_c(r, _ALNUM, 36)}@github.com/acme/api.git",
    ),
    _f(
        "basic auth header",
        lambda r: f"Authorization: Basic {base64.b64encode(f'svc-export:{_gen_pw(r, 16)}'.encode()).decode()}",
    ),
    # --- webhooks --------------------------------------------------------------------------------
    _f(
        "slack webhook",
        lambda r: (
            "Deploy notifications post to https://hooks.slack.com/services/"
            f"T{_c(r, _UPPER_ALNUM, 8)}/B{_c(r, _UPPER_ALNUM, 10)}/{_c(r, _ALNUM, 24)}"
        ),
    ),
    _f(
        "discord webhook",
        lambda r: f"https://discord.com/api/webhooks/{r.randint(10**17, 10**18)}/{_c(r, _URLSAFE, 68)}",
    ),
    _f(
        "teams webhook",
        lambda r: (
            f"Teams alerts: https://acme.webhook.office.com/webhookb2/{_uuid(r)}@{_uuid(r)}"
            f"/IncomingWebhook/{_c(r, _HEX, 32)}/{_uuid(r)}"
        ),
    ),
    # --- cloud keys ------------------------------------------------------------------------------
    _f(
        "aws credentials file",
        lambda r: (
            f"[default]\naws_access_key_id = AKIA{_c(r, _UPPER_ALNUM, 16)}\naws_secret_access_key = {_c(r, _B64, 40)}"
        ),
    ),
    _f(
        "aws secret in prose",
        lambda r: f"The secret access key for the deploy IAM user is {_c(r, _B64, 40)}",
    ),
    _f(
        "gcp service account json",
        lambda r: (
            '{\n  "type": "service_account",\n  "project_id": "acme-prod-31",\n'
            f'  "private_key_id": "{_c(r, _HEX, 40)}",\n'
            f'  "private_key": "-----BEGIN PRIVATE KEY-----\\n{_b64(r, 48)}\\n{_b64(r, 48)}\\n",\n'
            '  "client_email": "ci-deployer@acme-prod-31.iam.gserviceaccount.com"\n}'
        ),
    ),
    _f("gcp api key", lambda r: f"Maps key for the web app: AIza{_c(r, _URLSAFE, 35)}"),
    _f(
        "azure storage connection",
        lambda r: (
            "DefaultEndpointsProtocol=https;AccountName=acmeuploads;"
            f"AccountKey={_b64(r, 64)};EndpointSuffix=core.windows.net"
        ),
    ),
    _f(
        "azure sas url",
        lambda r: (
            "https://acmeuploads.blob.core.windows.net/exports?sv=2022-11-02&ss=b&srt=co&sp=rl"
            f"&se=2027-01-01T00:00:00Z&st=2026-01-01T00:00:00Z&spr=https&sig={_b64(r, 32).replace('+', '%2B').replace('/', '%2F').replace('=', '%3D')}"
        ),
    ),
    _f(
        "azure service bus",
        lambda r: (
            "Endpoint=sb://acme-events.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
            f"SharedAccessKey={_b64(r, 32)}"
        ),
    ),
    _f("azure ad client secret", lambda r: f"AZURE_CLIENT_SECRET={_c(r, _ALNUM, 3)}8Q~{_c(r, _URLSAFE + '.~', 34)}"),
    _f("digitalocean token", lambda r: f"doctl auth init --access-token dop_v1_{_c(r, _HEX, 64)}"),
    _f("cloudflare global key", lambda r: f"Cloudflare global API key (old account): {_c(r, _HEX, 37)}"),
    # --- SaaS tokens -----------------------------------------------------------------------------
    _f(
        "stripe live restricted", lambda r: f"Use the restricted key rk_live_{_c(r, _ALNUM, 99)} for the reporting job."
    ),
    _f(
        "openai sk-proj prose",
        lambda r: f"OpenAI key for evals: sk-proj-{_c(r, _URLSAFE, 48)}T3BlbkFJ{_c(r, _URLSAFE, 48)}",
    ),
    _f(
        "anthropic key",
        lambda r: f"export ANTHROPIC_API_KEY=sk-ant-api03-{_c(r, _URLSAFE, 93)}AA",
    ),
    _f("huggingface token", lambda r: f"huggingface-cli login --token hf_{_c(r, _ALNUM, 34)}"),
    _f("npmrc auth token", lambda r: f"//registry.npmjs.org/:_authToken=npm_{_c(r, _ALNUM, 36)}"),
    _f(
        "pypirc",
        lambda r: f"[pypi]\n  username = __token__\n  password = pypi-AgEIcHlwaS5vcmcCJ{_c(r, _URLSAFE, 140)}",
    ),
    _f(
        "github fine-grained",
        lambda r: f"Fine-grained PAT for the release bot: github_pat_11{_c(r, _UPPER_ALNUM, 20)}_{_c(r, _ALNUM, 59)}",
    ),
    _f(
        "gitlab glpat header",
        lambda r: f'curl --header "PRIVATE-TOKEN: glpat-{_c(r, _URLSAFE, 20)}" https://gitlab.acme.dev/api/v4/projects',
    ),
    _f(
        "sentry dsn",
        lambda r: (
            f"SENTRY_DSN=https://{_c(r, _HEX, 32)}@o{r.randint(100000, 999999)}.ingest.us.sentry.io/{r.randint(10**15, 10**16)}"
        ),
    ),
    _f("twilio auth token", lambda r: f"Twilio: account AC{_c(r, _HEX, 32)}, auth token {_c(r, _HEX, 32)}"),
    _f(
        "sendgrid",
        lambda r: f"SENDGRID_API_KEY='SG.{_c(r, _URLSAFE, 22)}.{_c(r, _URLSAFE, 43)}'",
    ),
    _f(
        "mailgun",
        lambda r: f"Mailgun sending key: {_c(r, _HEX, 32)}-{_c(r, _HEX, 8)}-{_c(r, _HEX, 8)}",
    ),
    _f("vault token", lambda r: f"VAULT_TOKEN=hvs.{_c(r, _URLSAFE, 91)}"),
    _f("okta ssws", lambda r: f"Okta admin API: Authorization: SSWS 00{_c(r, _URLSAFE, 40)}"),
    _f("telegram bot", lambda r: f"Telegram alert bot token {r.randint(10**9, 7 * 10**9)}:AA{_c(r, _URLSAFE, 33)}"),
    _f("google oauth client secret", lambda r: f'"client_secret": "GOCSPX-{_c(r, _URLSAFE, 28)}"'),
    _f("supabase service role", lambda r: "SUPABASE_SERVICE_ROLE_KEY=" + _jwt(r, _SERVICE_ROLE)),
    _f("datadog api key env", lambda r: f"DD_API_KEY={_c(r, _HEX, 32)}"),
    _f("shopify admin token", lambda r: f"Shopify admin API access token: shpat_{_c(r, _HEX, 32)}"),
    _f("linear api key", lambda r: f"LINEAR_API_KEY=lin_api_{_c(r, _ALNUM, 40)}"),
    _f("laravel app key", lambda r: f"APP_KEY=base64:{_b64(r, 32)}"),
    _f("django secret key", lambda r: f"SECRET_KEY = 'django-insecure-{_c(r, _LOWER_ALNUM + '!@#$%^&*(-_=+)', 50)}'"),
    _f("wireguard private key", lambda r: f"[Interface]\nAddress = 10.8.0.2/32\nPrivateKey = {_b64(r, 32)}"),
    _f(
        "kafka jaas",
        lambda r: (
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="orders-svc" password="{_gen_pw(r, 20)}";'
        ),
    ),
    # --- JWTs, keys ------------------------------------------------------------------------------
    _f("jwt in gotcha", lambda r: f"Gotcha: the admin session JWT that works on staging is {_jwt(r)}"),
    _f(
        "ssh private key whole",
        lambda r: (
            f"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA{_pem(r, 5)}\n-----END OPENSSH PRIVATE KEY-----"
        ),
    ),
    _f(
        "ssh private key body only",
        lambda r: f"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n{_pem(r, 3)}",
    ),
    _f(
        "pgp private block truncated",
        lambda r: f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF{_pem(r, 3)}\n...",
    ),
    _f("rsa header and two lines", lambda r: f"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA{_pem(r, 2)}"),
    # --- passwords in prose and chat -------------------------------------------------------------
    _f("staging db password prose", lambda r: f"The staging DB password is now {_pw(r)} (changed after the audit)."),
    _f("grafana admin slash", lambda r: f"Gotcha: grafana.internal login is admin / {_pw(r)}"),
    _f("chat line pw", lambda r: f"[10:42] dana: pw for the shared support gmail is {_pw(r)}"),
    _f("quoted chat use for vpn", lambda r: f"> mike: just use `{_pw(r)}` for the vpn until IT resets it"),
    _f("jenkins user pw", lambda r: f"Jenkins: user ci-bot, pw {_gen_pw(r, 12)}"),
    _f(
        "login url query", lambda r: f"Quick login for QA: https://qa.acme.dev/login?user=qa1&password={_gen_pw(r, 12)}"
    ),
    _f("ssh key passphrase phrase", lambda r: f"The passphrase for my id_ed25519 is '{' '.join(r.sample(_WORDS, 3))}'"),
    _f("netrc", lambda r: f"machine api.heroku.com\n  login dev@acme.dev\n  password {_uuid(r)}"),
    # --- codes: wifi, door, PIN, recovery, TOTP --------------------------------------------------
    _f(
        "wifi wpa key",
        lambda r: (
            f"Office wifi: SSID Acme-Staff, WPA2 key {r.choice(_WORDS).capitalize()}{r.choice(_WORDS)}{r.randint(100, 9999)}"
        ),
    ),
    _f("door code", lambda r: f"Door code for the server room is {r.randint(1000, 9999)}#"),
    _f("alarm code", lambda r: f"Remember: the office alarm disarm code is {r.randint(1000, 9999)}, then press OFF."),
    _f("sim pin puk", lambda r: f"Test phone SIM: PIN {r.randint(1000, 9999)}, PUK {r.randint(10**7, 10**8 - 1)}"),
    _f(
        "github recovery codes",
        lambda r: (
            "GitHub recovery codes for the org owner: "
            + " ".join(f"{_c(r, _HEX, 5)}-{_c(r, _HEX, 5)}" for _ in range(6))
        ),
    ),
    _f(
        "backup codes numeric list",
        lambda r: "2FA backup codes (AWS root):\n" + "\n".join(f"{r.randint(10**7, 10**8 - 1)}" for _ in range(5)),
    ),
    _f(
        "otpauth uri",
        lambda r: f"otpauth://totp/Acme:ops@acme.dev?secret={_c(r, _B32, 32)}&issuer=Acme&digits=6",
    ),
    _f(
        "totp secret spaced",
        lambda r: "TOTP setup key for the shared ops account: " + " ".join(_c(r, _B32, 4) for _ in range(8)).lower(),
    ),
    # --- seeds and cards -------------------------------------------------------------------------
    _f("bip39 labelled", lambda r: "Seed phrase for the test wallet: " + " ".join(r.choice(_BIP39) for _ in range(12))),
    _f("bip39 unlabelled 24", lambda r: "Ledger backup words: " + " ".join(r.choice(_BIP39) for _ in range(24))),
    _f(
        "company card",
        lambda r: (
            f"Company Visa {_spaced(_luhn(r, '4', 16))} exp {r.randint(1, 12):02d}/{r.randint(27, 31)} "
            f"CVV {r.randint(100, 999)}"
        ),
    ),
    _f(
        "amex in prose",
        lambda r: (
            f"Pay the AWS invoice with the Amex ending in the card {_luhn(r, '37', 15)}, code {r.randint(1000, 9999)}"
        ),
    ),
]


HELD_OUT_9_KEEP: list[Form] = [
    _f(
        "rotation policy",
        lambda r: "Rotate the Stripe live key every 90 days; it lives in 1Password under 'Stripe live'.",
    ),
    _f("db url without password", lambda r: "DATABASE_URL=postgres://app@localhost:5432/app (no password: peer auth)"),
    _f(
        "password reset job",
        lambda r: "Password reset emails are sent by accounts.tasks.send_reset_email on the default queue.",
    ),
    _f(
        "k8s secret name",
        lambda r: "The k8s Secret is named db-credentials; mount it at /etc/db and read password from the file.",
    ),
    _f(
        "compose env reference",
        lambda r: "environment:\n  POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}\n  POSTGRES_USER: app",
    ),
    _f(
        "key prefixes explained",
        lambda r: "Stripe keys start with sk_live_ in live mode and sk_test_ in test mode; never log either.",
    ),
    _f("commit sha", lambda r: f"Commit {_c(r, _HEX, 40)} fixed the login redirect loop."),
    _f(
        "curl with env token",
        lambda r: 'curl -H "Authorization: Bearer $YULLU_TOKEN" http://127.0.0.1:47823/api/memories',
    ),
    _f("request id uuid", lambda r: f"Request id {_uuid(r)} failed with a 502 in the nginx logs."),
    _f("image digest", lambda r: f"Pin the base image: python:3.12-slim@sha256:{_c(r, _HEX, 64)}"),
    _f(
        "pin a dependency", lambda r: "PIN the dependency: pip install 'requests==2.32.3' until the proxy bug is fixed."
    ),
    _f("server room door", lambda r: "The door to the server room sticks; push hard and badge twice."),
    _f("jwt lifetimes", lambda r: "JWT access tokens expire after 15 minutes; refresh tokens last 30 days."),
    _f("test seed", lambda r: "The seed for the test fixtures is 42 (random.seed(42) in conftest.py)."),
    _f(
        "recovery codes policy",
        lambda r: "Recovery codes are shown once after enabling 2FA; store them in the team vault.",
    ),
    _f("password validator", lambda r: "AUTH_PASSWORD_VALIDATORS: MinimumLengthValidator with min_length 12."),
    _f("wifi flaky", lambda r: "Wifi in the office is flaky on 5 GHz; use the 2.4 GHz SSID Acme-Office for the demo."),
    _f(
        "ssh public key",
        lambda r: f"Add the CI deploy key: ssh-ed25519 {_ed25519_public(r)} deploy@ci",
    ),
    _f(
        "example placeholder",
        lambda r: "In .env.example the placeholder is DB_PASSWORD=changeme; real values come from Vault.",
    ),
    _f("aws account id", lambda r: "AWS account 123456789012 hosts staging in eu-west-1; prod is 210987654321."),
    _f(
        "akia prefix",
        lambda r: "The AKIA prefix marks long-term IAM access keys; ASIA marks temporary STS credentials.",
    ),
    _f(
        "webhook in secret",
        lambda r: "The Slack webhook URL is stored in the SLACK_WEBHOOK_URL secret of GitHub Actions.",
    ),
    _f(
        "private key path",
        lambda r: "The private key lives at ~/.ssh/id_ed25519 and must be chmod 600 or ssh ignores it.",
    ),
    _f(
        "certificate block",
        lambda r: f"ca.pem starts with -----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE{_b64(r, 24)}",
    ),
    _f("bip39 list", lambda r: "Seed phrases use words from the BIP39 English list of 2048 words."),
    _f(
        "codecov masked", lambda r: "The CI variable CODECOV_TOKEN is masked and protected; only main pipelines see it."
    ),
    _f("kiosk pins", lambda r: "PIN codes for the kiosk are 4 digits and reset nightly by the kiosk-reset cron job."),
    _f(
        "mongo url without creds",
        lambda r: "mongodb+srv://cluster0.ab1cd.mongodb.net/?retryWrites=true&w=majority (credentials from env)",
    ),
    _f(
        "empty sha256",
        lambda r: "sha256 of an empty file is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.",
    ),
    _f(
        "passphrase prompt",
        lambda r: "The passphrase prompt appears because ssh-agent is not running: eval $(ssh-agent).",
    ),
    _f("stripe test card", lambda r: "Stripe test card 4242 4242 4242 4242 works with any future expiry and any CVC."),
    _f("argon2 params", lambda r: "Password hashing: argon2id with time_cost=3, memory_cost=65536, parallelism=4."),
    _f(
        "token bucket",
        lambda r: "The rate limiter is a token bucket: 100 tokens, refilled at 10 per second per API key.",
    ),
]

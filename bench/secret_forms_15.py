"""Set fifteen: secret forms written before reading the scanner, and ordinary texts near them.

Written blind (lane secrets18): the plainest forms a developer pastes into an assistant's memory
first, then the ones told the way a teammate would store them (a reminder, a commit message, a
log line, a stack trace, a Dockerfile, CI YAML, tfvars, Helm values, an Ansible vault in the
clear, a notebook cell, SQL, connection strings), spoken or spelled passwords, door and safe
codes, and prose in other languages. Values come from one seeded generator so every run sees
the same texts, with each vendor's length and alphabet.
"""

from __future__ import annotations

import base64
import json
import random
import string

from bench.secret_fill import fixed
from bench.secret_forms_9 import Form

_rng = random.Random(15_2026)

_LOWER_DIGITS = string.ascii_lowercase + string.digits
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_B64URL = _ALNUM + "-_"
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_SYMBOLS = "!@#%^&*-_+=?"


def _r(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _pw(n: int = 18) -> str:
    """A generated password: every class present, the way a password manager makes one."""
    body = [_rng.choice(string.ascii_lowercase), _rng.choice(string.ascii_uppercase)]
    body += [_rng.choice(string.digits), _rng.choice(_SYMBOLS)]
    body += [_rng.choice(_ALNUM + _SYMBOLS) for _ in range(n - 4)]
    _rng.shuffle(body)
    return "".join(body)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _b64url_json(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def _jwt(payload: dict[str, object]) -> str:
    head = _b64url_json({"alg": "HS256", "typ": "JWT"})
    return f"{head}.{_b64url_json(payload)}.{_r(_B64URL, 43)}"


def _luhn_card(prefix: str, length: int = 16) -> str:
    digits = [int(c) for c in prefix] + [_rng.randrange(10) for _ in range(length - len(prefix) - 1)]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 0:
            d *= 2
            d = d - 9 if d > 9 else d
        total += d
    return "".join(map(str, digits)) + str((10 - total % 10) % 10)


def _grouped(card: str) -> str:
    return " ".join(card[i : i + 4] for i in range(0, len(card), 4))


def _pem_body(lines: int) -> str:
    return "\n".join(_r(_B64, 64) for _ in range(lines))


# BIP-39 English words (a slice of the standard list).
_BIP39 = [
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
    "bacon",
    "badge",
    "bag",
    "balance",
    "balcony",
    "ball",
    "bamboo",
    "banana",
    "banner",
    "bar",
    "barely",
    "bargain",
    "barrel",
    "base",
    "basic",
    "basket",
    "battle",
    "beach",
    "bean",
    "beauty",
    "because",
    "become",
    "beef",
    "before",
    "begin",
    "behave",
    "behind",
    "believe",
    "below",
    "cabbage",
    "cabin",
    "cable",
    "cactus",
    "cage",
    "cake",
    "call",
    "calm",
    "camera",
    "camp",
    "can",
    "canal",
    "cancel",
    "candy",
    "cannon",
    "canoe",
    "velvet",
    "venue",
    "verb",
    "vessel",
    "veteran",
    "viable",
    "vibrant",
    "vicious",
    "victory",
    "video",
    "view",
    "village",
    "vintage",
    "violin",
    "wagon",
    "wait",
    "walk",
    "wall",
    "walnut",
    "want",
    "warfare",
    "warm",
    "warrior",
    "wash",
    "wasp",
    "waste",
    "water",
    "wave",
    "way",
    "wealth",
]


def _op_key() -> str:
    """1Password's Secret Key after its A3- version: groups of 6, 6, 5, 5, 5, 5 from its alphabet."""
    alphabet = "ABCDEFGHJKLMNPQRSTVWXYZ23456789"
    return "-".join(_r(alphabet, n) for n in (6, 6, 5, 5, 5, 5))


def _uuid_like() -> str:
    return f"{_r(_HEX, 8)}-{_r(_HEX, 4)}-{_r(_HEX, 4)}-{_r(_HEX, 4)}-{_r(_HEX, 12)}"


def _mnemonic(n: int) -> str:
    return " ".join(_rng.choice(_BIP39) for _ in range(n))


_CARD_VISA = _luhn_card("4", 16)
_CARD_MC = _luhn_card("5", 16)
_CARD_AMEX = _luhn_card("37", 15)
_DOCKER_AUTH = _b64(f"ci-bot:{_pw(20)}".encode())
_BASIC = _b64(f"admin:{_pw(14)}".encode())
_K8S_SECRET_VALUE = _b64(_pw(16).encode())

# (label, text): label says which form it is, for the run's report.
SECRET_TEXTS: list[tuple[str, str]] = [
    # --- the plainest: env lines, exports, key: value ---
    ("dotenv password", f"DATABASE_PASSWORD={_pw(20)}"),
    ("export aws secret", f"export AWS_SECRET_ACCESS_KEY={_r(_B64, 40)}"),
    ("staging password prose", "the staging password is Tr0mbone!Harbor88"),
    ("api key colon", f"api key: {_r(_HEX, 32)}"),
    ("curl -u", f"curl -u deploy:{_pw(16)} https://ci.acme-internal.io/api/v4/builds"),
    (
        "curl bearer",
        f'curl -H "Authorization: Bearer {_r(_ALNUM, 40)}" https://api.acme-internal.io/v2/me',
    ),
    ("postgres dsn", f"postgres://app:{_pw(18)}@db.internal:5432/orders"),
    (
        "kubeconfig token",
        "users:\n- name: admin@prod\n  user:\n    token: "
        + _jwt({"iss": "kubernetes/serviceaccount", "sub": "system:serviceaccount:kube-system:admin"}),
    ),
    (
        "docker config.json",
        '{"auths": {"registry.acme-internal.io": {"auth": "' + _DOCKER_AUTH + '"}}}',
    ),
    (
        "aws credentials file",
        f"[default]\naws_access_key_id = AKIA{_r(string.ascii_uppercase + '234567', 16)}\n"
        f"aws_secret_access_key = {_r(_B64, 40)}",
    ),
    (
        "gcp service account key",
        '{"type": "service_account", "project_id": "acme-prod", "private_key_id": "'
        + _r(_HEX, 40)
        + '", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + _r(_B64, 64)
        + "\\n"
        + _r(_B64, 64)
        + '\\n-----END PRIVATE KEY-----\\n"}',
    ),
    (
        "azure storage connection string",
        "DefaultEndpointsProtocol=https;AccountName=acmeprodlogs;AccountKey="
        + _r(_B64, 86)
        + "==;EndpointSuffix=core.windows.net",
    ),
    ("github classic pat", f"ghp_{_r(_ALNUM, 36)}"),
    (
        "github fine-grained pat",
        f"use github_pat_11{_r(string.ascii_uppercase + string.digits, 20)}_{_r(_ALNUM, 59)} for the release bot",
    ),
    ("gitlab pat", f"GITLAB_TOKEN=glpat-{_r(_ALNUM + '-_', 20)}"),
    (
        "slack bot token",
        f"slack bot token xoxb-{_r(string.digits, 12)}-{_r(string.digits, 13)}-{_r(_ALNUM, 24)}",
    ),
    (
        "slack webhook",
        f"alerts go to https://hooks.slack.com/services/T{_r(string.ascii_uppercase + string.digits, 10)}/"
        f"B{_r(string.ascii_uppercase + string.digits, 10)}/{_r(_ALNUM, 24)}",
    ),
    ("stripe live secret", f"STRIPE_SECRET_KEY=sk_live_51{_r(_ALNUM, 97)}"),
    ("openai project key", f"OPENAI_API_KEY=sk-proj-{_r(_B64URL, 156)}"),
    ("anthropic key", f"anthropic key sk-ant-api03-{_r(_B64URL, 93)}AA"),
    ("huggingface token", f"HF_TOKEN=hf_{_r(_ALNUM, 34)}"),
    (
        "twilio sid and token",
        f"Twilio: account AC{_r(_HEX, 32)} auth token {_r(_HEX, 32)}",
    ),
    ("sendgrid key", f"SENDGRID_API_KEY=SG.{_r(_B64URL, 22)}.{_r(_B64URL, 43)}"),
    ("datadog api key", f"DD_API_KEY={_r(_HEX, 32)}"),
    ("npmrc auth token", f"//registry.npmjs.org/:_authToken=npm_{_r(_ALNUM, 36)}"),
    ("pypi token", f"password = pypi-AgEIcHlwaS5vcmcCJ{_r(_B64URL, 150)}"),
    (
        "rsa private key pem",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA"
        + _r(_B64, 48)
        + "\n"
        + _pem_body(6)
        + "\n-----END RSA PRIVATE KEY-----",
    ),
    (
        "openssh private key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        + _pem_body(4)
        + "\n-----END OPENSSH PRIVATE KEY-----",
    ),
    (
        "jwt alone",
        "session jwt: " + _jwt({"sub": "u_48213", "role": "admin", "iat": 1795000000}),
    ),
    ("totp seed", f"TOTP seed for the ops account: {_r(_B32, 32)}"),
    (
        "otpauth uri",
        f"otpauth://totp/Acme:ops@acme.io?secret={_r(_B32, 32)}&issuer=Acme&digits=6",
    ),
    (
        "card with cvv",
        f"company card {_grouped(_CARD_VISA)} exp 09/29 cvv {_r(string.digits, 3)}",
    ),
    ("seed phrase 12", f"wallet seed: {_mnemonic(12)}"),
    ("seed phrase 24", f"recovery phrase for the ledger — {_mnemonic(24)}"),
    # --- told as a teammate's memory ---
    ("office wifi reminder", "remember: the wifi in the office is Meadowlark-Quartz-42"),
    ("1password master", "the shared 1Password master is Gravel7-Orchid-Kettle-Sundown"),
    ("rotated prod creds", f"prod db creds rotated, new ones are app_rw / {_pw(16)}"),
    ("note for later vpn psk", f"note for later: the VPN pre-shared key is {_pw(24)}"),
    ("apple id password", "my Apple ID password is BlueHeron_2019!"),
    ("smtp user pass", f"SMTP for alerts: user alerts@acme.io pass {_pw(14)}"),
    ("bank pin", "my debit card PIN is 4827"),
    ("sim pin", "the PIN for the test phone's SIM is 7391"),
    ("ssh key passphrase", "the passphrase for my id_ed25519 is correct-staple-pylon-river"),
    ("gpg passphrase", "GPG signing key passphrase: Release-Signer-2026-Owl"),
    (
        "github recovery codes",
        f"GitHub recovery codes: {_r(_HEX, 5)}-{_r(_HEX, 5)} {_r(_HEX, 5)}-{_r(_HEX, 5)} "
        f"{_r(_HEX, 5)}-{_r(_HEX, 5)} {_r(_HEX, 5)}-{_r(_HEX, 5)}",
    ),
    (
        "1password secret key",
        f"1Password secret key A3-{_op_key()}",
    ),
    ("bitwarden master", "Bitwarden master password for the team vault: Juniper Cobalt Lighthouse 61"),
    # --- commit messages, logs, stack traces ---
    (
        "commit message",
        f"fix(mail): rotate smtp creds\n\nnew pass is {_pw(16)}, old one revoked",
    ),
    (
        "log line password",
        f"2026-11-02T10:14:03Z INFO auth: login ok user=svc-backup password={_pw(15)}",
    ),
    (
        "log line api_key query",
        f'10.0.3.7 - - [02/Nov/2026:10:14:03 +0000] "GET /v1/report?api_key={_r(_HEX, 32)}&format=csv HTTP/1.1"'
        " 200 5120",
    ),
    (
        "stack trace dsn",
        'Traceback (most recent call last):\n  File "etl/load.py", line 41, in main\n'
        "psycopg.OperationalError: connection failed: "
        f"dsn='host=db.internal user=etl password={_pw(16)} dbname=warehouse'",
    ),
    (
        "stack trace headers",
        "requests.exceptions.HTTPError: 500 Server Error\n  request headers: "
        f"{{'Authorization': 'Token {_r(_HEX, 40)}', 'Accept': 'application/json'}}",
    ),
    # --- config files ---
    ("dockerfile env", f"ENV REDIS_PASSWORD={_pw(20)}"),
    ("dockerfile arg", f"ARG NPM_TOKEN=npm_{_r(_ALNUM, 36)}"),
    (
        "github actions env",
        f"jobs:\n  scan:\n    runs-on: ubuntu-latest\n    env:\n      SONAR_TOKEN: {_r(_HEX, 40)}",
    ),
    ("tfvars", f'db_password = "{_pw(20)}"\nregion      = "eu-west-1"'),
    (
        "helm values",
        f"postgresql:\n  auth:\n    username: app\n    postgresPassword: {_pw(18)}",
    ),
    (
        "ansible vault plaintext",
        f"---\nvault_mysql_root_password: {_pw(22)}\nvault_mysql_replication_user: repl",
    ),
    ("jupyter cell", f'import openai\nopenai.api_key = "sk-{_r(_ALNUM, 48)}"\nclient = openai.OpenAI()'),
    (
        "python connect call",
        f'conn = psycopg.connect(host="db.internal", user="etl", password="{_pw(16)}")',
    ),
    ("docker compose env", f"    environment:\n      - POSTGRES_USER=app\n      - POSTGRES_PASSWORD={_pw(16)}"),
    (
        "k8s env value",
        f'        env:\n        - name: DB_PASSWORD\n          value: "{_pw(18)}"',
    ),
    (
        "k8s secret data",
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: {_K8S_SECRET_VALUE}",
    ),
    ("systemd environment", f"Environment=API_TOKEN={_r(_ALNUM, 32)}"),
    ("powershell env", f'$env:AZURE_CLIENT_SECRET = "{_r(_ALNUM + "~._-", 40)}"'),
    ("windows set", f"set OPENAI_API_KEY=sk-{_r(_ALNUM, 48)}"),
    ("django secret key", f"SECRET_KEY = '{_r(string.ascii_lowercase + string.digits + '!@#$%^&*(-_=+)', 50)}'"),
    ("laravel app key", f"APP_KEY=base64:{_b64(_rng.randbytes(32))}"),
    ("pgpass line", f"db.internal:5432:orders:app:{_pw(18)}"),
    (
        "netrc",
        f"machine api.heroku.com\n  login ops@acme.io\n  password {_uuid_like()}",
    ),
    ("pip index url", f"index-url = https://ci:{_r(_ALNUM, 24)}@pypi.acme-internal.io/simple"),
    (
        "git remote with token",
        f"git remote set-url origin https://x-access-token:ghs_{_r(_ALNUM, 36)}@github.com/acme/api.git",
    ),
    ("basic auth header", f"Authorization: Basic {_BASIC}"),
    ("wireguard private key", f"[Interface]\nPrivateKey = {_b64(_rng.randbytes(32))}\nAddress = 10.8.0.2/24"),
    ("age key", f"AGE-SECRET-KEY-1{_r('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L'.upper(), 58)}"),
    # --- SQL and connection strings ---
    ("create user sql", f"CREATE USER reporting WITH PASSWORD '{_pw(16)}';"),
    ("oracle alter user", f'ALTER USER app_owner IDENTIFIED BY "{_pw(14)}";'),
    (
        "mssql connection string",
        f"Server=tcp:sql-prod.acme.net,1433;Database=orders;User Id=sa;Password={_pw(16)};Encrypt=True;",
    ),
    ("oracle jdbc", f"jdbc:oracle:thin:scott/{_pw(12)}@//ora-prod:1521/ORCLPDB1"),
    ("mongo srv", f"mongodb+srv://admin:{_r(_ALNUM, 20)}@cluster0.ab1cd.mongodb.net/app?retryWrites=true"),
    ("redis url", f"REDIS_URL=redis://:{_r(_ALNUM, 32)}@cache.internal:6379/0"),
    ("amqp url", f"amqp://orders:{_r(_ALNUM, 20)}@rabbit.internal:5672/prod"),
    ("mysql cli", f"mysql -u root -p'{_pw(14)}' -h db.internal orders"),
    ("sshpass", f"sshpass -p '{_pw(14)}' ssh deploy@10.20.4.17"),
    ("docker login", f"docker login -u ci-bot -p {_pw(20)} registry.acme-internal.io"),
    # --- cloud and vendor tokens ---
    ("google api key", f"GOOGLE_MAPS_KEY=AIza{_r(_B64URL, 35)}"),
    ("telegram bot token", f"telegram bot: {_r(string.digits, 10)}:AA{_r(_B64URL, 33)}"),
    ("shopify token", f"shpat_{_r(_HEX, 32)}"),
    ("digitalocean token", f"DIGITALOCEAN_TOKEN=dop_v1_{_r(_HEX, 64)}"),
    ("vault token", f"VAULT_TOKEN=hvs.{_r(_ALNUM, 24)}"),
    ("stripe webhook secret", f"webhook signing secret whsec_{_r(_ALNUM, 32)}"),
    ("auth0 client secret", f"AUTH0_CLIENT_SECRET={_r(_B64URL, 64)}"),
    ("mailgun key", f"mailgun api key key-{_r(_HEX, 32)}"),
    ("tailscale auth key", f"tskey-auth-k{_r(_ALNUM, 10)}CNTRL-{_r(_ALNUM, 33)}"),
    ("grafana service account", f"GRAFANA_TOKEN=glsa_{_r(_ALNUM, 32)}_{_r(_HEX, 8)}"),
    ("linear api key", f"LINEAR_API_KEY=lin_api_{_r(_ALNUM, 40)}"),
    (
        "atlassian api token",
        f"jira token ATATT3xFfGF0{_r(_B64URL, 180)}={_r(string.ascii_uppercase + string.digits, 8)}",
    ),
    ("eth private key", f"deployer private key 0x{_r(_HEX, 64)}"),
    ("bitcoin wif", f"cold wallet WIF: 5{_r('HJK', 1)}{_r(_B58, 49)}"),
    # --- spoken, spelled, codes ---
    (
        "phonetic password",
        "the router admin password is Papa Seven Kilo Echo Two Tango Lima Niner",
    ),
    ("safe code dashes", "the safe is 24-61-07"),
    ("door code spaced", "door code for the server room: 4 8 1 9 #"),
    ("alarm code", "alarm code is 5519, you have 30 seconds to disarm"),
    ("locker combo", "gym locker combo 31 07 22"),
    ("garage opener", "the garage keypad code is 739104"),
    ("capitalised words password", "the password for the staging admin is Velvet Harbor Ladder Cactus"),
    ("passphrase four words lower", "backup encryption passphrase: quiet falcon prism lantern"),
    # --- other languages ---
    ("german", "das Passwort für den Router ist Zitronenfalter93!"),
    ("french", "le mot de passe du wifi est Soleil-Marin-2024"),
    ("spanish", f"la contraseña de la base de datos es {_pw(14)}"),
    ("italian", "la password dell'admin è Girasole_Blu_77"),
    ("portuguese", f"a senha do servidor de produção é {_pw(12)}"),
    ("dutch", "het wachtwoord van de NAS is Tulpenveld#2025"),
    ("japanese", "本番DBのパスワードは Sakura-Kaze-8841 です"),
    ("chinese", f"数据库密码是 {_pw(14)}"),
    ("russian", "пароль от сервера: Медведь-Ладога-42"),
    ("polish", "hasło do panelu to Wiewiorka!Zielona9"),
]

# (label, text): ordinary texts near secrets that must stay storable.
_KEEP_LABELLED: list[tuple[str, str]] = [
    ("auth doc bearer", "Send `Authorization: Bearer <token>` where <token> comes from `yullu token create`."),
    ("hash named", "users.password_hash holds an argon2id hash; never compare it with ==, use check_password()."),
    ("sha256 release", f"sha256 of the release tarball: {_r(_HEX, 64)}"),
    ("commit sha", f"commit {_r(_HEX, 7)} fixed the login redirect loop"),
    ("full sha", f"bisect points at {_r(_HEX, 40)}, the one that switched to httpx"),
    ("session tag", f"session:{_r(_HEX, 8)}-{_r(_HEX, 4)}-4{_r(_HEX, 3)}-a{_r(_HEX, 3)}-{_r(_HEX, 12)}"),
    ("trace id", f"the failing request had trace id {_r(_HEX, 32)}"),
    ("config keys no values", "set DATABASE_PASSWORD and STRIPE_SECRET_KEY in the environment before `make run`"),
    ("vault path", "the prod database credentials live in Vault at secret/data/prod/orders-db"),
    ("placeholder angle", "API_KEY=<your-key-here>"),
    ("placeholder env ref", "password: ${DB_PASSWORD}"),
    ("placeholder redacted", "the log now prints password=*** instead of the value"),
    ("placeholder sk-...", "export OPENAI_API_KEY=sk-... (get yours from the dashboard)"),
    ("uuid", f"tenant id {_r(_HEX, 8)}-{_r(_HEX, 4)}-4{_r(_HEX, 3)}-b{_r(_HEX, 3)}-{_r(_HEX, 12)} is the demo account"),
    ("version strings", "upgrade to psycopg 3.2.3 and Django 5.2.1; pgvector stays at 0.8.0"),
    ("md5 checksum", "md5 of the empty file is d41d8cd98f00b204e9800998ecf8427e"),
    ("password policy", "passwords must be at least 12 characters with one digit and one symbol"),
    ("pin policy", "PINs are 6 digits and expire after 90 days; three wrong tries lock the card"),
    ("phone number", "call the on-call phone at +1 415 555 0134 after 22:00"),
    ("date", "the TLS certificate for api.acme.io expires 2027-03-14"),
    ("ports", "postgres listens on 5432, redis on 6379, rabbit on 5672"),
    ("ip", "the bastion is 10.20.4.17 and the NAT gateway is 34.120.8.9"),
    ("error codes", "login fails with ORA-01017: invalid username/password; logon denied"),
    ("http error", "api.github.com answers 401 Bad credentials when the token expired"),
    ("order number", "order #4827-1193-5520 shipped on Monday"),
    ("room number", "the retro is in room 4-061 on the fourth floor"),
    ("token lifetime", "access tokens expire after 15 minutes; refresh tokens after 30 days"),
    ("rotation practice", "we rotate the Stripe key every quarter and revoke the old one the same day"),
    ("token prefix doc", "a ghp_ prefix means a classic personal access token; github_pat_ is fine-grained"),
    ("jwt doc", "a JWT has three base64url parts: header.payload.signature"),
    ("safe deposit box", "the safe deposit box is number 214 at the Main Street branch"),
    ("wifi ssid", "the guest wifi network is called Acme-Guest and needs the captive portal"),
    ("1password vault name", "the team's shared logins are in the 1Password vault Engineering-Shared"),
    ("creds rotated pointer", "prod db creds rotated on Tuesday; the new ones are in Vault, not in Slack"),
    ("commit message pointer", "chore: rotate SMTP credentials (now read from Vault at boot)"),
    ("log line no value", "2026-11-02T10:14:03Z WARN auth: login failed user=svc-backup reason=bad_password"),
    ("dockerfile secret mount", "ARG NPM_TOKEN\nRUN --mount=type=secret,id=npm,target=/root/.npmrc npm ci"),
    ("actions secret ref", "env:\n  SONAR_TOKEN: ${{ secrets.SONAR_TOKEN }}"),
    ("tfvars var ref", 'variable "db_password" {\n  type      = string\n  sensitive = true\n}'),
    ("helm existing secret", "postgresql:\n  auth:\n    existingSecret: orders-db-credentials"),
    ("ansible var ref", 'mysql_root_password: "{{ vault_mysql_root_password }}"'),
    ("mongo no creds", "mongodb://db1:27017,db2:27017/app?replicaSet=rs0"),
    ("redis no creds", "REDIS_URL=redis://cache.internal:6379/0"),
    ("radio chatter", "Alpha team meets Bravo at the north gate, Charlie brings the van"),
    ("server room door", "the server room is door 3B, badge access only"),
    ("project codename", "the project codename is Velvet Harbor and ships in Q3"),
    ("german policy", "das Passwort muss mindestens 12 Zeichen lang sein"),
    ("french hashing", "le mot de passe est stocké haché avec bcrypt, jamais en clair"),
    ("last four", "the card ending in 4242 was declined by the bank"),
    ("bip39 doc", "BIP-39 has 2048 words; seed phrases are 12 or 24 of them"),
    ("totp doc", "TOTP codes here use a 30 second period, 6 digits and SHA1"),
    (
        "ssh public key",
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_r(_B64, 43)} deploy@ci",
    ),
    ("ssh fingerprint", f"host key fingerprint SHA256:{_r(_B64, 43)}"),
    ("image digest", f"pin the image to python@sha256:{_r(_HEX, 64)}"),
    ("aws key prefix doc", "AKIA keys are long-term; ASIA keys come from STS and expire"),
    ("env var name", "the Anthropic client reads ANTHROPIC_API_KEY from the environment"),
    ("pin the dependency", "pin the version of httpx to 0.27.2 in requirements.txt"),
    ("pg auth error", 'psql: error: FATAL: password authentication failed for user "app"'),
    ("secret key setting doc", "Django refuses to start in production without SECRET_KEY set in the environment"),
]

KEEP_TEXTS: list[str] = [text for _, text in _KEEP_LABELLED]


HELD_OUT_15: list[Form] = [(f"s15 {name}", fixed(text)) for name, text in SECRET_TEXTS]
HELD_OUT_15_KEEP: list[Form] = [(f"k15 keep {name}", fixed(text)) for name, text in _KEEP_LABELLED]

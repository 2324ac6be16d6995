"""The tenth held-out secret set, written blind (before reading the scanner or the earlier sets).

`HELD_OUT_10` are forms a developer would paste into an assistant's memory with a real secret in
them; the wrapping varies most (chat lines, markdown tables, YAML/JSON/TOML/INI, shell history,
source literals, .netrc, pgpass, remote URLs, kubeconfig, Helm, Ansible, Jenkins, Postman, cookies,
SMTP/FTP/VPN/Wi-Fi, door and safe codes, bank PINs, recovery codes, 2FA and wallet seeds, and
prose in other languages). `HELD_OUT_10_KEEP` are ordinary texts near secrets that must be kept.
Each form builds its text from a seeded `random.Random`, so a run is reproducible
(bench/secret_live.py seeds it with f"{seed}:{name}").
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable

Form = tuple[str, Callable[[random.Random], str]]

_LOWER = string.ascii_lowercase
_ALNUM = string.ascii_letters + string.digits
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_SYMBOLS = "!@#$%^&*-_+=?"
_WORDS = (
    "sunflower",
    "marble",
    "falcon",
    "harbor",
    "pepper",
    "orbit",
    "willow",
    "copper",
    "lantern",
    "meadow",
    "thunder",
    "velvet",
    "cactus",
    "glacier",
    "mango",
    "raven",
    "saffron",
    "tundra",
    "violet",
    "walnut",
    "zephyr",
    "bishop",
    "cobalt",
    "dolphin",
    "ember",
    "fjord",
    "granite",
)
_BIP39 = (
    "abandon",
    "ability",
    "absorb",
    "access",
    "actress",
    "advice",
    "afraid",
    "agent",
    "alarm",
    "album",
    "alley",
    "anchor",
    "antique",
    "arrow",
    "auction",
    "badge",
    "bamboo",
    "banner",
    "beach",
    "believe",
    "bicycle",
    "blanket",
    "bounce",
    "bracket",
    "brisk",
    "cabin",
    "canal",
    "carbon",
    "castle",
    "cereal",
    "chimney",
    "citizen",
    "coconut",
    "crater",
    "cruise",
    "dawn",
    "deposit",
    "dinosaur",
    "donkey",
    "dragon",
    "eager",
    "elbow",
    "embark",
    "engine",
    "escape",
    "fabric",
    "famous",
    "fever",
    "fiction",
    "flavor",
    "fossil",
    "galaxy",
    "garlic",
    "gesture",
)
_NAMES = ("Rex", "Biscuit", "Luna", "Max", "Pepper", "Shadow", "Milo", "Coco")


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _human_pw(rng: random.Random) -> str:
    """A password a person picks: a capitalised word, digits, often a symbol."""
    word = rng.choice(_WORDS).capitalize()
    return f"{word}{rng.randint(10, 9999)}{rng.choice(['', '!', '#', '$', '?'])}"


def _strong_pw(rng: random.Random, n: int = 16) -> str:
    """A password manager's output: letters, digits and symbols, at least one of each."""
    body = [rng.choice(_LOWER), rng.choice(string.ascii_uppercase), rng.choice(string.digits)]
    body += [rng.choice(_SYMBOLS)] + [rng.choice(_ALNUM + _SYMBOLS) for _ in range(n - 4)]
    rng.shuffle(body)
    return "".join(body)


def _hex(rng: random.Random, n: int) -> str:
    return _pick(rng, "0123456789abcdef", n)


def _uuid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def _luhn(rng: random.Random, prefix: str, n: int = 16) -> str:
    """A card number of n digits with a valid Luhn check digit."""
    body = prefix + _digits(rng, n - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            d -= 9 if d > 9 else 0
        total += d
    return body + str((10 - total % 10) % 10)


def _grouped(number: str, size: int = 4) -> str:
    return " ".join(number[i : i + size] for i in range(0, len(number), size))


def _jwt(rng: random.Random) -> str:
    def seg(raw: str) -> str:
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    header = seg('{"alg":"HS256","typ":"JWT"}')
    payload = seg(f'{{"sub":"{rng.randint(1000, 99999)}","exp":{rng.randint(1700000000, 1800000000)}}}')
    return f"{header}.{payload}.{_pick(rng, _URLSAFE, 43)}"


def _b64_block(rng: random.Random, lines: int, width: int = 64) -> str:
    return "\n".join(_pick(rng, _B64, width) for _ in range(lines))


def _seed_words(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choice(_BIP39) for _ in range(n))


HELD_OUT_10: list[Form] = [
    # --- chat lines
    ("chat-staging-pw", lambda r: f"fyi the staging pw is {_human_pw(r)}"),
    ("chat-heads-up-db", lambda r: f"heads up — new prod db password: {_strong_pw(r)} (changed this morning)"),
    ("chat-nas-root", lambda r: f"ok the root password on the NAS is now {_human_pw(r)}, don't lose it"),
    ("chat-creds-slash", lambda r: f"creds for the grafana box: jdoe / {_strong_pw(r, 14)}"),
    ("chat-login-router", lambda r: f"router login is admin and {_human_pw(r)} btw"),
    ("chat-ssh-pi", lambda r: f"ssh pi@192.168.1.40, pw {_human_pw(r)}"),
    ("chat-pin-phone", lambda r: f"remember: my phone PIN is {_digits(r, 6)}"),
    ("chat-master-pw", lambda r: f"my 1Password master password is {_seed_words(r, 4).replace(' ', '-')}"),
    ("chat-user-pass-eq", lambda r: f"use user=svc_backup pass={_strong_pw(r, 18)} for the nightly job"),
    ("chat-ssh-passphrase", lambda r: f"the passphrase for my id_ed25519 is {_seed_words(r, 5)}"),
    (
        "chat-app-password",
        lambda r: "gmail app password for the CI mailer: " + "-".join(_pick(r, _LOWER, 4) for _ in range(4)),
    ),
    ("chat-vault-share", lambda r: f"@channel new shared password for the Ops vault: {_strong_pw(r, 20)}"),
    (
        "chat-security-answer",
        lambda r: f"security question answer (first pet) for the bank login: {r.choice(_NAMES)}{r.randint(1950, 2015)}",
    ),
    # --- markdown tables
    (
        "md-table-services",
        lambda r: (
            "| service | user | password |\n|---|---|---|\n"
            f"| grafana | admin | {_strong_pw(r, 14)} |\n| kibana | elastic | {_human_pw(r)} |"
        ),
    ),
    (
        "md-table-keys",
        lambda r: (
            "| provider | key |\n|---|---|\n"
            f"| OpenAI | sk-proj-{_pick(r, _URLSAFE, 48)} |\n| Anthropic | sk-ant-api03-{_pick(r, _URLSAFE, 93)}AA |"
        ),
    ),
    (
        "md-table-wifi",
        lambda r: (
            f"| SSID | Password |\n| --- | --- |\n| Acme-Office | {_human_pw(r)} |\n| Acme-Guest | {_human_pw(r)} |"
        ),
    ),
    # --- config files
    ("yaml-db", lambda r: f"database:\n  host: db.internal\n  port: 5432\n  user: app\n  password: {_strong_pw(r)}"),
    (
        "yaml-compose-env",
        lambda r: (
            f"services:\n  db:\n    image: postgres:16\n    environment:\n      - POSTGRES_PASSWORD={_human_pw(r)}"
        ),
    ),
    ("json-api-key", lambda r: f'{{"api_key": "{_hex(r, 32)}", "region": "eu-west-1", "timeout": 30}}'),
    (
        "json-postman-env",
        lambda r: (
            '{"name": "staging", "values": [{"key": "base_url", "value": "https://staging.acme.io", "enabled": true}, '
            f'{{"key": "access_token", "value": "{_jwt(r)}", "enabled": true}}]}}'
        ),
    ),
    (
        "json-gcp-sa",
        lambda r: (
            '{"type": "service_account", "project_id": "acme-prod", "private_key_id": "' + _hex(r, 40) + '", '
            '"private_key": "-----BEGIN PRIVATE KEY-----\\n'
            + _pick(r, _B64, 64)
            + "\\n"
            + _pick(r, _B64, 64)
            + '\\n-----END PRIVATE KEY-----\\n", "client_email": "deploy@acme-prod.iam.gserviceaccount.com"}'
        ),
    ),
    (
        "toml-smtp",
        lambda r: f'[smtp]\nhost = "smtp.mailgun.org"\nuser = "postmaster@mg.acme.io"\npass = "{_strong_pw(r)}"',
    ),
    (
        "ini-aws",
        lambda r: (
            f"[default]\naws_access_key_id = AKIA{_pick(r, string.ascii_uppercase + '234567', 16)}\n"
            f"aws_secret_access_key = {_pick(r, _B64, 40)}"
        ),
    ),
    ("ini-odbc", lambda r: f"[reporting]\nDriver=PostgreSQL\nServer=10.4.0.7\nUID=report\nPWD={_human_pw(r)}"),
    ("dotenv-django", lambda r: f"DJANGO_SECRET_KEY='{_pick(r, _LOWER + string.digits + '!@#$%^&*(-_=+)', 50)}'"),
    (
        "properties-spring",
        lambda r: f"spring.datasource.url=jdbc:postgresql://db:5432/shop\nspring.datasource.password={_human_pw(r)}",
    ),
    (
        "terraform-default",
        lambda r: f'variable "db_password" {{\n  type    = string\n  default = "{_strong_pw(r)}"\n}}',
    ),
    ("gha-env", lambda r: f"env:\n  NPM_TOKEN: npm_{_pick(r, _ALNUM, 36)}\n  NODE_ENV: production"),
    (
        "helm-values",
        lambda r: (
            f"postgresql:\n  auth:\n    username: app\n    password: {_human_pw(r)}\n"
            f"    postgresPassword: {_strong_pw(r)}"
        ),
    ),
    (
        "kubeconfig-token",
        lambda r: (
            "users:\n- name: ci-admin\n  user:\n    token: " + _pick(r, _URLSAFE, 12) + "." + _pick(r, _URLSAFE, 40)
        ),
    ),
    (
        "k8s-secret-b64",
        lambda r: (
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: "
            + base64.b64encode(_strong_pw(r).encode()).decode()
        ),
    ),
    ("ansible-become", lambda r: f"# group_vars/prod.yml\nansible_user: deploy\nansible_become_pass: {_human_pw(r)}"),
    (
        "ansible-vault-pass",
        lambda r: (
            f"echo '{_strong_pw(r, 24)}' > ~/.vault_pass.txt && "
            "ansible-playbook site.yml --vault-password-file ~/.vault_pass.txt"
        ),
    ),
    ("jenkins-api-token", lambda r: f"jenkins: user admin, API token 11{_hex(r, 32)}"),
    (
        "jenkins-creds-groovy",
        lambda r: (
            f"usernamePassword(scope: GLOBAL, id: 'nexus', username: 'deployer', password: '{_strong_pw(r, 14)}')"
        ),
    ),
    ("netrc", lambda r: f"machine api.heroku.com\n  login me@acme.io\n  password {_uuid(r)}"),
    ("pgpass", lambda r: f"db.internal:5432:*:reporting:{_strong_pw(r, 14)}"),
    ("npmrc", lambda r: f"//registry.npmjs.org/:_authToken=npm_{_pick(r, _ALNUM, 36)}"),
    ("pypirc", lambda r: f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{_pick(r, _URLSAFE, 60)}"),
    (
        "azure-conn",
        lambda r: (
            "DefaultEndpointsProtocol=https;AccountName=acmestore;"
            f"AccountKey={_pick(r, _B64, 86)}==;EndpointSuffix=core.windows.net"
        ),
    ),
    ("wifi-qr", lambda r: f"WIFI:T:WPA;S:HomeNet-5G;P:{_human_pw(r)};;"),
    (
        "wpa-supplicant",
        lambda r: (
            f'network={{\n    ssid="Acme-Office"\n    psk="{_seed_words(r, 3).replace(" ", "")}{r.randint(1, 99)}"\n}}'
        ),
    ),
    ("vpn-psk", lambda r: f"IPsec VPN to Frankfurt: gateway 203.0.113.9, pre-shared key {_pick(r, _ALNUM, 24)}"),
    ("wireguard", lambda r: f"[Interface]\nPrivateKey = {_pick(r, _B64, 43)}=\nAddress = 10.8.0.2/24"),
    # --- shell history
    ("sh-export-openai", lambda r: f"export OPENAI_API_KEY=sk-proj-{_pick(r, _URLSAFE, 48)}"),
    ("sh-curl-u", lambda r: f"curl -u admin:{_human_pw(r)} https://jenkins.internal/api/json?pretty=true"),
    ("sh-mysql-p", lambda r: f"mysql -u root -p{_strong_pw(r, 12).replace('&', 'x')} -h 10.0.3.12 shop < dump.sql"),
    ("sh-psql-url", lambda r: f"psql postgresql://app:{_human_pw(r)}@db.prod.internal:5432/app"),
    (
        "sh-docker-login",
        lambda r: f"docker login -u deploybot -p {_strong_pw(r, 16).replace('$', 'S')} registry.gitlab.com",
    ),
    (
        "sh-git-remote-ghp",
        lambda r: f"git remote set-url origin https://ghp_{_pick(r, _ALNUM, 36)}@github.com/acme/infra.git",
    ),
    (
        "sh-git-clone-oauth2",
        lambda r: f"git clone https://oauth2:glpat-{_pick(r, _URLSAFE, 20)}@gitlab.com/acme/app.git",
    ),
    ("sh-redis-cli", lambda r: f"redis-cli -h cache.internal -a {_strong_pw(r, 20).replace('$', 'S')} INFO"),
    ("sh-sshpass", lambda r: f"sshpass -p '{_human_pw(r)}' ssh ops@10.0.0.15"),
    ("sh-htpasswd", lambda r: f"htpasswd -b -c /etc/nginx/.htpasswd admin {_human_pw(r)}"),
    ("sh-vault-token", lambda r: f"export VAULT_TOKEN=hvs.{_pick(r, _URLSAFE, 24)}"),
    ("sh-kubectl-literal", lambda r: f"kubectl create secret generic api --from-literal=API_KEY={_hex(r, 40)}"),
    ("sh-ftp-url", lambda r: f"lftp ftp://upload:{_human_pw(r)}@ftp.acme-partner.com/incoming"),
    ("sh-smbclient", lambda r: f"smbclient //nas/share -U backup%{_human_pw(r)}"),
    # --- source literals
    (
        "py-psycopg",
        lambda r: f"conn = psycopg2.connect(host='db', user='etl', password='{_strong_pw(r).replace(chr(39), 'q')}')",
    ),
    ("py-stripe", lambda r: f'STRIPE_SECRET = "sk_live_{_pick(r, _ALNUM, 24)}"'),
    ("py-requests-auth", lambda r: f"requests.get(url, auth=('svc-reports', '{_human_pw(r)}'))"),
    ("js-twilio", lambda r: f"const client = twilio('AC{_hex(r, 32)}', '{_hex(r, 32)}');"),
    ("js-mongoose", lambda r: f"mongoose.connect('mongodb+srv://admin:{_human_pw(r)}@cluster0.ab1cd.mongodb.net/app')"),
    ("go-sql-open", lambda r: f'db, err := sql.Open("mysql", "app:{_human_pw(r)}@tcp(10.0.0.5:3306)/orders")'),
    ("go-slack-token", lambda r: f'var slackToken = "xoxb-{_digits(r, 12)}-{_digits(r, 13)}-{_pick(r, _ALNUM, 24)}"'),
    ("java-jdbc", lambda r: f'DriverManager.getConnection(url, "sa", "{_strong_pw(r, 12).replace(chr(34), "Q")}");'),
    ("csharp-connstr", lambda r: f'"Server=sql01;Database=Shop;User Id=shop;Password={_human_pw(r)};"'),
    # --- headers, cookies, tokens in logs
    ("http-bearer", lambda r: f"Authorization: Bearer {_jwt(r)}"),
    ("http-basic", lambda r: "Authorization: Basic " + base64.b64encode(f"ops:{_human_pw(r)}".encode()).decode()),
    (
        "cookie-header",
        lambda r: f"Cookie: sessionid={_pick(r, _LOWER + string.digits, 32)}; csrftoken={_pick(r, _ALNUM, 64)}",
    ),
    (
        "cookie-connect-sid",
        lambda r: f"document.cookie = 'connect.sid=s%3A{_pick(r, _URLSAFE, 32)}.{_pick(r, _B64, 43)}'",
    ),
    (
        "log-line-password",
        lambda r: f"2026-05-02 10:14:07 DEBUG auth: login user=ops password={_human_pw(r)} result=ok",
    ),
    ("jupyter-token", lambda r: f"http://localhost:8888/lab?token={_hex(r, 48)}"),
    ("telegram-bot", lambda r: f"telegram bot token {r.randint(100000000, 999999999)}:AA{_pick(r, _URLSAFE, 33)}"),
    ("sendgrid", lambda r: f"SENDGRID_API_KEY=SG.{_pick(r, _URLSAFE, 22)}.{_pick(r, _URLSAFE, 43)}"),
    ("datadog-key", lambda r: f"DD_API_KEY={_hex(r, 32)}"),
    ("mailchimp-key", lambda r: f"mailchimp key: {_hex(r, 32)}-us{r.randint(1, 21)}"),
    ("stripe-whsec", lambda r: f"webhook signing secret whsec_{_pick(r, _ALNUM, 32)}"),
    ("heroku-uuid", lambda r: f"HEROKU_API_KEY={_uuid(r)}"),
    ("generic-api-secret", lambda r: f"The API secret for the partner feed is {_hex(r, 40)}"),
    # --- keys and seeds
    (
        "pem-openssh",
        lambda r: (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"
            + _pick(r, _B64, 40)
            + "\n"
            + _b64_block(r, 4, 70)
            + "\n-----END OPENSSH PRIVATE KEY-----"
        ),
    ),
    (
        "pgp-private",
        lambda r: (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQWGBGX"
            + _pick(r, _B64, 57)
            + "\n"
            + _b64_block(r, 3)
            + "\n-----END PGP PRIVATE KEY BLOCK-----"
        ),
    ),
    ("eth-private-key", lambda r: f"wallet private key: 0x{_hex(r, 64)}"),
    ("btc-wif", lambda r: f"paper wallet WIF 5{r.choice('HJK')}{_pick(r, _B58, 49)}"),
    ("seed-phrase", lambda r: f"ledger seed phrase: {_seed_words(r, 12)}"),
    (
        "seed-numbered",
        lambda r: "recovery phrase:\n" + "\n".join(f"{i}. {w}" for i, w in enumerate(_seed_words(r, 12).split(), 1)),
    ),
    ("otpauth", lambda r: f"otpauth://totp/AWS:ops@acme.io?secret={_pick(r, _B32, 32)}&issuer=AWS"),
    (
        "totp-setup-key",
        lambda r: "Google Authenticator setup key: " + " ".join(_pick(r, _B32.lower(), 4) for _ in range(8)),
    ),
    (
        "recovery-codes",
        lambda r: "GitHub recovery codes:\n" + "\n".join(f"{_hex(r, 5)}-{_hex(r, 5)}" for _ in range(8)),
    ),
    ("bitlocker", lambda r: "BitLocker recovery key: " + "-".join(_digits(r, 6) for _ in range(8))),
    # --- physical codes and banking
    ("door-code", lambda r: f"the back door code is {_digits(r, 4)}#"),
    ("alarm-code", lambda r: f"alarm: disarm with {_digits(r, 4)}, the duress code is {_digits(r, 4)}"),
    ("safe-combo", lambda r: f"office safe combination: {r.randint(1, 39)}-{r.randint(1, 39)}-{r.randint(1, 39)}"),
    ("gate-code-chat", lambda r: f"gate code for the warehouse: *{_digits(r, 4)} then the key icon"),
    ("iban-pin", lambda r: f"IBAN DE{_digits(r, 2)} {_grouped(_digits(r, 18))}, card PIN {_digits(r, 4)}"),
    (
        "card-cvv",
        lambda r: (
            f"company Visa {_grouped(_luhn(r, '4'))} exp {r.randint(1, 12):02d}/{r.randint(27, 31)} cvv {_digits(r, 3)}"
        ),
    ),
    (
        "card-md-table",
        lambda r: f"| card | number | cvc |\n|---|---|---|\n| Amex | {_luhn(r, '37', 15)} | {_digits(r, 4)} |",
    ),
    ("sim-puk", lambda r: f"SIM PIN {_digits(r, 4)}, PUK {_digits(r, 8)}"),
    # --- other languages
    ("de-passwort", lambda r: f"das Passwort für den Router ist {_human_pw(r)}"),
    ("es-contrasena", lambda r: f"la contraseña del servidor es {_strong_pw(r, 12)}"),
    ("fr-mot-de-passe", lambda r: f"le mot de passe de la base est {_human_pw(r)}"),
    ("it-password", lambda r: f"la password del wifi è {_human_pw(r)}"),
    ("pt-senha", lambda r: f"a senha do banco é {_human_pw(r)}"),
    ("nl-wachtwoord", lambda r: f"het wachtwoord van de NAS is {_human_pw(r)}"),
    ("ru-parol", lambda r: f"пароль от сервера: {_strong_pw(r, 12)}"),
    ("zh-mima", lambda r: f"服务器密码是 {_human_pw(r)}"),
    ("ja-pasuwado", lambda r: f"ステージングのパスワードは {_human_pw(r)} です"),
    ("de-pin", lambda r: f"Die PIN der Firmenkarte lautet {_digits(r, 4)}."),
]


HELD_OUT_10_KEEP: list[Form] = [
    (
        "k-rotate-vault",
        lambda r: (
            "To rotate the Stripe key, roll it in Dashboard > Developers > API keys, "
            "then update secret/payments/stripe in Vault."
        ),
    ),
    ("k-argon2", lambda r: "Passwords are hashed with Argon2id (time_cost=3, 64 MiB); see accounts/hashers.py."),
    ("k-git-sha", lambda r: f"The regression came in with commit {_hex(r, 40)}; revert that one first."),
    ("k-sha256-named", lambda r: f"sha256 of the release tarball: {_hex(r, 64)}"),
    ("k-docker-digest", lambda r: f"Pin the base image by digest: python@sha256:{_hex(r, 64)}"),
    ("k-env-example", lambda r: "Set DATABASE_PASSWORD in .env (copy .env.example); never commit .env."),
    ("k-bearer-placeholder", lambda r: "curl -H 'Authorization: Bearer <token>' https://api.example.com/v1/me"),
    ("k-export-placeholder", lambda r: "export OPENAI_API_KEY=<your-key-here>"),
    ("k-yaml-env-ref", lambda r: "database:\n  user: app\n  password: ${DB_PASSWORD}\n  host: db.internal"),
    ("k-request-id", lambda r: f"Request id {_uuid(r)} failed with 502 at the gateway; the upstream timed out."),
    ("k-columns", lambda r: "The user table has columns id, email, password_hash, last_login and is_active."),
    (
        "k-pw-policy",
        lambda r: "Password field: at least 12 characters, zxcvbn score >= 3, checked on signup and reset.",
    ),
    ("k-pin-lock", lambda r: "After 3 wrong PINs the card locks for 24 hours; see ticket PAY-412."),
    ("k-vault-path", lambda r: "DB creds live in Vault at secret/data/prod/postgres; read them with `vault kv get`."),
    ("k-api-key-header", lambda r: "The API key goes in the X-Api-Key header; keys are issued from the admin page."),
    ("k-aws-account", lambda r: "Deploy role: arn:aws:iam::123456789012:role/deploy in eu-west-1."),
    (
        "k-ci-vars",
        lambda r: "In .gitlab-ci.yml: docker login -u $CI_REGISTRY_USER -p $CI_REGISTRY_PASSWORD $CI_REGISTRY",
    ),
    (
        "k-pgpass-note",
        lambda r: "psql postgresql://app@localhost:5432/app works without -W because the password is in ~/.pgpass.",
    ),
    ("k-kubectl-pass", lambda r: 'kubectl create secret generic db --from-literal=password="$(pass show db/prod)"'),
    (
        "k-public-key",
        lambda r: f"Add the deploy key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_pick(r, _B64, 43)} deploy@ci",
    ),
    ("k-fingerprint", lambda r: f"The bastion's host key fingerprint is SHA256:{_pick(r, _B64, 43)}"),
    ("k-token-ttl", lambda r: "Access tokens expire after 15 minutes; refresh tokens after 30 days."),
    (
        "k-secret-key-howto",
        lambda r: "Generate SECRET_KEY with `python -c 'import secrets; print(secrets.token_urlsafe(50))'`.",
    ),
    ("k-flag-name", lambda r: "Feature flag enable_password_reset_v2 is on for 10% of users."),
    (
        "k-stripe-test-card",
        lambda r: "Use Stripe's documented test card 4242 4242 4242 4242 with any future expiry in staging.",
    ),
    ("k-wifi-where", lambda r: "The office Wi-Fi is Acme-Office; the password is on the whiteboard in the kitchen."),
    ("k-door-ask", lambda r: "Ask Dana for the door code; it changes on the first of each month."),
    (
        "k-iban-format",
        lambda r: "A German IBAN is DE, 2 check digits and 18 digits; we validate it with python-stdnum.",
    ),
    ("k-recovery-where", lambda r: "The org owner's recovery codes are in 1Password under 'GitHub org owner'."),
    ("k-2fa-policy", lambda r: "2FA is enforced for all org members; use TOTP apps, not SMS."),
    ("k-jwks", lambda r: "JWTs are signed with RS256; the public JWKS is served at /.well-known/jwks.json."),
    ("k-purge-task", lambda r: "The password_reset_token table is purged nightly by the beat task purge_tokens."),
    ("k-session-design", lambda r: "session_id is a UUID4 made per request and logged for tracing only."),
    ("k-rename", lambda r: f"Commit {_hex(r, 7)} renamed api_key to api_token in the settings model."),
    (
        "k-jenkins-id",
        lambda r: "Job deploy-prod uses the Jenkins credentials id prod-ssh-key (stored in Jenkins, not the repo).",
    ),
    ("k-postman-var", lambda r: "The Postman collection reads {{access_token}} from the environment; run Login first."),
    ("k-gitleaks", lambda r: "gitleaks allowlists tests/fixtures/fake_keys.py; real keys there still fail CI."),
    (
        "k-smtp-host",
        lambda r: "Mail goes out through smtp.mailgun.org:587 with STARTTLS; the sender is noreply@acme.io.",
    ),
    (
        "k-helm-existing",
        lambda r: "Helm: postgresql.auth.existingSecret: pg-credentials (the password is in that Secret).",
    ),
    (
        "k-ansible-vaultfile",
        lambda r: "ansible_become_pass is read from group_vars/all/vault.yml, encrypted with ansible-vault.",
    ),
    ("k-de-policy", lambda r: "Das Passwort muss mindestens 12 Zeichen lang sein und wird alle 90 Tage geändert."),
    ("k-es-reset", lambda r: "La contraseña se restablece desde el enlace que llega por correo."),
    ("k-fr-reset", lambda r: "Le mot de passe oublié se réinitialise depuis la page de connexion."),
    ("k-key-is-idiom", lambda r: "The key is to batch the writes; otherwise the WAL grows too fast."),
    ("k-keys-rotated", lambda r: "The signing keys are rotated every 90 days by the rotate-keys cron job."),
    ("k-card-last4", lambda r: f"The card ending in {_digits(r, 4)} was declined with code 05 (do not honor)."),
    (
        "k-token-format",
        lambda r: "GitHub tokens look like ghp_ followed by 36 base62 characters; our scanner matches that prefix.",
    ),
    ("k-mysql-prompt", lambda r: "`mysql -u root -p` with nothing after -p prompts for the password."),
    (
        "k-md-table-vars",
        lambda r: (
            "| variable | meaning |\n|---|---|\n| DB_PASSWORD | database password |\n| API_KEY | partner API key |"
        ),
    ),
    (
        "k-order-number",
        lambda r: (
            f"Order {_digits(r, 6)} shipped on the 4th; "
            f"tracking {_pick(r, string.ascii_uppercase + string.digits, 12)}."
        ),
    ),
    ("k-md5-checksum", lambda r: f"md5 checksum of backup.tar.gz is {_hex(r, 32)}"),
    ("k-port-list", lambda r: "Ports: 5432 postgres, 6379 redis, 8080 admin, 9090 prometheus."),
]

"""The eleventh held-out secret set (lane secrets14), written before reading the scanner.

This set leans on what the earlier ten did least: secrets buried inside longer notes (one sentence
of a 3–6 sentence memory gives the password), multi-line pastes (docker-compose, systemd units,
GitHub Actions, Terraform, Spring properties, .npmrc/.pypirc, settings.py, Dockerfiles, crontabs,
leaked log lines, raw HTTP requests), secrets described in words, partially masked but still usable
values, values wrapped across two lines, vendor formats, and non-English prose (de/es/fr/pt/it/nl/
pl/tr). Each form is a `(name, build)` pair; `build(rng)` fills it with realistic random values
(right length and alphabet) from the seeded `random.Random` it is given.

HELD_OUT_11_KEEP are ordinary texts that sit near secrets (auth docs, hashes named as hashes,
record ids, config keys without values, vault paths, placeholders, SHAs, UUIDs, base64 of
non-secret data, version strings, checksums) and must be stored.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import string
import uuid
from collections.abc import Callable

Form = tuple[str, Callable[[random.Random], str]]
Build = Callable[[random.Random], str]

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
WORDS = [
    "maple",
    "river",
    "tango",
    "quill",
    "harbor",
    "falcon",
    "copper",
    "meadow",
    "lantern",
    "orbit",
    "velvet",
    "canyon",
    "ember",
    "glacier",
    "willow",
    "summit",
    "pepper",
    "cobalt",
    "thistle",
    "marble",
]
BIP39 = [
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
]


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def password(rng: random.Random) -> str:
    """A password a person picks: a word, a capital, digits and a symbol, 10–16 characters."""
    word = rng.choice(WORDS).capitalize()
    tail = pick(rng, DIGITS, rng.randint(2, 4))
    sym = rng.choice("!#%&*-_.@")
    extra = pick(rng, ALNUM, rng.randint(2, 5))
    return f"{word}{sym}{extra}{tail}"


def strong(rng: random.Random, n: int = 20) -> str:
    return pick(rng, ALNUM + "!#%^*-_+=", n)


def b64_body(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def pem_lines(body: str, width: int = 64) -> str:
    return "\n".join(body[i : i + width] for i in range(0, len(body), width))


def jwt(rng: random.Random) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = {"sub": str(rng.randint(10000, 99999)), "role": "service", "iat": 1731000000 + rng.randint(0, 9999999)}
    payload = b64url(json.dumps(claims, separators=(",", ":")).encode())
    key = rng.randbytes(32)
    sig = b64url(hmac.new(key, f"{header}.{payload}".encode(), hashlib.sha256).digest())
    return f"{header}.{payload}.{sig}"


def rng_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(bytes=rng.randbytes(16), version=4))


def luhn_card(rng: random.Random, prefix: str = "4", length: int = 16) -> str:
    digits = [int(c) for c in prefix] + [rng.randint(0, 9) for _ in range(length - len(prefix) - 1)]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    digits.append((10 - total % 10) % 10)
    s = "".join(map(str, digits))
    return " ".join(s[i : i + 4] for i in range(0, 16, 4))


def aws_key_id(rng: random.Random) -> str:
    return "AKIA" + pick(rng, UPPER + "234567", 16)


def aws_secret(rng: random.Random) -> str:
    return pick(rng, ALNUM + "/+", 40)


# ---------------------------------------------------------------- secrets inside longer notes


def note_deploy(rng: random.Random) -> str:
    return (
        "Deployed billing-api v2.3.1 to staging on Tuesday. The migration took about four minutes and we "
        "had to bump the connection pool to 40. Staging DB password is "
        f"{password(rng)} until ops rotates it on Friday. Remember to re-run the smoke tests once the cache is warm."
    )


def note_contractor(rng: random.Random) -> str:
    return (
        "Onboarding notes for the new contractor: she gets read access to the analytics bucket and the "
        "Looker folder. Her temporary login is mweber / "
        f"{password(rng)} and she must change it on first login. Questions go to #data-eng."
    )


def note_webhook(rng: random.Random) -> str:
    return (
        "Spent the afternoon on the flaky payment webhook. It turned out the signing secret differs between "
        f"prod and staging; the prod one is whsec_{pick(rng, ALNUM, 32)}. Added a retry with exponential "
        "backoff and closed PAY-1182."
    )


def note_redis(rng: random.Random) -> str:
    return (
        "Retro: the outage started when the Redis primary failed over at 03:12 and we lost ~90 s of sessions. "
        f"Redis AUTH is {strong(rng, 24)} btw, same on the replica. Action item: page on failover, "
        "not only on memory."
    )


def note_mapbox(rng: random.Random) -> str:
    body = b64url(json.dumps({"u": "yullu-maps", "a": pick(rng, ALNUM, 10)}).encode())
    return (
        "We switched geocoding to Mapbox last sprint because the old vendor throttled us. The free tier covers "
        f"100k requests a month. The secret token we use server-side is sk.{body}.{pick(rng, B64URL, 22)} "
        "and the public one is in the frontend bundle."
    )


def note_sftp(rng: random.Random) -> str:
    return (
        "Partner ACME drops their nightly CSV on their SFTP box around 02:00 UTC. Host is sftp.acme-logistics.com, "
        "port 2222. We log in as yullu_ingest with "
        f"{password(rng)} (they refuse key auth). If the file is missing, email their ops desk before 06:00."
    )


def note_vpn(rng: random.Random) -> str:
    w1, w2 = rng.sample(WORDS, 2)
    n = rng.randint(10, 99)
    return (
        "To reach the staging cluster from home you need the office VPN. Use username ops and for the password "
        f"type {w1}, then an underscore, then {n}, then {w2}. The VPN drops after 8 hours idle."
    )


# ---------------------------------------------------------------- multi-line pastes


def compose_service(rng: random.Random) -> str:
    return (
        "services:\n"
        "  db:\n"
        "    image: postgres:16\n"
        "    environment:\n"
        "      POSTGRES_USER: shop\n"
        f"      POSTGRES_PASSWORD: {password(rng)}\n"
        "      POSTGRES_DB: shop\n"
        "    ports:\n"
        '      - "5432:5432"\n'
    )


def systemd_unit(rng: random.Random) -> str:
    return (
        "[Unit]\nDescription=Yullu export worker\n\n[Service]\nUser=yullu\n"
        "ExecStart=/opt/yullu/bin/worker --queue exports\n"
        "Environment=LOG_LEVEL=info\n"
        f'Environment="DB_PASS={password(rng)}"\n'
        "Restart=on-failure\n"
    )


def gha_step(rng: random.Random) -> str:
    return (
        "      - name: Publish package\n"
        "        run: npm publish --access public\n"
        "        env:\n"
        f"          NODE_AUTH_TOKEN: npm_{pick(rng, ALNUM, 36)}\n"
    )


def terraform_aws(rng: random.Random) -> str:
    return (
        'provider "aws" {\n'
        '  region     = "eu-west-1"\n'
        f'  access_key = "{aws_key_id(rng)}"\n'
        f'  secret_key = "{aws_secret(rng)}"\n'
        "}\n"
    )


def terraform_datadog(rng: random.Random) -> str:
    return (
        'provider "datadog" {\n'
        f'  api_key = "{pick(rng, HEX, 32)}"\n'
        f'  app_key = "{pick(rng, HEX, 40)}"\n'
        '  api_url = "https://api.datadoghq.eu/"\n'
        "}\n"
    )


def spring_props(rng: random.Random) -> str:
    return (
        "spring.datasource.url=jdbc:postgresql://db.internal:5432/orders\n"
        "spring.datasource.username=orders_app\n"
        f"spring.datasource.password={password(rng)}\n"
        "spring.jpa.hibernate.ddl-auto=validate\n"
    )


def npmrc(rng: random.Random) -> str:
    return (
        "registry=https://registry.npmjs.org/\n"
        f"//registry.npmjs.org/:_authToken=npm_{pick(rng, ALNUM, 36)}\n"
        "save-exact=true\n"
    )


def npmrc_legacy(rng: random.Random) -> str:
    auth = base64.b64encode(f"ci-bot:{password(rng)}".encode()).decode()
    return f"@corp:registry=https://npm.corp.example.com/\n//npm.corp.example.com/:_auth={auth}\nalways-auth=true\n"


def pypirc(rng: random.Random) -> str:
    token = "pypi-AgEIcHlwaS5vcmc" + pick(rng, B64URL, 140)
    return f"[distutils]\nindex-servers =\n    pypi\n\n[pypi]\nusername = __token__\npassword = {token}\n"


def settings_py(rng: random.Random) -> str:
    return (
        "DEBUG = False\n"
        f"SECRET_KEY = '{pick(rng, LOWER + DIGITS + '!@#$%^&*(-_=+)', 50)}'\n"
        "DATABASES = {\n"
        "    'default': {\n"
        "        'ENGINE': 'django.db.backends.postgresql',\n"
        "        'NAME': 'crm',\n"
        "        'USER': 'crm',\n"
        f"        'PASSWORD': '{password(rng)}',\n"
        "        'HOST': 'db',\n"
        "    }\n"
        "}\n"
    )


def dockerfile_env(rng: random.Random) -> str:
    return (
        "FROM mysql:8.0\n"
        f"ENV MYSQL_ROOT_PASSWORD={password(rng)}\n"
        "ENV MYSQL_DATABASE=wiki\n"
        "COPY init.sql /docker-entrypoint-initdb.d/\n"
    )


def dockerfile_arg(rng: random.Random) -> str:
    return (
        "FROM node:20-alpine\n"
        f"ARG GITHUB_TOKEN=ghp_{pick(rng, ALNUM, 36)}\n"
        'RUN git config --global url."https://${GITHUB_TOKEN}@github.com/".insteadOf "https://github.com/"\n'
        "RUN npm ci\n"
    )


def crontab_url(rng: random.Random) -> str:
    return (
        "# nightly backup trigger\n"
        f"*/30 2-4 * * * curl -fsS https://backup:{password(rng)}@backup.internal.example.com/trigger"
        " > /dev/null 2>&1\n"
    )


def log_auth_header(rng: random.Random) -> str:
    return (
        "2024-03-11T10:22:01.337Z INFO  http.client outbound POST https://api.payvendor.io/v1/charges "
        f"headers={{'Authorization': 'Bearer {pick(rng, ALNUM, 40)}', 'Content-Type': 'application/json'}} "
        "status=502 elapsed=30012ms"
    )


def http_cookie_dump(rng: random.Random) -> str:
    return (
        "GET /admin/orders/ HTTP/1.1\n"
        "Host: shop.example.com\n"
        "User-Agent: Mozilla/5.0\n"
        f"Cookie: csrftoken={pick(rng, ALNUM, 32)}; sessionid={pick(rng, LOWER + DIGITS, 32)}\n"
        "Accept: text/html\n"
    )


def http_basic_dump(rng: random.Random) -> str:
    creds = base64.b64encode(f"deploy:{password(rng)}".encode()).decode()
    return f"POST /api/v2/deploy HTTP/1.1\nHost: ci.internal\nAuthorization: Basic {creds}\nContent-Length: 42\n"


def k8s_secret(rng: random.Random) -> str:
    pw = base64.b64encode(password(rng).encode()).decode()
    return (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds\ntype: Opaque\ndata:\n"
        f"  username: {base64.b64encode(b'app').decode()}\n  password: {pw}\n"
    )


def dockerconfigjson(rng: random.Random) -> str:
    auth = base64.b64encode(f"robot$ci:{pick(rng, ALNUM, 32)}".encode()).decode()
    return json.dumps({"auths": {"registry.example.com": {"auth": auth}}}, indent=2)


def yaml_nested(rng: random.Random) -> str:
    return (
        "database:\n  host: db.prod.internal\n  port: 5432\n  credentials:\n"
        f"    user: reporting\n    pass: {password(rng)}\n"
    )


def markdown_table(rng: random.Random) -> str:
    return (
        "| env | user | password |\n|---|---|---|\n"
        f"| staging | admin | {password(rng)} |\n| prod | admin | {password(rng)} |\n"
    )


def netrc_heroku(rng: random.Random) -> str:
    return (
        "machine api.heroku.com\n  login dev@example.com\n"
        f"  password {rng_uuid(rng)}\n"
        "machine git.heroku.com\n  login dev@example.com\n"
        f"  password {rng_uuid(rng)}\n"
    )


def wireguard(rng: random.Random) -> str:
    return (
        "[Interface]\n"
        f"PrivateKey = {b64_body(rng, 32)}\n"
        "Address = 10.8.0.2/32\nDNS = 1.1.1.1\n\n[Peer]\n"
        f"PublicKey = {b64_body(rng, 32)}\nEndpoint = vpn.example.com:51820\n"
    )


def env_file(rng: random.Random) -> str:
    return (
        "APP_ENV=production\n"
        f"OPENAI_API_KEY=sk-proj-{pick(rng, B64URL, 74)}T3BlbkFJ{pick(rng, B64URL, 74)}\n"
        "LOG_LEVEL=warn\n"
    )


def gitlab_ci(rng: random.Random) -> str:
    return (
        "deploy:\n  stage: deploy\n  script:\n"
        f"    - git push https://oauth2:glpat-{pick(rng, B64URL, 20)}@gitlab.com/acme/infra.git HEAD:main\n"
    )


def helm_set(rng: random.Random) -> str:
    return (
        "helm upgrade --install cache bitnami/redis \\\n"
        "  --namespace cache \\\n"
        f"  --set auth.password={password(rng)} \\\n"
        "  --set replica.replicaCount=2\n"
    )


# ---------------------------------------------------------------- described in words


def words_tango(rng: random.Random) -> str:
    w = rng.choice(WORDS)
    return f"the password for the office printer admin page is the word {w} then {rng.randint(1000, 9999)}"


def words_wifi(rng: random.Random) -> str:
    w = rng.choice(WORDS)
    return (
        f"guest wifi: it's the word '{w}', all lowercase, followed by {rng.randint(2015, 2025)} and an exclamation mark"
    )


def words_pin(rng: random.Random) -> str:
    names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    digits = "-".join(names[rng.randint(0, 9)] for _ in range(4))
    return f"The PIN for the server room keypad is {digits}; don't write it on the door."


def words_spelled(rng: random.Random) -> str:
    w = rng.choice(WORDS)
    n = rng.randint(100, 999)
    return f"root on the old NAS: capital {w[0].upper()}, rest of the word {w}, then {n} and a dollar sign at the end"


# ---------------------------------------------------------------- partially masked, still usable


def masked_stripe(rng: random.Random) -> str:
    return f"Stripe live key (last four hidden): sk_live_51{pick(rng, ALNUM, 90)}****"


def masked_card(rng: random.Random) -> str:
    cvv = str(rng.randint(100, 999))
    return (
        f"company card {luhn_card(rng)} exp {rng.randint(1, 12):02d}/{rng.randint(26, 30)}, "
        f"CVV {cvv[0]}*{cvv[2]} (the middle digit is {cvv[1]})"
    )


def masked_password(rng: random.Random) -> str:
    pw = password(rng)
    return f"jenkins admin password: {pw[:-2]}** — the two stars are '{pw[-2:]}'"


# ---------------------------------------------------------------- split across two lines


def split_glpat(rng: random.Random) -> str:
    tok = pick(rng, B64URL, 20)
    return f"The CI deploy token (the chat wrapped it) is glpat-{tok[:10]}\n{tok[10:]}"


def split_aws(rng: random.Random) -> str:
    s = aws_secret(rng)
    return f"aws_access_key_id = {aws_key_id(rng)}\naws_secret_access_key = {s[:22]}\\\n{s[22:]}"


def split_password(rng: random.Random) -> str:
    pw = strong(rng, 18)
    return f"db password (too long for one line in the ticket):\n{pw[:9]}\n{pw[9:]}"


# ---------------------------------------------------------------- vendor formats


def slack_webhook(rng: random.Random) -> str:
    url = (
        f"https://hooks.slack.com/services/T{pick(rng, UPPER + DIGITS, 8)}/B{pick(rng, UPPER + DIGITS, 10)}/"
        f"{pick(rng, ALNUM, 24)}"
    )
    return f"alerts go to #ops via {url}"


def discord_webhook(rng: random.Random) -> str:
    return (
        f"discord release notes hook: https://discord.com/api/webhooks/{rng.randint(10**17, 10**18 - 1)}/"
        f"{pick(rng, B64URL, 68)}"
    )


def twilio(rng: random.Random) -> str:
    return f"TWILIO_ACCOUNT_SID=AC{pick(rng, HEX, 32)}\nTWILIO_AUTH_TOKEN={pick(rng, HEX, 32)}"


def sendgrid(rng: random.Random) -> str:
    return f"sendgrid key for transactional mail: SG.{pick(rng, B64URL, 22)}.{pick(rng, B64URL, 43)}"


def mailgun(rng: random.Random) -> str:
    return f"mailgun private API key {pick(rng, HEX, 32)}-{pick(rng, HEX, 8)}-{pick(rng, HEX, 8)} (EU region)"


def datadog_env(rng: random.Random) -> str:
    return f"DD_API_KEY={pick(rng, HEX, 32)} DD_SITE=datadoghq.eu ./run-agent.sh"


def sentry_dsn(rng: random.Random) -> str:
    return (
        f"SENTRY_DSN=https://{pick(rng, HEX, 32)}:{pick(rng, HEX, 32)}@o{rng.randint(100000, 999999)}"
        f".ingest.sentry.io/{rng.randint(1000000, 9999999)}"
    )


def rubygems(rng: random.Random) -> str:
    return f"gem push uses GEM_HOST_API_KEY=rubygems_{pick(rng, HEX, 48)}"


def azure_storage(rng: random.Random) -> str:
    return (
        "DefaultEndpointsProtocol=https;AccountName=yullubackups;"
        f"AccountKey={b64_body(rng, 64)};EndpointSuffix=core.windows.net"
    )


def azure_servicebus(rng: random.Random) -> str:
    return (
        "Endpoint=sb://yullu-events.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
        f"SharedAccessKey={b64_body(rng, 32)}"
    )


def gcp_service_account(rng: random.Random) -> str:
    body = pem_lines(b64_body(rng, 1216))
    data = {
        "type": "service_account",
        "project_id": "yullu-prod-31337",
        "private_key_id": pick(rng, HEX, 40),
        "private_key": f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n",
        "client_email": "exporter@yullu-prod-31337.iam.gserviceaccount.com",
        "client_id": str(rng.randint(10**20, 10**21 - 1)),
    }
    return json.dumps(data, indent=2)


def firebase_config(rng: random.Random) -> str:
    return (
        "const firebaseConfig = {\n"
        f'  apiKey: "AIza{pick(rng, B64URL, 35)}",\n'
        '  authDomain: "yullu-app.firebaseapp.com",\n'
        '  projectId: "yullu-app",\n'
        f'  appId: "1:{rng.randint(10**11, 10**12 - 1)}:web:{pick(rng, HEX, 22)}"\n'
        "};"
    )


def jwt_note(rng: random.Random) -> str:
    return f"service token for the reporting API (doesn't expire): {jwt(rng)}"


def putty_ppk(rng: random.Random) -> str:
    pub = pem_lines(b64_body(rng, 51), 64)
    priv = b64_body(rng, 36)
    return (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@bastion\n"
        f"Public-Lines: 2\n{pub}\nPrivate-Lines: 1\n{priv}\nPrivate-MAC: {pick(rng, HEX, 64)}\n"
    )


def openssh_key(rng: random.Random) -> str:
    body = pem_lines("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + b64_body(rng, 280), 70)
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"


def encrypted_pkcs8(rng: random.Random) -> str:
    body = pem_lines(b64_body(rng, 600))
    return (
        f"key for the signing service (passphrase {password(rng)}):\n"
        f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{body}\n-----END ENCRYPTED PRIVATE KEY-----"
    )


def ssh2_key(rng: random.Random) -> str:
    body = pem_lines(b64_body(rng, 700), 70)
    return (
        "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n"
        'Comment: "rsa-key-20240311"\n'
        f"{body}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----"
    )


def ec_key(rng: random.Random) -> str:
    body = pem_lines(b64_body(rng, 121))
    return f"-----BEGIN EC PRIVATE KEY-----\n{body}\n-----END EC PRIVATE KEY-----"


def pgp_key(rng: random.Random) -> str:
    body = pem_lines(b64_body(rng, 900))
    return f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n={pick(rng, B64, 4)}\n-----END PGP PRIVATE KEY BLOCK-----"


def age_key(rng: random.Random) -> str:
    return (
        "# created: 2024-03-11T10:00:00Z\n# public key: age1" + pick(rng, BECH32.lower(), 58) + "\n"
        "AGE-SECRET-KEY-1" + pick(rng, BECH32, 58)
    )


def vault_token(rng: random.Random) -> str:
    return f"export VAULT_TOKEN=hvs.{pick(rng, ALNUM, 24)}"


def shopify(rng: random.Random) -> str:
    return f"Shopify admin API access token for the store: shpat_{pick(rng, HEX, 32)}"


def telegram_bot(rng: random.Random) -> str:
    return f"bot token from BotFather: {rng.randint(10**9, 7 * 10**9)}:AA{pick(rng, B64URL, 33)}"


def huggingface(rng: random.Random) -> str:
    return f"HF_TOKEN=hf_{pick(rng, ALNUM, 34)}"


def digitalocean(rng: random.Random) -> str:
    return f"doctl auth init -t dop_v1_{pick(rng, HEX, 64)}"


def postman(rng: random.Random) -> str:
    return f"postman api key PMAK-{pick(rng, HEX, 24)}-{pick(rng, HEX, 34)}"


def okta_ssws(rng: random.Random) -> str:
    return f"curl -H 'Authorization: SSWS 00{pick(rng, B64URL, 40)}' https://acme.okta.com/api/v1/users?limit=25"


def anthropic(rng: random.Random) -> str:
    return f"claude key: sk-ant-api03-{pick(rng, B64URL, 93)}AA"


def cloudflare(rng: random.Random) -> str:
    return f"CLOUDFLARE_API_TOKEN: {pick(rng, B64URL, 40)}"


# ---------------------------------------------------------------- command lines and URLs


def mysql_cli(rng: random.Random) -> str:
    return f"mysql -h db.internal -u root -p{password(rng)} inventory < dump.sql"


def ldapsearch(rng: random.Random) -> str:
    return (
        f'ldapsearch -x -H ldaps://ldap.corp -D "cn=admin,dc=corp,dc=example" -w {password(rng)} -b "ou=people,dc=corp"'
    )


def mongo_srv(rng: random.Random) -> str:
    return f"mongodb+srv://analytics:{password(rng)}@cluster0.ab12c.mongodb.net/events?retryWrites=true"


def amqp_url(rng: random.Random) -> str:
    return f"CELERY_BROKER_URL = 'amqp://celery:{strong(rng, 16)}@rabbit.internal:5672/prod'"


def jdbc_sqlserver(rng: random.Random) -> str:
    return f"jdbc:sqlserver://sql01.corp:1433;databaseName=ledger;user=sa;password={password(rng)};encrypt=true"


def net_use(rng: random.Random) -> str:
    return f"net use Z: \\\\fs01\\finance /user:CORP\\svc_backup {password(rng)} /persistent:yes"


def powershell(rng: random.Random) -> str:
    return (
        f'$pw = ConvertTo-SecureString "{password(rng)}" -AsPlainText -Force\n'
        "$cred = New-Object System.Management.Automation.PSCredential ('CORP\\deploy', $pw)"
    )


def docker_login(rng: random.Random) -> str:
    return f"docker login registry.example.com -u ci -p {strong(rng, 22)}"


def redis_cli(rng: random.Random) -> str:
    return f"redis-cli -h cache.prod -a '{strong(rng, 20)}' --no-auth-warning INFO replication"


def smtp_app_password(rng: random.Random) -> str:
    groups = " ".join(pick(rng, LOWER, 4) for _ in range(4))
    return f"gmail app password for the mailer account: {groups}"


def no_name_password(rng: random.Random) -> str:
    return f"use {strong(rng, 14)} for the router, the default one was changed"


def creds_pair(rng: random.Random) -> str:
    w = rng.choice(WORDS).capitalize()
    return f"grafana creds: viewer | {w}-{w}-{rng.randint(10, 99)}"


# ---------------------------------------------------------------- seeds, codes, cards


def seed_phrase(rng: random.Random) -> str:
    return "hardware wallet backup words: " + " ".join(rng.choice(BIP39) for _ in range(12))


def recovery_codes(rng: random.Random) -> str:
    codes = "\n".join(f"{pick(rng, HEX, 5)}-{pick(rng, HEX, 5)}" for _ in range(6))
    return f"GitHub recovery codes for the org owner account:\n{codes}"


def card_note(rng: random.Random) -> str:
    return (
        f"AWS billing card is {luhn_card(rng, '5', 16)}, expires {rng.randint(1, 12):02d}/{rng.randint(26, 30)}, "
        f"security code {rng.randint(100, 999)}."
    )


# ---------------------------------------------------------------- non-English prose


def de_password(rng: random.Random) -> str:
    return f"Notiz: Das Passwort für den Staging-Server lautet {password(rng)}, bitte nicht weitergeben."


def de_pin(rng: random.Random) -> str:
    return f"Die PIN für die Firmenkreditkarte ist {rng.randint(1000, 9999)}."


def es_password(rng: random.Random) -> str:
    return f"La contraseña de la base de datos de producción es {password(rng)} y el usuario es admin."


def es_apikey(rng: random.Random) -> str:
    return f"Mi clave de API para OpenWeather: {pick(rng, HEX, 32)}"


def fr_password(rng: random.Random) -> str:
    return f"Le mot de passe du compte root sur le NAS est {password(rng)} — à changer après la migration."


def fr_recovery(rng: random.Random) -> str:
    a, b, c, d = (rng.randint(1000, 9999) for _ in range(4))
    return f"Codes de récupération du compte Google : {a} {b}, {c} {d}"


def pt_password(rng: random.Random) -> str:
    return f"A senha do Wi-Fi do escritório é {password(rng)}."


def pt_token(rng: random.Random) -> str:
    return f"O token de acesso da API de pagamentos é {pick(rng, ALNUM, 40)}, não compartilhe."


def it_password(rng: random.Random) -> str:
    return f"La password dell'utente deploy su Jenkins è {password(rng)}."


def it_passphrase(rng: random.Random) -> str:
    w = rng.sample(WORDS, 4)
    return f"la passphrase della chiave GPG è '{' '.join(w)}'"


def nl_password(rng: random.Random) -> str:
    return f"Het wachtwoord van de FTP-server is {password(rng)}, gebruikersnaam upload."


def nl_note(rng: random.Random) -> str:
    return (
        "De nachtelijke export naar de boekhouding faalde weer. Oorzaak: het certificaat was verlopen. "
        f"Inloggen op het portaal gaat met finance / {password(rng)}. Nieuw certificaat aangevraagd."
    )


def pl_password(rng: random.Random) -> str:
    return f"Hasło do panelu administracyjnego to {password(rng)}."


def pl_pin_puk(rng: random.Random) -> str:
    return f"Kod PIN do karty SIM w routerze LTE: {rng.randint(1000, 9999)}, PUK: {rng.randint(10**7, 10**8 - 1)}"


def tr_password(rng: random.Random) -> str:
    return f"Veritabanı şifresi {password(rng)}, kullanıcı adı postgres."


def tr_apikey(rng: random.Random) -> str:
    return f"Ödeme servisinin API anahtarı: {pick(rng, ALNUM, 32)}"


def de_note(rng: random.Random) -> str:
    return (
        "Gestern haben wir den Mailserver auf die neue VM umgezogen. Die DNS-Einträge sind schon angepasst. "
        f"Das SMTP-Kennwort für noreply@ ist jetzt {password(rng)}. Bitte in Grafana die Alerts prüfen."
    )


def es_note(rng: random.Random) -> str:
    return (
        "El despliegue del viernes salió bien salvo por el job de facturas. Lo reiniciamos a mano. "
        f"Para entrar en el servidor de facturas usa el usuario ops y la clave {password(rng)}. "
        "El lunes revisamos los logs."
    )


HELD_OUT_11: list[Form] = [
    ("note deploy staging db password", note_deploy),
    ("note contractor temp login", note_contractor),
    ("note webhook signing secret whsec", note_webhook),
    ("note redis AUTH btw", note_redis),
    ("note mapbox sk. token", note_mapbox),
    ("note sftp partner password", note_sftp),
    ("note vpn password in words", note_vpn),
    ("docker-compose POSTGRES_PASSWORD", compose_service),
    ("systemd Environment=DB_PASS", systemd_unit),
    ("github actions NODE_AUTH_TOKEN literal", gha_step),
    ("terraform aws provider keys", terraform_aws),
    ("terraform datadog provider keys", terraform_datadog),
    ("spring datasource password", spring_props),
    (".npmrc _authToken", npmrc),
    (".npmrc legacy _auth", npmrc_legacy),
    (".pypirc token", pypirc),
    ("settings.py SECRET_KEY + PASSWORD", settings_py),
    ("Dockerfile ENV MYSQL_ROOT_PASSWORD", dockerfile_env),
    ("Dockerfile ARG GITHUB_TOKEN", dockerfile_arg),
    ("crontab curl URL creds", crontab_url),
    ("log line Authorization Bearer", log_auth_header),
    ("HTTP dump Cookie sessionid", http_cookie_dump),
    ("HTTP dump Basic auth", http_basic_dump),
    ("k8s Secret data password b64", k8s_secret),
    ("dockerconfigjson auth", dockerconfigjson),
    ("yaml nested credentials pass", yaml_nested),
    ("markdown table password column", markdown_table),
    (".netrc heroku uuid passwords", netrc_heroku),
    ("wireguard PrivateKey", wireguard),
    (".env OPENAI sk-proj", env_file),
    ("gitlab-ci push URL glpat", gitlab_ci),
    ("helm --set auth.password", helm_set),
    ("words: the word X then digits", words_tango),
    ("words: wifi lowercase word + year", words_wifi),
    ("words: PIN spelled digits", words_pin),
    ("words: spelled root password", words_spelled),
    ("masked stripe last four", masked_stripe),
    ("masked card CVV middle digit", masked_card),
    ("masked password stars explained", masked_password),
    ("split glpat across lines", split_glpat),
    ("split aws secret backslash", split_aws),
    ("split password two lines", split_password),
    ("slack webhook", slack_webhook),
    ("discord webhook", discord_webhook),
    ("twilio sid + auth token", twilio),
    ("sendgrid SG.", sendgrid),
    ("mailgun new-format key", mailgun),
    ("datadog DD_API_KEY", datadog_env),
    ("sentry DSN with secret", sentry_dsn),
    ("rubygems token", rubygems),
    ("azure storage connection string", azure_storage),
    ("azure service bus SharedAccessKey", azure_servicebus),
    ("gcp service account json", gcp_service_account),
    ("firebase config apiKey", firebase_config),
    ("JWT HS256 signed", jwt_note),
    ("PuTTY ppk v3", putty_ppk),
    ("OpenSSH private key", openssh_key),
    ("encrypted PKCS8 + passphrase", encrypted_pkcs8),
    ("SSH2 encrypted private key", ssh2_key),
    ("EC private key", ec_key),
    ("PGP private key block", pgp_key),
    ("age secret key", age_key),
    ("vault hvs token", vault_token),
    ("shopify shpat", shopify),
    ("telegram bot token", telegram_bot),
    ("huggingface HF_TOKEN", huggingface),
    ("digitalocean dop_v1", digitalocean),
    ("postman PMAK", postman),
    ("okta SSWS header", okta_ssws),
    ("anthropic sk-ant", anthropic),
    ("cloudflare api token", cloudflare),
    ("mysql -p<password>", mysql_cli),
    ("ldapsearch -w", ldapsearch),
    ("mongodb+srv URI", mongo_srv),
    ("amqp URL", amqp_url),
    ("jdbc sqlserver password=", jdbc_sqlserver),
    ("net use /user password", net_use),
    ("powershell ConvertTo-SecureString", powershell),
    ("docker login -p", docker_login),
    ("redis-cli -a", redis_cli),
    ("gmail app password groups", smtp_app_password),
    ("password with no name", no_name_password),
    ("creds: user | pass", creds_pair),
    ("seed phrase 12 words", seed_phrase),
    ("github recovery codes", recovery_codes),
    ("card + expiry + security code", card_note),
    ("de Passwort lautet", de_password),
    ("de PIN Firmenkreditkarte", de_pin),
    ("es contraseña", es_password),
    ("es clave de API hex", es_apikey),
    ("fr mot de passe", fr_password),
    ("fr codes de récupération", fr_recovery),
    ("pt senha", pt_password),
    ("pt token de acesso", pt_token),
    ("it password", it_password),
    ("it passphrase GPG", it_passphrase),
    ("nl wachtwoord", nl_password),
    ("nl note portal login", nl_note),
    ("pl hasło", pl_password),
    ("pl PIN PUK", pl_pin_puk),
    ("tr şifresi", tr_password),
    ("tr API anahtarı", tr_apikey),
    ("de note SMTP-Kennwort", de_note),
    ("es note clave", es_note),
]


# ---------------------------------------------------------------- keepers


def fixed(text: str) -> Build:
    return lambda rng: text


def k_sha256(rng: random.Random) -> str:
    return f"sha256 of the release tarball yullu-0.4.2.tar.gz: {pick(rng, HEX, 64)}"


def k_md5(rng: random.Random) -> str:
    return f"MD5 checksum of the dataset zip is {pick(rng, HEX, 32)}; compare before unpacking."


def k_commit(rng: random.Random) -> str:
    return f"Commit {pick(rng, HEX, 40)} fixed the race in the scheduler; cherry-pick it onto 0.3.x."


def k_short_sha(rng: random.Random) -> str:
    return f"The 'rotate keys' change landed as {pick(rng, HEX, 7)} on main; the old key was revoked that day."


def k_uuid(rng: random.Random) -> str:
    return f"Record {rng_uuid(rng)} was imported twice; the dedupe job keeps the older row."


def k_tenant_uuid(rng: random.Random) -> str:
    return f"tenant_id for Acme in prod is {rng_uuid(rng)} (use it when filtering the audit log)."


def k_digest(rng: random.Random) -> str:
    return f"Pin the base image by digest: python:3.11-slim@sha256:{pick(rng, HEX, 64)}"


def k_pip_hash(rng: random.Random) -> str:
    return f"cryptography==42.0.5 --hash=sha256:{pick(rng, HEX, 64)}"


def k_integrity(rng: random.Random) -> str:
    return f'"integrity": "sha512-{b64_body(rng, 64)}" is the lockfile entry for left-pad 1.3.0'


def k_tag(rng: random.Random) -> str:
    return f"Tag v3.2.0 points at {pick(rng, HEX, 40)}; v3.2.1 only bumps the docs."


def k_b64_fixture(rng: random.Random) -> str:
    data = base64.b64encode(b"hello from the import fixture, row 17").decode()
    return f"The test fixture body is {data} which is just 'hello from the import fixture, row 17' encoded."


def k_b64_json(rng: random.Random) -> str:
    data = base64.b64encode(json.dumps({"page": 2, "per_page": 50}).encode()).decode()
    return f"The pagination cursor {data} decodes to page 2, 50 per page; it is not signed."


def k_fingerprint(rng: random.Random) -> str:
    return f"The deploy box host key fingerprint is SHA256:{pick(rng, B64, 43)} — verify on first connect."


def k_pubkey(rng: random.Random) -> str:
    return (
        f"My public key for the deploy box: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64_body(rng, 32)[:43]} mila@laptop"
    )


def k_arn(rng: random.Random) -> str:
    acct = rng.randint(10**11, 10**12 - 1)
    return f"AWS account {acct}, deploy role arn:aws:iam::{acct}:role/yullu-deploy (assumed via OIDC)."


def k_etag(rng: random.Random) -> str:
    return f'The API returned ETag W/"{pick(rng, HEX, 32)}" and 304 on the second call, so caching works.'


def k_request_id(rng: random.Random) -> str:
    return f"request id 01H{pick(rng, '0123456789ABCDEFGHJKMNPQRSTVWXYZ', 23)} in the logs shows the 30 s timeout"


HELD_OUT_11_KEEP: list[Form] = [
    (
        "auth docs bearer placeholder",
        fixed("Clients send the token as `Authorization: Bearer <token>`; tokens expire after 30 days."),
    ),
    ("password reset flow", fixed("The password reset flow emails a one-time link valid for 15 minutes.")),
    ("sha256 tarball", k_sha256),
    ("md5 checksum", k_md5),
    ("commit sha", k_commit),
    ("short sha", k_short_sha),
    ("uuid record id", k_uuid),
    ("uuid tenant id", k_tenant_uuid),
    (
        "vault path rotate",
        fixed("Rotate the Stripe API key in Vault at path secret/data/payments/stripe every 90 days."),
    ),
    (
        "config key no value",
        fixed("Set STRIPE_API_KEY in the environment before starting the worker; never commit it."),
    ),
    ("export placeholder", fixed("export OPENAI_API_KEY=<your-key-here>")),
    ("url env placeholder", fixed("DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app")),
    ("image digest", k_digest),
    ("pip hash", k_pip_hash),
    ("npm integrity", k_integrity),
    ("version string", fixed("Version 2.14.3-rc.1 (build 20240311.4) ships the token refresh endpoint.")),
    ("git tag sha", k_tag),
    ("base64 fixture text", k_b64_fixture),
    ("base64 pagination cursor", k_b64_json),
    ("password policy", fixed("The password field on signup must be at least 12 characters and contain one digit.")),
    ("bcrypt docs", fixed("We hash passwords with bcrypt cost 12; the column is users.password_hash.")),
    ("trusted publishing", fixed("PyPI publishing uses trusted publishing (OIDC), so there is no API token to store.")),
    ("jwks docs", fixed("Our JWTs are signed with RS256; the public keys are served at /.well-known/jwks.json.")),
    ("ssh fingerprint", k_fingerprint),
    ("ssh public key", k_pubkey),
    ("k8s secret from env", fixed('kubectl create secret generic db-creds --from-literal=password="$DB_PASSWORD"')),
    ("1password reference", fixed("The Sentry DSN for prod is in 1Password under 'Sentry prod'; org slug is yullu.")),
    ("config knobs", fixed("Set password_min_length = 12 and token_ttl_days = 30 in config.toml.")),
    (
        "token header format",
        fixed("DRF expects the header format `Authorization: Token <key>` for the legacy clients."),
    ),
    (
        "invalid_grant error",
        fixed("Error: invalid_grant — the refresh token had expired; re-running `gh auth login` fixed it."),
    ),
    ("argon2 params", fixed("Passwords are hashed with argon2id (m=65536, t=3, p=4).")),
    (
        "2fa settings path",
        fixed("2FA lives under Settings → Security → Two-factor authentication; recovery codes download once."),
    ),
    (
        "secret key generation",
        fixed("Generate the Django SECRET_KEY with secrets.token_urlsafe(50); it is read from the SECRET_KEY env var."),
    ),
    ("order ids", fixed("Orders ORD-2024-000183 and INV-88213 were both refunded on 11 March.")),
    (
        "compose secret file",
        fixed(
            "services:\n  db:\n    image: postgres:16\n    environment:\n"
            "      POSTGRES_PASSWORD_FILE: /run/secrets/db_password\n"
        ),
    ),
    (
        "gha secrets ref",
        fixed("      - run: npm publish\n        env:\n          NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}\n"),
    ),
    (
        "terraform var",
        fixed('resource "aws_db_instance" "main" {\n  username = "app"\n  password = var.db_password\n}\n'),
    ),
    ("spring placeholder", fixed("spring.datasource.username=orders_app\nspring.datasource.password=${DB_PASSWORD}\n")),
    ("dockerfile arg no value", fixed("FROM node:20-alpine\nARG NPM_TOKEN\nRUN --mount=type=secret,id=npm npm ci\n")),
    (
        "systemd EnvironmentFile",
        fixed("[Service]\nEnvironmentFile=/etc/yullu/secrets.env\nExecStart=/opt/yullu/bin/worker\n"),
    ),
    (
        "redacted log line",
        fixed(
            "2024-03-11T10:22:01Z INFO outbound POST /v1/charges"
            " headers={'Authorization': 'Bearer [REDACTED]'} status=502"
        ),
    ),
    (
        "crontab no creds",
        fixed("*/15 * * * * /usr/local/bin/backup --config /etc/backup.toml >> /var/log/backup.log 2>&1"),
    ),
    (
        "set-cookie redacted",
        fixed("Set-Cookie: sessionid=<redacted>; HttpOnly; Secure; SameSite=Lax — that's why the SPA can't read it."),
    ),
    ("code name tango", fixed("'tango' is our code name for the Q3 release; the branch is release/tango.")),
    ("kiosk pin docs", fixed("PIN codes on the kiosks are 4 digits and are reset daily by the kiosk service.")),
    (
        "stripe test card",
        fixed("Use Stripe's documented test card 4242 4242 4242 4242 with any future expiry in staging."),
    ),
    (
        "slack webhook docs",
        fixed("Slack incoming webhooks look like https://hooks.slack.com/services/…; ours is kept in Vault."),
    ),
    ("aws account arn", k_arn),
    ("etag", k_etag),
    ("request id ulid", k_request_id),
    ("access key id revoked suffix", fixed("AKIA-prefixed ids are access key ids; the one we revoked ended in 7QXZ.")),
    ("de password policy", fixed("Das Passwort muss mindestens 12 Zeichen lang sein und wird alle 90 Tage geändert.")),
    ("es api key location", fixed("La clave de la API se guarda en el gestor de secretos, nunca en el repositorio.")),
    ("fr forgotten password", fixed("Le lien « mot de passe oublié » envoie un e-mail valable une heure.")),
    ("pt token expiry", fixed("O token de acesso expira em 1 hora; o refresh token dura 30 dias.")),
    ("it password rotation", fixed("La password del database viene ruotata ogni mese dal job vault-rotate.")),
    ("nl wachtwoord beleid", fixed("Het wachtwoord van servicegebruikers staat in Vault onder secret/ops/ftp.")),
    ("pl hasło polityka", fixed("Hasło do panelu zmieniamy co kwartał; nowe jest w menedżerze haseł zespołu.")),
    ("tr şifre politikası", fixed("Veritabanı şifresi her ay otomatik olarak değiştiriliyor ve Vault'ta tutuluyor.")),
    (
        "deploy note no secret",
        fixed(
            "Deployed billing-api v2.3.1 to staging on Tuesday. "
            "The migration took four minutes and we bumped the pool to 40. "
            "The DB password now comes from Vault, so nothing is in the env file anymore. Smoke tests passed."
        ),
    ),
]

"""Credential forms for measuring the secret scanner (bench/secret_scan.py, tests/test_secrets.py).

Realistic fakes: each form follows the provider's published token shape, filled with seeded random
characters (so no real key, and no literal token in this file for other scanners to trip on), set
in the kind of sentence or config line an assistant might try to store. `TUNE` is what the scanner
was developed against; `HELD_OUT` was written before the scanner was run on it and never tuned on:
other providers, other wrappers, other hiding tricks.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from bench.secret_fill import ALNUM as ALNUM
from bench.secret_fill import HEX as HEX
from bench.secret_fill import fixed
from bench.secret_forms_9 import HELD_OUT_9 as HELD_OUT_9
from bench.secret_forms_9 import HELD_OUT_9_KEEP as HELD_OUT_9_KEEP
from bench.secret_forms_10 import HELD_OUT_10 as HELD_OUT_10
from bench.secret_forms_10 import HELD_OUT_10_KEEP as HELD_OUT_10_KEEP
from bench.secret_forms_11 import HELD_OUT_11 as HELD_OUT_11
from bench.secret_forms_11 import HELD_OUT_11_KEEP as HELD_OUT_11_KEEP
from bench.secret_forms_12 import HELD_OUT_12 as HELD_OUT_12
from bench.secret_forms_12 import HELD_OUT_12_KEEP as HELD_OUT_12_KEEP
from bench.secret_forms_13 import HELD_OUT_13 as HELD_OUT_13
from bench.secret_forms_13 import HELD_OUT_13_KEEP as HELD_OUT_13_KEEP
from bench.secret_forms_14 import HELD_OUT_14 as HELD_OUT_14
from bench.secret_forms_14 import HELD_OUT_14_KEEP as HELD_OUT_14_KEEP
from bench.secret_forms_15 import HELD_OUT_15 as HELD_OUT_15
from bench.secret_forms_15 import HELD_OUT_15_KEEP as HELD_OUT_15_KEEP
from bench.secret_forms_16 import HELD_OUT_16 as HELD_OUT_16
from bench.secret_forms_16 import HELD_OUT_16_KEEP as HELD_OUT_16_KEEP
from bench.secret_forms_17 import HELD_OUT_17 as HELD_OUT_17
from bench.secret_forms_17 import HELD_OUT_17_KEEP as HELD_OUT_17_KEEP
from bench.secret_forms_18 import HELD_OUT_18 as HELD_OUT_18
from bench.secret_forms_18 import HELD_OUT_18_KEEP as HELD_OUT_18_KEEP
from bench.secret_forms_19 import HELD_OUT_19 as HELD_OUT_19
from bench.secret_forms_19 import HELD_OUT_19_KEEP as HELD_OUT_19_KEEP
from bench.secret_forms_19 import REFUSED_BY_POLICY_19
from bench.secret_forms_20 import HELD_OUT_20 as HELD_OUT_20
from bench.secret_forms_20 import HELD_OUT_20_KEEP as HELD_OUT_20_KEEP
from bench.secret_forms_21 import HELD_OUT_21 as HELD_OUT_21
from bench.secret_forms_21 import HELD_OUT_21_KEEP as HELD_OUT_21_KEEP
from bench.secret_forms_21 import REFUSED_BY_POLICY_21
from bench.secret_forms_22 import HELD_OUT_22 as HELD_OUT_22
from bench.secret_forms_22 import HELD_OUT_22_KEEP as HELD_OUT_22_KEEP
from bench.secret_forms_23 import HELD_OUT_23 as HELD_OUT_23
from bench.secret_forms_23 import HELD_OUT_23_KEEP as HELD_OUT_23_KEEP

Gen = Callable[[random.Random], str]

UPPER_DIGITS = string.ascii_uppercase + string.digits
BASE32 = string.ascii_uppercase + "234567"  # AWS key ids
LOWER_ALNUM = string.ascii_lowercase + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def chars(alphabet: str, n: int) -> Gen:
    return lambda rng: "".join(rng.choice(alphabet) for _ in range(n))


def b64_of(n_bytes: int) -> Gen:
    return lambda rng: base64.b64encode(rng.randbytes(n_bytes)).decode()


def uuid4(rng: random.Random) -> str:
    h = chars(HEX, 32)(rng)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def jwt(rng: random.Random) -> str:
    def part(obj: str) -> str:
        return base64.urlsafe_b64encode(obj.encode()).decode().rstrip("=")

    header = part('{"alg":"HS256","typ":"JWT"}')
    claims = part(json.dumps({"sub": chars(string.digits, 10)(rng), "role": "admin"}))
    return f"{header}.{claims}.{chars(URLSAFE, 43)(rng)}"


def pem_body(rng: random.Random, lines: int = 4) -> str:
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + chars(B64, 64 * lines)(rng)
    return "\n".join(body[i : i + 64] for i in range(0, len(body), 64))


def password(rng: random.Random) -> str:
    core = chars(ALNUM, 10)(rng)
    return core[:4] + rng.choice("#!%^*-") + core[4:] + rng.choice(string.digits)


# Hiding tricks (the issue's probe used each)
ZWSP = "\u200b"
CYRILLIC = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441", "x": "\u0445"}


def zero_width(text: str) -> str:
    mid = len(text) // 2
    return text[:mid] + ZWSP + text[mid:]


def full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def cyrillic(text: str) -> str:
    return "".join(CYRILLIC.get(c, c) for c in text)


def split_lines(text: str) -> str:
    mid = len(text) // 2
    return text[:mid] + "\n" + text[mid:]


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def pct(text: str) -> str:
    return quote(text, safe="")


# (name, builder): a builder makes one text from a seeded rng.
Form = tuple[str, Callable[[random.Random], str]]


def _f(name: str, build: Callable[[random.Random], str]) -> Form:
    return name, build


TUNE: list[Form] = [
    _f("aws access key id", lambda r: f"The deploy user is AKIA{chars(BASE32, 16)(r)} in us-east-1."),
    _f("aws secret, bare", lambda r: f"secret for the backup bucket: {b64_of(30)(r)}"),
    _f("aws secret, assigned", lambda r: f"aws_secret_access_key = {b64_of(30)(r)}"),
    _f("aws credentials file", lambda r: f"[default]\naws_access_key_id = AKIA{chars(BASE32, 16)(r)}"),
    _f("github classic pat", lambda r: f"push with ghp_{chars(ALNUM, 36)(r)}"),
    _f("github oauth", lambda r: f"GITHUB_TOKEN=gho_{chars(ALNUM, 36)(r)}"),
    _f("github fine-grained", lambda r: f"github_pat_{chars(ALNUM, 22)(r)}_{chars(ALNUM, 59)(r)}"),
    _f("gitlab pat", lambda r: f"CI uses glpat-{chars(URLSAFE, 20)(r)} for the registry"),
    _f(
        "slack bot token",
        lambda r: f"xoxb-{chars(string.digits, 12)(r)}-{chars(string.digits, 13)(r)}-{chars(ALNUM, 24)(r)}",
    ),
    _f(
        "slack app token",
        lambda r: (
            f"socket mode: xapp-1-A{chars(UPPER_DIGITS, 10)(r)}-{chars(string.digits, 13)(r)}-{chars(HEX, 64)(r)}"
        ),
    ),
    _f(
        "slack webhook",
        lambda r: (
            "alerts post to https://hooks.slack.com/services/"
            f"T{chars(UPPER_DIGITS, 8)(r)}/B{chars(UPPER_DIGITS, 10)(r)}/{chars(ALNUM, 24)(r)}"
        ),
    ),
    _f("stripe live secret", lambda r: f"STRIPE_SECRET_KEY=sk_live_{chars(ALNUM, 24)(r)}"),
    _f("stripe restricted", lambda r: f"the reporting job uses rk_live_{chars(ALNUM, 24)(r)}"),
    _f("openai project key", lambda r: f"OPENAI_API_KEY=sk-proj-{chars(URLSAFE, 48)(r)}"),
    _f("anthropic key", lambda r: f"sk-ant-api03-{chars(URLSAFE, 93)(r)}AA"),
    _f("google api key", lambda r: f"maps key AIza{chars(URLSAFE, 35)(r)}"),
    _f("sendgrid", lambda r: f"mail goes through SG.{chars(URLSAFE, 22)(r)}.{chars(URLSAFE, 43)(r)}"),
    _f("twilio api key", lambda r: f"twilio: SK{chars(HEX, 32)(r)}"),
    _f("twilio auth token", lambda r: f"TWILIO_AUTH_TOKEN={chars(HEX, 32)(r)}"),
    _f("hugging face", lambda r: f"HF token hf_{chars(string.ascii_letters, 34)(r)}"),
    _f("pypi", lambda r: f"pypi-AgEIcHlwaS5vcmc{chars(URLSAFE, 120)(r)}"),
    _f("npm token", lambda r: f"//registry.npmjs.org/:_authToken=npm_{chars(ALNUM, 36)(r)}"),
    _f("jwt", lambda r: f"session cookie was {jwt(r)}"),
    _f("pem private key", lambda r: f"-----BEGIN PRIVATE KEY-----\n{pem_body(r)}\n-----END PRIVATE KEY-----"),
    _f("pem body only", lambda r: f"the key body:\n{pem_body(r)}"),
    _f("openssh key body", lambda r: f"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAB{chars(B64, 60)(r)}"),
    _f("postgres url", lambda r: f"DATABASE_URL=postgres://app:{password(r)}@db.internal:5432/app"),
    _f(
        "postgres url, / in password",
        lambda r: f"postgresql://svc:{chars(ALNUM, 6)(r)}/{chars(ALNUM, 6)(r)}@10.0.0.5/prod",
    ),
    _f("mysql url", lambda r: f"mysql://root:{password(r)}@localhost:3306/shop"),
    _f("redis url", lambda r: f"redis://:{chars(ALNUM, 20)(r)}@cache.internal:6379/0"),
    _f("DB_PASS line", lambda r: f"DB_PASS={password(r)}"),
    _f("ENCRYPTION_KEY line", lambda r: f"ENCRYPTION_KEY={b64_of(32)(r)}"),
    _f("signing key hex", lambda r: f"WEBHOOK_SIGNING_KEY={chars(HEX, 64)(r)}"),
    _f("bearer header", lambda r: f"Authorization: Bearer {chars(URLSAFE, 40)(r)}"),
    _f("basic header", lambda r: f"-H 'Authorization: Basic {b64(f'deploy:{password(r)}')}'"),
    _f("curl -u", lambda r: f"curl -u admin:{password(r)} https://ci.internal/api"),
    _f("django secret key", lambda r: f"SECRET_KEY = '{chars(ALNUM + '!@#%^&*(-_=+)', 50)(r)}'"),
    _f("azure storage", lambda r: f"DefaultEndpointsProtocol=https;AccountName=prod;AccountKey={b64_of(64)(r)};"),
    _f(
        "discord bot",
        lambda r: f"discord bot token {chars(ALNUM, 24)(r)}.{chars(URLSAFE, 6)(r)}.{chars(URLSAFE, 27)(r)}",
    ),
    _f("telegram bot", lambda r: f"TELEGRAM_BOT_TOKEN={chars(string.digits, 10)(r)}:AA{chars(URLSAFE, 33)(r)}"),
    _f("mailgun", lambda r: f"mailgun api key: key-{chars(HEX, 32)(r)}"),
    _f("shopify", lambda r: f"shpat_{chars(HEX, 32)(r)}"),
    _f("digitalocean", lambda r: f"doctl auth with dop_v1_{chars(HEX, 64)(r)}"),
    _f("doppler", lambda r: f"dp.pt.{chars(ALNUM, 43)(r)}"),
    _f("heroku", lambda r: f"HEROKU_API_KEY={uuid4(r)}"),
    _f("datadog", lambda r: f"datadog api_key: {chars(HEX, 32)(r)}"),
    _f("linear", lambda r: f"lin_api_{chars(ALNUM, 40)(r)}"),
    _f("postman", lambda r: f"PMAK-{chars(HEX, 24)(r)}-{chars(HEX, 34)(r)}"),
    _f("databricks", lambda r: f"dapi{chars(HEX, 32)(r)}"),
    _f("vault", lambda r: f"VAULT_TOKEN=hvs.{chars(URLSAFE, 90)(r)}"),
    _f("gcp service account", lambda r: f'{{"type": "service_account", "private_key_id": "{chars(HEX, 40)(r)}"}}'),
    _f("yaml password", lambda r: f"database:\n  password: {password(r)}"),
    _f("json secret", lambda r: f'{{"client_secret": "{chars(URLSAFE, 32)(r)}"}}'),
    _f("zero-width github", lambda r: zero_width(f"ghp_{chars(ALNUM, 36)(r)}")),
    _f("zero-width stripe", lambda r: zero_width(f"sk_live_{chars(ALNUM, 24)(r)}")),
    _f("full-width github", lambda r: full_width(f"ghp_{chars(ALNUM, 36)(r)}")),
    _f("full-width assignment", lambda r: full_width(f"API_KEY={chars(ALNUM, 32)(r)}")),
    _f("cyrillic github", lambda r: cyrillic("ghp_") + chars(ALNUM, 36)(r)),
    _f("cyrillic openai", lambda r: cyrillic(f"sk-proj-{chars(URLSAFE, 48)(r)}")),
    _f("split github", lambda r: split_lines(f"token: ghp_{chars(ALNUM, 36)(r)}")),
    _f(
        "split slack",
        lambda r: split_lines(
            f"xoxb-{chars(string.digits, 12)(r)}-{chars(string.digits, 13)(r)}-{chars(ALNUM, 24)(r)}"
        ),
    ),
    _f("base64 github", lambda r: f"encoded: {b64(f'ghp_{chars(ALNUM, 36)(r)}')}"),
    _f("base64 .env line", lambda r: b64(f"DB_PASSWORD={password(r)}\n")),
    _f("url-encoded url", lambda r: f"conn={pct(f'postgres://app:{password(r)}@db/app')}"),
]


HELD_OUT: list[Form] = [
    _f("atlassian", lambda r: f"JIRA_API_TOKEN=ATATT3xFfGF0{chars(URLSAFE, 180)(r)}={chars('0123456789ABCDEF', 8)(r)}"),
    _f("sentry user token", lambda r: f"sntryu_{chars(HEX, 64)(r)}"),
    _f("grafana cloud", lambda r: f"glc_{chars(ALNUM + '+/', 32)(r)}{b64_of(24)(r)}"),
    _f("grafana service account", lambda r: f"glsa_{chars(ALNUM, 32)(r)}_{chars(HEX, 8)(r)}"),
    _f("new relic user key", lambda r: f"NRAK-{chars(UPPER_DIGITS, 27)(r)}"),
    _f("pulumi", lambda r: f"PULUMI_ACCESS_TOKEN=pul-{chars(HEX, 40)(r)}"),
    _f("terraform cloud", lambda r: f"{chars(ALNUM, 14)(r)}.atlasv1.{chars(ALNUM + '-_=', 67)(r)}"),
    _f("netlify", lambda r: f"netlify token {chars(URLSAFE, 43)(r)}"),
    _f("algolia admin key", lambda r: f"algolia_admin_key = {chars(HEX, 32)(r)}"),
    _f("mapbox secret", lambda r: f"sk.eyJ1Ijoi{chars(ALNUM, 10)(r)}.{chars(ALNUM, 22)(r)}"),
    _f("okta", lambda r: f"OKTA_API_TOKEN=00{chars(URLSAFE, 40)(r)}"),
    _f("cloudflare", lambda r: f"cloudflare api token: {chars(URLSAFE, 40)(r)}"),
    _f("dropbox", lambda r: f"dropbox sl.{chars(URLSAFE, 135)(r)}"),
    _f("square", lambda r: f"EAAA{chars(URLSAFE, 60)(r)}"),
    _f("planetscale", lambda r: f"pscale_tkn_{chars(URLSAFE, 43)(r)}"),
    _f("contentful", lambda r: f"CFPAT-{chars(URLSAFE, 43)(r)}"),
    _f("age key", lambda r: "AGE-SECRET-KEY-1" + chars("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)(r)),
    _f("gitlab runner token", lambda r: f"glrt-{chars(URLSAFE, 20)(r)}"),
    _f("github app token", lambda r: f"installation token ghs_{chars(ALNUM, 36)(r)} expires hourly"),
    _f("stripe webhook secret", lambda r: f"whsec_{chars(ALNUM, 32)(r)}"),
    _f("k8s secret yaml", lambda r: f"stringData:\n  password: {password(r)}"),
    _f(".pypirc", lambda r: f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{chars(URLSAFE, 100)(r)}"),
    _f(".npmrc", lambda r: f"_authToken={uuid4(r)}"),
    _f("export GH_TOKEN", lambda r: f"export GH_TOKEN=ghp_{chars(ALNUM, 36)(r)}"),
    _f("docker login", lambda r: f"docker login -u ci --password {password(r)} registry.internal"),
    _f("psql PGPASSWORD", lambda r: f"PGPASSWORD={password(r)} psql -h db -U app"),
    _f("mongodb srv", lambda r: f"mongodb+srv://app:{password(r)}@cluster0.abcde.mongodb.net/prod"),
    _f("amqp url", lambda r: f"CELERY_BROKER_URL=amqp://worker:{chars(ALNUM, 16)(r)}@mq:5672//"),
    _f("ftp url, / in password", lambda r: f"ftp://upload:{chars(ALNUM, 5)(r)}/{chars(ALNUM, 7)(r)}@files.example.net"),
    _f("ec private key", lambda r: f"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI{chars(B64, 60)(r)}"),
    _f("pgp private key", lambda r: f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF{chars(B64, 60)(r)}"),
    _f("python requests header", lambda r: f"headers={{'Authorization': 'Bearer {chars(ALNUM, 32)(r)}'}}"),
    _f("x-api-key header", lambda r: f"-H 'X-API-Key: {chars(ALNUM, 32)(r)}'"),
    _f("session secret", lambda r: f"SESSION_SECRET: {chars(ALNUM, 24)(r)}"),
    _f("jwt secret", lambda r: f"JWT_SECRET={chars(ALNUM + '!$', 28)(r)}"),
    _f("hmac key", lambda r: f"hmac_key = '{chars(HEX, 40)(r)}'"),
    _f("bare base64 key", lambda r: f"rotate this one: {b64_of(48)(r)}"),
    _f("zero-width anthropic", lambda r: zero_width(f"sk-ant-api03-{chars(URLSAFE, 93)(r)}AA")),
    _f("zero-width assignment", lambda r: f"DB_PASS{ZWSP}WORD={password(r)}"),
    _f(
        "full-width slack",
        lambda r: full_width(f"xoxp-{chars(string.digits, 12)(r)}-{chars(string.digits, 12)(r)}-{chars(ALNUM, 24)(r)}"),
    ),
    _f("cyrillic aws", lambda r: cyrillic("aws_secret_access_key") + f" = {b64_of(30)(r)}"),
    _f("cyrillic postgres url", lambda r: cyrillic(f"postgres://app:{password(r)}@db/app")),
    _f("split pem body", lambda r: f"privkey:\n{pem_body(r, 2)}"),
    _f("split anthropic", lambda r: split_lines(f"sk-ant-api03-{chars(URLSAFE, 93)(r)}AA")),
    _f("split assignment", lambda r: split_lines(f"ENCRYPTION_KEY={b64_of(32)(r)}")),
    _f("base64 stripe", lambda r: f"value: {b64(f'sk_live_{chars(ALNUM, 24)(r)}')}"),
    _f("base64 basic auth in URL param", lambda r: f"?auth={b64(f'admin:{password(r)}')}"),
    _f("url-encoded token", lambda r: f"token={pct(f'ghp_{chars(ALNUM, 36)(r)}')}"),
    _f("bearer in prose", lambda r: f"call the API with bearer {chars(ALNUM, 40)(r)} until Friday"),
    _f("private key in json", lambda r: f'{{"private_key": "-----BEGIN RSA PRIVATE KEY-----\\n{chars(B64, 64)(r)}"}}'),
]


def texts(forms: list[Form], seed: int, per_form: int = 1) -> list[tuple[str, str]]:
    """(form name, text) pairs; the same seed gives the same texts."""
    rng = random.Random(seed)
    return [(name, build(rng)) for name, build in forms for _ in range(per_form)]


# ---------------------------------------------------------------------------------------------
# HELD_OUT_2: written after HELD_OUT reached 147/150, BEFORE its author read the scanner, these forms,
# bench/secret_scan.py or tests/test_secrets.py, as a judge with a fresh set would: the secrets as people
# and assistants paste them into a memory, and memories that must stay storable (HELD_OUT_2_KEEP). The
# first run through the product (REST stores on a live site, real PostgreSQL) stored 10 of 63 secrets
# and refused 1 of 19 keepers; the scanner was fixed after that, so only that first figure is a held-out
# figure (docs/security.md). Kept as written then, including an age key with capitals outside age's
# bech32 alphabet (a fake a person would type).


def person_password(rng: random.Random) -> str:
    """A password a person picks: word, two digits, a symbol, word, two digits."""
    words = ["Falcon", "river", "Marmot", "tundra", "Copper", "violet", "Orchid", "basalt"]
    digits = chars(string.digits, 2)
    return rng.choice(words) + digits(rng) + rng.choice("!#$%&*") + rng.choice(words).lower() + digits(rng)


def _jwt_admin(rng: random.Random) -> str:
    def part(obj: str) -> str:
        return base64.urlsafe_b64encode(obj.encode()).decode().rstrip("=")

    claims = part('{"sub":"' + chars(string.digits, 8)(rng) + '","role":"admin","exp":1893456000}')
    header = part('{"alg":"HS256","typ":"JWT"}')
    return f"{header}.{claims}.{chars(URLSAFE, 43)(rng)}"


def _pem_lines(rng: random.Random, n: int = 6) -> str:
    return "\n".join(("MII" + chars(B64, 61)(rng)) if i == 0 else chars(B64, 64)(rng) for i in range(n))


def _gcp_service_account(r: random.Random) -> str:
    key = "\\n".join(chars(B64, 64)(r) for _ in range(4))
    return (
        '{\n  "type": "service_account",\n  "project_id": "acme-prod-' + chars(LOWER_ALNUM, 6)(r) + '",\n'
        '  "private_key_id": "' + chars(HEX, 40)(r) + '",\n'
        '  "private_key": "-----BEGIN PRIVATE KEY-----\\n' + key + '\\n-----END PRIVATE KEY-----\\n",\n'
        '  "client_email": "ci-deployer@acme-prod.iam.gserviceaccount.com"\n}'
    )


def _k8s_secret(r: random.Random) -> str:
    return (
        f"apiVersion: v1\nkind: Secret\ndata:\n  password: {b64(person_password(r))}\n"
        f"  api-key: {b64(chars(ALNUM, 32)(r))}"
    )


_DJANGO = string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)"

HELD_OUT_2: list[Form] = [
    _f(
        "aws pair in prose",
        lambda r: (
            f"Deploy user for the billing bucket: access key AKIA{chars(UPPER_DIGITS, 16)(r)}, "
            f"secret {chars(B64, 40)(r)}"
        ),
    ),
    _f(
        "aws credentials file, both lines",
        lambda r: (
            f"[default]\naws_access_key_id = AKIA{chars(UPPER_DIGITS, 16)(r)}\n"
            f"aws_secret_access_key = {chars(B64, 40)(r)}\nregion = eu-west-1"
        ),
    ),
    _f("aws session token", lambda r: f"export AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjE{chars(B64, 180)(r)}"),
    _f("gcp service-account json", _gcp_service_account),
    _f(
        "gcp private_key line",
        lambda r: (
            '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC'
            + chars(B64, 32)(r)
            + "\\n"
            + chars(B64, 64)(r)
            + '\\n"'
        ),
    ),
    _f("gcp api key in prose", lambda r: f"Maps JS key for the staging site is AIza{chars(URLSAFE, 35)(r)}"),
    _f(
        "azure storage connection string",
        lambda r: (
            "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmelogs"
            f"{chars(LOWER_ALNUM, 4)(r)};AccountKey={chars(B64, 86)(r)}==;EndpointSuffix=core.windows.net"
        ),
    ),
    _f(
        "azure sql connection string",
        lambda r: (
            f"Server=tcp:acme-{chars(string.ascii_lowercase, 5)(r)}.database.windows.net,1433;"
            f"Initial Catalog=orders;User ID=sqladmin;Password={person_password(r)};Encrypt=True;"
        ),
    ),
    _f(
        "azure sas url",
        lambda r: (
            "Upload with https://acmebackups.blob.core.windows.net/dumps?sv=2022-11-02&ss=b&srt=co"
            "&sp=rwdlac&se=2027-01-01T00:00:00Z&st=2026-01-01T00:00:00Z&spr=https"
            f"&sig={chars(ALNUM + '%', 43)(r)}%3D"
        ),
    ),
    _f(
        "azure ad client secret",
        lambda r: f"the app registration client secret is {chars(ALNUM, 3)(r)}8Q~{chars(ALNUM + '_-.~', 34)(r)}",
    ),
    _f("digitalocean doctl", lambda r: f"doctl auth init -t dop_v1_{chars(HEX, 64)(r)}"),
    _f("stripe live, 99", lambda r: f"STRIPE_SECRET_KEY=sk_live_{chars(ALNUM, 99)(r)}"),
    _f(
        "stripe restricted in prose",
        lambda r: f"Use the restricted key rk_live_{chars(ALNUM, 24)(r)} for the reporting job, it can only read.",
    ),
    _f("stripe webhook secret in prose", lambda r: f"webhook signing secret: whsec_{chars(ALNUM, 32)(r)}"),
    _f(
        "twilio sid and auth token",
        lambda r: f"Twilio account AC{chars(HEX, 32)(r)} with auth token {chars(HEX, 32)(r)}",
    ),
    _f(
        "sendgrid as smtp password",
        lambda r: f"SMTP relay: user 'apikey', password SG.{chars(URLSAFE, 22)(r)}.{chars(URLSAFE, 43)(r)}",
    ),
    _f(
        "slack bot token, yaml",
        lambda r: (
            f"SLACK_BOT_TOKEN: xoxb-{chars(string.digits, 12)(r)}-{chars(string.digits, 13)(r)}-{chars(ALNUM, 24)(r)}"
        ),
    ),
    _f(
        "slack webhook",
        lambda r: (
            f"Alerts go to https://hooks.slack.com/services/T{chars(UPPER_DIGITS, 10)(r)}/"
            f"B{chars(UPPER_DIGITS, 10)(r)}/{chars(ALNUM, 24)(r)}"
        ),
    ),
    _f(
        "discord bot token",
        lambda r: (
            f"discord bot token {r.choice('MN')}{chars(ALNUM, 23)(r)}.{chars(URLSAFE, 6)(r)}.{chars(URLSAFE, 38)(r)}"
        ),
    ),
    _f(
        "discord webhook",
        lambda r: f"https://discord.com/api/webhooks/{chars(string.digits, 18)(r)}/{chars(URLSAFE, 68)(r)}",
    ),
    _f(
        "telegram bot in prose",
        lambda r: f"Telegram notifier: {chars(string.digits, 10)(r)}:AA{chars(URLSAFE, 33)(r)}",
    ),
    _f("gh --with-token", lambda r: f"gh auth login --with-token <<< ghp_{chars(ALNUM, 36)(r)}"),
    _f(
        "github fine-grained in prose",
        lambda r: f"token for the release bot: github_pat_11{chars(UPPER_DIGITS, 20)(r)}_{chars(ALNUM, 59)(r)}",
    ),
    _f(
        "gitlab token in clone url",
        lambda r: f"git clone https://oauth2:glpat-{chars(URLSAFE, 20)(r)}@gitlab.acme.io/platform/infra.git",
    ),
    _f("npmrc", lambda r: f"//registry.npmjs.org/:_authToken=npm_{chars(ALNUM, 36)(r)}"),
    _f(
        ".pypirc, indented",
        lambda r: f"[pypi]\n  username = __token__\n  password = pypi-AgEIcHlwaS5vcmc{chars(URLSAFE, 70)(r)}",
    ),
    _f("hugging face env", lambda r: f"HF_TOKEN=hf_{chars(ALNUM, 34)(r)}"),
    _f(
        "openai key in python",
        lambda r: f'openai.api_key = "sk-proj-{chars(URLSAFE, 48)(r)}T3BlbkFJ{chars(URLSAFE, 48)(r)}"',
    ),
    _f("anthropic in prose", lambda r: f"ANTHROPIC_API_KEY is sk-ant-api03-{chars(URLSAFE, 93)(r)}AA"),
    _f("datadog api and app keys", lambda r: f"DD_API_KEY={chars(HEX, 32)(r)} DD_APP_KEY={chars(HEX, 40)(r)}"),
    _f("new relic license key", lambda r: f"license key for the agent: {chars(HEX, 36)(r)}NRAL"),
    _f("sentry auth token", lambda r: f"SENTRY_AUTH_TOKEN=sntrys_{chars(URLSAFE, 120)(r)}"),
    _f("jwt in prose", lambda r: f"here's a valid admin JWT for local testing: {_jwt_admin(r)}"),
    _f(
        "rsa private key block",
        lambda r: f"-----BEGIN RSA PRIVATE KEY-----\n{_pem_lines(r)}\n-----END RSA PRIVATE KEY-----",
    ),
    _f(
        "openssh private key block",
        lambda r: (
            "-----BEGIN OPENSSH PRIVATE KEY-----\n"
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
            + "\n".join(chars(B64, 70)(r) for _ in range(3))
            + "\n-----END OPENSSH PRIVATE KEY-----"
        ),
    ),
    _f(
        "ec key in a yaml block",
        lambda r: (
            "tls:\n  key: |\n    -----BEGIN EC PRIVATE KEY-----\n    MHcCAQEEI"
            + chars(B64, 55)(r)
            + "\n    "
            + chars(B64, 40)(r)
            + "==\n    -----END EC PRIVATE KEY-----"
        ),
    ),
    _f("age key, capitals and digits", lambda r: f"AGE-SECRET-KEY-1{chars(UPPER_DIGITS, 58)(r)}"),
    _f("vault token, short", lambda r: f"VAULT_TOKEN=hvs.{chars(ALNUM, 24)(r)}"),
    _f(
        "postgres url in prose",
        lambda r: f"prod db: postgresql://orders_rw:{person_password(r)}@db-prod-1.internal:5432/orders",
    ),
    _f(
        "mongodb srv, quoted",
        lambda r: (
            f'MONGO_URI="mongodb+srv://app:{chars(ALNUM, 16)(r)}@cluster0.'
            f'{chars(string.ascii_lowercase, 5)(r)}.mongodb.net/?retryWrites=true"'
        ),
    ),
    _f("redis url, no user", lambda r: f"cache is at redis://:{chars(ALNUM, 20)(r)}@10.0.3.7:6379/0"),
    _f(
        "basic-auth url",
        lambda r: f"artifacts: https://deploy:{person_password(r)}@nexus.acme.io/repository/maven-releases/",
    ),
    _f("docker login -p", lambda r: f"docker login registry.acme.io -u ci-bot -p {chars(ALNUM, 20)(r)}"),
    _f(
        "kubectl --from-literal",
        lambda r: (
            "kubectl create secret generic db-creds --from-literal=username=app "
            f"--from-literal=password='{person_password(r)}'"
        ),
    ),
    _f("mysql -pPASSWORD", lambda r: f"mysql -h 10.1.2.3 -u root -p{person_password(r)} orders"),
    _f("PGPASSWORD quoted", lambda r: f"PGPASSWORD='{person_password(r)}' psql -h db.internal -U admin"),
    _f(
        ".netrc",
        lambda r: (
            f"machine api.heroku.com\n  login ops@acme.io\n  password {chars(HEX, 8)(r)}-{chars(HEX, 4)(r)}-"
            f"{chars(HEX, 4)(r)}-{chars(HEX, 4)(r)}-{chars(HEX, 12)(r)}"
        ),
    ),
    _f("django insecure secret key", lambda r: f"SECRET_KEY=django-insecure-{chars(_DJANGO, 50)(r)}"),
    _f("admin pw in prose", lambda r: f"the admin pw for grafana is {person_password(r)}"),
    _f("login: user / password", lambda r: f"Jenkins login: admin / {person_password(r)}"),
    _f("wifi passphrase, no verb", lambda r: f"Office wifi is AcmeGuest, passphrase {person_password(r)}"),
    _f(
        "keystore passphrase in prose",
        lambda r: f"The Android release keystore passphrase is {person_password(r)} (alias upload).",
    ),
    _f(
        "base64 user:password",
        lambda r: f"Authorization value for the legacy API: {b64(f'svc-legacy:{person_password(r)}')}",
    ),
    _f("k8s secret data, base64", _k8s_secret),
    _f(
        "stripe key wrapped by the terminal",
        lambda r: f"the Stripe key (wrapped by the terminal):\nsk_live_{chars(ALNUM, 30)(r)}\n{chars(ALNUM, 30)(r)}",
    ),
    _f(
        "mailgun key in json",
        lambda r: json.dumps({"service": "mailgun", "apiKey": f"key-{chars(HEX, 32)(r)}", "domain": "mg.acme.io"}),
    ),
    _f(
        "poetry http-basic toml",
        lambda r: f'[tool.poetry.http-basic.private]\nusername = "ci"\npassword = "{chars(ALNUM, 24)(r)}"',
    ),
    _f(
        "oauth client secret yaml",
        lambda r: (
            f'oauth:\n  client_id: web-{chars(string.ascii_lowercase, 6)(r)}\n  client_secret: "{chars(ALNUM, 40)(r)}"'
        ),
    ),
    _f(
        "api key in a url query",
        lambda r: f"curl 'https://api.weather.example.com/v1/forecast?city=Lyon&appid={chars(HEX, 32)(r)}'",
    ),
    _f("okta SSWS header", lambda r: f"Authorization: SSWS 00{chars(URLSAFE, 40)(r)}"),
    _f("shopify in prose", lambda r: f"shopify admin token shpat_{chars(HEX, 32)(r)}"),
    _f(
        "atlassian token",
        lambda r: f"JIRA_API_TOKEN=ATATT3xFfGF0{chars(URLSAFE, 180)(r)}={chars(HEX, 8)(r)}",
    ),
    _f("postman key", lambda r: f"PMAK-{chars(HEX, 24)(r)}-{chars(HEX, 34)(r)}"),
]

# Memories that talk about secrets, or hold something secret-shaped that is not one: each must be stored.
# Decided: `POSTGRES_PASSWORD=changeme` is storable (the public default of a dev compose file, in every
# docs example; refusing it protects nothing), and so is a Stripe publishable key (`pk_test_`/`pk_live_`:
# embedded in every checkout page by design; gitleaks' Stripe rule leaves them out too).
HELD_OUT_2_KEEP: list[Form] = [
    _f("talk: rotation", lambda r: "rotate the stripe key every 90 days; the calendar reminder is in #payments"),
    _f("talk: where keys live", lambda r: "API keys live in Vault under kv/payments; never put them in .env files"),
    _f(
        "placeholder sk_live_XXXX",
        lambda r: "In the README example use sk_live_XXXXXXXXXXXXXXXXXXXXXXXX as the placeholder",
    ),
    _f("placeholder <your-token>", lambda r: "export GITHUB_TOKEN=<your-token> before running make release"),
    _f(
        "git sha",
        lambda r: f"the regression came in with commit {chars(HEX, 40)(r)}; revert it if the build breaks again",
    ),
    _f("uuid", lambda r: f"tenant id for the staging org is {uuid4(r)}"),
    _f(
        "changeme in a dev compose",
        lambda r: (
            "the local docker-compose postgres uses POSTGRES_PASSWORD=changeme; prod reads it from the secret manager"
        ),
    ),
    _f("url template", lambda r: "DATABASE_URL format: postgres://user:password@localhost:5432/dbname"),
    _f("aws docs example key", lambda r: "AWS docs use AKIAIOSFODNN7EXAMPLE as the example access key id"),
    _f(
        "environment reference",
        lambda r: "settings.py reads the key with os.environ['STRIPE_SECRET_KEY'] and fails fast if missing",
    ),
    _f(
        "password policy",
        lambda r: "password policy: at least 12 characters, one digit, rotated yearly; reset links expire in 1 hour",
    ),
    _f("sha256 checksum", lambda r: f"release tarball sha256: {chars(HEX, 64)(r)}"),
    _f("image digest", lambda r: f"pin the base image to python@sha256:{chars(HEX, 64)(r)}"),
    _f(
        "stripe publishable key",
        lambda r: f"the checkout page embeds the publishable key pk_test_{chars(ALNUM, 24)(r)} (public by design)",
    ),
    _f("npmrc env reference", lambda r: "//registry.npmjs.org/:_authToken=${NPM_TOKEN} in .npmrc, CI sets NPM_TOKEN"),
    _f("tokenizer", lambda r: "the tokenizer uses a 32k vocabulary; token limits are per request, not per key"),
    _f(
        "jwt talk",
        lambda r: "JWTs expire after 15 minutes; the signing key is loaded from SECRETS_MANAGER at boot",
    ),
    _f("bundle hash", lambda r: f"bundle file is main.{chars(HEX, 20)(r)}.js after the webpack build"),
    _f(
        "password field",
        lambda r: "the login form's password field is #pw-input and the submit is disabled until both are filled",
    ),
]


# ---------------------------------------------------------------------------------------------
# HELD_OUT_3: written (as a seeded script outside the repository) BEFORE its author read the scanner, these
# forms, bench/secret_scan.py, tests/test_secrets.py or docs/security.md, as a judge with a fresh set
# would: 87 secrets in vendors' published shapes as they get pasted into a memory about a codebase, and
# 22 memories that must stay storable (HELD_OUT_3_KEEP). Its first and only held-out run, through REST
# on a live site with a real PostgreSQL (POST /api/memories, one text each), stored 6 of the 87 (passwords
# told in German, French, Spanish, Portuguese, Russian and Dutch sentences with words between the noun
# and the value) and refused 2 of the 22 keepers (AWS's documented sample key pair, base64 of a
# greeting). The scanner was fixed after that run (docs/security.md); the forms are kept as written.


def _c(r: random.Random, alphabet: str, n: int) -> str:
    return chars(alphabet, n)(r)


def _b64u(r: random.Random, n_bytes: int) -> str:
    return base64.urlsafe_b64encode(r.randbytes(n_bytes)).decode().rstrip("=")


def _word_password(r: random.Random) -> str:
    """A password as people make one: a word, random letters, a symbol, three digits."""
    word = r.choice(["Tr0ub4dor", "Kx9", "Winter", "Falcon", "mUst4ng", "Qz"])
    return word + _c(r, ALNUM, 6) + r.choice("!#%&*") + _c(r, string.digits, 3)


def _pem3(r: random.Random, kind: str, lines: int = 12) -> str:
    body = "\n".join(b64_of(48)(r) for _ in range(lines))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"


def _service_role_jwt(r: random.Random) -> str:
    def part(obj: str) -> str:
        return base64.urlsafe_b64encode(obj.encode()).decode().rstrip("=")

    header = part('{"alg":"HS256","typ":"JWT"}')
    claims = part(json.dumps({"sub": _c(r, string.digits, 10), "role": "service_role", "iat": 1732000000}))
    return f"{header}.{claims}.{_b64u(r, 32)}"


def _uuid(r: random.Random) -> str:
    return uuid4(r)


def _akia(r: random.Random, prefix: str = "AKIA") -> str:
    return prefix + _c(r, BASE32, 16)


def _gcp_sa_json(r: random.Random) -> str:
    sa = {
        "type": "service_account",
        "project_id": "acme-prod-" + _c(r, LOWER_ALNUM, 6),
        "private_key_id": _c(r, HEX, 40),
        "private_key": _pem3(r, "PRIVATE KEY", 16) + "\n",
        "client_email": "ci-deployer@acme-prod.iam.gserviceaccount.com",
        "client_id": _c(r, string.digits, 21),
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    return "CI uses this service account JSON for gcloud auth:\n" + json.dumps(sa, indent=2)


def _sas_sig(r: random.Random) -> str:
    return b64_of(32)(r).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")


def _discord_bot(r: random.Random) -> str:
    user_id = str(r.randrange(10**17, 10**18))
    return f"{b64(user_id).rstrip('=')}.{_c(r, URLSAFE, 6)}.{_c(r, URLSAFE, 38)}"


def _pgp_block(r: random.Random) -> str:
    body = "\n".join(b64_of(48)(r) for _ in range(10))
    return f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n={_c(r, B64, 4)}\n-----END PGP PRIVATE KEY BLOCK-----"


def _k8s_opaque(r: random.Random) -> str:
    return (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-secrets\ntype: Opaque\ndata:\n"
        f"  DB_PASSWORD: {b64(_word_password(r))}\n  STRIPE_KEY: {b64('sk_live_' + _c(r, ALNUM, 24))}"
    )


def _split_in_halves(r: random.Random) -> str:
    key = _c(r, B64, 40)
    return f"aws secret (wrapped by the terminal):\n{key[:20]}\n{key[20:]}"


def _concatenated(r: random.Random) -> str:
    token = "ghp_" + _c(r, ALNUM, 36)
    return f'token = "{token[:18]}" + "{token[18:]}"  # split so the pre-commit hook does not see it'


_SA = string.ascii_uppercase + string.digits

HELD_OUT_3: list[Form] = [
    # cloud
    _f(
        "aws pair in an env file",
        lambda r: (
            f"Deploy script reads AWS_ACCESS_KEY_ID={_akia(r)} and AWS_SECRET_ACCESS_KEY={_c(r, B64, 40)} from "
            ".env.deploy"
        ),
    ),
    _f(
        "aws session credentials",
        lambda r: (
            f"Temporary creds for the migration role (expire in 1h):\naws_access_key_id = {_akia(r, 'ASIA')}\n"
            f"aws_secret_access_key = {_c(r, B64, 40)}\naws_session_token = FwoGZXIvYXdzE{_c(r, B64, 300)}"
        ),
    ),
    _f(
        "aws secret in prose",
        lambda r: f"the secret access key for the backup bucket user is {_c(r, B64, 40)} (access key {_akia(r)})",
    ),
    _f(
        "gcp api key",
        lambda r: (
            f"Geocoding calls go through GOOGLE_MAPS_SERVER_KEY, currently AIza{_c(r, URLSAFE, 35)}, restricted to "
            "our egress IP"
        ),
    ),
    _f("gcp service account json", _gcp_sa_json),
    _f(
        "azure storage connection string",
        lambda r: (
            "Blob uploads: AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmeassets;"
            f"AccountKey={b64_of(64)(r)};EndpointSuffix=core.windows.net"
        ),
    ),
    _f(
        "azure sas url",
        lambda r: (
            "The nightly export writes to "
            f"https://acmeexports.blob.core.windows.net/dumps?sv=2022-11-02&ss=b&srt=co&sp=rwlac&se=2027-01-01T00:00:00Z&st=2026-01-01T00:00:00Z&spr=https&sig={_sas_sig(r)}"
        ),
    ),
    _f(
        "azure service bus",
        lambda r: (
            "Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
            f"SharedAccessKey={b64_of(32)(r)}"
        ),
    ),
    _f(
        "azure client secret",
        lambda r: (
            "The app registration's client secret (AZURE_CLIENT_SECRET) is "
            f"{_c(r, ALNUM, 3)}8Q~{_c(r, ALNUM + '_.~-', 34)}"
        ),
    ),
    # payment / SaaS
    _f(
        "stripe restricted key",
        lambda r: f"Webhook worker uses a restricted key rk_live_51{_c(r, ALNUM, 97)} with read-only charges",
    ),
    _f("stripe secret key in code", lambda r: f'stripe.api_key = "sk_live_51{_c(r, ALNUM, 96)}"  # TODO move to vault'),
    _f("square access token", lambda r: f"Square production access token: EAAA{_c(r, URLSAFE, 60)}"),
    _f("square oauth secret", lambda r: f"SQUARE_APP_SECRET=sq0csp-{_c(r, URLSAFE, 43)}"),
    _f("shopify admin header", lambda r: f"Shopify admin API: X-Shopify-Access-Token: shpat_{_c(r, HEX, 32)}"),
    _f(
        "braintree access token",
        lambda r: f"BRAINTREE_ACCESS_TOKEN=access_token$production${_c(r, LOWER_ALNUM, 16)}${_c(r, HEX, 32)}",
    ),
    _f(
        "paypal client secret",
        lambda r: f"PayPal live app: client id A{_c(r, URLSAFE, 79)} secret E{_c(r, URLSAFE, 79)}",
    ),
    _f("twilio sid and token", lambda r: f"SMS: account SID AC{_c(r, HEX, 32)}, auth token {_c(r, HEX, 32)}"),
    _f("twilio api key", lambda r: f"twilio api key SK{_c(r, HEX, 32)} / secret {_c(r, ALNUM, 32)}"),
    _f("sendgrid", lambda r: f"SENDGRID_API_KEY=SG.{_c(r, URLSAFE, 22)}.{_c(r, URLSAFE, 43)}"),
    _f(
        "mailgun private key",
        lambda r: f"Mailgun private API key: {_c(r, HEX, 32)}-{_c(r, HEX, 8)}-{_c(r, HEX, 8)} (domain mg.acme.io)",
    ),
    _f("mailchimp", lambda r: f"mailchimp key {_c(r, HEX, 32)}-us21 for the newsletter sync"),
    _f("postmark server token", lambda r: f"Transactional email: header X-Postmark-Server-Token: {_uuid(r)}"),
    # chat
    _f(
        "slack bot token",
        lambda r: (
            "Slack bot token for #deploys: "
            f"xoxb-{_c(r, string.digits, 12)}-{_c(r, string.digits, 13)}-{_c(r, ALNUM, 24)}"
        ),
    ),
    _f(
        "slack user token",
        lambda r: (
            f"xoxp-{_c(r, string.digits, 12)}-{_c(r, string.digits, 12)}-{_c(r, string.digits, 13)}-{_c(r, HEX, 32)} "
            "is Dana's user token, used by the export script"
        ),
    ),
    _f(
        "slack webhook",
        lambda r: (
            f"Alerts post to https://hooks.slack.com/services/T{_c(r, _SA, 8)}/B{_c(r, _SA, 10)}/{_c(r, ALNUM, 24)}"
        ),
    ),
    _f(
        "slack app token",
        lambda r: (
            f"socket mode needs SLACK_APP_TOKEN=xapp-1-A{_c(r, _SA, 10)}-{_c(r, string.digits, 13)}-{_c(r, HEX, 64)}"
        ),
    ),
    _f("discord bot token", lambda r: f"Discord bot token: {_discord_bot(r)}"),
    _f(
        "discord webhook",
        lambda r: (
            f"release notes go to https://discord.com/api/webhooks/{_c(r, string.digits, 19)}/{_c(r, URLSAFE, 68)}"
        ),
    ),
    _f("telegram bot token", lambda r: f"TELEGRAM_BOT_TOKEN={_c(r, string.digits, 10)}:AA{_c(r, URLSAFE, 33)}"),
    # code hosts
    _f(
        "github fine-grained pat",
        lambda r: f"GH token for the release action: github_pat_11{_c(r, _SA, 20)}_{_c(r, ALNUM, 59)}",
    ),
    _f(
        "gitlab pat in a clone url",
        lambda r: f"git clone https://oauth2:glpat-{_c(r, URLSAFE, 20)}@gitlab.acme.io/platform/api.git",
    ),
    _f("gitlab runner registration", lambda r: f"runner registration token GR1348941{_c(r, URLSAFE, 20)}"),
    _f(
        "bitbucket app password",
        lambda r: f"Bitbucket app password for the deploy bot: ATBB{_c(r, ALNUM, 32)}{_c(r, HEX.upper(), 8)}",
    ),
    # registries
    _f("npmrc auth token", lambda r: f"//registry.npmjs.org/:_authToken=npm_{_c(r, ALNUM, 36)}"),
    _f("pypirc", lambda r: f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{_c(r, URLSAFE, 120)}"),
    _f("docker hub pat", lambda r: f"docker login -u acmebot -p dckr_pat_{_c(r, URLSAFE, 27)}"),
    _f(
        "nuget api key",
        lambda r: (
            f"dotnet nuget push pkg.nupkg --api-key oy2{_c(r, LOWER_ALNUM, 43)} --source "
            "https://api.nuget.org/v3/index.json"
        ),
    ),
    _f("rubygems", lambda r: f"GEM_HOST_API_KEY=rubygems_{_c(r, HEX, 48)}"),
    # AI
    _f("openai project key", lambda r: f"OPENAI_API_KEY=sk-proj-{_c(r, URLSAFE, 156)}"),
    _f(
        "anthropic key", lambda r: f"The eval harness uses sk-ant-api03-{_c(r, URLSAFE, 93)}AA (billing: research team)"
    ),
    _f("huggingface token", lambda r: f"hf_{_c(r, ALNUM, 34)} is the read token for the gated model download"),
    _f("cohere key", lambda r: f"COHERE_API_KEY={_c(r, ALNUM, 40)}"),
    _f("replicate token", lambda r: f"REPLICATE_API_TOKEN=r8_{_c(r, ALNUM, 37)}"),
    # observability
    _f("datadog keys", lambda r: f"datadog: DD_API_KEY={_c(r, HEX, 32)} DD_APP_KEY={_c(r, HEX, 40)}"),
    _f("sentry dsn with secret", lambda r: f"SENTRY_DSN=https://{_c(r, HEX, 32)}:{_c(r, HEX, 32)}@sentry.acme.io/12"),
    _f("sentry auth token", lambda r: f"sentry-cli uses SENTRY_AUTH_TOKEN=sntryu_{_c(r, HEX, 64)}"),
    _f("new relic user key", lambda r: f"New Relic user key NRAK-{_c(r, _SA, 27)} for the dashboards script"),
    _f("grafana service account", lambda r: f"grafana service account token glsa_{_c(r, ALNUM, 32)}_{_c(r, HEX, 8)}"),
    _f(
        "pagerduty token header",
        lambda r: (
            f'curl -H "Authorization: Token token={_c(r, URLSAFE + "+", 20)}" https://api.pagerduty.com/incidents'
        ),
    ),
    # infra
    _f("vault token", lambda r: f"VAULT_TOKEN=hvs.{_c(r, ALNUM, 24)}"),
    _f(
        "terraform cloud",
        lambda r: f'credentials "app.terraform.io" {{ token = "{_c(r, ALNUM, 14)}.atlasv1.{_c(r, ALNUM, 67)}" }}',
    ),
    _f("heroku api key", lambda r: f"heroku: HEROKU_API_KEY={_uuid(r)}"),
    _f("digitalocean", lambda r: f"doctl auth init -t dop_v1_{_c(r, HEX, 64)}"),
    _f("cloudflare token in prose", lambda r: f"Cloudflare API token (DNS edit): {_c(r, URLSAFE, 40)}"),
    _f("vercel token", lambda r: f"VERCEL_TOKEN={_c(r, ALNUM, 24)}"),
    _f("netlify auth option", lambda r: f"netlify deploy --auth nfp_{_c(r, ALNUM, 36)}"),
    _f("doppler service token", lambda r: f"DOPPLER_TOKEN=dp.st.prd.{_c(r, ALNUM, 43)}"),
    # tokens and keys
    _f("supabase service role jwt", lambda r: f"The Supabase service role key is {_service_role_jwt(r)}"),
    _f("rsa private key", lambda r: "Signing key for webhooks:\n" + _pem3(r, "RSA PRIVATE KEY")),
    _f("openssh private key", lambda r: "deploy key:\n" + _pem3(r, "OPENSSH PRIVATE KEY", 7)),
    _f("pgp private key block", lambda r: "release signing key\n" + _pgp_block(r)),
    _f("truncated ec key", lambda r: f"-----BEGIN EC PRIVATE KEY-----\n{b64_of(48)(r)}\n{b64_of(30)(r)}\n..."),
    _f(
        "private key with \\n escapes in json",
        lambda r: (
            '{"key": "-----BEGIN PRIVATE KEY-----\\n'
            + "\\n".join(b64_of(48)(r) for _ in range(6))
            + '\\n-----END PRIVATE KEY-----\\n"}'
        ),
    ),
    # database URLs
    _f("postgres url", lambda r: f"DATABASE_URL=postgres://app_rw:{_word_password(r)}@db-prod.internal:5432/app"),
    _f(
        "mysql url",
        lambda r: f"legacy reports connect with mysql://reporter:{_word_password(r)}@10.0.3.12:3306/reports",
    ),
    _f(
        "mongodb+srv url",
        lambda r: (
            f"mongodb+srv://svc-api:{_c(r, ALNUM, 16)}@cluster0.{_c(r, LOWER_ALNUM, 5)}.mongodb.net"
            "/prod?retryWrites=true"
        ),
    ),
    _f("rediss url", lambda r: f"REDIS_URL=rediss://:{_c(r, ALNUM, 32)}@cache.acme.io:6380/0"),
    _f("amqp url", lambda r: f"celery broker is amqp://worker:{_word_password(r)}@rabbit.internal:5672/prod"),
    # passwords in prose, several languages
    _f("password: login pair", lambda r: f"Note: the staging admin login is admin / {_word_password(r)}"),
    _f("password: user, pass", lambda r: f"Grafana on the ops box: user ops, pass {_word_password(r)}"),
    _f("password: german", lambda r: f"Das Passwort für den Staging-Server lautet {_word_password(r)}"),
    _f("password: french", lambda r: f"Le mot de passe de la base de recette est {_word_password(r)}"),
    _f("password: spanish", lambda r: f"La contraseña del usuario root en el NAS es {_word_password(r)}"),
    _f("password: portuguese", lambda r: f"A senha do Wi-Fi do escritório é {_word_password(r)}"),
    _f("password: russian", lambda r: f"Пароль от админки: {_word_password(r)}"),
    _f("password: japanese", lambda r: f"本番DBのパスワードは {_word_password(r)} です"),
    _f("password: chinese", lambda r: f"测试环境数据库密码：{_word_password(r)}"),
    _f("password: dutch", lambda r: f"het wachtwoord voor de FTP-server is {_word_password(r)}"),
    # commands and config files
    _f("curl -u", lambda r: f"curl -u deploy:{_word_password(r)} https://ci.acme.io/job/release/build"),
    _f(
        "curl bearer header",
        lambda r: f'curl -H "Authorization: Bearer {_c(r, URLSAFE, 48)}" https://api.acme.io/v2/admin/users',
    ),
    _f("basic auth header", lambda r: f"Authorization: Basic {b64('svc:' + _word_password(r))}"),
    _f("k8s opaque secret", _k8s_opaque),
    _f("netrc", lambda r: f"machine api.heroku.com\n  login ops@acme.io\n  password {_uuid(r)}"),
    _f(
        "docker config.json auth",
        lambda r: '{"auths": {"registry.acme.io": {"auth": "' + b64("ci:" + _word_password(r)) + '"}}}',
    ),
    _f("aws secret wrapped over two lines", _split_in_halves),
    _f("token split by concatenation", _concatenated),
    _f("generic env secret", lambda r: f"API_SECRET={_c(r, ALNUM, 32)}\nAPI_KEY_ID=prod-1"),
]

HELD_OUT_3_KEEP: list[Form] = [
    _f(
        "talk: where the key lives",
        lambda r: (
            "The Stripe secret key lives in AWS Secrets Manager under /prod/stripe/secret; never paste it into code "
            "or chats."
        ),
    ),
    _f(
        "placeholder x's",
        lambda r: (
            "Set STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx in your .env (replace the x's with the key from "
            "the dashboard)."
        ),
    ),
    _f(
        "placeholder variable",
        lambda r: "CI passes AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY} through from the org-level secret.",
    ),
    _f("placeholder <angle>", lambda r: 'curl -H "Authorization: Bearer <your-api-token>" https://api.acme.io/v2/me'),
    _f(
        "database url placeholder",
        lambda r: "Local dev: DATABASE_URL=postgres://user:password@localhost:5432/app_dev (docker-compose default).",
    ),
    _f(
        "stripe publishable key",
        lambda r: (
            f"The checkout page embeds the publishable key pk_live_51{_c(r, ALNUM, 96)}; publishable keys are public "
            "by design."
        ),
    ),
    _f("sha256", lambda r: f"Release tarball sha256: {_c(r, HEX, 64)}"),
    _f(
        "commit sha",
        lambda r: f"The regression came in with commit {_c(r, HEX, 40)}; revert it if the cache bug reappears.",
    ),
    _f(
        "request uuid",
        lambda r: f"Support ticket mentions request id {_uuid(r)}; the error was a timeout in the billing worker.",
    ),
    _f(
        "base64 of a greeting",
        lambda r: (
            f"The fixture stores the greeting base64-encoded: {b64('Hello from the onboarding email, welcome aboard!')}"
        ),
    ),
    _f(
        "ssh public key",
        lambda r: (
            f"Add this deploy public key to the repo: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_c(r, B64, 43)} deploy@ci"
        ),
    ),
    _f("public key pem", lambda r: "Webhook signatures verify against:\n" + _pem3(r, "PUBLIC KEY", 5)),
    _f("certificate pem", lambda r: "The internal CA certificate:\n" + _pem3(r, "CERTIFICATE", 8)),
    _f("image digest", lambda r: f"Pin the base image to python:3.11-slim@sha256:{_c(r, HEX, 64)}"),
    _f("npm integrity", lambda r: f'"integrity": "sha512-{b64_of(64)(r)}"'),
    _f("wallet address", lambda r: f"Donations go to the public wallet 0x{_c(r, HEX, 40)}"),
    _f(
        "rotation policy",
        lambda r: "Rotate the GitHub PAT every 90 days; the password manager entry is 'CI / GitHub release bot'.",
    ),
    _f(
        "password hashing policy",
        lambda r: "Passwords must be at least 12 characters; we hash them with argon2id (time cost 3, memory 64 MiB).",
    ),
    _f(
        "key prefixes only",
        lambda r: (
            "Stripe live secret keys start with sk_live_ and restricted ones with rk_live_; the scanner in CI looks "
            "for both."
        ),
    ),
    _f(
        "env var names",
        lambda r: "Required env vars: DATABASE_URL, REDIS_URL, SENTRY_DSN, OPENAI_API_KEY (see .env.example).",
    ),
    _f(
        "jwt explained",
        lambda r: (
            "JWTs are three base64url parts joined by dots; our access tokens expire after 15 minutes and refresh "
            "tokens after 30 days."
        ),
    ),
]


# ---------------------------------------------------------------------------------------------
# HELD_OUT_4: written (as a seeded script outside the repository, /work/wt/secrets6-data/gen.py) BEFORE its
# author read the scanner, these forms, bench/secret_scan.py, tests/test_secrets.py or docs/security.md, as a
# judge with a fresh set would: 82 secrets as people and assistants write them into a memory about a codebase
# (passwords and PINs told in prose in seven languages, passphrases of words, bare hex and base64 keys next
# to a key word, `.env` lines with unusual names, SQL Server / Oracle / ClickHouse / Neo4j / AMQPS
# connection strings, an LDAP bind password, basic auth in a URL, S3 and Azure signed URLs, cookies, OTP
# seeds, OpenSSH / PGP / PKCS#8 / PKCS#12 keys, Docker and Kubernetes configs, 30 vendors' keys beyond the
# usual, keys split or quoted in Python, JS, YAML and TOML) and 23 memories that must stay storable
# (HELD_OUT_4_KEEP: talk about secrets, placeholders, a hash, a sha, a uuid, base64 of text, versions, long
# identifiers, an SSH host key fingerprint, an image digest, a JWT header alone). Its first and only
# held-out run, through REST on a live site with a real PostgreSQL (POST /api/memories, one text each, at
# 0afe8ad), stored 10 of the 82: a login pair after words (`Login for the Grafana box is admin / X`), three
# PINs, three passphrases of words, an upper-case hex AES key after `=`, an OCI auth token with `(` in it, a
# token split by `+` between quoted parts; and refused 4 of 24 keepers: a README's placeholder DSN, an SSH
# host key's `SHA256:` fingerprint, a JWT header alone, and AWS's documented sample pair (refused by policy
# since the third set: moved to REFUSED_BY_POLICY). The scanner was fixed after that run
# (docs/security.md); the forms are kept as written (dashes in the names are the script's kinds).


def _b64b(r: random.Random, n_bytes: int) -> str:
    return base64.b64encode(r.randbytes(n_bytes)).decode()


def _jwt4(r: random.Random, payload: dict[str, object]) -> str:
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    return f"{head}.{body}.{_b64u(r, 32)}"


def _stripe_split(r: random.Random) -> str:
    k = _c(r, ALNUM, 99)
    return f'STRIPE_KEY = (\n    "rk_live_{k[:40]}"\n    "{k[40:]}"\n)'


def _akab(r: random.Random) -> str:
    return f"akab-{_c(r, LOWER_ALNUM, 16)}-{_c(r, LOWER_ALNUM, 16)}"


HELD_OUT_4: list[Form] = [
    _f("prose-password 1", lambda r: "The staging db password is Tr0mbone-Vest!92, don't paste it in Slack."),
    _f("prose-password 2", lambda r: f"pw for the admin panel: quokka{_c(r, ALNUM, 4)}Lantern77 (user is ops)"),
    _f("prose-password 3", lambda r: "Login for the Grafana box is admin / Gr4f-Owl_2291"),
    _f("prose-password-de", lambda r: "Das Passwort für den Staging-Server lautet Wolke7!Sonne, Benutzer deploy."),
    _f("prose-password-fr", lambda r: "Le mot de passe de la base de prod est Cerise#4821q, ne pas le commiter."),
    _f("prose-password-es", lambda r: "La contraseña del servidor de pruebas es LlamaRoja_2024x"),
    _f("prose-password-pt", lambda r: "a senha do ftp de homologação é pao-de-Queijo88"),
    _f("prose-password-ja", lambda r: "本番DBのパスワードは Sakura!2024xy です。"),
    _f("prose-password-ru", lambda r: "пароль от сервера сборки: Medved_71kz"),
    _f("prose-password 4", lambda r: "The root password on the build VM was changed to `vK9#pq!2Lm` yesterday."),
    _f("prose-pin 1", lambda r: "The SIM PIN for the Android test phone is 7391."),
    _f("prose-pin 2", lambda r: "Yubikey PIN: 904512 (admin PIN is the default 12345678 still)"),
    _f("prose-pin 3", lambda r: "Use PIN 2846 to unlock the shared QA iPad."),
    _f("passphrase-spaces 1", lambda r: "The GPG key passphrase is: purple monkey dishwasher lantern seven"),
    _f("passphrase-spaces 2", lambda r: "vault unseal passphrase = 'amber fox jumps quietly over 7 hills'"),
    _f("passphrase-spaces 3", lambda r: "Office wifi password: sunny meadow 42 tulips"),
    _f("bare-hex 1", lambda r: f"encryption key: {_c(r, HEX, 64)}"),
    _f("bare-hex 2", lambda r: f"The HMAC secret for the webhook verifier is {_c(r, HEX, 40)}"),
    _f("bare-hex 3", lambda r: f"AES-128 key used by the legacy export = {_c(r, HEX, 32).upper()}"),
    _f("bare-b64 1", lambda r: f"signing key is {_b64b(r, 32)} (used by the token service)"),
    _f("bare-b64 2", lambda r: f"Our Fernet key: {_b64u(r, 32)}="),
    _f("env-line 1", lambda r: f"APP_KEY=base64:{_b64b(r, 32)}"),
    _f(
        "env-line 2",
        lambda r: "DJANGO_SECRET_KEY=" + _c(r, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)", 50),
    ),
    _f("env-line 3", lambda r: f"SESSION_SIGNING_SALT={_c(r, ALNUM, 24)}"),
    _f("env-line 4", lambda r: f"export WEBHOOK_HMAC={_c(r, HEX, 48)}"),
    _f(
        "conn-mssql",
        lambda r: (
            "Server=tcp:prod-sql.database.windows.net,1433;Initial Catalog=orders;User ID=svc_orders;"
            "Password=Qx8!mZ2#vLp;Encrypt=True;"
        ),
    ),
    _f("conn-oracle", lambda r: "jdbc:oracle:thin:app_user/Wq7pLm2xR@//ora-prod.internal:1521/ORCLPDB1"),
    _f("conn-clickhouse", lambda r: "clickhouse://default:Ch5ecret99x@ch.internal:9000/analytics"),
    _f("conn-neo4j", lambda r: "NEO4J_URI=neo4j+s://neo4j:Gr4phP4ss-xyz@a1b2c3d4.databases.neo4j.io"),
    _f("conn-amqps", lambda r: "amqps://orders:Rb7mQ2vX9k@rabbit.prod.internal:5671/orders"),
    _f(
        "ldap-bind",
        lambda r: "LDAP bind DN cn=svc-jenkins,ou=services,dc=corp,dc=acme with bind password Ld4p!Bind2023",
    ),
    _f("basic-auth-url", lambda r: f"pip index: https://deploy:{_c(r, ALNUM, 14)}@artifacts.acme-corp.io/simple/"),
    _f(
        "signed-url-s3",
        lambda r: (
            "https://acme-reports.s3.amazonaws.com/q3.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA"
            + _c(r, string.ascii_uppercase + "234567", 16)
            + "%2F20261101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261101T101010Z&X-Amz-Expires=604800"
            + f"&X-Amz-SignedHeaders=host&X-Amz-Signature={_c(r, HEX, 64)}"
        ),
    ),
    _f(
        "signed-url-azure-sas",
        lambda r: (
            "backup link: https://acmebackups.blob.core.windows.net/db/prod.bak?sv=2022-11-02&ss=b&srt=o&sp=rl"
            f"&se=2026-12-31T00:00:00Z&spr=https&sig={_sas_sig(r)}"
        ),
    ),
    _f("cookie 1", lambda r: f"Cookie: sessionid={_c(r, LOWER_ALNUM, 32)}; csrftoken={_c(r, ALNUM, 32)}"),
    _f("cookie 2", lambda r: f"my staging session cookie is connect.sid=s%3A{_c(r, URLSAFE, 32)}.{_c(r, ALNUM, 43)}"),
    _f(
        "otp-seed 1",
        lambda r: f"otpauth://totp/Acme:ops@acme.io?secret={_c(r, string.ascii_uppercase + '234567', 32)}&issuer=Acme",
    ),
    _f(
        "otp-seed 2",
        lambda r: f"TOTP seed for the shared admin account: {_c(r, string.ascii_uppercase + '234567', 16)}",
    ),
    _f(
        "ssh-key",
        lambda r: (
            "deploy key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
            + _b64b(r, 48)
            + "\n-----END OPENSSH PRIVATE KEY-----"
        ),
    ),
    _f(
        "pgp-key",
        lambda r: (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF"
            + _b64b(r, 45)
            + "\n"
            + _b64b(r, 45)
            + "\n-----END PGP PRIVATE KEY BLOCK-----"
        ),
    ),
    _f(
        "pkcs8-b64",
        lambda r: (
            "the service account key (PKCS#8, base64, no header): MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ"
            + _b64b(r, 60)
        ),
    ),
    _f(
        "pkcs12-b64",
        lambda r: (
            "signing cert .p12 as base64 for CI: MIIKPAIBAzCCCfYGCSqGSIb3DQEHAaCCCecEggnjMIIJ3zCCBg"
            + _b64b(r, 48)
            + " password: Cert!Pass19"
        ),
    ),
    _f("docker-auths", lambda r: '{"auths": {"registry.gitlab.com": {"auth": "' + b64("deploy:s3cretPass99x") + '"}}}'),
    _f(
        "kubeconfig",
        lambda r: (
            "users:\n- name: prod-admin\n  user:\n    client-key-data: "
            + b64("-----BEGIN RSA PRIVATE KEY-----\n")
            + _b64b(r, 30)
        ),
    ),
    _f(
        "k8s-secret",
        lambda r: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: " + b64("superS3cret!db"),
    ),
    _f("alibaba", lambda r: f"Alibaba OSS: AccessKeyId LTAI5t{_c(r, ALNUM, 18)} AccessKeySecret {_c(r, ALNUM, 30)}"),
    _f(
        "tencent",
        lambda r: f"TENCENTCLOUD_SECRET_ID=AKID{_c(r, ALNUM, 32)}\nTENCENTCLOUD_SECRET_KEY={_c(r, ALNUM, 32)}",
    ),
    _f("ibm", lambda r: f"ibmcloud login --apikey {_c(r, URLSAFE, 44)}"),
    _f("oci", lambda r: "OCI auth token for the container registry: 8x(Zq;k3Lm}Tr0Yp:vA2"),
    _f("linode", lambda r: f"LINODE_TOKEN={_c(r, HEX, 64)}"),
    _f(
        "scaleway",
        lambda r: f"SCW_ACCESS_KEY=SCW{_c(r, string.ascii_uppercase + string.digits, 17)} SCW_SECRET_KEY={uuid4(r)}",
    ),
    _f("hetzner", lambda r: f"hcloud token for the prod project: {_c(r, ALNUM, 64)}"),
    _f(
        "supabase",
        lambda r: (
            "SUPABASE_SERVICE_ROLE_KEY="
            + _jwt4(
                r,
                {
                    "iss": "supabase",
                    "ref": _c(r, string.ascii_lowercase, 20),
                    "role": "service_role",
                    "iat": 1700000000,
                    "exp": 2015000000,
                },
            )
        ),
    ),
    _f("firebase-fcm", lambda r: f"FCM server key: AAAA{_c(r, URLSAFE, 7)}:APA91b{_c(r, URLSAFE, 134)}"),
    _f("algolia", lambda r: f"ALGOLIA_ADMIN_API_KEY={_c(r, HEX, 32)}"),
    _f("mapbox", lambda r: f"mapbox secret token sk.eyJ1IjoiYWNtZSIsImEiOiJ{_c(r, ALNUM, 20)}.{_c(r, URLSAFE, 22)}"),
    _f("okta", lambda r: f"Authorization: SSWS 00{_c(r, URLSAFE, 40)}"),
    _f("auth0", lambda r: f"AUTH0_CLIENT_SECRET: {_c(r, URLSAFE, 64)}"),
    _f("atlassian", lambda r: f"jira api token ATATT3xFfGF0{_c(r, URLSAFE, 180)}={_c(r, HEX.upper(), 8)}"),
    _f("asana", lambda r: f"asana PAT 2/{r.randrange(10**15, 10**16)}/{r.randrange(10**15, 10**16)}:{_c(r, HEX, 32)}"),
    _f("notion", lambda r: f"NOTION_TOKEN=ntn_{_c(r, string.digits, 11)}{_c(r, ALNUM, 35)}"),
    _f("linear", lambda r: f"linear key lin_api_{_c(r, ALNUM, 40)}"),
    _f("airtable", lambda r: f"AIRTABLE_PAT=pat{_c(r, ALNUM, 14)}.{_c(r, HEX, 64)}"),
    _f("figma", lambda r: f"figma token figd_{_c(r, URLSAFE, 40)}"),
    _f("postman", lambda r: f"POSTMAN_API_KEY=PMAK-{_c(r, HEX, 24)}-{_c(r, HEX, 34)}"),
    _f("contentful", lambda r: f"contentful management token CFPAT-{_c(r, URLSAFE, 43)}"),
    _f("sanity", lambda r: f"SANITY_API_TOKEN=sk{_c(r, ALNUM, 180)}"),
    _f("segment", lambda r: f"analytics.load('{_c(r, ALNUM, 32)}') is our Segment write key for prod"),
    _f("mixpanel", lambda r: f"Mixpanel API secret: {_c(r, HEX, 32)}"),
    _f("amplitude", lambda r: f"AMPLITUDE_SECRET_KEY={_c(r, HEX, 32)}"),
    _f("snyk", lambda r: f"SNYK_TOKEN={uuid4(r)}"),
    _f("sonarqube", lambda r: f"sonar.login=squ_{_c(r, HEX, 40)}"),
    _f("circleci", lambda r: f"CIRCLE_TOKEN=CCIPAT_{_c(r, ALNUM, 22)}_{_c(r, HEX, 40)}"),
    _f("travis", lambda r: f"travis api token: {_c(r, ALNUM, 22)}"),
    _f("buildkite", lambda r: f"BUILDKITE_API_TOKEN=bkua_{_c(r, HEX, 40)}"),
    _f("fastly", lambda r: f"curl -H 'Fastly-Key: {_c(r, URLSAFE, 32)}' https://api.fastly.com/service"),
    _f(
        "akamai",
        lambda r: (
            f"[default]\nclient_secret = {_b64b(r, 32)}\nhost = {_akab(r)}.luna.akamaiapis.net\n"
            f"access_token = {_akab(r)}\nclient_token = {_akab(r)}"
        ),
    ),
    _f("code-split-py", _stripe_split),
    _f("code-js", lambda r: f"const client = new Client({{ apiSecret: '{_c(r, URLSAFE, 40)}' }});"),
    _f(
        "code-yaml",
        lambda r: (
            "oauth:\n  google:\n    client_id: 1234-abc.apps.googleusercontent.com\n"
            f'    client_secret: "GOCSPX-{_c(r, URLSAFE, 28)}"'
        ),
    ),
    _f("code-toml", lambda r: f'[database]\nhost = "db.internal"\nuser = "app"\npassword = "{_c(r, ALNUM, 18)}"'),
    _f("code-split-concat", lambda r: f"token = 'ghp_' + '{_c(r, ALNUM, 18)}' + '{_c(r, ALNUM, 18)}'"),
]

HELD_OUT_4_KEEP: list[Form] = [
    _f("about 1", lambda r: "Rotate the Stripe key every 90 days; the runbook is ops/rotate-stripe.md."),
    _f("about 2", lambda r: "The password policy is 12 chars minimum with one digit and one symbol."),
    _f(
        "about 3",
        lambda r: "Secrets live in AWS Secrets Manager under /prod/orders/*; the app reads them at boot via boto3.",
    ),
    _f("about 4", lambda r: "The GitHub token env var is GITHUB_TOKEN; CI injects it from the repository secrets."),
    _f("about 5", lambda r: "Use `openssl rand -hex 32` to generate a new SECRET_KEY, never commit it."),
    _f("about 6", lambda r: "Password reset links expire after 30 minutes (PASSWORD_RESET_TIMEOUT=1800)."),
    _f("about 7", lambda r: "The PIN pad component lives in src/ui/PinPad.tsx and masks digits after one second."),
    _f("placeholder 1", lambda r: "Set API_KEY=<YOUR_KEY> in .env before running make dev; it is only a placeholder."),
    _f(
        "placeholder 2",
        lambda r: "In .env.example DATABASE_PASSWORD=changeme is a placeholder; real values come from Vault.",
    ),
    _f(
        "placeholder 3",
        lambda r: "The fixtures use the token xxxxxxxxxxxxxxxxxxxxxxxx as a placeholder, never a real one.",
    ),
    _f(
        "placeholder 4",
        lambda r: "README example DSN: postgres://user:password@localhost:5432/mydb (placeholder credentials)",
    ),
    _f(
        "hash", lambda r: "The empty file's sha256 is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855."
    ),
    _f("commit", lambda r: f"Commit {_c(r, HEX, 40)} introduced the regression in the token refresh path."),
    _f("uuid", lambda r: f"The staging tenant id is {uuid4(r)}; it appears in every request log line."),
    _f(
        "base64-text",
        lambda r: f"The fixture header X-Trace is base64 of 'order-service v2 trace': {b64('order-service v2 trace')}",
    ),
    _f("version", lambda r: "We pinned cryptography==42.0.5, django==5.0.3 and pyjwt==2.8.0 after the auth refactor."),
    _f(
        "identifier 1",
        lambda r: "test_refresh_token_is_rotated_when_session_cookie_expires_and_user_logs_in_again is the flaky one.",
    ),
    _f("identifier 2", lambda r: "SecretKeyRotationSchedulerServiceConfigurationFactory wires the key rotation job."),
    _f(
        "fingerprint",
        lambda r: (
            "The bastion's ssh host key fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8 (public)."
        ),
    ),
    _f("digest", lambda r: f"Image digest ghcr.io/acme/api@sha256:{_c(r, HEX, 64)} is the last good deploy."),
    _f(
        "jwt-header",
        lambda r: "Every token starts with eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9, which only says alg HS256, typ JWT.",
    ),
    _f(
        "about 8", lambda r: "The LDAP bind uses the svc-jenkins account; its password is in 1Password under 'CI LDAP'."
    ),
    _f(
        "about 9",
        lambda r: "Auth0 client secrets are stored in the Kubernetes secret auth0-creds, mounted at /etc/auth0.",
    ),
]


# Vendors' documented sample and published test keys, refused by policy (docs/security.md): people
# paste them as stand-ins for real keys, and a scanner cannot tell a quote of the docs from a key. The
# third set's run counted this one as a keeper; it was moved here when the policy was set.
REFUSED_BY_POLICY: list[Form] = [
    _f(
        "aws documented sample pair",
        lambda r: (
            "The AWS docs' sample credentials AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY are "
            "what the moto tests use."
        ),
    ),
    # the fifth set's keeper of the same pair, refused on its run
    _f(
        "aws documented sample pair, fifth set",
        lambda r: (
            "AWS docs use AKIAIOSFODNN7EXAMPLE and wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY as example credentials; ou"
            "r moto tests use the same examples."
        ),
    ),
    # the fourth set's keeper of the same pair, refused on its run
    _f(
        "aws documented sample pair, fourth set",
        lambda r: (
            "The AWS docs' example key pair is AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY; tests "
            "use it with moto."
        ),
    ),
]


# 249 ordinary memories that talk about passwords, PINs, keys, tokens, logins, hashing and signing (Markdown
# tables and CSV headers naming a password column, code reading a secret from the environment, digests, shas,
# uuids, versions and numbers near "key" or "PIN"), in several languages: written by the review6 reviewer
# BEFORE reading the scanner, its tests or this file. First run, each stored through `POST /api/memories` on a
# live `yullu serve` (real PostgreSQL) at 8c1acc1: 4 of 249 refused (an algorithm's name after "key derivation:",
# German words after "Passwort:", a Kubernetes manifest's next key after DB_PASSWORD, a port after "the PIN
# screen uses"); all kept since.
REVIEW_6_KEEP: list[Form] = [
    (f"review6 {i}", fixed(text))
    for i, text in enumerate(json.loads((Path(__file__).parent / "data" / "review6_keep.json").read_text("utf-8")))
]


# 210 ordinary memories an assistant stores about codebases: about half everyday (build, docker, kubectl and
# terraform commands with flags, internal URLs, SQL, regexes, cron lines, log lines with ids, stack traces,
# YAML/TOML/INI/JSON excerpts, pins, long paths, base64 of a fixture's text, base58/base32 ids, colours, hashes,
# uuids, shas, ULIDs, image digests, fake people, phone formats, documented test card numbers, IBANs in prose)
# and half about auth with no secret in it (policies, runbooks, os.environ["DB_PASSWORD"], ${{ secrets.X }},
# Vault paths, key ids, an .env.example with empty values, Helm's existingSecret, PIN-pad timeouts, error-code
# tables, CSV/Markdown headers naming a password column), in eight languages: written by the review7 reviewer
# BEFORE reading the scanner, its tests or this file. First run, each stored through `POST /api/memories` on a
# live `yullu serve` (real PostgreSQL) at d0f705e: 5 of 210 refused (a Grafana URL's path read as one bare key,
# an .env.example's next empty `NAME=` read as the value of the one before, Helm's `existingSecret:` name,
# `ISO 9564` after "PIN", and a Solana program id after "the token program"); all kept since.
REVIEW_7_KEEP: list[Form] = [
    (f"review7 {i}", fixed(text))
    for i, text in enumerate(json.loads((Path(__file__).parent / "data" / "review7_keep.json").read_text("utf-8")))
]


# 217 ordinary memories an assistant stores about codebases: 130 everyday, many long (CI YAML, Dockerfiles,
# Kubernetes manifests with secretKeyRef and envFrom, Terraform, SQL migrations, regexes, cron, logs and stack
# traces with request and trace ids, URLs with cache-busting and utm queries, minified JS, CSS colours, lockfile
# integrity hashes, go.sum and Cargo.lock lines, image digests, Nix store paths, fake people, notes in nine
# languages) and 87 about auth with no secret (OAuth and PKCE, JWT structure, HMAC signing, rotation runbooks,
# Vault paths and templates, IAM policies, CSP, password reset, TOTP, SSH config, known_hosts, public keys,
# fingerprints, `password_file = /run/secrets/db`, env var names, SOPS recipients): written by the review8
# reviewer BEFORE reading the scanner, its tests or this file. First run, each stored through `POST
# /api/memories` on a live `yullu serve` (real PostgreSQL) at 3906292: 9 of 217 refused (a go.sum `h1:` hash,
# Stripe ids and an ARN after "not secrets", PKCE's challenge, a URN's `oauth:` segment, `public_key=@$HOME/…`,
# a YAML mapping's next key glued to a `_FILE` path, `auth_type = scram-sha-256`, ingress-nginx's `auth-secret:
# staging-basic-auth`); all kept since.
REVIEW_8_KEEP: list[Form] = [
    (f"review8 {i}", fixed(text))
    for i, text in enumerate(json.loads((Path(__file__).parent / "data" / "review8_keep.json").read_text("utf-8")))
]


# 248 ordinary memories an assistant stores about codebases, 27 of them 100-400 words: about 190 on auth, secrets
# management, crypto, tokens, hashing, config and env vars, ids (UUIDv4/v7, ULIDs, trace and request ids), commit
# shas, checksums and known-answer tests, base64 fixtures, AWS's documented example key, regexes, log lines, stack
# traces, SQL, Kubernetes YAML with secretKeyRef, CSP, SRI, lockfile integrity, image digests and PGP fingerprints,
# feature-flag keys, and 57 everyday ones; no secret. Written by keep9 BEFORE reading the scanner or the other
# review sets. First run, each stored through `POST /api/memories` on a live `yullu serve` (real PostgreSQL) at
# bc95cab's scanner: 10 of 248 refused (see docs/security.md).
REVIEW_9_KEEP: list[Form] = [
    (f"review9 {i}", fixed(text))
    for i, text in enumerate(json.loads((Path(__file__).parent / "data" / "review9_keep.json").read_text("utf-8")))
]


# The fifth held-out set (secrets7): 112 secrets and 37 memories that must be stored, written BEFORE their
# author read this file, the scanner, its tests or docs/security.md, as people and assistants write secrets into a
# memory about a codebase: told in prose in eleven languages, in lists, backticks, chats and tickets; in shell
# commands (mysql, sshpass, curl -u, psql, docker login, htpasswd, openssl, git clone, net use, redis-cli, keytool);
# in configs of less usual formats (INI, .properties, HCL, nginx, Ansible, Helm, JSON, XML, .npmrc, .pypirc, .netrc,
# pip.conf, Maven, NuGet, Gradle, tfvars, wp-config, Rails, Laravel); JWTs, webhook URLs, recovery codes, TOTP
# seeds, a private key's middle, split and encoded keys; and tokens of less covered vendors. First run, each
# stored once through `POST /api/memories` on a live `yullu serve` (real PostgreSQL) at d0f705e, with the
# fillings of /work/wt/secrets7-data/forms.json (these builders draw new ones from the seed): **8 of 112
# secrets stored** (a wifi password after "the guest wifi … is", `hunter22` told after "password is still",
# `net use … /user:X PASSWORD`, nginx's `proxy_set_header Authorization "Basic …"`, a Zapier catch hook, recovery
# codes one a line, Razorpay's `key_secret X`, Go's `root:X@tcp(…)` DSN) and **2 of 38 keepers refused** (AWS's
# documented pair, refused by policy: moved to REFUSED_BY_POLICY; Helm's `existingSecret: postgres-credentials`).
HELD_OUT_5: list[Form] = [
    _f("prose-wifi", lambda r: 'heads up: the guest wifi at the Lisbon office is "Tangerine-Vespa-88"'),
    _f("prose-user-slash-pass", lambda r: "creds for kibana: elastic / Vb7#qk2Lw"),
    _f(
        "prose-german",
        lambda r: "Das Passwort für den Staging-Server lautet Schnee!Falke2024, bitte nicht weitergeben.",
    ),
    _f("prose-spanish", lambda r: "La contraseña del usuario deploy en el servidor de pruebas es Pato.Azul.93"),
    _f("prose-french", lambda r: "le mot de passe root de la VM de recette : Gir0fle&Cannelle"),
    _f("prose-portuguese", lambda r: "senha do banco de homologação: tatu-bola-7731"),
    _f("prose-japanese", lambda r: "ステージングDBのパスワードは kumo7Sora!2 です"),
    _f("prose-italian", lambda r: "la password dell'utente ftp è Gelato_Nero_19"),
    _f("prose-dutch", lambda r: "wachtwoord van de testomgeving: Fietsbel!2026"),
    _f("prose-russian", lambda r: "пароль от тестового сервера: Medved_Zima77"),
    _f("prose-chinese", lambda r: "测试环境数据库密码是 Lotus#Jade803"),
    _f("prose-spanish-clave", lambda r: "Usuario: admin, clave: Caracol$Verde88 (panel de Grafana en staging)"),
    _f(
        "list-colon",
        lambda r: "Onboarding checklist:\n- VPN user: jdoe\n- VPN password: Marmot+Kettle19\n- Jira: ask Priya",
    ),
    _f(
        "prose-quoted-passphrase",
        lambda r: 'Remember that Sam said the admin console password is "bluefin-orbit-cascade" until Friday.',
    ),
    _f("backticks", lambda r: "The Jenkins admin password is `q3R!x9Tz#mW2` (rotate after the demo)."),
    _f(
        "chat-pw",
        lambda r: (
            "@maria the prod sftp login is ftpuser and the pw is Wombat-Cider-7, don't paste it in the channel lol"
        ),
    ),
    _f(
        "ticket",
        lambda r: "JIRA OPS-4411: reset the 'reporting' service account. New password: Lq7#Xv2!Pn (set by Tom 11/20).",
    ),
    _f("runbook-pins", lambda r: "Step 3: unlock the HSM with the operator PIN 482913 and the SO PIN 771204."),
    _f("weak-password-prose", lambda r: "the router admin password is still hunter22, someone should change it"),
    _f("typos", lambda r: "pasword for teh jenkns box: Rn7!qzLw3X"),
    _f(
        "shell-mysql",
        lambda r: "To poke at the prod replica: mysql -h db-ro.internal -u reporting -pT7vLx92kQe reporting_db",
    ),
    _f("shell-sshpass", lambda r: "sshpass -p 'Gr4nite_Owl' ssh deploy@10.0.4.12 'sudo systemctl restart api'"),
    _f(
        "shell-curl-u",
        lambda r: f"curl -u ci-bot:{_c(r, ALNUM, 12)} https://nexus.acme.internal/service/rest/v1/repositories",
    ),
    _f(
        "shell-psql-uri",
        lambda r: f'psql "postgresql://analytics:{_c(r, ALNUM, 10)}@pg-analytics.internal:5432/warehouse"',
    ),
    _f(
        "shell-docker-login",
        lambda r: f"docker login registry.gitlab.com -u deploy-token-41 -p gldt-{_c(r, ALNUM, 20)}",
    ),
    _f("shell-htpasswd", lambda r: "htpasswd -b -c /etc/nginx/.htpasswd admin Kestrel77river"),
    _f(
        "shell-openssl-passin",
        lambda r: "openssl pkcs12 -in client.p12 -out client.pem -nodes -passin pass:Fjord2Lantern",
    ),
    _f(
        "shell-git-clone-token",
        lambda r: f"git clone https://oauth2:glpat-{_c(r, ALNUM, 20)}@gitlab.example.org/platform/infra.git",
    ),
    _f("shell-git-clone-pass", lambda r: "git clone https://builder:Sup3rS3cretPw@bitbucket.org/acme/payments.git"),
    _f("shell-net-use", lambda r: r"net use Z: \\fileserver\share /user:ACME\svc_backup Tulip#Frost2"),
    _f("shell-redis-cli", lambda r: "redis-cli -h cache.internal -a Ocelot9Drum --no-auth-warning"),
    _f("shell-keytool", lambda r: "keytool -list -v -keystore server.jks -storepass Cobalt7Heron"),
    _f("ini-passwd", lambda r: "[database]\nhost = 10.2.0.5\nuser = app\npasswd = Hx92!mQpL4\n"),
    _f(
        "properties",
        lambda r: (
            "spring.datasource.url=jdbc:postgresql://db:5432/orders\nspring.datasource.username=orders\nspring.datasou"
            "rce.password=Plover_Tide_557"
        ),
    ),
    _f(
        "hcl",
        lambda r: f'resource "aws_db_instance" "main" {{\n  username = "admin"\n  password = "{_c(r, ALNUM, 12)}"\n}}',
    ),
    _f(
        "nginx-basic-header",
        lambda r: f'location /admin {{\n  proxy_set_header Authorization "Basic {b64("admin:PlainTextPw99")}";\n}}',
    ),
    _f(
        "ansible-vault-vars",
        lambda r: "# group_vars/prod/vault.yml (decrypted for the migration)\nvault_db_password: Quokka!Lime#63",
    ),
    _f(
        "helm-values",
        lambda r: (
            f"postgresql:\n  auth:\n    username: app\n    password: {_c(r, ALNUM, 10)}\n    postgresPassword:"
            f" {_c(r, ALNUM, 10)}"
        ),
    ),
    _f(
        "json-nested",
        lambda r: json.dumps(
            {"services": {"smtp": {"host": "smtp.mailhost.io", "auth": {"user": "noreply", "pass": _c(r, ALNUM, 12)}}}}
        ),
    ),
    _f("xml-password", lambda r: "<datasource><user>sa</user><password>Bq5!nR8vLm</password></datasource>"),
    _f("npmrc-token", lambda r: f"//registry.npmjs.org/:_authToken=npm_{_c(r, ALNUM, 36)}"),
    _f("npmrc-auth-b64", lambda r: f"//npm.pkg.internal/:_auth={b64('deploy:HotPotato77')}\nalways-auth=true"),
    _f("pypirc", lambda r: f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmcCJ{_c(r, ALNUM + '-_', 60)}"),
    _f("netrc-heroku-uuid", lambda r: f"machine api.heroku.com\n  login ops@acme.io\n  password {uuid4(r)}"),
    _f(
        "pip-conf",
        lambda r: (
            f"[global]\nindex-url = https://pypi-reader:{_c(r, ALNUM, 10)}@artifactory.acme.io/api/pypi/pypi/simple"
        ),
    ),
    _f(
        "maven-settings",
        lambda r: (
            "<server>\n  <id>nexus-releases</id>\n  <username>deployment</username>\n  <password>Dh4!kLm9Qz</password"
            ">\n</server>"
        ),
    ),
    _f(
        "nuget-config",
        lambda r: (
            '<packageSourceCredentials><acme><add key="Username" value="build" />'
            f'<add key="ClearTextPassword" value="{_c(r, ALNUM, 12)}" /></acme></packageSourceCredentials>'
        ),
    ),
    _f(
        "gradle-properties",
        lambda r: f"ossrhUsername=acme-release\nossrhPassword={_c(r, ALNUM, 12)}\nsigning.password=Heron&Birch42",
    ),
    _f("tfvars-cloudflare", lambda r: f'cloudflare_api_token = "{_c(r, ALNUM + "_-", 40)}"\nzone = "acme.io"'),
    _f("wp-config", lambda r: "define( 'DB_PASSWORD', 'w0rdPr3ss!Lake' );"),
    _f("rails-master-key", lambda r: f"RAILS_MASTER_KEY={_c(r, HEX, 32)} bin/rails credentials:edit"),
    _f("laravel-env", lambda r: f"APP_NAME=Shop\nAPP_KEY=base64:{_b64b(r, 32)}\nDB_PASSWORD=laravel_Pr0d!"),
    _f("jwt", lambda r: f"Bearer token for the staging API (valid 30 days): {jwt(r)}"),
    _f(
        "slack-webhook",
        lambda r: (
            f"https://hooks.slack.com/services/T04{_c(r, UPPER_DIGITS, 6)}/B05{_c(r, UPPER_DIGITS, 6)}"
            f"/{_c(r, ALNUM, 24)}"
        ),
    ),
    _f(
        "discord-webhook",
        lambda r: (
            f"alerts go to https://discord.com/api/webhooks/1187{_c(r, '0123456789', 15)}/{_c(r, ALNUM + '_-', 68)}"
        ),
    ),
    _f(
        "teams-webhook",
        lambda r: (
            "https://acme.webhook.office.com/webhookb2/3f2a1b0c-9d8e-4f6a-b5c4-d3e2f1a0b9c8@7e6d5c4b-3a2f-4e1d-8c9b-a8"
            f"f7e6d5c4b3/IncomingWebhook/{_c(r, HEX, 32)}/1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e"
        ),
    ),
    _f(
        "zapier-webhook",
        lambda r: "Zap trigger: POST to https://hooks.zapier.com/hooks/catch/1234567/3xk9qlm/ with the order JSON",
    ),
    _f(
        "recovery-codes",
        lambda r: (
            "GitHub recovery codes for the bot account (keep safe):\n4f7a2-9c1e3\nb8d05-6e2f1\n1a9c4-7d3b8\ne5f62-0b8a7"
        ),
    ),
    _f("totp-seed", lambda r: f"2FA seed for the shared ops account: {_c(r, BASE32, 32)}"),
    _f("totp-uri", lambda r: f"otpauth://totp/Acme:ops@acme.io?secret={_c(r, BASE32, 32)}&issuer=Acme"),
    _f(
        "pem-middle-chunk",
        lambda r: "deploy key, middle part (rest is in 1Password):\n" + "\n".join(_c(r, B64, 64) for _ in range(3)),
    ),
    _f(
        "key-split-lines",
        lambda r: (
            "OpenAI key for the eval runner, split so the linter doesn't catch it:\nsk-proj-"
            + _c(r, ALNUM, 20)
            + "\n"
            + _c(r, ALNUM + "_-", 60)
        ),
    ),
    _f(
        "key-split-concat",
        lambda r: 'API_KEY = "sk-ant-api03-" + "' + _c(r, ALNUM + "_-", 45) + '" + "' + _c(r, ALNUM + "_-", 48) + 'AA"',
    ),
    _f("k8s-secret-b64", lambda r: f"apiVersion: v1\nkind: Secret\ndata:\n  DB_PASSWORD: {b64('Harbor-Wren-5519')}"),
    _f("url-encoded-password", lambda r: "DATABASE_URL=postgres://app:p%40ss%21Word%2399@db.internal:5432/app"),
    _f("hex-hmac-prose", lambda r: f"the HMAC signing secret (hex) for partner callbacks is {_c(r, HEX, 64)}"),
    _f(
        "hex-encoded-password",
        lambda r: "wifi password hex-encoded for the provisioning script: " + b"Orchid-lamp-42".hex(),
    ),
    _f("vercel", lambda r: f"VERCEL_TOKEN={_c(r, ALNUM, 24)}"),
    _f("netlify", lambda r: f"netlify personal access token nfp_{_c(r, ALNUM, 36)}"),
    _f("render", lambda r: f"render API key: rnd_{_c(r, ALNUM, 32)}"),
    _f("flyio", lambda r: f"fly tokens create deploy printed: FlyV1 fm2_{_c(r, ALNUM + '+/', 120)}"),
    _f(
        "cloudflare-global-key",
        lambda r: (
            f'curl -H "X-Auth-Email: ops@acme.io" -H "X-Auth-Key: {_c(r, HEX, 37)}" https://api.cloudflare.com/client/v4/zones'
        ),
    ),
    _f("digitalocean", lambda r: f"DO token for terraform: dop_v1_{_c(r, HEX, 64)}"),
    _f("pulumi", lambda r: f"PULUMI_ACCESS_TOKEN=pul-{_c(r, HEX, 40)}"),
    _f("doppler", lambda r: f"doppler service token dp.st.prd.{_c(r, ALNUM, 43)}"),
    _f("infisical", lambda r: f"INFISICAL_TOKEN=st.{_c(r, HEX, 24)}.{_c(r, HEX, 32)}.{_c(r, HEX, 32)}"),
    _f(
        "1password-service",
        lambda r: f"OP_SERVICE_ACCOUNT_TOKEN=ops_eyJzaWduSW5BZGRyZXNzIjoibXkuMXBhc3N3b3JkLmNvbSIs{_c(r, ALNUM, 80)}",
    ),
    _f("vault-hvs", lambda r: f"export VAULT_TOKEN=hvs.CAESI{_c(r, ALNUM + '_-', 85)}"),
    _f("vault-legacy-s", lambda r: f"vault login s.{_c(r, ALNUM, 24)}"),
    _f("grafana-sa", lambda r: f"grafana SA token: glsa_{_c(r, ALNUM, 32)}_{_c(r, HEX, 8)}"),
    _f("newrelic", lambda r: f"New Relic user key NRAK-{_c(r, UPPER_DIGITS, 27)}"),
    _f("datadog-app-key-prose", lambda r: f"datadog application key {_c(r, HEX, 40)} for the dashboards sync"),
    _f("pagerduty", lambda r: f"PagerDuty REST API key: u+{_c(r, ALNUM + '_-', 18)}"),
    _f("twilio", lambda r: f"twilio: account AC{_c(r, HEX, 32)}, auth token {_c(r, HEX, 32)}"),
    _f("sendgrid", lambda r: f"SENDGRID=SG.{_c(r, ALNUM + '_-', 22)}.{_c(r, ALNUM + '_-', 43)}"),
    _f("mailgun", lambda r: f"mailgun api key is key-{_c(r, HEX, 32)}"),
    _f("postmark-uuid", lambda r: f"X-Postmark-Server-Token: {uuid4(r)}"),
    _f("shopify", lambda r: f"shopify admin token shpat_{_c(r, HEX, 32)}"),
    _f("square", lambda r: f"Square prod access token EAAAE{_c(r, ALNUM + '-_', 59)}"),
    _f(
        "braintree-paypal",
        lambda r: f"BRAINTREE_ACCESS_TOKEN=access_token$production${_c(r, HEX, 16)}${_c(r, HEX, 32)}",
    ),
    _f("plaid", lambda r: f"PLAID_CLIENT_ID={_c(r, HEX, 24)}\nPLAID_SECRET={_c(r, HEX, 30)}"),
    _f("razorpay", lambda r: f"razorpay: key_id rzp_live_{_c(r, ALNUM, 14)}, key_secret {_c(r, ALNUM, 24)}"),
    _f("adyen", lambda r: f"ADYEN_API_KEY=AQE{_c(r, ALNUM + '+/', 50)}=-{_c(r, ALNUM + '+/', 43)}=-{_c(r, ALNUM, 12)}"),
    _f("openai-proj", lambda r: f"new openai key sk-proj-{_c(r, ALNUM + '_-', 120)}"),
    _f("anthropic", lambda r: f"anthropic key for the bot: sk-ant-api03-{_c(r, ALNUM + '_-', 93)}AA"),
    _f("huggingface", lambda r: f"huggingface read token hf_{_c(r, string.ascii_letters, 34)}"),
    _f("replicate", lambda r: f"replicate: r8_{_c(r, ALNUM, 37)}"),
    _f("cohere-prose", lambda r: f"cohere trial key {_c(r, ALNUM, 40)}"),
    _f("pinecone", lambda r: f"PINECONE_API_KEY=pcsk_{_c(r, ALNUM, 5)}_{_c(r, ALNUM, 60)}"),
    _f(
        "azure-storage-connstr",
        lambda r: (
            f"DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={_b64b(r, 64)};EndpointSuffix=core.windows"
            ".net"
        ),
    ),
    _f(
        "dotnet-connstr",
        lambda r: (
            "Server=tcp:acme.database.windows.net,1433;Database=orders;User ID=orders_app;Password=Hz4!rQ9mLw2;Encrypt"
            "=True;"
        ),
    ),
    _f(
        "aws-prose",
        lambda r: (
            f"aws creds for the backup job: access key AKIA{_c(r, UPPER_DIGITS, 16)}, secret {_c(r, ALNUM + '+/', 40)}"
        ),
    ),
    _f("stripe-restricted", lambda r: f"export STRIPE_SECRET_KEY='rk_live_{_c(r, ALNUM, 99)}'"),
    _f(
        "gcp-sa-json-fragment",
        lambda r: (
            '"private_key_id": "'
            + _c(r, HEX, 40)
            + '", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC'
            + _c(r, B64, 40)
            + "\\n"
        ),
    ),
    _f("compose-env", lambda r: "environment:\n  - POSTGRES_PASSWORD=Narwhal_Sunset_81"),
    _f(
        "code-python-kwargs",
        lambda r: f'client = Minio("minio.internal:9000", access_key="minio-ci", secret_key="{_c(r, ALNUM, 16)}")',
    ),
    _f(
        "code-js",
        lambda r: (
            "const transporter = nodemailer.createTransport"
            "({ auth: { user: 'alerts@acme.io', pass: 'Ylm4-Quartz-Fen' } });"
        ),
    ),
    _f("code-go-dsn", lambda r: 'db, err := sql.Open("mysql", "root:Kite!Lagoon5@tcp(127.0.0.1:3306)/inventory")'),
    _f(
        "url-query-apikey",
        lambda r: f"https://api.weather-provider.com/v2/forecast?lat=52.1&lon=4.3&apikey={_c(r, ALNUM, 32)}",
    ),
    _f("yaml-passphrase", lambda r: 'mail:\n  smtp_password: "brisk-otter-panel-37"'),
    _f(
        "spring-keystore",
        lambda r: "server.ssl.key-store-password=Tw0Ravens!\nserver.ssl.key-store=classpath:keystore.p12",
    ),
    _f(
        "prose-url-encoded",
        lambda r: (
            "smtp login is notifications@acme.io, password is " + quote("Coral&Moss=12") + " (url-encoded in the DSN)"
        ),
    ),
]

HELD_OUT_5_KEEP: list[Form] = [
    _f(
        "about-vault",
        lambda r: "The deploy script reads the DB password from Vault (secret/data/prod/db), never from the repo.",
    ),
    _f(
        "placeholder-env-expansion",
        lambda r: (
            "Set DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app in .env; DB_PASSWORD comes from the CI secret "
            "store."
        ),
    ),
    _f(
        "placeholder-angle",
        lambda r: "API calls need an Authorization: Bearer <token> header; the token comes from `acme auth login`.",
    ),
    _f(
        "masked-stars",
        lambda r: "Logs show the password as **** so masking works; the bug was that the username was also masked.",
    ),
    _f(
        "redacted",
        lambda r: "In the fixture the token is the literal string REDACTED; tests assert it never round-trips.",
    ),
    _f(
        "env-names",
        lambda r: (
            "Env vars the worker expects: OPENAI_API_KEY, ANTHROPIC_API_KEY, HF_TOKEN, SENTRY_DSN (names only, values "
            "in Doppler)."
        ),
    ),
    _f(
        "command-prompts",
        lambda r: "mysql -u reporting -p reporting_db   # -p with no value makes mysql prompt for the password",
    ),
    _f("command-op-read", lambda r: 'export GITHUB_TOKEN="$(op read op://Engineering/github-bot/token)"'),
    _f("command-reads-file", lambda r: "PGPASSWORD=$(cat /run/secrets/pg_password) psql -h db -U app"),
    _f("commit-sha", lambda r: "The release commit is 3f9a2c1e7b4d8a6f0c5e9b2d1a7f3c8e6b4d0a9f, tagged v2.14.0."),
    _f(
        "uuid", lambda r: "Upload id 5f0c2b7e-3a91-4d6e-9c2f-8b1a7e4d3c60 failed with 413; the chunk size is too large."
    ),
    _f(
        "sha256",
        lambda r: "sha256 of the release tarball: 9b74c9897bac770ffc029102a200c5de9b2f4a1c6e8d3f7a2b5c0e4d1f8a6b3c",
    ),
    _f(
        "ssh-public-key",
        lambda r: (
            "Add this public key to authorized_keys on the bastion: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH3k9Lm2Qp7Rz4"
            "Tw8Vn3Bc6Hd1Js5Qb0GeRaUo2Ik8F deploy@ci"
        ),
    ),
    _f(
        "cert-fingerprint",
        lambda r: (
            "The TLS cert fingerprint (SHA-256) is 5E:3A:9C:12:7B:4D:8A:6F:0C:5E:9B:2D:1A:7F:3C:8E:6B:4D:0A:9F:3F:9A:2"
            "C:1E:7B:4D:8A:6F:0C:5E:9B:2D; pin it in the mobile app."
        ),
    ),
    _f(
        "long-identifier",
        lambda r: (
            "The class is AbstractSingletonProxyFactoryBeanConfigurationResolverImpl, which nobody should extend."
        ),
    ),
    _f(
        "about-webhook",
        lambda r: (
            "Rotate the Slack webhook if it leaks: Settings > Incoming Webhooks > Regenerate. The URL looks like https"
            "://hooks.slack.com/services/T…/B…/…"
        ),
    ),
    _f(
        "password-policy",
        lambda r: (
            "Password policy: at least 12 characters, one symbol, no reuse of the last 5 passwords; enforced in accoun"
            "ts/validators.py."
        ),
    ),
    _f(
        "about-hash-column",
        lambda r: "The password_hash column uses argon2id; migration 0042 re-hashes bcrypt rows on the next login.",
    ),
    _f(
        "helm-existing-secret",
        lambda r: (
            "The Helm chart uses existingSecret: postgres-credentials instead of putting auth.password in values.yaml."
        ),
    ),
    _f("code-reads-env", lambda r: "In settings.py: SECRET_KEY = os.environ['DJANGO_SECRET_KEY']"),
    _f("command-password-stdin", lambda r: "docker login ghcr.io -u $GITHUB_ACTOR --password-stdin < ~/.ghcr_token"),
    _f("token-lifespan", lambda r: "Keycloak realm token lifespan is 300 seconds; refresh tokens last 30 minutes."),
    _f(
        "csv-hash-column",
        lambda r: "CSV columns: id,email,password_hash,created_at. password_hash is bcrypt, never the plain password.",
    ),
    _f(
        "ansible-template",
        lambda r: (
            'Ansible: db_password: "{{ vault_db_password }}" in group_vars/all.yml; '
            "the real value is in vault.yml (encrypted)."
        ),
    ),
    _f(
        "short-sha",
        lambda r: "git commit b7e4f1a fixed the token refresh race (tokens were refreshed twice when two tabs opened).",
    ),
    _f(
        "image-digest",
        lambda r: "Image digest: sha256:4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b",
    ),
    _f("base64-plain", lambda r: "The base64 of 'hello world' is aGVsbG8gd29ybGQ=, used in the encoder unit test."),
    _f(
        "tf-variable-decl",
        lambda r: (
            'Terraform: variable "db_password" { type = string, sensitive = true }; CI passes it as TF_VAR_db_password.'
        ),
    ),
    _f("package-name", lambda r: "The npm package is @acme/auth-token-refresh-middleware-for-express (v3.2.1)."),
    _f("about-error", lambda r: "Sentry issue ACME-API-4F2 says 'invalid api key' whenever the key env var is empty."),
    _f(
        "npmrc-placeholder",
        lambda r: ".npmrc should contain //registry.npmjs.org/:_authToken=${NPM_TOKEN} so CI injects the token.",
    ),
    _f(
        "zone-id",
        lambda r: (
            "Cloudflare zone id for acme.io is 023e105f4ecef8ad9ca31a8372d0c353 (zone ids are public, they show in eve"
            "ry API URL)."
        ),
    ),
    _f(
        "jwt-header-only",
        lambda r: 'The JWT header eyJhbGciOiJIUzI1NiJ9 decodes to {"alg":"HS256"}; we reject alg=none tokens.',
    ),
    _f("placeholder-described", lambda r: "password: <set in 1Password under 'staging db'>"),
    _f(
        "about-wifi",
        lambda r: "The wifi password is on the sticker under the router; ask the office manager if it is worn off.",
    ),
    _f(
        "stripe-test-card",
        lambda r: "Stripe test card 4242 4242 4242 4242 with any future date and any CVC works in test mode.",
    ),
    _f(
        "about-login",
        lambda r: (
            "Login with user 'admin' fails after the upgrade because the password reset token table was truncated."
        ),
    ),
]


# The sixth held-out set (secrets8): 108 secrets and 34 memories that must be stored, written BEFORE their author
# read this file, the scanner, its tests or docs/security.md, aimed where the earlier sets were thin: secrets deep
# inside long memories (a runbook step, a traceback echoing a DSN, a debug log echoing an Authorization header, YAML,
# JSON and TOML excerpts of 15+ lines); told in fourteen languages in their own scripts; dictated ("capital M mango
# dash four four"), spaced into groups, reversed, split over two lines, mistyped ("pasword", "secert"), in chat; and
# less common formats (.envrc export, systemd Environment=, Dockerfile ARG/ENV, k8s stringData and base64 data,
# compose, GitHub Actions and GitLab CI variables, a Jenkinsfile's literal, ~/.aws/credentials, ~/.docker/config.json,
# kubeconfig token and client-key-data, .git-credentials, .pgpass, my.cnf, redis.conf, Atlas, Kafka JAAS, AMQP, LDAP
# bind, SMTP app password, SNMP, RADIUS, WireGuard, OpenVPN static key, PGP and PuTTY private keys, Android keystore,
# Apple app-specific password, service-account JSON, Azure connection string and SAS, and 25 vendors' tokens). First
# run, each stored once through `POST /api/memories` on a live `yullu serve` (real PostgreSQL) at 3906292, with the
# fillings of /work/wt/secrets8-data/forms.json (these builders draw new ones from the seed): **12 of 108 secrets
# stored** (a random password after "the login is X and it currently uses", Italian "la password del NAS … è
# gattonero_1987", Japanese 「…」 quotes, Chinese "AccessKey Secret 是 X", a dictated password of ten words, hex in
# groups of four, "pasword", "secert key", "pw is literally X", 16 hex digits after "the signing key is", "X as the
# pass", a Gmail app password in `EMAIL_HOST_PASSWORD = '…'`) and **2 of 34 keepers refused** (a JWKS entry's public
# modulus `"n"`; an AWS access key id alone, which the set called no secret and gitleaks' rule refuses: moved to
# REFUSED_BY_POLICY).
def _rnd(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _b64u_text(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


_H6_SUPABASE = _b64u_text(
    json.dumps(
        {"iss": "supabase", "ref": "xkqzmvtrplwaebnd", "role": "service_role", "iat": 1731000000, "exp": 2046576000},
        separators=(",", ":"),
    )
)

HELD_OUT_6: list[Form] = [
    _f(
        "runbook-prose-password",
        lambda r: (
            "Rotating the reporting replica: ssh to db-rep-2 through the bastion, stop pgbouncer with "
            "`sudo systemctl stop pgbouncer`, then promote nothing, just restart postgres so the new "
            "pg_hba takes effect. The replica login is reporting_ro and it currently uses Vq7mLp2xR9wt "
            "until the Vault migration lands in Q1. After the restart, run the smoke query from "
            "ops/sql/replica_lag.sql and check lag stays under 5 seconds before re-enabling pgbouncer."
        ),
    ),
    _f(
        "traceback-dsn",
        lambda r: (
            "Traceback (most recent call last):\n"
            '  File "/srv/app/billing/jobs/reconcile.py", line 88, in run\n'
            "    engine = create_engine(settings.BILLING_DB)\n"
            '  File "/srv/app/.venv/lib/python3.11/site-packages/sqlalchemy/engine/create.py", line '
            "602, in create_engine\n"
            "    raise exc.ArgumentError(\n"
            "sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to server at "
            '"10.0.3.12", port 5432 failed: timeout expired\n'
            "(engine url: postgresql+psycopg2://billing_svc:Hn3kq8ZtW2pLmc4@10.0.3.12:5432/billing)\n"
            "The reconcile job dies like this whenever the VPN flaps; retry is safe."
        ),
    ),
    _f(
        "log-authorization-header",
        lambda r: (
            "Found why the export webhook 401s: the worker logs the outgoing request at DEBUG. "
            "Line from worker.log: 2026-11-20 14:02:11,381 DEBUG urllib3.connectionpool "
            'https://partner.acmefreight.io:443 "POST /v3/shipments HTTP/1.1" 401 87 '
            "request_headers={'User-Agent': 'python-requests/2.31', 'Authorization': 'Bearer "
            f"{_rnd(r, 40, URLSAFE)}', "
            "'Content-Type': 'application/json'}. The partner rotated on their side; we need the new one."
        ),
    ),
    _f(
        "yaml-deep-smtp",
        lambda r: (
            "Helm values we ship for the notifier chart (values-prod.yaml):\n"
            "replicaCount: 3\n"
            "image:\n"
            "  repository: registry.acme.internal/notifier\n"
            "  tag: 2.14.1\n"
            "  pullPolicy: IfNotPresent\n"
            "resources:\n"
            "  limits:\n"
            "    cpu: 500m\n"
            "    memory: 512Mi\n"
            "config:\n"
            "  logLevel: info\n"
            "  smtp:\n"
            "    host: smtp.mailrelay.acme.net\n"
            "    port: 587\n"
            "    starttls: true\n"
            "    username: notifier@acme.net\n"
            f'    password: "{_rnd(r, 6)}-{_rnd(r, 6)}-{_rnd(r, 4)}"\n'
            "  retries: 5\n"
            "  backoffSeconds: 30\n"
            "nodeSelector:\n"
            "  pool: general\n"
        ),
    ),
    _f(
        "json-deep-clientsecret",
        lambda r: (
            "appsettings.Production.json for the identity service, as deployed:\n"
            "{\n"
            '  "Logging": { "LogLevel": { "Default": "Warning", "Microsoft": "Warning" } },\n'
            '  "AllowedHosts": "*",\n'
            '  "Kestrel": { "Endpoints": { "Http": { "Url": "http://0.0.0.0:8080" } } },\n'
            '  "Identity": {\n'
            '    "Authority": "https://login.microsoftonline.com/4b1c9a7e-2f3d-4e8a-9c61-0d5e7f2a8b34",\n'
            '    "ClientId": "a9e2d5c4-71b3-4f06-8e2a-6c1d9b3f0e57",\n'
            '    "CallbackPath": "/signin-oidc",\n'
            '    "Scopes": [ "openid", "profile", "offline_access" ],\n'
            f'    "ClientSecret": "{_rnd(r, 3)}8Q~{_rnd(r, 34, ALNUM + "~._-")}",\n'
            '    "SaveTokens": true\n'
            "  },\n"
            '  "FeatureFlags": { "NewCheckout": false, "DarkMode": true },\n'
            '  "Cors": { "Origins": [ "https://app.acme.io" ] }\n'
            "}"
        ),
    ),
    _f(
        "toml-deep-password",
        lambda r: (
            "config/production.toml (the worker reads it at boot):\n"
            "[server]\n"
            'bind = "0.0.0.0:9000"\n'
            "workers = 8\n"
            "graceful_timeout = 30\n\n"
            "[queue]\n"
            'backend = "sqs"\n'
            'region = "eu-west-1"\n'
            "visibility_timeout = 120\n\n"
            "[database]\n"
            'host = "orders-db.cluster-c8x.eu-west-1.rds.amazonaws.com"\n'
            "port = 5432\n"
            'name = "orders"\n'
            'user = "orders_worker"\n'
            f'password = "{_rnd(r, 18)}"\n'
            "pool_size = 20\n\n"
            "[telemetry]\n"
            'otlp_endpoint = "http://otel-collector:4317"\n'
            "sample_ratio = 0.1\n"
        ),
    ),
    _f(
        "nginx-log-access-token",
        lambda r: (
            "Access log line showing the mobile client still puts the token in the query string, we must "
            'move it to a header: 185.44.12.9 - - [21/Nov/2026:09:14:55 +0000] "GET /api/v2/export/orders.csv'
            f'?from=2026-10-01&access_token={_rnd(r, 48, HEX)} HTTP/1.1" 200 48211 "-" "AcmeMobile/5.2 (iOS 18.1)"'
        ),
    ),
    _f(
        "curl-user-pass",
        lambda r: (
            "To trigger a rebuild by hand when the webhook misses: curl -X POST -u ci-bot:Tr0ub4dorXq39z "
            "https://jenkins.acme.internal/job/web-frontend/build?delay=0sec ; it answers 201 with an empty body."
        ),
    ),
    _f(
        "sql-alter-user",
        lambda r: (
            "Migration note for 2026-11: we created the read-only analytics role by hand on prod, so it is "
            "not in the migrations. Statement used: CREATE ROLE analytics_ro LOGIN PASSWORD 'mZ4kq!Tr8vWp2' "
            "NOSUPERUSER; GRANT USAGE ON SCHEMA public TO analytics_ro; Metabase connects with that role."
        ),
    ),
    _f(
        "mysql-identified-by",
        lambda r: (
            "Legacy CRM on MySQL 5.7: the sync user was made with "
            "GRANT SELECT ON crm.* TO 'sync'@'10.%' IDENTIFIED BY 'Lp8wRq2zKd'; — the nightly job in "
            "cron.d/crm-sync uses it."
        ),
    ),
    _f(
        "jdbc-sqlserver",
        lambda r: (
            "Report service datasource (application-prod.properties): spring.datasource.url=jdbc:sqlserver://"
            "sql-prod-01.acme.local:1433;databaseName=Reports;user=rpt_app;password=Gh7!kLm29Qw;encrypt=true;"
            "trustServerCertificate=true — the driver ignores spring.datasource.password when the URL has one."
        ),
    ),
    _f(
        "python-requests-auth",
        lambda r: (
            "The export script talks to the vendor with basic auth: `resp = requests.get(EXPORT_URL, "
            'auth=("svc_export", "Wm4kP9zQx2Tn"), timeout=30)`. Keep the timeout, their API hangs at month end.'
        ),
    ),
    _f(
        "pgpassword-shell",
        lambda r: (
            "Quick way to dump one table from staging: PGPASSWORD=Zq8mN3vLw6Rt pg_dump -h staging-db.acme.io "
            "-U app -t public.invoices app > invoices.sql (the -t needs the schema prefix)."
        ),
    ),
    _f(
        "mysql-dash-p",
        lambda r: (
            "When the admin UI is down you can still flip the flag directly: mysql -h 10.2.0.7 -u root "
            "-pK8vQz2LmWx4 feature_flags -e \"UPDATE flags SET enabled=1 WHERE name='checkout_v2'\""
        ),
    ),
    _f(
        "fr-password",
        lambda r: (
            "Le mot de passe de la base de staging est « Pivoine-Sable-42 », ne le change pas avant la démo de jeudi."
        ),
    ),
    _f(
        "es-password",
        lambda r: (
            "La contraseña del usuario admin de Grafana es cielo.Verde.8812; la cambió Marta ayer "
            "después del incidente."
        ),
    ),
    _f(
        "pt-password",
        lambda r: "A senha do banco de homologação é Jabuti#2024rio e o usuário é app_hml, só funciona pela VPN.",
    ),
    _f(
        "de-password",
        lambda r: (
            "Das Passwort für den SFTP-Zugang des Lieferanten lautet Kaffeetasse!17Berg, Benutzer ist acme_upload."
        ),
    ),
    _f(
        "it-password",
        lambda r: (
            "La password del NAS in ufficio è gattonero_1987 e l'utente è backup; serve per i restore del venerdì."
        ),
    ),
    _f(
        "nl-password",
        lambda r: "Het wachtwoord voor de testomgeving is fietsbel-Regen-33, niet delen buiten het team aub.",
    ),
    _f(
        "pl-password",
        lambda r: "Hasło do konta serwisowego w Jenkinsie to ŻubrWisła2023!, zmienimy je po audycie w grudniu.",
    ),
    _f("ru-password", lambda r: "Пароль от продовой базы: Зима2024склад, логин postgres, хост db-main."),
    _f(
        "tr-password",
        lambda r: "Staging veritabanı şifresi: Karpuz!Deniz77 — kullanıcı adı app, sadece VPN üzerinden erişilir.",
    ),
    _f(
        "ja-password",
        lambda r: "ステージング環境のDBパスワードは「sakuraTsuki2291」です。来週変更予定なので一旦メモしておきます。",
    ),
    _f("zh-password", lambda r: "测试服务器的 root 密码是 Qw3xZ9mLpT7，别外传，下周会改。"),
    _f("ko-password", lambda r: "운영 DB 비밀번호는 hangangBridge42 입니다. 다음 주에 바꿀 예정이에요."),
    _f("ar-password", lambda r: "كلمة المرور لحساب الخادم هي Nakhla5521xq ولا تشاركها مع أحد."),
    _f("hi-password", lambda r: "स्टेजिंग सर्वर का पासवर्ड है ChaiGaram2024, इसे किसी से साझा मत करना।"),
    _f(
        "zh-aliyun-secret",
        lambda r: (
            f"阿里云 OSS 的 AccessKey ID 是 LTAI5t{_rnd(r, 18)}，AccessKey Secret 是 {_rnd(r, 30)}，"
            "部署脚本里用的就是这一对。"
        ),
    ),
    _f("ja-api-key", lambda r: f"決済APIのシークレットキー：{_rnd(r, 40, HEX)}（本番用、取り扱い注意）"),
    _f(
        "es-token-chat",
        lambda r: f"oye el token de la api de envíos es {_rnd(r, 32, HEX)} por si lo necesitas para probar",
    ),
    _f(
        "de-api-schluessel",
        lambda r: f"API-Schlüssel für den Wetterdienst (Produktion): {_rnd(r, 32, HEX)} – Kontingent 10k Aufrufe/Tag.",
    ),
    _f(
        "voice-dictation",
        lambda r: (
            "ok so the wifi password for the lab router is tango seven bravo nine echo echo four "
            "kilo, all lowercase no spaces"
        ),
    ),
    _f(
        "voice-dictation-2",
        lambda r: (
            "note to self the staging admin password is capital M mango dash four four dash river "
            "dash zulu, exactly like that"
        ),
    ),
    _f(
        "spaced-groups",
        lambda r: (
            "api key for the geocoder, spaced so slack doesn't linkify it: "
            f"{' '.join(_rnd(r, 4, HEX) for _ in range(8))}"
        ),
    ),
    _f("dashed-chars", lambda r: "deploy passphrase spelled out: k-7-Q-m-2-x-9-L-p-4-R-z (drop the dashes)"),
    _f(
        "reversed",
        lambda r: "the staging db password reversed (so it isn't greppable) is 'wq9KzT2mLv8R' — reverse it before use",
    ),
    _f("typo-pasword", lambda r: "pasword for jenkins admin: Lm8qTz2vRk4"),
    _f("typo-passwrod", lambda r: "jira service account passwrod = Rt6yUi9oPq2w"),
    _f("typo-secert", lambda r: f"stripe secert key for the sandbox acct {_rnd(r, 24)}"),
    _f("chat-creds", lambda r: "btw creds for the vendor portal → user: acme-ops / pw: Hx7vQ2mzP4"),
    _f("chat-redis", lambda r: "lol the prod redis pw is literally redisPr0d2024 smh, we need to rotate that"),
    _f(
        "split-across-lines",
        lambda r: f"the signing key is {_rnd(r, 16, HEX)}\n…continued (slack cut it): {_rnd(r, 16, HEX)}",
    ),
    _f(
        "pw-in-parens",
        lambda r: "Connected to the old FTP (login acmeftp, Xk29vLmq8Tz as the pass) and pulled the 2019 archives.",
    ),
    _f(
        "env-export-quotes",
        lambda r: (
            "My local .envrc:\nexport DJANGO_DEBUG=0\nexport "
            f"DJANGO_SECRET_KEY='{_rnd(r, 50, string.ascii_lowercase + string.digits + '!@#%^&*(-_=+)')}'\nexport "
            "DATABASE_URL=postgres://localhost/acme"
        ),
    ),
    _f(
        "systemd-env",
        lambda r: (
            "/etc/systemd/system/ingest.service "
            f'has:\n[Service]\nUser=ingest\nEnvironment="INGEST_DB_PASS={_rnd(r, 14)}"\nExecStart=/opt/ingest/bin/run '
            "--config /etc/ingest.toml\nRestart=always"
        ),
    ),
    _f(
        "dockerfile-arg-env",
        lambda r: (
            f"FROM node:20-alpine\nWORKDIR /app\nARG NPM_TOKEN=npm_{_rnd(r, 36)}\nRUN echo "
            '"//registry.npmjs.org/:_authToken=${NPM_TOKEN}" > .npmrc && npm ci\nENV '
            "NODE_ENV=production"
        ),
    ),
    _f(
        "dockerfile-env-password",
        lambda r: (
            f"The old Dockerfile still bakes it in: ENV APP_DB_PASSWORD={_rnd(r, 12)} — remove it when "
            "we switch to secrets mounts."
        ),
    ),
    _f(
        "k8s-stringdata",
        lambda r: (
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: payments-api\n  namespace: prod\ntype: "
            f"Opaque\nstringData:\n  PAYMENTS_API_KEY: {_rnd(r, 32)}\n  LOG_LEVEL: info"
        ),
    ),
    _f(
        "k8s-data-base64",
        lambda r: (
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds\ntype: Opaque\ndata:\n  "
            f"username: {b64('orders')}\n  password: {b64('Ty8kQ2zmLw9V')}"
        ),
    ),
    _f(
        "docker-compose",
        lambda r: (
            "docker-compose.yml (dev):\nservices:\n  db:\n    image: postgres:16\n    environment:\n  "
            f"    POSTGRES_USER: acme\n      POSTGRES_PASSWORD: {_rnd(r, 16)}\n      POSTGRES_DB: acme\n "
            '   ports:\n      - "5432:5432"'
        ),
    ),
    _f(
        "gha-env-literal",
        lambda r: (
            "name: nightly\non:\n  schedule:\n    - cron: '0 3 * * *'\njobs:\n  report:\n    runs-on: "
            f"ubuntu-latest\n    env:\n      REPORT_API_TOKEN: {_rnd(r, 40, HEX)}\n    steps:\n      - "
            "uses: actions/checkout@v4\n      - run: ./scripts/report.sh"
        ),
    ),
    _f(
        "gitlab-ci-variables",
        lambda r: (
            "variables:\n  DOCKER_DRIVER: overlay2\n  DEPLOY_USER: deployer\n  DEPLOY_PASSWORD: "
            f'"{_rnd(r, 20)}"\nstages: [build, deploy]'
        ),
    ),
    _f(
        "jenkinsfile-literal",
        lambda r: (
            "pipeline {\n  agent any\n  stages {\n    stage('Publish') {\n      steps {\n        "
            "withCredentials([string(credentialsId: 'nexus', variable: 'NEXUS_TOKEN')]) {\n          "
            f'sh "curl -u admin:{_rnd(r, 14)} -T build/app.jar '
            'https://nexus.acme.local/repository/releases/"\n        }\n      }\n    }\n  }\n}'
        ),
    ),
    _f(
        "aws-credentials-file",
        lambda r: (
            "~/.aws/credentials on the build box:\n[default]\naws_access_key_id = "
            f"AKIA{_rnd(r, 16, string.ascii_uppercase + '234567')}\naws_secret_access_key = "
            f"{_rnd(r, 40, ALNUM + '+/')}\nregion = eu-central-1"
        ),
    ),
    _f(
        "docker-config-auths",
        lambda r: (
            '~/.docker/config.json on the runner:\n{\n  "auths": {\n    "registry.acme.io": {\n      "auth": "'
            + b64("ci-runner:Pb7xKm29QzLr")
            + '"\n    }\n  }\n}'
        ),
    ),
    _f(
        "kubeconfig-token",
        lambda r: (
            "kubeconfig for the staging cluster:\nusers:\n- name: ci\n  user:\n    token: "
            f"{_rnd(r, 6, LOWER_ALNUM)}.{_rnd(r, 16, LOWER_ALNUM)}"
        ),
    ),
    _f(
        "kubeconfig-client-key-data",
        lambda r: (
            "users:\n- name: admin@prod\n  user:\n    client-certificate-data: "
            "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=\n    client-key-data: "
            + b64(
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA"
                + _rnd(r, 120, B64)
                + "\n-----END RSA PRIVATE KEY-----\n"
            )
        ),
    ),
    _f(
        "git-credentials",
        lambda r: (
            "~/.git-credentials line that makes the mirror job work: "
            f"https://mirror-bot:{_rnd(r, 32, HEX)}@git.acme.internal"
        ),
    ),
    _f("pgpass", lambda r: f"The backup cron reads ~/.pgpass: db-main.acme.internal:5432:*:backup:{_rnd(r, 14)}"),
    _f("my-cnf", lambda r: f"/root/.my.cnf on db-legacy:\n[client]\nuser=root\npassword={_rnd(r, 12)}\nhost=localhost"),
    _f(
        "redis-requirepass",
        lambda r: f"redis.conf on cache-2: bind 10.0.4.2\nport 6379\nrequirepass {_rnd(r, 24)}\nmaxmemory 2gb",
    ),
    _f(
        "mongo-uri",
        lambda r: (
            "Atlas URI for the analytics cluster: "
            f"mongodb+srv://analytics:{_rnd(r, 16)}@analytics.x7kq2.mongodb.net/events?retryWrites=true&w=majority"
        ),
    ),
    _f(
        "kafka-jaas",
        lambda r: (
            "Kafka client props for the confluent "
            "cluster:\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
            f'required username="{_rnd(r, 16, string.ascii_uppercase + string.digits)}" '
            f'password="{_rnd(r, 64, ALNUM + "+/")}";'
        ),
    ),
    _f(
        "amqp-url",
        lambda r: (
            f"Celery broker on the old stack: BROKER_URL = 'amqp://celery:{_rnd(r, 14)}@rabbit-01.acme.local:5672/prod'"
        ),
    ),
    _f(
        "ldap-bind",
        lambda r: (
            'LDAP settings for Grafana:\n[[servers]]\nhost = "ldap.acme.local"\nport = 636\nuse_ssl = '
            'true\nbind_dn = "cn=svc-grafana,ou=service,dc=acme,dc=local"\nbind_password = '
            f"'{_rnd(r, 16)}'\nsearch_filter = \"(sAMAccountName=%s)\""
        ),
    ),
    _f(
        "smtp-app-password",
        lambda r: (
            "Django email settings for the alerts mailbox: EMAIL_HOST = 'smtp.gmail.com', EMAIL_PORT "
            "= 587, EMAIL_HOST_USER = 'alerts@acme.io', EMAIL_HOST_PASSWORD = 'qwvt mzpk rhlx bnde'"
        ),
    ),
    _f(
        "snmp-community",
        lambda r: (
            f"Switch config for the rack-3 core: snmp-server community {_rnd(r, 12)} RW "
            "10\nsnmp-server location DC1-R3\nsnmp-server contact netops@acme.io"
        ),
    ),
    _f(
        "radius-secret",
        lambda r: (
            "FreeRADIUS clients.conf entry for the office APs:\nclient office-aps {\n  ipaddr = "
            f"10.20.0.0/24\n  secret = {_rnd(r, 20)}\n  shortname = aps\n}}"
        ),
    ),
    _f(
        "wireguard-privatekey",
        lambda r: (
            "wg0.conf on the jump host:\n[Interface]\nAddress = 10.99.0.1/24\nListenPort = "
            "51820\nPrivateKey = "
            f"{_b64b(r, 32)}\n\n[Peer]\nPublicKey "
            f"= {_b64b(r, 32)}\nAllowedIPs = "
            "10.99.0.2/32"
        ),
    ),
    _f(
        "openvpn-static-key",
        lambda r: (
            "ta.key for the site-to-site tunnel:\n-----BEGIN OpenVPN Static key V1-----\n"
            + "\n".join(_rnd(r, 32, HEX) for _ in range(6))
            + "\n-----END OpenVPN Static key V1-----"
        ),
    ),
    _f(
        "pgp-private-fragment",
        lambda r: (
            "Release signing key (the part I could copy before the terminal scrolled):\n-----BEGIN "
            "PGP PRIVATE KEY BLOCK-----\n\nlQVYBGV"
            + _rnd(r, 60, B64)
            + "\n"
            + _rnd(r, 64, B64)
            + "\n"
            + _rnd(r, 64, B64)
        ),
    ),
    _f(
        "putty-ppk",
        lambda r: (
            "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy@acme\nPublic-Lines: "
            "2\nAAAAB3NzaC1yc2EAAAADAQABAAABAQ"
            + _rnd(r, 40, B64)
            + "\n"
            + _rnd(r, 64, B64)
            + "\nPrivate-Lines: 2\nAAABAH"
            + _rnd(r, 58, B64)
            + "\n"
            + _rnd(r, 64, B64)
            + "\nPrivate-MAC: "
            + _rnd(r, 64, HEX)
        ),
    ),
    _f(
        "android-store-password",
        lambda r: (
            "app/build.gradle signingConfigs:\nrelease {\n    storeFile file('release.jks')\n    "
            f"storePassword '{_rnd(r, 14)}'\n    keyAlias 'acme'\n    keyPassword '{_rnd(r, 14)}'\n}}"
        ),
    ),
    _f(
        "apple-app-specific",
        lambda r: (
            "Notarization in CI uses the Apple ID builds@acme.io with the app-specific password "
            "hvqz-kmtr-plwx-dnea (xcrun notarytool --password)."
        ),
    ),
    _f(
        "gcp-service-account",
        lambda r: (
            '{\n  "type": "service_account",\n  "project_id": "acme-prod-311209",\n  "private_key_id": "'
            + _rnd(r, 40, HEX)
            + '",\n  "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ'
            + _rnd(r, 80, B64)
            + '\\n-----END PRIVATE KEY-----\\n",\n  "client_email": '
            '"exporter@acme-prod-311209.iam.gserviceaccount.com"\n}'
        ),
    ),
    _f(
        "azure-storage-conn",
        lambda r: (
            "Blob storage for uploads: "
            f"DefaultEndpointsProtocol=https;AccountName=acmeuploads;AccountKey={_b64b(r, 64)};"
            "EndpointSuffix=core.windows.net"
        ),
    ),
    _f(
        "azure-sas",
        lambda r: (
            "Shared a SAS URL with the auditors (valid a week): "
            "https://acmeuploads.blob.core.windows.net/audit?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-12-03T18:00:00Z"
            f"&st=2026-11-26T08:00:00Z&spr=https&sig={quote(_rnd(r, 43, B64), safe='')}%3D"
        ),
    ),
    _f(
        "gcp-api-key",
        lambda r: (
            f"Maps key used by the store locator: AIza{_rnd(r, 35, URLSAFE)} (restricted to our referrers, but still)"
        ),
    ),
    _f("stripe-rk", lambda r: f"Restricted key for the reporting job: rk_live_{_rnd(r, 99)}"),
    _f("stripe-whsec", lambda r: f"Webhook signing secret for the prod endpoint: whsec_{_rnd(r, 32)}"),
    _f(
        "github-pat-fine",
        lambda r: (
            "Fine-grained PAT for the release bot, expires in 90 days: "
            f"github_pat_11{_rnd(r, 20, string.ascii_uppercase + string.digits)}_{_rnd(r, 59)}"
        ),
    ),
    _f("glpat", lambda r: f"GitLab token for the mirror: glpat-{_rnd(r, 20, URLSAFE)}"),
    _f("npm-token", lambda r: f"npm publish token (automation type): npm_{_rnd(r, 36)}"),
    _f("pypi-token", lambda r: f"PyPI upload token for acme-sdk: pypi-AgEIcHlwaS5vcmcCJ{_rnd(r, 140, URLSAFE)}"),
    _f("dockerhub-pat", lambda r: f"Docker Hub access token for the CI user: dckr_pat_{_rnd(r, 27, URLSAFE)}"),
    _f(
        "atlassian-token",
        lambda r: (
            f"Atlassian API token for the Jira sync: ATATT3xFfGF0{_rnd(r, 170, URLSAFE)}={_rnd(r, 8, HEX).upper()}"
        ),
    ),
    _f("linear-key", lambda r: f"LINEAR_API_KEY=lin_api_{_rnd(r, 40)}"),
    _f(
        "notion-ntn",
        lambda r: f"Notion integration token for the docs importer: ntn_{_rnd(r, 11, string.digits)}{_rnd(r, 35)}",
    ),
    _f("notion-secret", lambda r: f"old Notion token (still works): secret_{_rnd(r, 43)}"),
    _f("airtable-pat", lambda r: f"Airtable PAT: pat{_rnd(r, 14)}.{_rnd(r, 64, HEX)}"),
    _f(
        "supabase-service-role",
        lambda r: (
            f"SUPABASE_SERVICE_ROLE_KEY=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{_H6_SUPABASE}.{_rnd(r, 43, URLSAFE)}"
        ),
    ),
    _f("clerk-sk-live", lambda r: f"Clerk secret key (prod instance): sk_live_{_rnd(r, 40)}"),
    _f(
        "auth0-client-secret",
        lambda r: (
            f"The Auth0 M2M app for the billing worker: client id {_rnd(r, 32)}, client secret {_rnd(r, 64, URLSAFE)}"
        ),
    ),
    _f("okta-ssws", lambda r: f"Okta admin API calls need the header Authorization: SSWS 00{_rnd(r, 40, URLSAFE)}"),
    _f(
        "sentry-dsn-legacy",
        lambda r: (
            "Old raven config still in settings_legacy.py: SENTRY_DSN = "
            f"'https://{_rnd(r, 32, HEX)}:{_rnd(r, 32, HEX)}@sentry.acme.io/14'"
        ),
    ),
    _f(
        "mapbox-sk",
        lambda r: (
            "Mapbox secret token for tileset uploads: sk."
            + _b64u_text(
                json.dumps(
                    {"u": "acmemaps", "a": "cl" + _rnd(r, 23, string.ascii_lowercase + string.digits)},
                    separators=(",", ":"),
                )
            )
            + "."
            + _rnd(r, 22, URLSAFE)
        ),
    ),
    _f(
        "algolia-admin",
        lambda r: f"Algolia app K7QZ2MXP4R, admin API key {_rnd(r, 32, HEX)} — only the indexer may use it.",
    ),
    _f(
        "telegram-bot",
        lambda r: (
            "Alerts go to the on-call Telegram group via bot token "
            f"{r.randint(5000000000, 7999999999)}:AA{_rnd(r, 33, URLSAFE)}"
        ),
    ),
    _f(
        "discord-bot",
        lambda r: (
            "Discord bot token for the release announcer: "
            f"{_b64u_text(str(r.randint(10**17, 10**18)))}.{_rnd(r, 6, URLSAFE)}.{_rnd(r, 38, URLSAFE)}"
        ),
    ),
    _f(
        "twitch-secret",
        lambda r: (
            f"Twitch app: client_id {_rnd(r, 30, string.ascii_lowercase + string.digits)}, "
            f"client_secret {_rnd(r, 30, string.ascii_lowercase + string.digits)}"
        ),
    ),
    _f(
        "spotify-secret",
        lambda r: (
            f"Spotify API for the playlist feature — Client ID {_rnd(r, 32, HEX)}, Client Secret {_rnd(r, 32, HEX)}"
        ),
    ),
    _f(
        "vault-token", lambda r: f"Root token from the last unseal ceremony (revoke after!): hvs.{_rnd(r, 91, URLSAFE)}"
    ),
    _f(
        "tfvars-password",
        lambda r: (
            'terraform.tfvars for staging:\nregion = "eu-west-1"\ninstance_class = '
            f'"db.t3.medium"\ndb_username = "acme"\ndb_password = "{_rnd(r, 16)}"\nmulti_az = false'
        ),
    ),
    _f(
        "ansible-become",
        lambda r: f"inventory/hosts.ini:\n[db]\ndb1.acme.local ansible_user=deploy ansible_become_pass={_rnd(r, 12)}",
    ),
    _f(
        "twilio-auth-token",
        lambda r: f"Twilio for SMS 2FA: Account SID AC{_rnd(r, 32, HEX)}, Auth Token {_rnd(r, 32, HEX)}",
    ),
    _f(
        "basic-header-in-log",
        lambda r: (
            'nginx error log: upstream sent 401 while reading response header, request: "GET /metrics '
            'HTTP/1.1", upstream: "http://10.0.5.9:9100/metrics", authorization: "Basic '
            + b64("prometheus:Ux8mKq2zTn")
            + '"'
        ),
    ),
    _f(
        "json-escaped-private-key",
        lambda r: (
            'FIREBASE_ADMIN_KEY=\'{"private_key":"-----BEGIN PRIVATE KEY-----\\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASC'
            + _rnd(r, 60, B64)
            + "\\n-----END PRIVATE KEY-----\\n\"}'"
        ),
    ),
]
HELD_OUT_6_KEEP: list[Form] = [
    _f(
        "placeholder-angle",
        lambda r: (
            "Local setup: copy .env.example to .env and set OPENAI_API_KEY=<YOUR_API_KEY> and "
            "STRIPE_SECRET_KEY=<your-stripe-test-key>; nothing else is required."
        ),
    ),
    _f(
        "placeholder-x",
        lambda r: (
            "In the README the sample config shows api_key: xxxxxxxxxxxxxxxxxxxxxxxx — replace it "
            "with your own key from the dashboard."
        ),
    ),
    _f(
        "placeholder-changeme",
        lambda r: (
            "The value `changeme` in docker-compose.override.yml is a placeholder; the entrypoint "
            "refuses to start while POSTGRES_PASSWORD is still changeme."
        ),
    ),
    _f(
        "gha-secrets-ref",
        lambda r: (
            "The publish job reads the token from the repo secrets: env:\n  NODE_AUTH_TOKEN: ${{ "
            "secrets.NPM_TOKEN }}\n  PYPI_PASSWORD: ${{ secrets.PYPI_API_TOKEN }}"
        ),
    ),
    _f(
        "vault-template",
        lambda r: (
            'Nomad template for the API: DATABASE_PASSWORD={{ with secret "secret/data/api/db" }}{{ '
            ".Data.data.password }}{{ end }} and REDIS_URL comes from Consul."
        ),
    ),
    _f(
        "ssh-public-key",
        lambda r: (
            "Add the CI deploy key to authorized_keys on web-1: ssh-ed25519 "
            f"AAAAC3NzaC1lZDI1NTE5AAAAI{_rnd(r, 43, B64)} ci-deploy@acme"
        ),
    ),
    _f(
        "certificate",
        lambda r: (
            "The internal CA root we pin in the mobile app:\n-----BEGIN "
            "CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n"
            + _rnd(r, 64, B64)
            + "\n-----END CERTIFICATE-----"
        ),
    ),
    _f(
        "stripe-publishable",
        lambda r: (
            f"The checkout page embeds the publishable key pk_live_{_rnd(r, 24)}; Stripe documents it "
            "as safe to expose in the browser."
        ),
    ),
    _f(
        "sha256-file",
        lambda r: (
            f"The release tarball acme-cli-2.3.0.tar.gz has sha256 {_rnd(r, 64, HEX)}; compare before "
            "installing on air-gapped hosts."
        ),
    ),
    _f(
        "git-sha",
        lambda r: (
            f'The regression came in with commit {_rnd(r, 40, HEX)} ("switch to async session"); '
            "reverting it fixes the deadlock."
        ),
    ),
    _f(
        "uuid-request-id",
        lambda r: (
            "Support ticket: request id 5f1c2a9e-7b3d-4e6f-a18c-0d92b4e7f315 failed with 502 at 14:03 "
            "UTC; the tenant is 9a3e7c21-4d5b-4f8a-b6e2-71c0d9f3a4b8."
        ),
    ),
    _f(
        "ulid",
        lambda r: "Event ids are ULIDs now, e.g. 01JD4ZK8Q9X7M2VN5T3RWPB6HC, so they sort by creation time in the log.",
    ),
    _f(
        "base64-ordinary",
        lambda r: (
            "The fixture's X-Debug header is base64 of a plain sentence: "
            "aGVsbG8gZnJvbSB0aGUgaW50ZWdyYXRpb24gdGVzdCBzdWl0ZQ== (decodes to 'hello from the "
            "integration test suite')."
        ),
    ),
    _f(
        "docs-example-dsn",
        lambda r: (
            "The docs example DSN is postgres://user:password@localhost:5432/mydb; our settings parse "
            "the same shape from DATABASE_URL."
        ),
    ),
    _f(
        "invalid-token-error",
        lambda r: (
            "When the CLI prints `401 Unauthorized: invalid token (token expired)`, run `acme login` "
            "again; the refresh flow does not work behind the proxy."
        ),
    ),
    _f(
        "password-policy",
        lambda r: (
            "Password policy for the admin app: at least 12 characters, one digit, rotated every 90 "
            "days, and the last 5 passwords cannot be reused."
        ),
    ),
    _f(
        "where-secret-lives",
        lambda r: (
            "The staging Postgres password lives in 1Password under 'Staging Postgres (app)'; never "
            "paste it into tickets or memories."
        ),
    ),
    _f(
        "env-var-names",
        lambda r: (
            "The service reads STRIPE_SECRET_KEY, SENDGRID_API_KEY and DATABASE_URL from the "
            "environment and fails fast if any is missing."
        ),
    ),
    _f(
        "k8s-secret-ref",
        lambda r: (
            "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db-creds\n "
            "       key: password\n  - name: LOG_LEVEL\n    value: info"
        ),
    ),
    _f(
        "jwks-public",
        lambda r: (
            'JWKS entry the gateway caches: {"kty":"RSA","kid":"2026-11","use":"sig","alg":"RS256","e":"AQAB","n":"'
            + _rnd(r, 86, URLSAFE)
            + '"} (public key, rotated monthly).'
        ),
    ),
    _f(
        "pgp-public",
        lambda r: (
            "Our security.txt links the PGP public key:\n-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBGV"
            + _rnd(r, 60, B64)
            + "\n-----END PGP PUBLIC KEY BLOCK-----"
        ),
    ),
    _f("image-digest", lambda r: f"Pin the base image by digest: FROM python:3.12-slim@sha256:{_rnd(r, 64, HEX)}"),
    _f(
        "fr-no-secret",
        lambda r: "Le mot de passe oublié envoie un lien valable 30 minutes ; le lien est à usage unique.",
    ),
    _f("ja-no-secret", lambda r: "パスワードはVaultから取得します。コードにハードコードしないでください。"),
    _f(
        "de-no-secret",
        lambda r: "Das Passwort holen wir mit `pass show infra/db`; niemals im Klartext in die Wiki schreiben.",
    ),
    _f("npm-integrity", lambda r: f"package-lock integrity for left-pad 1.3.0: sha512-{_rnd(r, 86, B64)}=="),
    _f(
        "rate-limit-tokens",
        lambda r: (
            "The token bucket allows 100 tokens per minute per API key; bursts above that get 429 with Retry-After."
        ),
    ),
    _f(
        "redacted-dsn",
        lambda r: "Prod DATABASE_URL is postgres://app:****@db-main:5432/app (masked in the logs by our formatter).",
    ),
    _f(
        "tf-var-ref",
        lambda r: (
            "main.tf: password = var.db_password and username = var.db_username; the values come from "
            "TF_VAR_ env vars in CI."
        ),
    ),
    _f(
        "docs-example-labelled",
        lambda r: (
            "From the Stripe docs (example, not ours): curl https://api.stripe.com/v1/charges -u "
            "sk_test_EXAMPLEKEYNOTREAL: — our wrapper adds the header itself."
        ),
    ),
    _f("es-no-secret", lambda r: "La contraseña se guarda con bcrypt (coste 12) y nunca se registra en los logs."),
    _f("zh-no-secret", lambda r: "密钥轮换脚本在 scripts/rotate_keys.py，每月一号由 cron 执行。"),
    _f(
        "sentry-public-dsn-doc",
        lambda r: (
            "Sentry is wired in settings via SENTRY_DSN from the environment; the frontend gets only "
            "the public DSN through /config.js."
        ),
    ),
]
# The sixth set's keeper refused on its first run and kept refused: an AWS access key id alone names the account
# and is half of a credential pair; gitleaks' upstream rule refuses it, and a memory loses little without it.
REFUSED_BY_POLICY.append(
    _f(
        "aws-key-id-alone",
        lambda r: (
            "CloudTrail shows the deletes came from access key id "
            f"AKIA{_rnd(r, 16, string.ascii_uppercase + '234567')} (the old CI user); the key is "
            "already deactivated."
        ),
    )
)


# bench/secret_forms.HELD_OUT_7: secrets9's set, written before its author read this file, tests/test_secrets.py,
# docs/security.md or the scanner (/work/wt/secrets9-data/forms.json holds the fillings of its first run; these
# builders draw new ones from the seed). The mainstream forms every scanner is tested on (AWS, GCP, Azure, GitHub,
# GitLab, Slack, Stripe, OpenAI, Anthropic, PEM keys, JWTs, DSNs, .env and YAML passwords, bearer and basic
# headers, passwords on command lines, keys in Python/JS/Go/Java/Ruby/PHP/C#/Rust literals and 15 more vendors'
# tokens), each wrapped as an assistant writes a memory (a gotcha, a decision, a shell session, a Slack thread's
# summary, a Markdown table or list, JSON), some wrapped over lines, truncated or second after an innocent value.
# First run, each stored once through `POST /api/memories` on a live `yullu serve` (real PostgreSQL) at fe6bc19:
# **2 of 74 secrets stored** (a Rust `const DD_API_KEY: &str = "<32 hex>"`; a Twilio auth token as the second
# argument of `TwilioClient.Init("AC…", "<32 hex>")`) and **3 of 26 keepers refused** (AWS's documented
# `AKIAIOSFODNN7EXAMPLE` pair, refused by policy: moved to REFUSED_BY_POLICY; an .env template's
# `STRIPE_SECRET_KEY=sk_test_your_key_here` with the next line's `OPENAI_API_KEY=${…}` glued onto it; an SSH
# public key after `authorized_keys:`).
_UP7 = string.ascii_uppercase
_LO7 = string.ascii_lowercase
_DG7 = string.digits
_B64_7 = ALNUM + "+/"


def _h7_jwt(r: random.Random, payload: dict[str, object]) -> str:
    header = _b64u_text(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")))
    return f"{header}.{_b64u_text(json.dumps(payload, separators=(',', ':')))}.{_b64u(r, 32)}"


def _h7_pem(r: random.Random, kind: str, nbytes: int = 1190, width: int = 64) -> str:
    body = base64.b64encode(r.randbytes(nbytes)).decode()
    lines = [body[i : i + width] for i in range(0, len(body), width)]
    return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----"


_H7_ADMIN: dict[str, object] = {"sub": "svc-orders", "role": "admin", "iat": 1767225600, "exp": 1893456000}
_H7_MOBILE: dict[str, object] = {"sub": "mobile-app", "scope": "read write", "iss": "auth.acme.io"}
_H7_FLAGS = base64.b64encode(json.dumps({"flag": "new_checkout", "on": True, "pct": 25}).encode()).decode()


def _h7_pw(r: random.Random, n: int = 16) -> str:
    return _c(r, ALNUM + "!#%^*-_", n)


def _h7_wrapped(token: str, width: int) -> str:
    return "\n".join(token[i : i + width] for i in range(0, len(token), width))


def _h7_aws_id(r: random.Random) -> str:
    return "AKIA" + _c(r, _UP7 + "234567", 16)


def _h7_aws_sk(r: random.Random) -> str:
    return _c(r, _B64_7, 40)


def _h7_gh(r: random.Random, p: str = "ghp_") -> str:
    return p + _c(r, ALNUM, 36)


def _h7_ghfg(r: random.Random) -> str:
    return "github_pat_" + _c(r, ALNUM, 22) + "_" + _c(r, ALNUM, 59)


def _h7_glpat(r: random.Random) -> str:
    return "glpat-" + _c(r, URLSAFE, 20)


def _h7_slack_b(r: random.Random) -> str:
    return f"xoxb-{_c(r, _DG7, 12)}-{_c(r, _DG7, 13)}-{_c(r, ALNUM, 24)}"


def _h7_slack_p(r: random.Random) -> str:
    return f"xoxp-{_c(r, _DG7, 12)}-{_c(r, _DG7, 12)}-{_c(r, _DG7, 13)}-{_c(r, HEX, 32)}"


def _h7_slack_hook(r: random.Random) -> str:
    return f"https://hooks.slack.com/services/T{_c(r, _UP7 + _DG7, 8)}/B{_c(r, _UP7 + _DG7, 10)}/{_c(r, ALNUM, 24)}"


def _h7_stripe_sk(r: random.Random) -> str:
    return "sk_live_" + _c(r, ALNUM, 99)


def _h7_stripe_rk(r: random.Random) -> str:
    return "rk_live_" + _c(r, ALNUM, 99)


def _h7_whsec(r: random.Random) -> str:
    return "whsec_" + _c(r, ALNUM, 32)


def _h7_openai_proj(r: random.Random) -> str:
    return "sk-proj-" + _c(r, URLSAFE, 74) + "T3BlbkFJ" + _c(r, URLSAFE, 74)


def _h7_openai_old(r: random.Random) -> str:
    return "sk-" + _c(r, ALNUM, 20) + "T3BlbkFJ" + _c(r, ALNUM, 20)


def _h7_anthropic(r: random.Random) -> str:
    return "sk-ant-api03-" + _c(r, URLSAFE, 93) + "AA"


def _h7_gcp_key(r: random.Random) -> str:
    return "AIza" + _c(r, URLSAFE, 35)


def _h7_az_acct(r: random.Random) -> str:
    return base64.b64encode(r.randbytes(64)).decode()


def _h7_az_client(r: random.Random) -> str:
    return _c(r, ALNUM, 3) + _c(r, _DG7, 1) + "Q~" + _c(r, URLSAFE + ".~", 34)


def _h7_sendgrid(r: random.Random) -> str:
    return "SG." + _c(r, URLSAFE, 22) + "." + _c(r, URLSAFE, 43)


def _h7_twilio_tok(r: random.Random) -> str:
    return _c(r, HEX, 32)


def _h7_npm_tok(r: random.Random) -> str:
    return "npm_" + _c(r, ALNUM, 36)


def _h7_hf_tok(r: random.Random) -> str:
    return "hf_" + _c(r, ALNUM, 34)


def _h7_dd_key(r: random.Random) -> str:
    return _c(r, HEX, 32)


def _h7_shopify(r: random.Random) -> str:
    return "shpat_" + _c(r, HEX, 32)


def _h7_dop(r: random.Random) -> str:
    return "dop_v1_" + _c(r, HEX, 64)


def _h7_vault(r: random.Random) -> str:
    return "hvs." + _c(r, URLSAFE, 24) + _c(r, ALNUM, 66)


def _h7_telegram(r: random.Random) -> str:
    return f"{_c(r, _DG7, 10)}:AA{_c(r, URLSAFE, 33)}"


def _h7_gocspx(r: random.Random) -> str:
    return "GOCSPX-" + _c(r, URLSAFE, 28)


def _h7_pypi(r: random.Random) -> str:
    return "pypi-AgEIcHlwaS5vcmc" + _c(r, URLSAFE, 150)


def _h7_mailgun(r: random.Random) -> str:
    return "key-" + _c(r, HEX, 32)


def _h7_discord(r: random.Random) -> str:
    return _b64u_text(str(r.randint(10**17, 10**18))) + "." + _c(r, URLSAFE, 6) + "." + _c(r, URLSAFE, 38)


HELD_OUT_7: list[Form] = [
    _f(
        "aws-pair-gotcha",
        lambda r: (
            "Gotcha: the staging deploy fails unless the CI runner exports "
            f"AWS_ACCESS_KEY_ID={_h7_aws_id(r)} and AWS_SECRET_ACCESS_KEY={_h7_aws_sk(r)} "
            "before `terraform plan`; the instance profile is not picked "
            "up in the docker executor."
        ),
    ),
    _f(
        "aws-secret-alone-decision",
        lambda r: (
            "Decision: we keep using the legacy IAM user for the nightly "
            f"S3 sync. Its secret key is {_h7_aws_sk(r)} (access key id is "
            "in the team vault); rotating it breaks the partner's bucket "
            "policy."
        ),
    ),
    _f(
        "aws-credentials-file",
        lambda r: (
            "Note for later: ~/.aws/credentials on the build box has a [deploy] "
            f"profile:\n```\n[deploy]\naws_access_key_id = {_h7_aws_id(r)}\naws_secret_access_key "
            f"= {_h7_aws_sk(r)}\nregion = eu-west-1\n```\nso `--profile deploy` "
            "works without SSO."
        ),
    ),
    _f(
        "aws-session-token",
        lambda r: (
            "When the federated login expires mid-run, the script falls back "
            f"to the STS creds pasted in .envrc: AWS_ACCESS_KEY_ID=ASIA{_c(r, _UP7 + '234567', 16)}"
            f" AWS_SECRET_ACCESS_KEY={_h7_aws_sk(r)} AWS_SESSION_TOKEN={base64.b64encode(r.randbytes(300)).decode()}"
        ),
    ),
    _f(
        "aws-js-sdk",
        lambda r: (
            "The uploader lambda constructs its client by hand (no env lookup):\n```js\nconst "
            "s3 = new S3Client({ region: 'us-east-1', credentials: { accessKeyId: "
            f"'{_h7_aws_id(r)}', secretAccessKey: '{_h7_aws_sk(r)}' }} }});\n```\nThat "
            "is why it ignores the role."
        ),
    ),
    _f(
        "aws-table",
        lambda r: (
            "| env | bucket | key id | secret |\n|---|---|---|---|\n| prod "
            f"| acme-prod-assets | {_h7_aws_id(r)} | {_h7_aws_sk(r)} |\n| "
            "staging | acme-stg-assets | (role) | (role) |"
        ),
    ),
    _f(
        "gcp-sa-json",
        lambda r: (
            '{"type": "service_account", "project_id": "acme-analytics-prod", "private_key_id": "'
            + _c(r, HEX, 40)
            + '", "private_key": "'
            + _h7_pem(r, "PRIVATE KEY", 1216).replace("\n", "\\n")
            + '\\n", "client_email": "bq-loader@acme-analytics-prod.iam.gserviceaccount.com", "client_id": "'
            + _c(r, _DG7, 21)
            + '"}'
        ),
    ),
    _f(
        "gcp-api-key-second",
        lambda r: (
            "Maps integration: project number 884213370015 and the browser-restricted "
            "key never worked server-side, so the geocoder uses the unrestricted "
            f"one: GOOGLE_MAPS_API_KEY={_h7_gcp_key(r)}"
        ),
    ),
    _f(
        "gcp-oauth-client",
        lambda r: (
            "Memory: Google sign-in for the admin panel uses OAuth client "
            f"40411223344-{_c(r, _LO7 + _DG7, 32)}.apps.googleusercontent.com "
            f"with client secret {_h7_gocspx(r)}; redirect URI must be https://admin.acme.io/oauth/"
            "callback exactly."
        ),
    ),
    _f(
        "gcp-python-literal",
        lambda r: (
            "In scripts/translate_batch.py the key is hard-coded:\n```python\nclient "
            f'= translate.Client(client_options={{"api_key": "{_h7_gcp_key(r)}"}})\n```\nMove '
            "it to Secret Manager before open-sourcing."
        ),
    ),
    _f(
        "azure-storage-conn",
        lambda r: (
            "Gotcha: the blob uploader ignores AZURE_STORAGE_ACCOUNT and "
            "only reads the connection string, which is DefaultEndpointsProtocol=https;AccountName"
            f"=acmeuploads;AccountKey={_h7_az_acct(r)};EndpointSuffix=core.windows.net"
        ),
    ),
    _f(
        "azure-client-secret",
        lambda r: (
            "Decision: the deploy pipeline authenticates with the service "
            "principal (tenant 72f988bf-86f1-41af-91ab-2d7cd011db47, app "
            f"id {uuid4(r)}) and client secret {_h7_az_client(r)} until workload "
            "identity federation is approved."
        ),
    ),
    _f(
        "azure-sas-url",
        lambda r: (
            "The nightly export lands in https://acmedata.blob.core.windows.net/exports?sv=2022-11"
            "-02&ss=b&srt=co&sp=rwdlacx&se=2027-01-01T00:00:00Z&st=2026-01-01T00:00:00Z&spr=https&"
            f"sig={quote(base64.b64encode(r.randbytes(32)).decode(), safe='')}"
            " (SAS valid for a year)."
        ),
    ),
    _f(
        "azure-csharp",
        lambda r: (
            "The Functions app reads its Cosmos key from code, not settings:\n```csharp\nprivate "
            f'const string CosmosKey = "{_h7_az_acct(r)}";\nvar client = new '
            'CosmosClient("https://acme-cosmos.documents.azure.com:443/", '
            "CosmosKey);\n```"
        ),
    ),
    _f(
        "github-classic-shell",
        lambda r: (
            f"Shell session from fixing the release job:\n```\n$ export GH_TOKEN={_h7_gh(r)}\n$ "
            "gh release create v2.4.1 --notes-file CHANGELOG.md\nhttps://github.com/acme/widget/re"
            "leases/tag/v2.4.1\n```"
        ),
    ),
    _f(
        "github-fine-grained",
        lambda r: (
            "Note for later: the docs site's deploy action pushes with a "
            f"fine-grained PAT scoped to acme/docs (contents: write): {_h7_ghfg(r)}. "
            "It expires in March."
        ),
    ),
    _f(
        "github-in-url",
        lambda r: (
            f"The submodule clone in the Dockerfile uses https://x-access-token:{_h7_gh(r, 'ghs_')}"
            "@github.com/acme/private-protos.git so it works without an SSH "
            "key."
        ),
    ),
    _f(
        "github-oauth-second",
        lambda r: (
            "Slack thread summary (#platform, Tue): Dana said the bot's app "
            "id is 812334 and its installation id 40922111; Lee pasted the "
            f"OAuth token gho_{_c(r, ALNUM, 36)} to test the API; nobody rotated "
            "it afterwards."
        ),
    ),
    _f(
        "gitlab-pat",
        lambda r: (
            "- CI variable `GITLAB_TOKEN` is unset on forks\n- the mirror "
            f"job therefore uses the hard-coded {_h7_glpat(r)} from .gitlab-ci.yml\n- "
            "TODO: move to a protected variable"
        ),
    ),
    _f(
        "gitlab-runner",
        lambda r: (
            "Runner registration (from the ops wiki): gitlab-runner register "
            f"--url https://gitlab.acme.io --registration-token GR1348941{_c(r, URLSAFE, 20)} "
            "--executor docker"
        ),
    ),
    _f(
        "slack-bot",
        lambda r: (
            "Gotcha: the alert bot posts as the wrong user unless SLACK_BOT_TOKEN "
            f"is the xoxb one: {_h7_slack_b(r)}. The xoxp token only works "
            "for the export script."
        ),
    ),
    _f(
        "slack-user",
        lambda r: (
            "The workspace export script (tools/slack_export.py) needs a "
            f"user token with channels:history; the one in use is {_h7_slack_p(r)}."
        ),
    ),
    _f(
        "slack-webhook",
        lambda r: (
            "Decision: deploy notifications go to #deploys via the incoming "
            f"webhook {_h7_slack_hook(r)} rather than the bot, because the "
            "bot lacks chat:write.public."
        ),
    ),
    _f(
        "slack-json",
        lambda r: json.dumps(
            {
                "memory": "Slack app configuration for release bot",
                "signing_secret": _c(r, HEX, 32),
                "bot_token": _h7_slack_b(r),
                "channel": "C04ABCD1234",
            },
            indent=2,
        ),
    ),
    _f(
        "stripe-live-sk",
        lambda r: (
            "Gotcha: the webhook tests hit production because STRIPE_SECRET_KEY "
            f"in .env.local is {_h7_stripe_sk(r)} rather than a test key."
        ),
    ),
    _f(
        "stripe-restricted-ruby",
        lambda r: (
            "The billing worker sets it in config/initializers/stripe.rb:\n```ruby\nStripe.api_key"
            f" = '{_h7_stripe_rk(r)}'\nStripe.api_version = '2024-06-20'\n```"
        ),
    ),
    _f(
        "stripe-whsec",
        lambda r: (
            f"Webhook endpoint we_1P{_c(r, ALNUM, 22)} verifies signatures "
            f"with {_h7_whsec(r)}; the CLI's `stripe listen` prints a different "
            "one locally."
        ),
    ),
    _f(
        "stripe-php",
        lambda r: (
            "Legacy checkout (php/checkout.php, line 12):\n```php\n$stripe "
            f"= new \\Stripe\\StripeClient('sk_live_{_c(r, ALNUM, 99)}');\n```"
        ),
    ),
    _f(
        "openai-proj",
        lambda r: (
            "Note for later: the eval harness reads OPENAI_API_KEY from the "
            f"shell; on the GPU box it is set in ~/.bashrc to {_h7_openai_proj(r)}"
        ),
    ),
    _f(
        "openai-old-js",
        lambda r: (
            "The playground demo (web/demo.js) still ships `const OPENAI_KEY "
            f'= "{_h7_openai_old(r)}";` in the bundle, which is how it got '
            "scraped."
        ),
    ),
    _f(
        "openai-truncated",
        lambda r: (
            "Debug log excerpt I kept: `openai.AuthenticationError: Incorrect "
            f"API key provided: {_h7_openai_proj(r)[:60]}` — the key was from "
            "the old org."
        ),
    ),
    _f(
        "anthropic-go",
        lambda r: (
            f'The summariser service (Go):\n```go\nconst anthropicKey = "{_h7_anthropic(r)}"\n\nfun'
            "c newClient() *anthropic.Client { return anthropic.NewClient(option.WithAPIKey(anthr"
            "opicKey)) }\n```"
        ),
    ),
    _f(
        "anthropic-curl",
        lambda r: (
            "Repro for the 529 overload errors:\ncurl https://api.anthropic.com/v1/messages "
            f'-H "x-api-key: {_h7_anthropic(r)}" -H "anthropic-version: 2023-06-01" '
            "-H 'content-type: application/json' -d @req.json"
        ),
    ),
    _f(
        "anthropic-wrapped",
        lambda r: (
            "ANTHROPIC_API_KEY for the batch jobs (wrapped by the terminal, join the lines):\n"
            + _h7_wrapped(_h7_anthropic(r), 40)
        ),
    ),
    _f(
        "pem-rsa",
        lambda r: (
            "The bastion's deploy key, because the vault was down when we set it up:\n"
            + _h7_pem(r, "RSA PRIVATE KEY", 1190)
        ),
    ),
    _f(
        "pem-openssh",
        lambda r: (
            "Note for later: the CI SSH key (ed25519) for pushing to the mirror:\n"
            + _h7_pem(r, "OPENSSH PRIVATE KEY", 300, 70)
        ),
    ),
    _f(
        "pem-ec-truncated",
        lambda r: (
            "Partial paste of the signing key from the Slack thread (rest was cut off):\n"
            + "\n".join(_h7_pem(r, "EC PRIVATE KEY", 121).split("\n")[:3])
        ),
    ),
    _f(
        "pem-inline-escaped",
        lambda r: 'TLS for the local proxy: TLS_KEY="' + _h7_pem(r, "PRIVATE KEY", 1216).replace("\n", "\\n") + '"',
    ),
    _f(
        "jwt-bearer-curl",
        lambda r: (
            "To reproduce the 403 on /v2/orders:\n$ curl -s https://api.acme.io/v2/orders "
            f"-H 'Authorization: Bearer {_h7_jwt(r, _H7_ADMIN)}"
            "'"
        ),
    ),
    _f(
        "jwt-long-lived",
        lambda r: (
            "Decision: the mobile app's service account uses a non-expiring "
            f"JWT (signed with the old HS256 secret): {_h7_jwt(r, _H7_MOBILE)}"
        ),
    ),
    _f(
        "jwt-secret",
        lambda r: (
            "Gotcha: tokens issued by staging validate in prod because both "
            f"use JWT_SECRET={_b64u(r, 48)} — we never split them."
        ),
    ),
    _f(
        "bearer-opaque",
        lambda r: (
            "Markdown notes from the outage:\n## Partner API\n- base URL: "
            "https://partner.example-logistics.com/api\n- header: `Authorization: "
            f"Bearer {_b64u(r, 40)}`\n- rate limit 50 rps"
        ),
    ),
    _f(
        "basic-auth-header",
        lambda r: (
            "The legacy SOAP endpoint only takes basic auth; the working "
            f"request had `Authorization: Basic {base64.b64encode(('svc_billing:' + _h7_pw(r, 18)).encode()).decode()}"
            "`."
        ),
    ),
    _f(
        "pg-url",
        lambda r: (
            "Gotcha: migrations must run against the primary, not the pooler: "
            f"DATABASE_URL=postgres://app_owner:{_h7_pw(r, 20)}@db-primary.internal.acme.io:5432/ac"
            "me_prod?sslmode=require"
        ),
    ),
    _f(
        "mysql-url-second",
        lambda r: (
            "Reporting replica is db-replica-3 (10.20.4.17). The BI tool "
            f"connects with mysql://metabase:{_h7_pw(r, 16)}@10.20.4.17:3306/analytics"
        ),
    ),
    _f(
        "mongo-srv",
        lambda r: (
            f"Note: the events collection lives in Atlas, mongodb+srv://events_rw:{_h7_pw(r, 24)}@c"
            f"luster0.{_c(r, _LO7 + _DG7, 5)}.mongodb.net/events?retryWrites=true&w=majority"
        ),
    ),
    _f(
        "redis-url",
        lambda r: (
            f"Celery broker on staging is REDIS_URL=redis://:{_h7_pw(r, 32)}@redis-stg.acme.interna"
            "l:6379/0 (the ACL user is default)."
        ),
    ),
    _f(
        "jdbc-props",
        lambda r: (
            "Spring Boot settings that made the integration tests pass:\n```\nspring.datasource.ur"
            "l=jdbc:postgresql://localhost:5432/orders\nspring.datasource.username=orders\nspring."
            f"datasource.password={_h7_pw(r, 14)}\n```"
        ),
    ),
    _f(
        "dotenv-block",
        lambda r: (
            "The .env the contractors use (copied from the onboarding doc):\n```\nAPP_ENV=staging\nD"
            f"B_HOST=stg-db.acme.io\nDB_USER=app\nDB_PASSWORD={_h7_pw(r, 18)}\nSENTRY_ENVIRONMENT=s"
            "taging\n```"
        ),
    ),
    _f(
        "yaml-password",
        lambda r: (
            "docker-compose.override.yml for local dev:\n```yaml\nservices:\n "
            " db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: "
            f"acme\n      POSTGRES_PASSWORD: {_h7_pw(r, 22)}\n```"
        ),
    ),
    _f(
        "password-prose",
        lambda r: (
            f"Gotcha: the Grafana admin login is admin / {_h7_pw(r, 14)} on "
            "monitoring.acme.io; the LDAP login is broken since the upgrade."
        ),
    ),
    _f(
        "ini-password",
        lambda r: (
            "Decision: keep pgbouncer's userlist in sync by hand.\n```\n[databases]\nacme "
            f"= host=10.0.0.5 port=5432 dbname=acme user=pgb password={_h7_pw(r, 20)}\n```"
        ),
    ),
    _f(
        "k8s-secret-b64",
        lambda r: (
            "The k8s Secret for the payments service (kubectl get secret "
            f"payments -o yaml):\n```yaml\ndata:\n  STRIPE_KEY: {base64.b64encode(_h7_stripe_sk(r).encode()).decode()}"
            f"\n  DB_PASSWORD: {base64.b64encode(_h7_pw(r, 20).encode()).decode()}\n```"
        ),
    ),
    _f(
        "docker-config-auth",
        lambda r: json.dumps(
            {"auths": {"registry.acme.io": {"auth": base64.b64encode(("ci-bot:" + _h7_pw(r, 24)).encode()).decode()}}}
        ),
    ),
    _f(
        "url-basic-auth",
        lambda r: (
            f"Artifacts are pulled from https://deploy:{_h7_pw(r, 18)}@nexus.acme.io/repository/mav"
            "en-releases/ in the Jenkinsfile."
        ),
    ),
    _f(
        "sshpass",
        lambda r: (
            f"Shell history from the hotfix:\n```\n$ sshpass -p '{_h7_pw(r, 16)}' "
            "ssh ops@10.12.0.8 'sudo systemctl restart api'\n$ exit\n```"
        ),
    ),
    _f(
        "mysql-cli-p",
        lambda r: (
            "To inspect the queue table directly: mysql -h 10.20.4.17 -u "
            f"root -p{_h7_pw(r, 14)} queue_db -e 'select count(*) from jobs'"
        ),
    ),
    _f(
        "psql-pgpassword",
        lambda r: (
            f"Note for later: the restore script runs PGPASSWORD='{_h7_pw(r, 20)}' "
            "pg_restore -h db-primary -U postgres -d acme latest.dump"
        ),
    ),
    _f(
        "python-literal",
        lambda r: (
            f'In billing/client.py:\n```python\nSENDGRID_API_KEY = "{_h7_sendgrid(r)}"\nsg '
            "= SendGridAPIClient(SENDGRID_API_KEY)\n```"
        ),
    ),
    _f(
        "java-literal",
        lambda r: (
            "The Android build embeds it: `private static final String MAPS_SECRET "
            f'= "{_c(r, ALNUM + "-_", 40)}";` in Config.java (a server secret, '
            "not the public maps key)."
        ),
    ),
    _f(
        "rust-literal",
        lambda r: (
            f'The CLI\'s telemetry (src/telemetry.rs):\n```rust\nconst DD_API_KEY: &str = "{_h7_dd_key(r)}";\n```'
        ),
    ),
    _f(
        "csharp-literal-twilio",
        lambda r: (
            f'Twilio in the .NET notifier: `TwilioClient.Init("AC{_c(r, HEX, 32)}", '
            f'"{_h7_twilio_tok(r)}");` — the second argument is the auth token.'
        ),
    ),
    _f("go-literal-hf", lambda r: f'var hfToken = "{_h7_hf_tok(r)}" // embeddings service, pulls gated models'),
    _f(
        "npmrc",
        lambda r: (
            f"Gotcha: `npm publish` fails in CI unless .npmrc has //registry.npmjs.org/:_authToken={_h7_npm_tok(r)}"
        ),
    ),
    _f("pypirc", lambda r: f"~/.pypirc on the release laptop:\n[pypi]\nusername = __token__\npassword = {_h7_pypi(r)}"),
    _f(
        "do-token",
        lambda r: (
            f'Terraform for the demo droplets reads do_token = "{_h7_dop(r)}" '
            "from terraform.tfvars (committed by mistake)."
        ),
    ),
    _f(
        "vault-token",
        lambda r: (
            f"Decision: the migration job uses a periodic Vault token ({_h7_vault(r)}) "
            "instead of AppRole until the auth backend is fixed."
        ),
    ),
    _f(
        "telegram-bot",
        lambda r: f"On-call alerts also go to Telegram; bot token {_h7_telegram(r)}, chat id -1001234567890.",
    ),
    _f(
        "shopify",
        lambda r: f"The storefront sync uses the Admin API access token {_h7_shopify(r)} for acme-shop.myshopify.com.",
    ),
    _f("mailgun", lambda r: f"Emails in staging go through Mailgun (domain mg.acme.io, api key {_h7_mailgun(r)})."),
    _f(
        "discord-bot", lambda r: f"Community bot: DISCORD_TOKEN={_h7_discord(r)} (reset it if the bot starts spamming)."
    ),
    _f(
        "masked-badly",
        lambda r: f"Rotated the OpenAI key today; new one is {_h7_openai_proj(r)[:48]}… (rest in 1Password).",
    ),
    _f(
        "generic-api-key-json",
        lambda r: json.dumps(
            {
                "type": "decision",
                "content": "Use the Algolia admin key only in the indexer",
                "config": {"app_id": "H3X9QW2ZLM", "admin_api_key": _c(r, HEX, 32)},
            }
        ),
    ),
    _f(
        "slack-summary-password",
        lambda r: (
            "Summary of #infra thread (2026-03-04): Priya asked why the VPN "
            "was down; Tom restarted openvpn; the new shared VPN password "
            f"is {_h7_pw(r, 12)}; Alex will move it to the vault next sprint."
        ),
    ),
]

HELD_OUT_7_KEEP: list[Form] = [
    _f(
        "masked-openai",
        lambda r: (
            "Rotated the OpenAI key; the dashboard now lists it as sk-...x7Qa, and the old one sk-...3fPz is revoked."
        ),
    ),
    _f(
        "masked-aws",
        lambda r: (
            "CloudTrail shows calls from AKIA****************WXYZ at 03:12 "
            "UTC; that key belongs to the old backup user."
        ),
    ),
    _f(
        "placeholder-env",
        lambda r: (
            "The .env template:\n```\nDB_PASSWORD=<your-db-password>\nSTRIPE_SECRET_KEY=sk_test_yo"
            "ur_key_here\nOPENAI_API_KEY=${OPENAI_API_KEY}\n```"
        ),
    ),
    _f(
        "placeholder-code",
        lambda r: (
            'Use `api_key = os.environ["ANTHROPIC_API_KEY"]` in scripts; '
            "never a literal. The same for `process.env.STRIPE_SECRET_KEY` "
            "in the Node services."
        ),
    ),
    _f(
        "redacted-log",
        lambda r: (
            "Request log with redaction: `POST /v1/charges Authorization: "
            "Bearer [REDACTED] -> 402 card_declined`; the redaction middleware "
            "lives in api/logging.py."
        ),
    ),
    _f(
        "redacted-url",
        lambda r: (
            "Connection string in the error is postgres://app_owner:****@db-primary.internal.acme."
            "io:5432/acme_prod, so the password is not the problem — the "
            "pooler refuses the SSL mode."
        ),
    ),
    _f(
        "account-id-arn",
        lambda r: (
            "The deploy role is arn:aws:iam::123456789012:role/github-actions-deploy "
            "and the bucket acme-prod-assets is in account 123456789012."
        ),
    ),
    _f(
        "git-sha",
        lambda r: (
            f"The regression started at commit {_c(r, HEX, 40)}; bisect points "
            f"at the serializer change, revert is {_c(r, HEX, 40)[:12]}."
        ),
    ),
    _f(
        "sha256-digest",
        lambda r: f"Pin the base image by digest: python:3.12-slim@sha256:{_c(r, HEX, 64)} (renovate updates it).",
    ),
    _f(
        "npm-integrity",
        lambda r: (
            f'package-lock has "integrity": "sha512-{base64.b64encode(r.randbytes(64)).decode()}" '
            "for left-pad; a mismatch means the registry mirror is stale."
        ),
    ),
    _f(
        "uuid-ids",
        lambda r: f"Project id {uuid4(r)} is the staging tenant; request id {uuid4(r)} is the one that timed out.",
    ),
    _f(
        "ssh-public-key",
        lambda r: (
            "Add this public key to the bastion's authorized_keys: ssh-ed25519 "
            f"AAAAC3NzaC1lZDI1NTE5AAAAI{_c(r, _B64_7, 43)} ci@acme"
        ),
    ),
    _f(
        "certificate",
        lambda r: "The CA bundle we pin (public cert, safe to commit):\n" + _h7_pem(r, "CERTIFICATE", 600),
    ),
    _f(
        "gha-secret-ref",
        lambda r: (
            "In .github/workflows/release.yml the token is `${{ secrets.NPM_TOKEN "
            "}}` and the AWS role comes from OIDC; no long-lived keys in "
            "the repo."
        ),
    ),
    _f(
        "k8s-secretkeyref",
        lambda r: (
            "The Deployment reads DB_PASSWORD via valueFrom.secretKeyRef "
            "(name: payments-db, key: password); the Secret itself is managed "
            "by external-secrets from Vault path kv/payments/db."
        ),
    ),
    _f(
        "password-policy",
        lambda r: (
            "Decision: user passwords must be at least 12 characters, checked "
            "against the HIBP k-anonymity API; reset tokens expire after "
            "15 minutes."
        ),
    ),
    _f(
        "env-var-names",
        lambda r: (
            "Required env vars: OPENAI_API_KEY, ANTHROPIC_API_KEY, STRIPE_SECRET_KEY, "
            "DATABASE_URL, REDIS_URL. `make check-env` fails listing the "
            "missing ones."
        ),
    ),
    _f(
        "stripe-publishable",
        lambda r: (
            f"The checkout page uses the publishable key pk_live_{_c(r, ALNUM, 99)} "
            "(public by design, it is in the HTML)."
        ),
    ),
    _f(
        "jwt-structure-doc",
        lambda r: (
            "JWTs here are three base64url parts: header.payload.signature. "
            "Example from the RFC 7519 docs: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 "
            'is the header {"alg":"HS256","typ":"JWT"}.'
        ),
    ),
    _f(
        "webpack-hash",
        lambda r: (
            f"Cache busting: assets are named main.{_c(r, HEX, 20)}.js and "
            f"vendor.{_c(r, HEX, 20)}.js; the CDN keeps them for a year."
        ),
    ),
    _f(
        "vault-path",
        lambda r: (
            "Secrets live in 1Password vault 'Platform' (item 'Stripe live "
            "restricted key') and in AWS Secrets Manager under prod/billing/stripe; "
            "rotate both together."
        ),
    ),
    _f(
        "db-url-no-pw",
        lambda r: "Local dev uses DATABASE_URL=postgres://postgres@localhost:5432/acme_dev (trust auth, no password).",
    ),
    _f(
        "table-masked",
        lambda r: (
            "| service | key | status |\n|---|---|---|\n| Stripe | sk_live_…9Xk2 "
            "| rotated 2026-02-01 |\n| GitHub | ghp_…Qm7c | revoked |\n| "
            "Slack | xoxb-…(masked) | active |"
        ),
    ),
    _f(
        "shell-no-secret",
        lambda r: (
            'Shell session:\n```\n$ aws sts get-caller-identity\n{\n  "UserId": '
            '"AIDA4EXAMPLEUSERID01",\n  "Account": "123456789012",\n  "Arn": '
            '"arn:aws:iam::123456789012:user/ci"\n}\n```\nSo CI runs as the '
            "ci user, not the role."
        ),
    ),
    _f(
        "base64-config",
        lambda r: f"The feature-flag payload is base64 JSON, e.g. {_H7_FLAGS}, decoded in flags/loader.py.",
    ),
]

REFUSED_BY_POLICY.append(
    _f(
        "aws-docs-example, seventh set",
        lambda r: (
            "AWS docs example (not real): aws_access_key_id = AKIAIOSFODNN7EXAMPLE and aws_secret_access_key = "
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, used in our README's setup section."
        ),
    )
)


# A tuning list, NOT held out (secrets10, written after reading the scanner): the five secrets walk8's new user
# stored through `POST /api/memories` on main at 5e9e27f (each also written to the team log as a `create` event),
# first, then variations of each cause in other words, and near misses that must be kept.
_W10 = ("Ladder", "Nimbus", "Pelican", "Quartz", "Meadow", "Violin", "Raven", "Quill", "Harbor", "Fennel", "Orchid")


def _w10(r: random.Random) -> str:
    return r.choice(_W10)


def _joined10(r: random.Random) -> str:
    """A generator's password: two words and a number joined (`Ladder-Nimbus-44`, `Moss7-Quill-Raven`)."""
    return (
        f"{_w10(r)}-{_w10(r)}-{r.randint(10, 99)}"
        if r.random() < 0.5
        else f"{_w10(r)}{r.randint(2, 9)}-{_w10(r)}-{_w10(r)}"
    )


def _phrase10(r: random.Random) -> str:
    """A passphrase of capitalised words and a number (`Quartz Meadow Violin 31`)."""
    return f"{_w10(r)} {_w10(r)} {_w10(r)} {r.randint(2, 99)}"


TUNE_WALK8: list[Form] = [
    # walk8's five, as stored
    _f("walk8 mailbox opens with", lambda r: "the shared ops mailbox opens with Ladder-Nimbus-44"),
    _f("walk8 password below its label", lambda r: "password:\n\n   Pelican Ruby Stone Nine"),
    _f("walk8 keystore opens with", lambda r: "the keystore.p12 for the payment service opens with Moss7-Quill-Raven"),
    _f(
        "walk8 passphrase of capitalised words",
        lambda r: "the encryption passphrase for backups.tar.gpg is 'Quartz Meadow Violin 31'",
    ),
    _f("walk8 creds with //", lambda r: "creds in case you need them: reporter // Tangerine_Owl_2"),
    # a thing a secret opens, then the password
    _f("mailbox opens with", lambda r: f"the support mailbox opens with {_joined10(r)}"),
    _f("laptop unlocks with", lambda r: f"my work laptop unlocks with {_joined10(r)}"),
    _f("safe opens with", lambda r: f"the office safe opens with {_joined10(r)}"),
    _f("vault unlocked with", lambda r: f"the KeePass vault (team.kdbx) is unlocked with {_joined10(r)}"),
    _f("keystore opens with the password", lambda r: f"release.jks opens with the password {_joined10(r)}"),
    _f("archive decrypts with", lambda r: f"the 2025 tax archive decrypts with {_joined10(r)}"),
    # a passphrase on the lines below a bare label
    _f("label, blank lines, words", lambda r: f"password:\n\n\n{_w10(r)} {_w10(r)} {_w10(r)} {_w10(r)}"),
    _f("named label, blank line", lambda r: f"db password:\n\n  {_phrase10(r)}"),
    _f("passphrase label, blank line", lambda r: f"Passphrase:\n\n{_phrase10(r)}"),
    # capitalised words and a number after "passphrase … is", a file's name between
    _f("passphrase unquoted", lambda r: f"the GPG passphrase for secrets.env.gpg is {_phrase10(r)}"),
    _f("passphrase was quoted", lambda r: f"passphrase for id_ed25519.old was '{_phrase10(r)}'"),
    _f("password is quoted", lambda r: f'the wifi password is "{_phrase10(r)}"'),
    # a login and its password with other separators
    _f("creds with |", lambda r: f"creds: reporter | {_joined10(r)}"),
    _f("creds with ,", lambda r: f"creds for grafana: viewer, {_joined10(r)}"),
    _f("login with //", lambda r: f"login in case: deploy // {_joined10(r)}"),
    _f("creds with /", lambda r: f"creds: ops / {_joined10(r)}"),
]

TUNE_WALK8_KEEP: list[Form] = [
    _f("door badge", lambda r: "the door opens with a badge"),
    _f("dialog shortcut", lambda r: "the dialog opens with Ctrl-K"),
    _f("splash screen", lambda r: "opens with a splash screen"),
    _f("password manager", lambda r: "password: see 1Password"),
    _f("ask someone", lambda r: "creds: ask Dana"),
    _f("mailbox welcome", lambda r: "the mailbox opens with a welcome message"),
    _f("vault sso", lambda r: "the vault opens with your SSO login"),
    _f("laptop login screen", lambda r: "the laptop opens with a login screen on Windows 11"),
    _f("archive tool", lambda r: "the archive opens with 7-Zip 23.01"),
    _f("backup tool version", lambda r: "the backup opens with restic-0.16 on any machine"),
    _f("database migration", lambda r: "the database opens with a migration step 0042_init"),
    _f("safe code elsewhere", lambda r: "the safe opens with the code from the office manager"),
    _f("keystore command", lambda r: "the keystore opens with keytool -list -v"),
    _f("label, where it is kept", lambda r: "password:\n\nStored In The Team Vault"),
    _f("label, ask a team", lambda r: "Password:\n\nAsk The Platform Team"),
    _f("label, manager entry", lambda r: "password:\n\nSee Bitwarden Entry"),
    _f("heading of a list", lambda r: "## Passwords:\n\nGrafana Admin Account"),
    _f("heading without colon", lambda r: "Password\n\nRequirements For New Accounts"),
    _f("passphrase where", lambda r: "the passphrase for backups.tar.gpg is in 1Password under Backups"),
    _f("passphrase how often", lambda r: "the passphrase is 'Rotated Every Quarter'"),
    _f("creds ask //", lambda r: "creds: ask Dana // she has them"),
    _f("creds vault path", lambda r: "creds: see vault, path secret/ops/reporter"),
    _f("login role", lambda r: "login: admin | role: viewer"),
]


# bench/secret_forms.HELD_OUT_8: secrets11's set, written before its author read this file, tests/test_secrets.py,
# docs/security.md or the scanner (/work/wt/secrets11-data/forms.json): secrets told the way people leak them into
# notes where a scanner keyed on vendor shapes and "password:" labels is weakest (told in prose without the word,
# passphrases of words, chat transcripts, TODOs and commit messages, seven languages in their scripts, keys in a URL's
# query, Postman/Insomnia exports, curl -v/HAR cookies, one-time codes, cards with expiry and CVV, bank logins, seed
# words, a private key's hex and WIF), and 27 look-alikes that must stay storable. Fixed texts (no random filling).
# First run, each stored once through `POST /api/memories` on a live `yullu serve` (real PostgreSQL) at cacae0e:
# **32 of 66 secrets stored** and **0 of 27 keepers refused**. Fixed since, in general terms: cards with their expiry or
# CVV and twelve BIP-39 words in a row (memories/secrets/money.py); a value typed at a prompt, one that "gets you in",
# one handed over in a chat line or for a login, a phrase named by what it opens, and codes of digit groups
# (memories/secrets/rules_entry.py); words joined as a passphrase after "opens with" (phrases._joined_words).
# HELD_OUT_8_OPEN names the 8 still stored (no name and no verb of entry: "sudo on build-03 takes X", "which is X",
# "the phrase purple monkey dishwasher 9", a bare line under a heading, a login inside a TODO's parentheses, a
# birthday-and-name recipe, a security question's answer, "unlocks with" spaced words): not fixed in this round.
HELD_OUT_8: list[Form] = [
    _f("prose-opens", lambda r: "the mailbox for billing@ opens with Copper-Lantern-58 since Monday"),
    _f("prose-nas", lambda r: "to get into the NAS type juniper.kettle.42 at the prompt"),
    _f("prose-pin", lambda r: "her pin for the door panel is 7731, don't change it"),
    _f("prose-combo", lambda r: "the safe combo is 18-44-07"),
    _f("prose-cms", lambda r: "we log in to the old CMS as editor, pass is the usual one: Brisket!2019"),
    _f("prose-wifi", lambda r: "guest wifi in the Lisbon office: network Acme-Guest, key is orchard-violet-338"),
    _f("prose-router", lambda r: "router admin page, user admin and then sunflower_Delta_77 gets you in"),
    _f("prose-vpn", lambda r: "For the VPN just use dkowalski and the phrase purple monkey dishwasher 9"),
    _f("prose-sudo", lambda r: "sudo on build-03 takes Tr0mbone-Winter, ask before using it"),
    _f("prose-unlock", lambda r: "the laptop unlocks with mango tango 1984 (all lowercase)"),
    _f("prose-mother", lambda r: "Grandma's Netflix: same as her email, which is RosesAreRed1951"),
    _f("prose-enter", lambda r: "to enter the staging admin, enter quietriver88 when it asks"),
    _f("prose-phrase-dots", lambda r: "the backup drive phrase: amber.falcon.drift.nine"),
    _f(
        "passphrase-caps", lambda r: "Remember the encryption phrase Correct Horse Battery Staple Seven for the archive"
    ),
    _f("passphrase-lower", lambda r: "keepass master: tidal wave under copper moon"),
    _f("passphrase-hyphen-nodigit", lambda r: "the shared 1Password vault is opened with glacier-thimble-orchid-ramp"),
    _f("passphrase-bare-line", lambda r: "db superuser (prod)\nWalrus-Picnic-Echo-61"),
    _f("chat-try", lambda r: "[10:42] dana: try hunter-orange-91\n[10:43] sam: that worked, thanks"),
    _f(
        "chat-slack",
        lambda r: (
            "sam 3:14 PM\nkey for the staging bucket is AKIA2XQ7PLMNB4RTUV8Q / wJt9p3kQv+Lr7sYz0aB1cD2eF3gH4iJ5kL6mN7oP"
        ),
    ),
    _f("chat-its", lambda r: "<mike> it's pelican42! for the jenkins box"),
    _f("chat-dm", lambda r: "DM from Priya: use 'Falafel-Rocket-2024' for the analytics login, I reset it"),
    _f("todo-comment", lambda r: "# TODO: remove before merge, temp admin pw = Zx81-spectrum-rules"),
    _f("todo-note", lambda r: "TODO rotate the SMTP creds (currently mailer / q7Rt-88-Lomb-ard) after launch"),
    _f(
        "code-comment-js",
        lambda r: "// staging only: const KEY = 'sk_live_51HxQ2eLkd8s9Ttqz0RmNpVaB3cD4eF5gH6iJ7kL8mN9o'",
    ),
    _f("code-py-default", lambda r: "DB_PASS = os.getenv('DB_PASS', 'greenPlum#2291')  # fallback for local"),
    _f(
        "commit-msg",
        lambda r: "commit 3f9a1c2: hardcode token ghp_8fK2mQ9xLr3TzV7bN1cW4yH6jD0sP5aE2uR8 for CI until vault works",
    ),
    _f("commit-msg2", lambda r: "fix login for acme sandbox (user qa-bot, pwd nebula77Kite)"),
    _f("es", lambda r: "la contraseña del router es girasol-azul-2023, no la cambies"),
    _f("es-prose", lambda r: "para entrar al servidor de copias escribe Montaña.Roja.84"),
    _f("de", lambda r: "Das Passwort für das WLAN im Büro lautet Sonnenblume!Kater7"),
    _f("de-prose", lambda r: "Zum Entsperren des Tresors gib 4471-9920 ein"),
    _f("fr", lambda r: "le mot de passe du compte Free est papillon-bleu-1987"),
    _f("fr-prose", lambda r: "pour ouvrir le coffre numérique il faut taper lune.verte.soixante"),
    _f("pt", lambda r: "a senha do wi-fi da casa é abacaxi2020verde"),
    _f("pl", lambda r: "hasło do serwera to Kaczka-Zielona-55"),
    _f("ja", lambda r: "サーバーのパスワードは sakura-fuji-2041 です"),
    _f("hi", lambda r: "सर्वर का पासवर्ड है NeelaAasmaan#72"),
    _f(
        "url-apikey",
        lambda r: (
            "fetch the report from https://api.weatherly.io/v2/forecast?city=Oslo&api_key=9f3b2c7d1e8a4f60b5c9d2e7a1f4b8c3"
        ),
    ),
    _f(
        "url-token",
        lambda r: (
            "reset link: https://app.acme.io/reset?token=eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiJ9.Xq3w9LrT0pZk2mNvB7cD1eF4gH6iJ8kL0mN2oP4qR6s"
        ),
    ),
    _f(
        "url-sig",
        lambda r: (
            "download it here (valid 7 days): https://files.example-cdn.com/exports/q3.zip?Expires=1767225600&Signature=hT8kQ2pLm9ZrX4vB7nC1dF3gJ6sW0yE5aU8iO2kM4pR7tY1wQ3eD&Key-Pair-Id=APKAJX7Q3LMN2B"
        ),
    ),
    _f(
        "url-sas",
        lambda r: (
            "the blob SAS: https://acmedata.blob.core.windows.net/raw/dump.csv?sv=2022-11-02&ss=b&srt=o&sp=rwdl&se=2026-12-31T00:00:00Z&sig=Q8vJ2kL9mZx4PqR7tB1nC3dF6gH0jK5wE8yU2iO4pA%3D"
        ),
    ),
    _f("url-basic", lambda r: "clone from https://deploy:Gx7pQ2mLr9Tz@git.internal.acme.net/infra.git"),
    _f(
        "postman",
        lambda r: (
            '{"info":{"name":"Billing API"},"auth":{"type":"bearer","bearer":[{"key":"token","value":"a81f3c9e2b7d4e10f6a5c8b2d9e1f7a3c4b6d8e0","type":"string"}]}}'  # noqa: E501
        ),
    ),
    _f(
        "insomnia",
        lambda r: (
            '{"_type":"environment","data":{"base_url":"https://api.acme.io","apiKey":"live_7Hq2Lm9Xr4Tz8Vb1Nc3Wd6Yf0Pk5Ja"}}'
        ),
    ),
    _f(
        "har-cookie",
        lambda r: (
            "> GET /dashboard HTTP/1.1\n> Host: admin.acme.io\n> Cookie: session=9c1f0e7a4b2d8c3e6f5a1b9d0e7c2f4a; theme=dark"  # noqa: E501
        ),
    ),
    _f(
        "set-cookie",
        lambda r: (
            "< HTTP/1.1 200 OK\n< Set-Cookie: sid=s%3AqL8xT2mR9vZ4pK7nB1cW3dF6.hJ0yE5aU8iO2kM4pR7tY1wQ3eD6gS; Path=/; HttpOnly"  # noqa: E501
        ),
    ),
    _f("har-json", lambda r: '{"name":"Authorization","value":"Bearer 3b9f2c7e1a8d4f60b5c9d2e7a1f4b8c3e6d0a2f5"}'),
    _f(
        "cookie-prose",
        lambda r: (
            "if you paste connect.sid=s%3Ab7Xk2Qm9Lr4Tz8Vn1Pc3Wd6Yf0.Hj5Ka into devtools you're logged in as the admin"
        ),
    ),
    _f("otp-backup", lambda r: "the 2FA backup code 4827-1193 still works for the root account"),
    _f("otp-list", lambda r: "GitHub recovery codes: 7f3a2-9c1e4 b8d06-2e5f1 4c9a7-1d3b8 e2f60-8a4c9"),
    _f("otp-sms", lambda r: "the code they texted is 552 913, use it in the next 10 minutes"),
    _f("card-full", lambda r: "company Visa 4532 0151 1283 0366 exp 09/28 cvv 417"),
    _f(
        "card-prose",
        lambda r: (
            "pay the invoice with the Mastercard ending... actually full number 5373120044178857, 11/27, security code 882"  # noqa: E501
        ),
    ),
    _f(
        "bank-login",
        lambda r: "Santander online banking: customer number 48213377, passcode 902114, memorable word 'biscuit'",
    ),
    _f("bank-prose", lambda r: "Mum's bank app login is her birthday then 'Rex', so 140362Rex"),
    _f(
        "seed-12",
        lambda r: "wallet seed: ocean tiger canvas puzzle garden rocket velvet orbit hollow ladder silver thunder",
    ),
    _f(
        "seed-24",
        lambda r: (
            "recovery words (ledger): abandon ability able about above absent absorb abstract absurd abuse access accident account accuse achieve acid acoustic acquire across act action actor actress actual"  # noqa: E501
        ),
    ),
    _f(
        "seed-numbered",
        lambda r: (
            "1. ripple 2. fossil 3. magnet 4. timber 5. onion 6. cradle 7. hazard 8. lemon 9. parade 10. snack 11. unveil 12. wisdom"  # noqa: E501
        ),
    ),
    _f(
        "privkey-hex",
        lambda r: "eth deployer private key 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
    ),
    _f("wif", lambda r: "paper wallet WIF: 5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ"),
    _f("env-line", lambda r: "export STRIPE_SECRET=rk_live_4eC39HqLyjWDarjtT1zdp7dc9aZ2mQ8x"),
    _f("pgpass-prose", lambda r: "the reporting replica takes analyst and Lemon.Curd.Tart as login"),
    _f("ssh-pass", lambda r: "ssh pi@10.0.0.12 and when it asks, raspberry-pie-314"),
    _f("phone-pin", lambda r: "the SIM PUK is 84920175 if the phone locks again"),
    _f("alarm", lambda r: "alarm disarm code: 2580, then # twice"),
    _f("answer", lambda r: "security question answer for the registrar account: Whiskers the Second"),
]

HELD_OUT_8_KEEP: list[Form] = [
    _f("song", lambda r: "we played Smells-Like-Teen-Spirit and Bohemian Rhapsody at the offsite"),
    _f("branch", lambda r: "merge Release-Candidate-3 into main after QA signs off"),
    _f("product", lambda r: "Acme's new tier is called Copper Lantern Pro, launching in March"),
    _f(
        "test-card",
        lambda r: "Stripe test card 4242 4242 4242 4242 with any future expiry and any CVC (test mode only)",
    ),
    _f("test-card2", lambda r: "use the documented test Visa 4000 0566 5566 5556 in the sandbox"),
    _f("2fa-desc", lambda r: "2FA is on for everyone; backup codes are in the team vault, ask Dana"),
    _f("seed-instr", lambda r: "write the 24 seed words on the steel plate, never type them into a computer"),
    _f("pw-policy", lambda r: "passwords must be 14+ chars with a number; we rotate them every 90 days"),
    _f("pw-where", lambda r: "the NAS password is in 1Password under 'Infra / NAS'"),
    _f("safe-desc", lambda r: "the safe combo was changed on Friday, Lena has it"),
    _f("chat-normal", lambda r: "[10:42] dana: try restarting the worker\n[10:43] sam: that worked, thanks"),
    _f("uuid-url", lambda r: "see https://github.com/acme/api/pull/4821?tab=files&w=1 for the diff"),
    _f("url-utm", lambda r: "https://acme.io/pricing?utm_source=newsletter&utm_campaign=spring-2026"),
    _f("git-sha", lambda r: "reverted 3f9a1c2e8b7d4f60b5c9d2e7a1f4b8c3e6d0a2f5 because it broke the migration"),
    _f("commit-env", lambda r: "commit: read DB password from DB_PASSWORD env var instead of settings.py"),
    _f("cookie-desc", lambda r: "the session cookie is HttpOnly and SameSite=Lax; CSRF token rotates per login"),
    _f("es-normal", lambda r: "la reunión del lunes se mueve a las 10, trae el informe de ventas"),
    _f("de-normal", lambda r: "Der Build schlägt fehl, weil das Paket Sonnenblume-Utils fehlt"),
    _f("ja-normal", lambda r: "デプロイは金曜日の午後に行います"),
    _f("combo-version", lambda r: "we pinned the versions 18-44-07 style: node 18, postgres 14, redis 7"),
    _f("todo-normal", lambda r: "TODO: add a retry around the S3 upload, it flakes on large files"),
    _f("phrase-story", lambda r: "the chapter title 'Amber Falcon Drift' came from Nora's dream"),
    _f("pin-desc", lambda r: "the door panel takes a 4-digit pin; reset it from the admin console"),
    _f("hex-color", lambda r: "brand colours: #1f3a5c primary, #f4b860 accent"),
    _f("postman-var", lambda r: '{"auth":{"type":"bearer","bearer":[{"key":"token","value":"{{access_token}}"}]}}'),
    _f("ssh-desc", lambda r: "ssh pi@10.0.0.12 then run sudo systemctl restart kiosk"),
    _f("otp-desc", lambda r: "the SMS code expires after 10 minutes, request a new one if late"),
]

# (empty since secrets13: "which is RosesAreRed1951" and "so 140362Rex", told about an account, are refused by
# `told-after-which-is`)
HELD_OUT_8_OPEN: frozenset[str] = frozenset()


# ---------------------------------------------------------------------------------------------
# HELD_OUT_9: secrets12's set (bench/secret_forms_9.py), written before its author read the scanner, this file
# (beyond its Form type) or tests/test_secrets.py: 90 secrets as a judge would pick them (.env lines, compose,
# Kubernetes, tfvars, CI variables, connection strings, curl, webhooks, cloud and SaaS keys, JWTs, private keys,
# passwords in prose and chat, wifi/door/PIN/recovery codes, TOTP seeds, wallet words, cards) and 33 texts near
# secrets that must be stored. The first run through a live site (`python -m bench.secret_live`, REST stores)
# stored 3 of 90 and refused 1 of 33 keepers; only that figure is a held-out figure (docs/security.md).
# (imported at the top of this file)


# ---------------------------------------------------------------------------------------------
# HELD_OUT_10: secrets13's set (bench/secret_forms_10.py), written before its author read the scanner, this file
# or tests/test_secrets.py: 108 secrets with the wrapping varied most (chat lines, markdown tables, YAML/JSON/TOML/
# INI, shell history, Python/JS/Go/Java/C# literals, .netrc, pgpass, remote URLs, kubeconfig, Helm, Ansible,
# Jenkins, Postman, cookies, SMTP/FTP/VPN/Wi-Fi, door/alarm/safe codes, IBAN+PIN, cards, recovery codes, 2FA and
# wallet seeds, nine languages) and 52 texts near secrets that must be stored. The first run through a live site
# (`python -m bench.secret_live`, REST stores) stored 4 of 108 and refused 0 of 52 keepers; only that figure is a
# held-out figure (docs/security.md). (imported at the top of this file)


# ---------------------------------------------------------------------------------------------
# HELD_OUT_11: secrets14's set (bench/secret_forms_11.py), written before its author read the scanner, this file
# (beyond its Form type) or tests/test_secrets.py: 104 secrets leaning on what earlier sets did least (secrets inside
# 3–6 sentence notes, multi-line pastes: compose, systemd, Actions, Terraform, Spring, .npmrc/.pypirc, settings.py,
# Dockerfile, crontab, leaked log lines, raw HTTP; secrets told in words, partly masked, wrapped over two lines;
# vendor formats; eight languages) and 60 texts near secrets that must be stored. The first run through a live site
# (`python -m bench.secret_live`, REST stores) stored 8 of 104 and refused 1 of 60 keepers; only that figure is a
# held-out figure (docs/security.md). (imported at the top of this file)


# ---------------------------------------------------------------------------------------------
# HELD_OUT_12: secrets15's set (bench/secret_forms_12.py), written before its author read the scanner, this file
# (beyond its Form type) or tests/test_secrets.py: 102 secrets (the plain forms a judge tries first: .env lines,
# exports, curl -u / Bearer, DSNs, cloud and vendor keys, PEM/OpenSSH, JWTs, otpauth, cards, seed phrases; then
# kubeconfig, docker auth, TOML/INI/YAML/XML, Maven, .netrc, pgpass, GCP service-account JSON, code literals in five
# languages, shell history, chat, notes, recipes, split, base64 and percent-encoded credentials, eleven languages)
# and 57 texts near secrets that must be stored. Each text is drawn once from a seeded generator (the same on
# every run; `--seeds` fills it with the same values). The first run through a live site (`python -m
# bench.secret_live`, REST stores) stored 4 of 102 and refused 0 of 57 keepers; only that figure is a held-out
# figure (docs/security.md). (imported at the top of this file)


# ---------------------------------------------------------------------------------------------
# HELD_OUT_13: secrets16's set (bench/secret_forms_13.py), written before its author read the scanner, this file
# (beyond its Form type) or tests/test_secrets.py: 107 secrets (the plain forms first, then a teammate's memory,
# commit messages, log lines, a stack trace, Dockerfile, Actions, tfvars, Helm, Ansible, notebook cells, SQL,
# MSSQL/Oracle/Mongo/Redis/AMQP connection strings, a phonetic password, door/safe/alarm codes, capitalised words,
# ten languages) and 60 texts near secrets that must be stored. Each text was drawn once from a seeded generator
# (fixed: `--seeds` sends the same text). The first run through a live site (`python -m bench.secret_live`, REST
# stores) stored 7 of 107 and refused 0 of 60 keepers; only that figure is a held-out figure (docs/security.md).
# (imported at the top of this file)


# ---------------------------------------------------------------------------------------------
# HELD_OUT_14: secrets17's set (bench/secret_forms_14.py), written before its author read the scanner, this file
# (beyond its Form type) or tests/test_secrets.py: 116 secrets (the plain forms first, then a teammate's memory, commit
# messages, log lines, a stack trace, Dockerfile, Actions, tfvars, Helm, Ansible, notebook cells, SQL, MSSQL/Oracle/
# Mongo/Redis/AMQP connection strings, a phonetic password, door/safe/alarm/padlock codes, capitalised words, seven
# languages) and 68 texts near secrets that must be stored. Each text was drawn once from one seeded generator (fixed:
# `--seeds` sends the same text). The first run through a live site (`python -m bench.secret_live`, REST stores)
# stored 3 of 116 and refused 0 of 68 keepers; only that figure is a held-out figure (docs/security.md).
# (imported at the top of this file)


# ---------------------------------------------------------------------------------------------
# HELD_OUT_15: secrets18's set (bench/secret_forms_15.py), written before its author read the scanner, this file
# (beyond its Form type) or tests/test_secrets.py: 117 secrets (the plain forms first, then a teammate's memory, commit
# messages, log lines, stack traces, Dockerfile, Actions, tfvars, Helm, Ansible, a notebook cell, SQL, MSSQL/Oracle/
# Mongo/Redis/AMQP connection strings, command lines, a phonetic password, door/safe/alarm/locker codes, capitalised
# words, ten languages) and 59 texts near secrets that must be stored. Each text was drawn once from one seeded
# generator (fixed: `--seeds` sends the same text). The first run through a live site (`python -m bench.secret_live`,
# REST stores) stored 0 of 117 and refused 0 of 59 keepers; only that figure is a held-out figure (docs/security.md).
# (imported at the top of this file)


# ---------------------------------------------------------------------------------------------
# HELD_OUT_19: secrets23's set (bench/secret_forms_19.py), written before its author read the scanner, this file
# (beyond its Form type) or the earlier sets' texts: 214 secrets (secret managers, newer platforms, observability, model
# providers, odd URL schemes, credential files, other key armours, SSO client secrets, JDBC/ODBC/ADO.NET, passwords in
# 26 languages, split, base64-wrapped and URL-encoded values) and 89 keepers. Each text was drawn once from one seeded
# generator. The first run (6ca29a7), `find_secret` and `python -m bench.secret_live` alike, stored 3 of 214 and
# refused 14 of 89 keepers; only that figure is a held-out figure (docs/security.md). Two of the 14 are refused by
# policy, moved here: AWS's documented pair, and a Sentry DSN with its public key alone (sets 9 and 12 refuse it).
# (imported at the top of this file)
REFUSED_BY_POLICY.extend(REFUSED_BY_POLICY_19)


# ---------------------------------------------------------------------------------------------
# HELD_OUT_20: secrets24's set (bench/secret_forms_20.py), written and committed before its author read the scanner,
# this file (beyond its Form type) or the earlier sets' texts: 257 secrets (payments, CI, observability, model APIs,
# package registries, chat ops, mobile push, maps, e-mail, webhook signing secrets, JWTs, private keys in odd
# wrappings, base64'd and split credentials, credential files, passwords in 14 languages) and 70 keepers. Each text
# was drawn once from one seeded generator. The first run, `find_secret` and `python -m bench.secret_live`
# alike, stored 6 of 257 and refused 4 of 70 keepers; only that figure is a held-out figure (docs/security.md).
# (imported at the top of this file)


# ---------------------------------------------------------------------------------------------
# HELD_OUT_21: secrets25's set (bench/secret_forms_21.py), written and committed before its author read the scanner,
# this file (beyond its Form type) or the earlier sets' texts: 217 secrets placed where developers paste them (stack
# traces, HTTP dumps, shell history, Terraform, Ansible, Helm, CI logs, signed URLs, SQL, constants in 17 languages,
# prose in 12 languages, odd separators, Markdown tables, the value before its name, values wrapped over lines) and
# 76 keepers. The first run, `find_secret` and every write path alike, stored 3 of 217 and refused 3 of 76, one of
# them AWS's documented sample pair, refused by policy: moved to REFUSED_BY_POLICY (docs/security.md).
# (imported at the top of this file)
REFUSED_BY_POLICY.extend(REFUSED_BY_POLICY_21)


# ---------------------------------------------------------------------------------------------
# HELD_OUT_22: secrets26's set (bench/secret_forms_22.py), written and committed before its author read the scanner,
# this file (beyond its Form type) or the earlier sets' texts: 287 secrets from an outsider's checklist (about forty
# providers' documented token formats, JWTs and session cookies, private keys in PEM, OpenSSH, PuTTY, PGP and JWK,
# connection strings of databases and brokers, credential files, base64 and URL-encoded, split and nested-quoted
# values, prose in 20 languages) and 70 keepers. The first run, `find_secret` and every write path alike, stored 4 of
# 287 and refused 1 of 70 (a secret store's reference). It has no documented sample key, so no policy texts.
# (imported at the top of this file)


# ---------------------------------------------------------------------------------------------
# HELD_OUT_23: secrets28's set (bench/secret_forms_23.py), written and committed before its author read the scanner
# or the earlier sets' texts (set 22's file shape only): 196 secrets where developers paste them into an assistant
# (shell history, CI logs and CI YAML, Kubernetes Secrets and Helm values, Terraform, docker-compose, HTTP dumps,
# stack traces, code in nine languages, chat prose in fourteen languages, conversation transcripts) and 70 keepers.
# The first run, `find_secret` and every write path alike, stored 2 of 196 and refused 2 of 70 (the dreaming path
# a third: a near-duplicate of another keeper, not a secret's refusal). No documented sample key, so no policy texts.
# (imported at the top of this file)

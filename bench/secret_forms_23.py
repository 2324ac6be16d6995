"""The twenty-third held-out set, written before reading the scanner or any earlier set's texts (only set 22's shape).

SECRET_TEXTS carry a secret the way developers really paste one into an assistant's memory or chat: shell history
lines, CI logs and CI YAML, Helm values and Kubernetes Secret manifests, Terraform `.tfvars` and provider blocks,
docker-compose `environment:` lists, HTTP request dumps (headers, cookies, query strings), stack traces and error
messages that quote a DSN or a key, code assigning a key in nine languages, chat prose in several languages, and
conversation transcripts of the kind the dreaming pass reads (a user turn pasting a key, an assistant turn repeating
it). Every one must be refused. KEEP_TEXTS are look-alikes from the same places that are not secrets (hashes, UUIDs,
SHAs, public keys, placeholders, redacted values, variable names alone, `${{ secrets.X }}` references, vault paths,
test vectors); every one must be stored.

About two thirds of the values are drawn from one seeded generator (bench.secret_reseed re-runs the file with other
seeds); the rest are typed by hand the way an outsider types a plausible key (`sk_live_abc123…`, `Passw0rd!2024`,
`hunter2`).
"""

# ruff: noqa: E501  (the texts are kept whole, one a line, as written before the first run; the values are drawn in
# this order from one seed, so a text cut by hand could change every text after it)

from __future__ import annotations

import json
import string
from urllib.parse import quote

from bench.secret_fill import Filler, enc, fixed
from bench.secret_forms_9 import Form

_F = Filler(2323)
_R = _F.rng
_v = _F.v
_hex = _F.hex
_b64 = _F.b64
_b64url = _F.b64url
_uuid = _F.uuid
_jwt = _F.jwt
_epoch = _F.epoch
_enc = enc
_ALNUM = string.ascii_letters + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_URLSAFE = _ALNUM + "-_"
_B64 = _ALNUM + "+/"
_WORDS = [
    "walnut", "harbor", "meteor", "saffron", "tundra", "violet", "whisker", "zephyr", "bramble", "canyon",
    "dynamo", "falcon", "gravel", "hollow", "iris", "juniper", "kelp", "lagoon", "marble", "nectar",
]  # fmt: skip


def _pw(n: int = 16) -> str:
    """A generated password: letters, digits and a symbol or two, in no fixed place."""
    return _F.pw(n, "!#%*@-_+^", "!#%*^")


def _human_pw() -> str:
    """A password a person made up: a word or two, digits, a symbol."""
    a, b = _R.sample(_WORDS, 2)
    return f"{a.capitalize()}{_R.choice(['', '-', '_', '.'])}{b}{_R.randint(1, 9999)}{_R.choice('!?#&')}"


def _digits(n: int) -> str:
    return str(_R.randint(10 ** (n - 1), 10**n - 1))


def _word() -> str:
    return _R.choice(_WORDS)


_USER = _R.choice(["deploy", "app_rw", "svc_api", "jenkins", "ops", "metabase", "airflow"])
_DB = _R.choice(["shop", "ledger", "prod_main", "warehouse", "crm"])
_HOST = _R.choice(["db-prod-1.internal", "10.20.3.14", "pg.staging.acme.io", "mysql-primary.svc.cluster.local"])
_PW = _pw()
_PW2 = _pw(20)
_HPW = _human_pw()
_HPW2 = _human_pw()
_AKIA = "AKIA" + _v(16, _UPPER_DIGITS)
_AWS_SECRET = _v(40, _ALNUM + "/+")
_GHP = "ghp_" + _v(36)
_GHO = "gho_" + _v(36)
_GLPAT = "glpat-" + _v(20, _URLSAFE)
_SK_LIVE = "sk_live_" + _v(24)
_RK_LIVE = "rk_live_" + _v(24)
_OPENAI = "sk-proj-" + _v(48, _URLSAFE)
_ANTHROPIC = "sk-ant-api03-" + _v(93, _URLSAFE) + "AA"
_SLACK_BOT = f"xoxb-{_digits(12)}-{_digits(13)}-{_v(24)}"
_SLACK_HOOK = f"https://hooks.slack.com/services/T{_v(8, _UPPER_DIGITS)}/B{_v(10, _UPPER_DIGITS)}/{_v(24)}"
_SENDGRID = f"SG.{_v(22, _URLSAFE)}.{_v(43, _URLSAFE)}"
_NPM = "npm_" + _v(36)
_HEX32 = _hex(32)
_HEX40 = _hex(40)
_HEX64 = _hex(64)
_B64_32 = _b64(32)
_DOCKER_PAT = "dckr_pat_" + _v(27, _URLSAFE)
_JWT = _jwt({"sub": _uuid(), "role": "service_role", "iat": _epoch(), "exp": _epoch() + 86400})
_TOKEN_32 = _v(32)
_TOKEN_40 = _v(40, _LOWER_DIGITS)
_GOOGLE_API = "AIza" + _v(35, _URLSAFE)
_TWILIO_SID = "AC" + _hex(32)
_TWILIO_AUTH = _hex(32)
_STRIPE_WHSEC = "whsec_" + _v(32)
_DD_API = _hex(32)
_DD_APP = _hex(40)
_HF = "hf_" + _v(34)
_VAULT = "hvs." + _v(24, _URLSAFE)
_PYPI = "pypi-AgEIcHlwaS5vcmc" + _v(60, _URLSAFE)
_AZ_KEY = _b64(64)
_SAS_SIG = quote(_b64(32), safe="")
_SESSION = _v(32, _LOWER_DIGITS)
_DJ_SECRET = _v(50, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)")
_BASIC = _enc(f"{_USER}:{_PW}")
_CF_TOKEN = _v(40, _URLSAFE)
_SENTRY_DSN = f"https://{_hex(32)}@o{_digits(6)}.ingest.sentry.io/{_digits(7)}"
_TF_TOKEN = f"{_v(14)}.atlasv1.{_v(67)}"
_DO_TOKEN = "dop_v1_" + _hex(64)
_LINEAR = "lin_api_" + _v(40)
_SHOPIFY = "shpat_" + _hex(32)
_MAILGUN = "key-" + _hex(32)
_FIREBASE_PRIV = "\\n".join(["-----BEGIN PRIVATE KEY-----", _b64(48), _b64(48), "-----END PRIVATE KEY-----"])

SECRET_TEXTS: list[tuple[str, str]] = [
    # --- shell history -------------------------------------------------------------------------------------------
    ("history export aws secret", f"  412  export AWS_SECRET_ACCESS_KEY={_AWS_SECRET}"),
    ("history export quoted", f'1043  export OPENAI_API_KEY="{_OPENAI}"'),
    ("history export db password", f"export PGPASSWORD='{_PW}'"),
    (
        "history curl bearer",
        f'curl -s -H "Authorization: Bearer {_TOKEN_32}" https://api.internal.acme.io/v2/jobs | jq .',
    ),
    ("history curl -u", f"curl -u {_USER}:{_PW} https://jenkins.acme.io/job/deploy/build -X POST"),
    (
        "history curl api key header",
        f"curl https://api.sendgrid.com/v3/mail/send -H 'Authorization: Bearer {_SENDGRID}' -H 'Content-Type: application/json' -d @mail.json",
    ),
    ("history docker login -p", f"docker login -u {_USER} -p {_PW} registry.acme.io"),
    ("history docker login stdin", f'echo "{_DOCKER_PAT}" | docker login -u acmebot --password-stdin'),
    ("history psql dsn", f'psql "postgresql://{_USER}:{_PW}@{_HOST}:5432/{_DB}?sslmode=require"'),
    ("history mysql -p", f"mysql -h {_HOST} -u {_USER} -p'{_PW}' {_DB}"),
    ("history aws configure set", f"aws configure set aws_secret_access_key {_AWS_SECRET} --profile prod"),
    (
        "history aws configure set id+key",
        f"aws configure set aws_access_key_id {_AKIA} && aws configure set aws_secret_access_key {_AWS_SECRET}",
    ),
    ("history gh auth here-string", f"gh auth login --with-token <<< {_GHP}"),
    ("history gh auth echo", f"echo {_GHO} | gh auth login --with-token"),
    ("history git clone token", f"git clone https://oauth2:{_GLPAT}@gitlab.com/acme/platform/infra.git"),
    ("history npm config", f"npm config set //registry.npmjs.org/:_authToken {_NPM}"),
    (
        "history kubectl create secret",
        f"kubectl create secret generic api-creds --from-literal=API_KEY={_TOKEN_32} --from-literal=DB_PASS={_PW} -n prod",
    ),
    ("history redis-cli -a", f"redis-cli -h cache.acme.internal -p 6379 -a {_PW2} --no-auth-warning INFO"),
    ("history env prefix", f"STRIPE_SECRET_KEY={_SK_LIVE} python manage.py sync_invoices"),
    ("history heroku config", f"heroku config:set SECRET_KEY='{_DJ_SECRET}' -a acme-api"),
    ("history vault login", f"vault login {_VAULT}"),
    ("history sshpass", f"sshpass -p '{_HPW}' ssh root@{_HOST}"),
    ("history mongo uri", f'mongosh "mongodb+srv://{_USER}:{_PW}@cluster0.{_v(5, _LOWER_DIGITS)}.mongodb.net/{_DB}"'),
    ("history hand typed", "export STRIPE_API_KEY=sk_live_abc123def456ghi789jkl012"),
    ("history hand typed pw", "mysql -u root -pPassw0rd!2024 -e 'show databases'"),
    ("history set fish", f"set -gx ANTHROPIC_API_KEY {_ANTHROPIC}"),
    ("history powershell env", f'$env:AZURE_STORAGE_KEY = "{_AZ_KEY}"'),
    ("history windows set", f"set HF_TOKEN={_HF}"),
    ("history twine", f"twine upload dist/* -u __token__ -p {_PYPI}"),
    ("history htpasswd", f"htpasswd -b -c /etc/nginx/.htpasswd admin {_HPW}"),
    # --- CI logs and CI YAML ----------------------------------------------------------------------------------
    (
        "gha env block",
        f"jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    env:\n      AWS_ACCESS_KEY_ID: {_AKIA}\n      AWS_SECRET_ACCESS_KEY: {_AWS_SECRET}\n    steps:\n      - run: ./deploy.sh",
    ),
    ("gha with token", f"      - uses: actions/checkout@v4\n        with:\n          token: {_GHP}"),
    (
        "gha step env",
        f"      - name: Publish\n        run: npm publish\n        env:\n          NODE_AUTH_TOKEN: {_NPM}",
    ),
    (
        "gitlab variables",
        f"variables:\n  DOCKER_DRIVER: overlay2\n  POSTGRES_PASSWORD: {_PW}\n  DATABASE_URL: postgres://{_USER}:{_PW}@postgres:5432/{_DB}",
    ),
    (
        "gitlab script token",
        f'deploy:\n  script:\n    - curl --request POST --header "PRIVATE-TOKEN: {_GLPAT}" "https://gitlab.com/api/v4/projects/42/trigger/pipeline"',
    ),
    (
        "circleci environment",
        f"    docker:\n      - image: cimg/python:3.12\n        environment:\n          SENTRY_AUTH_TOKEN: {_hex(64)}\n          CODECOV_TOKEN: {_uuid()}",
    ),
    ("ci log echo leak", f"[deploy] $ echo $DEPLOY_TOKEN\n[deploy] {_TOKEN_40}\n[deploy] $ ./scripts/release.sh"),
    (
        "ci log failed auth",
        f'Run curl -fsSL -H "X-API-Key: {_DD_API}" https://api.datadoghq.com/api/v1/validate\ncurl: (22) The requested URL returned error: 403',
    ),
    ("ci log set -x", f"+ export TF_TOKEN_app_terraform_io={_TF_TOKEN}\n+ terraform init -input=false"),
    (
        "jenkins withCredentials leak",
        f"[Pipeline] sh\n+ docker login -u jenkins -p {_PW2} nexus.acme.io:8443\nWARNING! Using --password via the CLI is insecure.",
    ),
    (
        "azure pipelines",
        f"variables:\n  - name: sqlPassword\n    value: '{_PW}'\n  - name: buildConfiguration\n    value: Release",
    ),
    (
        "bitbucket pipelines",
        f"pipelines:\n  default:\n    - step:\n        script:\n          - export SONAR_TOKEN=squ_{_hex(40)}\n          - sonar-scanner",
    ),
    ("drone secret inline", f"steps:\n- name: notify\n  image: plugins/slack\n  settings:\n    webhook: {_SLACK_HOOK}"),
    ("travis env global", f"env:\n  global:\n    - COVERALLS_REPO_TOKEN={_v(32)}\n    - HEROKU_API_KEY={_uuid()}"),
    ("ci hand typed", "env:\n  SLACK_TOKEN: xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"),
    # --- Helm values and Kubernetes manifests ----------------------------------------------------------------
    (
        "k8s secret data b64",
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds\ntype: Opaque\ndata:\n  username: {_enc(_USER)}\n  password: {_enc(_PW)}",
    ),
    (
        "k8s secret stringData",
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-env\nstringData:\n  DATABASE_URL: postgresql://{_USER}:{_PW}@{_HOST}/{_DB}\n  REDIS_PASSWORD: {_PW2}",
    ),
    ("k8s secret data api key", f"kind: Secret\ndata:\n  api-key: {_enc(_OPENAI)}"),
    (
        "k8s dockerconfigjson",
        f"kind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {_enc(json.dumps({'auths': {'ghcr.io': {'auth': _enc('acme-bot:' + _GHP)}}}))}",
    ),
    (
        "helm values postgres",
        f"postgresql:\n  auth:\n    username: {_USER}\n    password: {_PW}\n    database: {_DB}\n  primary:\n    persistence:\n      size: 20Gi",
    ),
    ("helm values redis", f'redis:\n  architecture: standalone\n  auth:\n    enabled: true\n    password: "{_HPW}"'),
    ("helm --set", f"helm upgrade --install grafana grafana/grafana --set adminPassword='{_PW}' -n monitoring"),
    (
        "helm values smtp",
        f"grafana.ini:\n  smtp:\n    enabled: true\n    host: smtp.sendgrid.net:587\n    user: apikey\n    password: {_SENDGRID}",
    ),
    (
        "k8s env value",
        f"        env:\n          - name: STRIPE_KEY\n            value: {_SK_LIVE}\n          - name: LOG_LEVEL\n            value: info",
    ),
    (
        "argocd repo secret",
        f"stringData:\n  type: git\n  url: https://github.com/acme/deploy\n  password: {_GHP}\n  username: not-used",
    ),
    ("k8s hand typed", "data:\n  password: aHVudGVyMg=="),
    (
        "k8s tls key",
        f"data:\n  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t{_b64(60)}\n  tls.key: {_enc('-----BEGIN RSA PRIVATE KEY-----' + chr(10) + _b64(300) + chr(10) + '-----END RSA PRIVATE KEY-----')}",
    ),
    # --- Terraform --------------------------------------------------------------------------------------------
    ("tfvars db password", f'region      = "eu-west-1"\ndb_username = "{_USER}"\ndb_password = "{_PW}"'),
    ("tfvars api token", f'cloudflare_api_token = "{_CF_TOKEN}"\nzone_id              = "{_hex(32)}"'),
    (
        "tf provider aws",
        f'provider "aws" {{\n  region     = "us-east-1"\n  access_key = "{_AKIA}"\n  secret_key = "{_AWS_SECRET}"\n}}',
    ),
    ("tf provider datadog", f'provider "datadog" {{\n  api_key = "{_DD_API}"\n  app_key = "{_DD_APP}"\n}}'),
    ("tf provider digitalocean", f'provider "digitalocean" {{\n  token = "{_DO_TOKEN}"\n}}'),
    (
        "tf resource password",
        f'resource "aws_db_instance" "main" {{\n  engine   = "postgres"\n  username = "{_USER}"\n  password = "{_HPW}"\n}}',
    ),
    (
        "tf plan output leak",
        f'  # aws_iam_access_key.ci will be created\n  + resource "aws_iam_access_key" "ci" {{\n      + secret = "{_AWS_SECRET}"\n      + user   = "ci"\n    }}',
    ),
    (
        "tf state json",
        f'{{"type": "random_password", "instances": [{{"attributes": {{"length": 24, "result": "{_PW2}", "special": true}}}}]}}',
    ),
    ("tfvars hand typed", 'admin_password = "Summer2024!"'),
    ("tf cli env", f"TF_VAR_github_token={_GHP} terraform apply -auto-approve"),
    # --- docker-compose ---------------------------------------------------------------------------------------
    (
        "compose env list",
        f"services:\n  db:\n    image: postgres:16\n    environment:\n      - POSTGRES_USER={_USER}\n      - POSTGRES_PASSWORD={_PW}\n      - POSTGRES_DB={_DB}",
    ),
    (
        "compose env map",
        f'  api:\n    build: .\n    environment:\n      DJANGO_SECRET_KEY: "{_DJ_SECRET}"\n      DEBUG: "0"',
    ),
    ("compose mysql root", f"    environment:\n      MYSQL_ROOT_PASSWORD: {_HPW2}\n      MYSQL_DATABASE: {_DB}"),
    (
        "compose minio",
        f"  minio:\n    image: minio/minio\n    environment:\n      MINIO_ROOT_USER: admin\n      MINIO_ROOT_PASSWORD: {_PW2}",
    ),
    ("compose command redis", f"  redis:\n    image: redis:7\n    command: redis-server --requirepass {_PW}"),
    (
        "compose hand typed",
        "    environment:\n      - RABBITMQ_DEFAULT_USER=admin\n      - RABBITMQ_DEFAULT_PASS=rabbit!Pass2024",
    ),
    (
        "dotenv block",
        f"DATABASE_URL=postgres://{_USER}:{_PW}@{_HOST}:5432/{_DB}\nREDIS_URL=redis://localhost:6379/0\nSENTRY_DSN={_SENTRY_DSN}\nMAILGUN_API_KEY={_MAILGUN}",
    ),
    # --- HTTP request dumps -----------------------------------------------------------------------------------
    (
        "http bearer dump",
        f"GET /api/v1/users/me HTTP/1.1\nHost: api.acme.io\nAuthorization: Bearer {_JWT}\nAccept: application/json",
    ),
    (
        "http basic dump",
        f"POST /oauth/token HTTP/1.1\nHost: auth.acme.io\nAuthorization: Basic {_BASIC}\nContent-Type: application/x-www-form-urlencoded\n\ngrant_type=client_credentials",
    ),
    (
        "http cookie dump",
        f"GET /dashboard HTTP/2\nhost: admin.acme.io\ncookie: sessionid={_SESSION}; csrftoken={_v(32)}\nuser-agent: Mozilla/5.0",
    ),
    (
        "http x-api-key",
        f"> POST /v1/messages HTTP/2\n> Host: api.anthropic.com\n> x-api-key: {_ANTHROPIC}\n> anthropic-version: 2023-06-01",
    ),
    (
        "http query api_key",
        f"GET https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={_GOOGLE_API} 200 OK",
    ),
    ("http query access_token", f"https://graph.facebook.com/v19.0/me/accounts?access_token=EAAB{_v(160)}"),
    (
        "http sas sig",
        f"https://acmeprod.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=rwdlac&se=2026-12-31T00:00:00Z&st=2026-01-01T00:00:00Z&spr=https&sig={_SAS_SIG}",
    ),
    (
        "http presigned s3",
        f"https://acme-exports.s3.amazonaws.com/report.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={_AKIA}%2F20261128%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261128T101500Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={_HEX64}",
    ),
    (
        "http devtools copy as curl",
        f"curl 'https://app.acme.io/api/graphql' -H 'accept: */*' -H 'cookie: _session_id={_hex(32)}; remember_user_token={_b64url(48)}' --data-raw '{{\"query\":\"{{me{{id}}}}\"}}'",
    ),
    (
        "http set-cookie response",
        f"HTTP/1.1 302 Found\nLocation: /home\nSet-Cookie: connect.sid=s%3A{_v(32, _URLSAFE)}.{_v(43, _URLSAFE)}; Path=/; HttpOnly",
    ),
    ("http private-token header", f"PRIVATE-TOKEN: {_GLPAT}"),
    ("http token header", f"Authorization: token {_GHP}"),
    (
        "http api key json body",
        f'POST /v3/send HTTP/1.1\nContent-Type: application/json\n\n{{"api_key": "{_v(40)}", "to": "ops@acme.io"}}',
    ),
    ("http hand typed bearer", "Authorization: Bearer abc123def456ghi789jkl012mno345pqr678"),
    ("http webhook url", f"POST {_SLACK_HOOK} -> 200 ok"),
    ("http query token", f"wss://stream.acme.io/v1/feed?token={_TOKEN_40}&channel=prices"),
    ("har json", f'{{"name": "Authorization", "value": "Bearer {_v(64, _URLSAFE)}"}}'),
    # --- stack traces and error messages ----------------------------------------------------------------------
    (
        "traceback sqlalchemy",
        f'sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to server at "{_HOST}", port 5432 failed: FATAL:  password authentication failed for user "{_USER}"\n(Background on this error at: https://sqlalche.me/e/20/e3q8)\n  engine = create_engine("postgresql+psycopg2://{_USER}:{_PW}@{_HOST}:5432/{_DB}")',
    ),
    (
        "node error mongo",
        f"MongoServerError: bad auth : Authentication failed.\n    at Connection.onMessage (node_modules/mongodb/lib/cmap/connection.js:202:26)\n  uri: 'mongodb://{_USER}:{_PW}@mongo-0.acme.internal:27017/admin'",
    ),
    (
        "java jdbc exception",
        f"org.postgresql.util.PSQLException: FATAL: password authentication failed\n\tat org.postgresql.core.v3.ConnectionFactoryImpl.doAuthentication\nCaused by: url=jdbc:postgresql://{_HOST}:5432/{_DB}?user={_USER}&password={_PW}",
    ),
    (
        "python requests error",
        f"requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://api.acme.io/v2/export?api_key={_TOKEN_32}&format=csv",
    ),
    (
        "redis error",
        f"redis.exceptions.AuthenticationError: invalid username-password pair or user is disabled.\nREDIS_URL was redis://default:{_PW2}@redis-12345.c1.us-east-1-2.ec2.cloud.redislabs.com:12345",
    ),
    ("django debug page", f"SECRET_KEY\t'{_DJ_SECRET}'\nSESSION_COOKIE_AGE\t1209600"),
    (
        "boto error",
        f"botocore.exceptions.ClientError: An error occurred (SignatureDoesNotMatch) when calling the GetObject operation\nDEBUG creds: access_key={_AKIA} secret_key={_AWS_SECRET}",
    ),
    (
        "go panic dsn",
        f"panic: dial tcp: lookup mysql: no such host\n\ngoroutine 1 [running]:\nmain.main()\n\t/app/main.go:42 +0x1d4\nDSN: {_USER}:{_PW}@tcp(mysql:3306)/{_DB}?parseTime=true",
    ),
    (
        "rails log params",
        f'Started POST "/users/sign_in" for 10.0.0.7\n  Parameters: {{"user"=>{{"email"=>"ana@acme.io", "password"=>"{_HPW}"}}, "commit"=>"Log in"}}',
    ),
    (
        "openai error",
        f"openai.AuthenticationError: Error code: 401 - {{'error': {{'message': 'Incorrect API key provided: {_OPENAI}. You can find your API key at https://platform.openai.com/account/api-keys.'}}}}",
    ),
    (
        "smtp error",
        f"smtplib.SMTPAuthenticationError: (535, b'5.7.8 Username and Password not accepted') while logging in as alerts@acme.io with password {_HPW2}",
    ),
    (
        "kafka jaas log",
        f'sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="{_v(16, _UPPER_DIGITS)}" password="{_v(64, _ALNUM + "+/")}";',
    ),
    (
        "nginx log token",
        f'10.0.0.5 - - [28/Nov/2026:10:12:44 +0000] "GET /export?access_token={_v(48, _URLSAFE)} HTTP/1.1" 200 5123',
    ),
    (
        "error hand typed",
        "Error: connect ECONNREFUSED 127.0.0.1:5432 — DATABASE_URL=postgres://admin:hunter2@localhost:5432/app",
    ),
    # --- code ------------------------------------------------------------------------------------------------
    (
        "python dict literal",
        f'config = {{\n    "host": "{_HOST}",\n    "user": "{_USER}",\n    "password": "{_PW}",\n    "database": "{_DB}",\n}}',
    ),
    ("python client ctor", f'client = OpenAI(api_key="{_OPENAI}")'),
    (
        "python boto3 ctor",
        f"s3 = boto3.client(\n    's3',\n    aws_access_key_id='{_AKIA}',\n    aws_secret_access_key='{_AWS_SECRET}',\n)",
    ),
    ("python stripe assign", f'stripe.api_key = "{_SK_LIVE}"'),
    (
        "jupyter cell",
        f'In [3]: import os\n   ...: os.environ.setdefault("HUGGINGFACEHUB_API_TOKEN", "{_HF}")\n   ...: llm = HuggingFaceHub(repo_id="mistralai/Mistral-7B-Instruct-v0.2")',
    ),
    (
        "jupyter json source",
        f'{{"cell_type": "code", "source": ["import anthropic\\n", "client = anthropic.Anthropic(api_key=\\"{_ANTHROPIC}\\")\\n"]}}',
    ),
    ("python settings", f"SECRET_KEY = '{_DJ_SECRET}'"),
    ("python tuple auth", f'resp = requests.get(url, auth=("{_USER}", "{_PW}"), timeout=10)'),
    ("python twilio", f'client = Client("{_TWILIO_SID}", "{_TWILIO_AUTH}")'),
    ("js process env assign", f"process.env.SENDGRID_API_KEY = '{_SENDGRID}';"),
    (
        "js config object",
        f"const firebaseAdminConfig = {{\n  projectId: 'acme-prod',\n  clientEmail: 'firebase-adminsdk-x1@acme-prod.iam.gserviceaccount.com',\n  privateKey: '{_FIREBASE_PRIV}',\n}};",
    ),
    ("js new client", f"const octokit = new Octokit({{ auth: '{_GHP}' }});"),
    ("ts axios header", f"axios.defaults.headers.common['Authorization'] = `Bearer {_TOKEN_40}`;"),
    (
        "go struct literal",
        f'cfg := &mysql.Config{{\n\tUser:   "{_USER}",\n\tPasswd: "{_PW}",\n\tNet:    "tcp",\n\tAddr:   "{_HOST}:3306",\n\tDBName: "{_DB}",\n}}',
    ),
    ("go const", f'const slackToken = "{_SLACK_BOT}"'),
    (
        "java builder",
        f'AmazonS3 s3 = AmazonS3ClientBuilder.standard()\n    .withCredentials(new AWSStaticCredentialsProvider(new BasicAWSCredentials("{_AKIA}", "{_AWS_SECRET}")))\n    .build();',
    ),
    (
        "java properties",
        f"spring.datasource.url=jdbc:mysql://{_HOST}:3306/{_DB}\nspring.datasource.username={_USER}\nspring.datasource.password={_PW}",
    ),
    (
        "csharp connection string",
        f'var conn = new SqlConnection("Server={_HOST};Database={_DB};User Id={_USER};Password={_PW};TrustServerCertificate=True");',
    ),
    (
        "csharp appsettings",
        f'{{\n  "ConnectionStrings": {{\n    "Default": "Host={_HOST};Database={_DB};Username={_USER};Password={_PW}"\n  }},\n  "Jwt": {{ "Key": "{_v(48)}" }}\n}}',
    ),
    ("ruby initializer", f"Stripe.api_key = '{_SK_LIVE}'"),
    ("ruby hash", f"Aws.config.update(credentials: Aws::Credentials.new('{_AKIA}', '{_AWS_SECRET}'))"),
    ("php define", f"define('DB_PASSWORD', '{_PW}');"),
    ("php array config", f"'mailgun' => [\n    'domain' => 'mg.acme.io',\n    'secret' => '{_MAILGUN}',\n],"),
    ("rust const", f'const API_KEY: &str = "{_LINEAR}";'),
    ("kotlin", f'val shopify = ShopifyClient(accessToken = "{_SHOPIFY}", shop = "acme-store")'),
    ("swift", f'let apiKey = "{_GOOGLE_API}"'),
    ("code hand typed", 'const client = new Stripe("sk_live_51H8xYzAbCdEfGhIjKlMnOpQr");'),
    ("code hand typed pw", 'db = psycopg2.connect(host="localhost", user="postgres", password="Passw0rd!2024")'),
    ("python webhook secret", f'endpoint_secret = "{_STRIPE_WHSEC}"'),
    (
        "bash script var",
        f'#!/bin/bash\nAPI_TOKEN="{_TOKEN_40}"\ncurl -H "Authorization: Bearer $API_TOKEN" https://api.acme.io/health',
    ),
    ("sql create user", f"CREATE USER {_USER} WITH PASSWORD '{_PW}';"),
    ("sql alter user", f"ALTER USER 'root'@'localhost' IDENTIFIED BY '{_HPW}';"),
    # --- chat prose ------------------------------------------------------------------------------------------
    ("chat staging key", f"here's the staging key, don't share: {_TOKEN_32}"),
    ("chat new db pw", f"new pw for the db is {_HPW}"),
    ("chat remember token", f"remember this: our Datadog API key is {_DD_API}, use it for the monitors"),
    ("chat hand typed hunter2", "fyi the password for the staging admin is hunter2"),
    ("chat hand typed pw2", "the wifi password at the office is Passw0rd!2024"),
    ("chat rotated", f"I rotated the Sentry token, the new one is {_hex(64)} (old one is revoked)"),
    ("chat login creds", f"creds for the test tenant: user {_USER} / pass {_PW}"),
    ("chat vault token", f"root token from the vault init: {_VAULT}"),
    ("chat german", f"Das neue Passwort für die Produktionsdatenbank lautet {_HPW2}"),
    ("chat french", f"le mot de passe du compte admin est {_PW}"),
    ("chat spanish", f"la contraseña del servidor FTP es {_HPW}"),
    ("chat portuguese", f"a senha do banco de homologação é {_PW2}"),
    ("chat italian", f"la password di root è {_HPW2}"),
    ("chat dutch", f"het wachtwoord voor de beheeromgeving is {_PW}"),
    ("chat polish", f"hasło do panelu to {_HPW}"),
    ("chat russian", f"пароль от сервера: {_PW2}"),
    ("chat japanese", f"本番DBのパスワードは {_PW} です"),
    ("chat chinese", f"测试环境的密钥是 {_TOKEN_32}，别外传"),
    ("chat korean", f"관리자 비밀번호는 {_HPW} 입니다"),
    ("chat turkish", f"sunucu şifresi: {_PW}"),
    ("chat api key colon", f"API key: {_v(40)}"),
    ("chat slack bot", f"bot token is {_SLACK_BOT}, scopes chat:write and channels:read"),
    ("chat hand typed key", "use this key for the demo: sk_live_abc123XYZ789def456"),
    ("chat pin", f"the 2FA backup codes for the AWS root account: {_digits(8)} {_digits(8)} {_digits(8)} {_digits(8)}"),
    (
        "chat ssh private key",
        f"here's the deploy key, paste it into ~/.ssh/id_ed25519:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n{_b64(120)}\n-----END OPENSSH PRIVATE KEY-----",
    ),
    ("chat pw in parens", f"log into the router (admin, pw {_HPW2}) and open port 8443"),
    (
        "chat email creds",
        f"mailbox alerts@acme.io, app password {_v(4, string.ascii_lowercase)} {_v(4, string.ascii_lowercase)} {_v(4, string.ascii_lowercase)} {_v(4, string.ascii_lowercase)}",
    ),
    # --- transcripts for the dreaming pass -------------------------------------------------------------------
    (
        "transcript user pastes key",
        f"User: can you wire up the Anthropic client? key is {_ANTHROPIC}\nAssistant: Sure, I'll read it from ANTHROPIC_API_KEY instead of hard-coding it.",
    ),
    (
        "transcript assistant repeats",
        f"User: deploy failed again\nAssistant: The log shows it used AWS_SECRET_ACCESS_KEY={_AWS_SECRET}; that key was deactivated yesterday, so the upload got a 403.",
    ),
    (
        "transcript user password",
        f"user: the sudo password on the build box is {_HPW}, run the upgrade\nassistant: Running apt-get upgrade on build-01 now.",
    ),
    (
        "transcript json turns",
        json.dumps(
            [
                {"role": "user", "content": f"here is my github token {_GHP} please push the branch"},
                {"role": "assistant", "content": "Pushed feature/search to origin."},
            ]
        ),
    ),
    (
        "transcript tool output",
        f"[tool_result] $ cat .env\nOPENAI_API_KEY={_OPENAI}\nDEBUG=true\n[assistant] I see the key is set; the error comes from the model name.",
    ),
    (
        "transcript hand typed",
        "Human: my db password is hunter2 btw, connect to prod\nAI: Connecting with the credentials you provided.",
    ),
    (
        "transcript markdown",
        f"**User:** set the webhook to {_SLACK_HOOK}\n\n**Assistant:** Done, alerts now post to #ops.",
    ),
    (
        "transcript assistant summary",
        f"Assistant: Summary of the session: configured the Twilio client with SID {_TWILIO_SID} and auth token {_TWILIO_AUTH}; sent a test SMS.",
    ),
    (
        "transcript user basic",
        f"User: try this: curl -u admin:{_PW} http://localhost:9200/_cat/indices\nAssistant: The cluster is yellow; two replicas unassigned.",
    ),
    (
        "transcript hf token",
        f"> user: huggingface-cli login --token {_HF}\n> assistant: Logged in; the model downloads now.",
    ),
    # --- misc places people paste ----------------------------------------------------------------------------
    ("npmrc", f"//npm.pkg.github.com/:_authToken={_GHP}\n@acme:registry=https://npm.pkg.github.com"),
    ("pgpass line", f"{_HOST}:5432:{_DB}:{_USER}:{_PW}"),
    ("netrc", f"machine api.heroku.com\n  login ana@acme.io\n  password {_uuid()}"),
    ("git credentials", f"https://{_USER}:{_GHP}@github.com"),
    ("ssh config + pw comment", f"Host bastion\n  HostName {_HOST}\n  User ubuntu\n  # password: {_HPW}"),
    ("ini file", f"[database]\nhost = {_HOST}\nuser = {_USER}\npassword = {_PW}\n\n[cache]\nttl = 300"),
    ("toml file", f'[tool.poetry.http-basic.private]\nusername = "{_USER}"\npassword = "{_PW2}"'),
    (
        "xml maven",
        f"<server>\n  <id>nexus-releases</id>\n  <username>{_USER}</username>\n  <password>{_PW}</password>\n</server>",
    ),
    (
        "json service account",
        json.dumps(
            {
                "type": "service_account",
                "project_id": "acme-prod",
                "private_key_id": _hex(40),
                "private_key": "-----BEGIN PRIVATE KEY-----\n" + _b64(600) + "\n-----END PRIVATE KEY-----\n",
                "client_email": "ci@acme-prod.iam.gserviceaccount.com",
            },
            indent=2,
        ),
    ),
    ("supabase service role", f"SUPABASE_SERVICE_ROLE_KEY={_JWT}"),
    (
        "jwt alone in prose",
        f"the token that fails is {_jwt({'sub': _digits(6), 'email': 'ana@acme.io', 'exp': _epoch()})}",
    ),
    ("rabbit url", f"CELERY_BROKER_URL = 'amqp://{_USER}:{_HPW}@rabbit.acme.internal:5672/prod'"),
    ("ldap bind", f"ldapsearch -x -H ldaps://ldap.acme.io -D 'cn=admin,dc=acme,dc=io' -w '{_PW}' -b 'dc=acme,dc=io'"),
    ("wp-config", f"define( 'AUTH_KEY',         '{_v(64, _ALNUM + '!@#$%^&*()-_[]{}<>~`+=,.;:/?|')}' );"),
    ("crontab", f"*/5 * * * * curl -s 'https://api.acme.io/ping?apikey={_TOKEN_32}' > /dev/null"),
    ("systemd unit", f'[Service]\nEnvironment="DB_PASSWORD={_PW}"\nExecStart=/opt/app/bin/server'),
    ("ansible vars", f'mysql_root_password: "{_HPW2}"\nmysql_databases:\n  - name: {_DB}'),
    ("hand typed yaml", "password: Welcome123!"),
    ("hand typed dsn", "mongodb://root:example123@mongo:27017/?authSource=admin"),
    ("hand typed aws", "aws_secret_access_key = Zx8mQ2pL9vR4tY7wK1nB5cF3hJ6gD0sA2eU8iO4q"),
    ("hand typed github", "token: ghp_1234567890abcdefghijABCDEFGHIJ123456"),
    ("hand typed slack hook", "https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/aBcDeFgHiJkLmNoPqRsTuVwX"),
]

KEEP_TEXTS: list[tuple[str, str]] = [
    (
        "gha secrets reference",
        "    env:\n      AWS_ACCESS_KEY_ID: ${{ secrets.AWS_ACCESS_KEY_ID }}\n      AWS_SECRET_ACCESS_KEY: ${{ secrets.AWS_SECRET_ACCESS_KEY }}",
    ),
    (
        "gha token reference",
        "      - uses: actions/checkout@v4\n        with:\n          token: ${{ secrets.GITHUB_TOKEN }}",
    ),
    (
        "gitlab masked variable ref",
        'script:\n  - docker login -u "$CI_REGISTRY_USER" -p "$CI_REGISTRY_PASSWORD" $CI_REGISTRY',
    ),
    ("shell export from vault", "export DB_PASSWORD=$(vault kv get -field=password secret/prod/db)"),
    ("shell export name only", "export OPENAI_API_KEY"),
    ("shell env var refs", 'psql "postgresql://$PGUSER:$PGPASSWORD@$PGHOST:5432/$PGDATABASE"'),
    ("aws configure interactive", "aws configure --profile prod   # paste the access key id and secret when prompted"),
    ("gh auth from file", "gh auth login --with-token < ~/.config/gh/token.txt"),
    ("docker login stdin var", 'echo "$DOCKERHUB_TOKEN" | docker login -u acmebot --password-stdin'),
    (
        "k8s secret ref",
        "        env:\n          - name: DB_PASSWORD\n            valueFrom:\n              secretKeyRef:\n                name: db-creds\n                key: password",
    ),
    (
        "k8s configmap",
        f"apiVersion: v1\nkind: ConfigMap\ndata:\n  LOG_LEVEL: info\n  FEATURE_FLAGS: search,export\n  BUILD_SHA: {_HEX40}",
    ),
    (
        "helm existing secret",
        "postgresql:\n  auth:\n    existingSecret: db-creds\n    secretKeys:\n      adminPasswordKey: postgres-password",
    ),
    ("helm placeholder", 'redis:\n  auth:\n    password: ""  # set with --set redis.auth.password=... at install time'),
    ("tf variable sensitive", 'variable "db_password" {\n  type      = string\n  sensitive = true\n}'),
    ("tf random password", 'resource "random_password" "db" {\n  length  = 24\n  special = true\n}'),
    (
        "tf var reference",
        'provider "aws" {\n  region     = var.region\n  access_key = var.aws_access_key\n  secret_key = var.aws_secret_key\n}',
    ),
    ("tf plan sensitive", '      + password = (sensitive value)\n      + username = "app"'),
    (
        "compose env from file",
        "    env_file:\n      - .env\n    environment:\n      - POSTGRES_PASSWORD_FILE=/run/secrets/db_password",
    ),
    ("compose var interpolation", "    environment:\n      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?set it in .env}"),
    (
        "dotenv example",
        "DATABASE_URL=postgres://user:password@localhost:5432/dbname\nSECRET_KEY=changeme\nSTRIPE_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx",
    ),
    ("redacted bearer", "Authorization: Bearer ***REDACTED***"),
    ("redacted curl", "curl -H 'Authorization: Bearer <YOUR_TOKEN>' https://api.acme.io/v2/jobs"),
    ("masked ci log", "[deploy] $ echo $DEPLOY_TOKEN\n[deploy] ***\n[deploy] $ ./scripts/release.sh"),
    ("etag header", f'HTTP/1.1 200 OK\nETag: "{_HEX32}"\nCache-Control: max-age=60'),
    ("request id", f"x-request-id: {_uuid()}\nx-amzn-trace-id: Root=1-{_hex(8)}-{_hex(24)}"),
    ("cookie consent", "Cookie: cookieconsent_status=dismiss; theme=dark; lang=en"),
    ("query page params", "GET /api/v1/search?q=redis+timeout&page=2&per_page=50 HTTP/1.1"),
    ("commit sha", f"fix landed in {_HEX40}, cherry-picked to release/2.3 as {_hex(12)}"),
    ("docker digest", f"image: ghcr.io/acme/api@sha256:{_HEX64}"),
    ("sha256sum output", f"{_hex(64)}  terraform_1.9.8_linux_amd64.zip"),
    ("md5 of file", f"md5sum backup.tar.gz -> {_hex(32)}"),
    ("uuid ids", f"tenant {_uuid()} has project {_uuid()}"),
    ("ssh public key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_v(43, _B64)} ana@laptop"),
    ("public cert", f"-----BEGIN CERTIFICATE-----\nMIID{_v(60, _B64)}\n{_v(64, _B64)}\n-----END CERTIFICATE-----"),
    ("publishable key", f"const stripe = Stripe('pk_live_{_v(24)}');"),
    ("stripe test key doc", "use sk_test_... keys locally; never commit sk_live_ keys"),
    ("vault path", "vault kv get secret/data/prod/payments/stripe"),
    ("aws arn", f"arn:aws:secretsmanager:eu-west-1:{_digits(12)}:secret:prod/db-password-{_v(6)}"),
    ("ssm parameter name", "aws ssm get-parameter --name /prod/api/DB_PASSWORD --with-decryption"),
    ("env names list", "Required: DATABASE_URL, REDIS_URL, SECRET_KEY, STRIPE_SECRET_KEY, SENTRY_DSN"),
    ("python env read", 'api_key = os.environ.get("OPENAI_API_KEY")\nclient = OpenAI(api_key=api_key)'),
    ("js env read", "const stripe = new Stripe(process.env.STRIPE_SECRET_KEY, { apiVersion: '2024-06-20' });"),
    ("go env read", 'token := os.Getenv("GITHUB_TOKEN")\nclient := github.NewClient(nil).WithAuthToken(token)'),
    ("password hash bcrypt", f"admin row: password_hash = $2b$12${_v(53, _ALNUM + './')}"),
    ("django password field", "password = models.CharField(max_length=128)"),
    ("password policy prose", "passwords must be at least 12 characters with one digit and one symbol"),
    (
        "hmac test vector",
        "RFC 4231 test case 1: key = 0x0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b, data = 'Hi There', HMAC-SHA256 = b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
    ),
    ("jwt docs example", "a JWT has three parts: header.payload.signature, each base64url-encoded"),
    ("chat about rotating", "I rotated the Sentry token this morning; the new one is in 1Password under 'Sentry CI'"),
    ("chat password question", "what's the password policy for the staging DB? I keep getting locked out"),
    ("chat german no value", "Das Passwort für die Datenbank liegt im Vault unter secret/prod/db"),
    ("chat spanish no value", "la contraseña está en el gestor de contraseñas del equipo"),
    (
        "transcript no secret",
        "User: why does the deploy fail with 403?\nAssistant: The CI role lacks s3:PutObject on the bucket; add it to the policy.",
    ),
    (
        "transcript reference",
        "User: use my GitHub token from the keychain\nAssistant: I'll read it with `security find-generic-password -s gh -w` at runtime.",
    ),
    ("api key placeholder yaml", "datadog:\n  apiKey: <DATADOG_API_KEY>\n  site: datadoghq.eu"),
    ("connection string no password", f"postgresql://{_USER}@{_HOST}:5432/{_DB}?sslmode=verify-full"),
    ("jdbc no password", f"jdbc:postgresql://{_HOST}:5432/{_DB}"),
    ("sentry public dsn doc", "SENTRY_DSN is read from the environment; leave it empty to disable reporting"),
    ("base64 of plain config", f"data:\n  config.yaml: {_enc('log_level: info' + chr(10) + 'workers: 4' + chr(10))}"),
    ("git log", f"commit {_HEX40}\nAuthor: Ana <ana@acme.io>\n\n    Rotate CI token (the old one leaked in a log)"),
    ("npm integrity", f'"integrity": "sha512-{_b64(64)}"'),
    ("semver and ports", "postgres 16.4 on port 5432, redis 7.2 on 6379, kafka 3.7 on 9092"),
    (
        "k8s service account token path",
        "the pod reads its token from /var/run/secrets/kubernetes.io/serviceaccount/token",
    ),
    ("otp prose", "the TOTP window is 30 seconds and codes are 6 digits"),
    ("placeholder password", 'password: "changeme"  # overridden by the chart in every real environment'),
    ("xxx placeholder", "export AWS_SECRET_ACCESS_KEY=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    ("gpg fingerprint", f"gpg fingerprint: {' '.join(_hex(4).upper() for _ in range(10))}"),
    (
        "base64 image",
        f"background: url(data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9h{_v(40, _B64)}AAAAAElFTkSuQmCC)",
    ),
    ("hash in chat", f"the file's sha1 is {_hex(40)} on both machines, so the upload wasn't corrupted"),
    ("sql with param", "UPDATE users SET password_hash = %s WHERE id = %s"),
]

# Vendors' documented sample values, which the project refuses like any key (docs/security.md).
POLICY_TEXTS: list[tuple[str, str]] = []


HELD_OUT_23: list[Form] = [(f"s23 {name}", fixed(text)) for name, text in SECRET_TEXTS]
HELD_OUT_23_KEEP: list[Form] = [(f"k23 keep {name}", fixed(text)) for name, text in KEEP_TEXTS]
REFUSED_BY_POLICY_23: list[Form] = [(f"k23 policy {name}", fixed(text)) for name, text in POLICY_TEXTS]

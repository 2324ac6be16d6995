"""The twenty-first held-out set, written before reading the scanner or any earlier set's texts.

HELD_OUT_21 are texts a developer pastes into a chat with an assistant that carry a secret; every one must be
refused. HELD_OUT_21_KEEP are ordinary developer texts that look close to a secret and are not (hashes, ids, public
keys, placeholders, redacted values, environment variable names alone, references to a vault, RFC and vendor
documentation test vectors); every one must be stored.

The angle of this set is where the secret sits rather than which vendor issued it: inside stack traces and HTTP
dumps (curl -v, HAR, request logs, HTTPie, wire logs), shell history (`export`, `-p`, `--password=`, `history`
output, `set -x` traces, PowerShell and fish), Terraform state, tfvars and provider blocks, Ansible vars and
inventories, Helm values and `--set`, GitHub Actions and GitLab CI logs, CI environment dumps, `docker inspect`,
signed URLs (S3 presigned, GCS v2 and v4, Azure SAS, CloudFront), SQL (`CREATE USER … PASSWORD`, `IDENTIFIED BY`,
user mappings), hard-coded constants in Go, Rust, Java, C#, Swift, Kotlin, PHP, Ruby, Elixir, Scala, Dart,
Objective-C, C, Lua, R, Perl, prose in twelve languages around a secret, unusual separators (`=>`, `:=`, `<-`, `?=`,
tabs, `->`), Markdown tables, the value named after it ("… ← that's the key"), and values wrapped over lines.
It also names providers an earlier set may not have: DigitalOcean, Supabase, PlanetScale, Neon, Doppler, 1Password,
Vault, Okta, Sentry, PostHog, LaunchDarkly, Contentful, Airtable, Notion, Linear, Asana, ClickUp, Atlassian, Figma,
Dropbox, HubSpot, Telegram, OpenRouter, Anthropic, Groq, Replicate, Hugging Face, Perplexity, xAI, Pinecone,
Databricks, Confluent, Tailscale, ngrok, Cloudinary, Mapbox, Shippo, EasyPost, age, WireGuard, Kubernetes bootstrap
and swarm join tokens, Kafka JAAS, New Relic, Postman, Google OAuth, Azure AD, Cosmos DB, Service Bus, Alibaba,
Tencent, Backblaze, Scaleway, Sourcegraph, Bitbucket, Resend, MailerSend, Stytch, Prefect, Facebook, Twitter/X,
Spotify, wallets (private keys, seed phrases) and a Travis CI token of letters only.

The random values are drawn from one seeded generator, so every run sees the same texts; bench.secret_reseed
re-runs the file with other seeds.
"""

# ruff: noqa: E501  (the texts are kept whole, one a line, as written before the first run; the values are drawn in
# this order from one seed, so a text cut by hand could change every text after it)

from __future__ import annotations

import json
import string
from urllib.parse import quote

from bench.secret_fill import Filler, enc, fixed, lines
from bench.secret_forms_9 import Form

_F = Filler(2121)
_R = _F.rng
_v = _F.v
_hex = _F.hex
_b64 = _F.b64
_b64url = _F.b64url
_uuid = _F.uuid
_jwt = _F.jwt
_pem = _F.pem
_ip = _F.ip
_epoch = _F.epoch
_ALNUM = string.ascii_letters + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_LETTERS = string.ascii_letters
_HEX = "0123456789abcdef"
_URLSAFE = _ALNUM + "-_"
_B64 = _ALNUM + "+/"
_B32U = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_WORDS = [
    "harbor", "quartz", "saffron", "tundra", "meadow", "falcon", "juniper", "marble", "orchid", "pepper",
    "ripple", "summit", "thistle", "umber", "velvet", "willow", "zephyr", "basalt", "clover", "dune",
]  # fmt: skip
_BIP39 = [
    "abandon", "ability", "absorb", "accident", "acoustic", "adapt", "aerobic", "affair", "agent", "alarm",
    "album", "alley", "anchor", "ankle", "antique", "arena", "armor", "arrow", "aspect", "atom", "auction",
    "autumn", "avocado", "awake", "bacon", "badge", "bamboo", "banner", "barrel", "battle", "beach", "believe",
    "bicycle", "blanket", "blossom", "bonus", "bracket", "bridge", "bubble", "cabin", "cactus", "canal",
]  # fmt: skip


def _pw(n: int = 14) -> str:
    """A generated password: letters, digits and a symbol or two, in no fixed place."""
    return _F.pw(n, "!#%*@-_+^", "!#%*^")


def _human_pw() -> str:
    """A password a person made up: two words, digits, a symbol."""
    a, b = _R.sample(_WORDS, 2)
    return f"{a.capitalize()}{_R.choice('-_.')}{b}{_R.randint(10, 9999)}{_R.choice('!?#&')}"


def _akia() -> str:
    return "AKIA" + _v(16, _UPPER_DIGITS)


def _aws_secret() -> str:
    return _v(40, _ALNUM + "/+")


def _word() -> str:
    return _R.choice(_WORDS)


_USER = _R.choice(["deploy", "svc_api", "ci-runner", "admin", "etl", "backup", "app_rw"])
_HOST = _R.choice(["db-prod-1.internal", "pg.acme.io", "10.0.3.17", "mysql.eu-west-1.rds.amazonaws.com"])
_BEARER = _jwt({"sub": _uuid(), "iss": "https://auth.acme.io/", "exp": _epoch(), "scope": "read write"}, "RS256", 256)
_SESSION = _b64url(32)
_BASIC = enc(f"{_USER}:{_pw()}")
_AWS_ID, _AWS_SECRET = _akia(), _aws_secret()
_SESSION_TOKEN = "FwoGZXIvYXdzE" + _v(300, _B64)
_AZ_SAS_SIG = quote(_b64(32), safe="")
_CF_SIG = _v(340, _URLSAFE + "~")
_GCS_V4_SIG = _hex(512)
_ACCT_KEY = _b64(64)
_SB_KEY = _b64(32)
_SSH_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    + lines("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" + _b64(380), 70)
    + "\n-----END OPENSSH PRIVATE KEY-----"
)
_SEED_WORDS = " ".join(_R.choice(_BIP39) for _ in range(12))
_ANTHROPIC = "sk-ant-api03-" + _v(93, _URLSAFE) + "AA"
_WRAPPED = "ghp_" + _v(36)
_LONG_JWT = _jwt(
    {
        "role": "service_role",
        "iss": "supabase",
        "ref": _v(20, string.ascii_lowercase),
        "iat": _epoch(),
        "exp": _epoch() + 10**8,
    }
)

SECRET_TEXTS: list[tuple[str, str]] = [
    # --- stack traces and HTTP dumps -------------------------------------------------------------------------
    (
        "curl -v request headers",
        f"* Connected to api.acme.io ({_ip()}) port 443 (#0)\n> GET /v2/orders HTTP/2\n> Host: api.acme.io\n> user-agent: curl/8.5.0\n> accept: */*\n> authorization: Bearer {_BEARER}\n>\n< HTTP/2 401\n< content-type: application/json",
    ),
    (
        "curl -v session cookie",
        f"> POST /admin/export HTTP/1.1\n> Host: internal.acme.io\n> Cookie: csrftoken={_v(32)}; sessionid={_v(32, _LOWER_DIGITS)}\n> Content-Length: 0\n< HTTP/1.1 500 Internal Server Error",
    ),
    (
        "HAR header entry",
        json.dumps(
            {
                "request": {
                    "method": "GET",
                    "url": "https://api.acme.io/me",
                    "headers": [
                        {"name": "Accept", "value": "application/json"},
                        {"name": "Authorization", "value": f"Basic {_BASIC}"},
                    ],
                }
            },
            indent=2,
        ),
    ),
    (
        "python traceback with DSN",
        f'Traceback (most recent call last):\n  File "/srv/app/db.py", line 14, in connect\n    conn = psycopg2.connect("host={_HOST} dbname=orders user={_USER} password={_pw(16)} sslmode=require")\n  File "/usr/lib/python3/dist-packages/psycopg2/__init__.py", line 122, in connect\npsycopg2.OperationalError: connection to server at "{_HOST}", port 5432 failed: timeout expired',
    ),
    (
        "java log before S3 exception",
        f"2025-03-11 09:12:44 DEBUG c.a.auth.AWSCredentialsProviderChain - Loading credentials from StaticCredentialsProvider(accessKey={_akia()}, secretKey={_aws_secret()})\n2025-03-11 09:12:45 ERROR c.a.s.s3.AmazonS3Client - com.amazonaws.services.s3.model.AmazonS3Exception: Access Denied (Service: Amazon S3; Status Code: 403; Error Code: AccessDenied)",
    ),
    (
        "nginx access log access_token",
        f'{_ip()} - - [11/Mar/2025:10:02:17 +0000] "GET /api/v1/feed?page=2&access_token={_v(48, _URLSAFE)} HTTP/1.1" 200 5123 "-" "okhttp/4.12.0"',
    ),
    (
        "requests wire log basic auth",
        f"send: b'POST /oauth/token HTTP/1.1\\r\\nHost: login.acme.io\\r\\nUser-Agent: python-requests/2.31.0\\r\\nAuthorization: Basic {enc(_uuid() + ':' + _v(40, _URLSAFE))}\\r\\nContent-Length: 29\\r\\n\\r\\n'\nreply: 'HTTP/1.1 400 Bad Request\\r\\n'",
    ),
    (
        "httpie output token header",
        f"$ http GET https://api.github.com/user 'Authorization:token ghp_{_v(36)}'\nHTTP/1.1 200 OK\nContent-Type: application/json; charset=utf-8",
    ),
    (
        "axios error config headers",
        f"AxiosError: Request failed with status code 403\n    at settle (node_modules/axios/lib/core/settle.js:19:12)\n  config: {{\n    url: 'https://api.acme.io/v1/jobs',\n    headers: {{ Accept: 'application/json', 'X-Api-Key': '{_v(40, _ALNUM)}' }},\n    method: 'post'\n  }}",
    ),
    (
        "go panic mysql dsn",
        f'panic: dial tcp {_ip()}:3306: connect: connection refused\n\ngoroutine 1 [running]:\nmain.mustOpen({{0xc000014090, 0x3a}})\n\t/app/main.go:31 +0x1c5\n// dsn was "{_USER}:{_pw(18)}@tcp({_ip()}:3306)/orders?parseTime=true"',
    ),
    (
        "ruby redis error url",
        f'Redis::CannotConnectError: Error connecting to Redis on cache.acme.io:6380 (Redis::TimeoutError)\n  url: "rediss://:{_v(32)}@cache.acme.io:6380/0"\n  from /usr/local/bundle/gems/redis-5.0.8/lib/redis/client.rb:80',
    ),
    (
        "json request log body password",
        json.dumps(
            {
                "ts": "2025-03-11T10:04:55Z",
                "level": "info",
                "method": "POST",
                "path": "/api/login",
                "status": 401,
                "body": {"email": "ops@acme.io", "password": _human_pw()},
            }
        ),
    ),
    (
        "postman collection apikey",
        json.dumps(
            {
                "auth": {
                    "type": "apikey",
                    "apikey": [
                        {"key": "value", "value": _v(32, _HEX), "type": "string"},
                        {"key": "key", "value": "X-API-Key", "type": "string"},
                    ],
                }
            },
            indent=1,
        ),
    ),
    (
        "raw http request x-auth-token",
        f'PUT /v3/projects/42 HTTP/1.1\nHost: api.cloud.acme.io\nX-Auth-Token: gAAAAAB{_v(180, _URLSAFE)}\nContent-Type: application/json\n\n{{"name": "demo"}}',
    ),
    (
        "set-cookie refresh token",
        f"< HTTP/1.1 200 OK\n< Set-Cookie: refresh_token={_v(64, _URLSAFE)}; Path=/auth; HttpOnly; Secure; SameSite=Strict\n< Content-Length: 2",
    ),
    (
        ".net exception connection string",
        f"System.Data.SqlClient.SqlException (0x80131904): Login failed for user 'sa'.\n   at System.Data.SqlClient.SqlInternalConnectionTds..ctor(...)\nConnectionString: Server=tcp:{_HOST},1433;Initial Catalog=Billing;User ID=sa;Password={_pw(15)};Encrypt=True;",
    ),
    (
        "kubectl describe pod env",
        f"Containers:\n  api:\n    Image:  ghcr.io/acme/api:1.8.2\n    Environment:\n      LOG_LEVEL:      info\n      DB_PASSWORD:    {_pw(20)}\n      DB_HOST:        postgres.default.svc",
    ),
    (
        "grpc metadata debug log",
        f"DEBUG grpc._channel: metadata=(('authorization', 'Bearer ya29.{_v(150, _URLSAFE)}'), ('x-goog-user-project', 'acme-prod'))",
    ),
    (
        "wget header in output",
        f'$ wget --header="PRIVATE-TOKEN: glpat-{_v(20, _URLSAFE)}" https://gitlab.acme.io/api/v4/projects\n--2025-03-11 10:11:02--  https://gitlab.acme.io/api/v4/projects\nHTTP request sent, awaiting response... 200 OK',
    ),
    (
        "sentry event query string",
        f'"request": {{"url": "https://shop.acme.io/checkout/callback", "query_string": "order=8812&signature={_hex(64)}&api_secret={_v(32)}", "method": "GET"}}',
    ),
    # --- shell history -------------------------------------------------------------------------------------
    (
        "history export aws",
        f"  511  cd infra\n  512  export AWS_ACCESS_KEY_ID={_akia()}\n  513  export AWS_SECRET_ACCESS_KEY={_aws_secret()}\n  514  terraform plan",
    ),
    ("mysql -p glued", f"$ mysql -h {_HOST} -u root -p{_pw(12)} orders < dump.sql"),
    ("docker login -p", f"docker login -u {_USER} -p {_pw(16)} registry.acme.io"),
    ("htpasswd -b", f"htpasswd -b -c /etc/nginx/.htpasswd admin {_human_pw()}"),
    ("git clone with token", f"git clone https://{_USER}:ghp_{_v(36)}@github.com/acme/infra.git"),
    ("curl -u", f"curl -u admin:{_pw(14)} -X POST https://jenkins.acme.io/job/deploy/build"),
    ("redis-cli -a", f"redis-cli -h cache.acme.io -p 6379 -a '{_pw(24)}' --no-auth-warning INFO"),
    (
        "mongosh --password=",
        f'mongosh "mongodb+srv://cluster0.{_v(5, _LOWER_DIGITS)}.mongodb.net/app" --username {_USER} --password={_pw(18)}',
    ),
    ("sshpass", f"sshpass -p '{_human_pw()}' ssh -o StrictHostKeyChecking=no {_USER}@{_ip()}"),
    (
        "kubectl from-literal",
        f"kubectl create secret generic db-creds --from-literal=username={_USER} --from-literal=password='{_pw(20)}' -n prod",
    ),
    ("vault login hvs", f"$ vault login hvs.{_v(24, _URLSAFE)}\nSuccess! You are now authenticated."),
    ("heroku config:set", f"heroku config:set SENDGRID_API_KEY=SG.{_v(22, _URLSAFE)}.{_v(43, _URLSAFE)} -a acme-prod"),
    ("gh auth here-string", f"gh auth login --with-token <<< 'github_pat_{_v(22)}_{_v(59)}'"),
    ("npm config set authToken", f"npm config set //registry.npmjs.org/:_authToken npm_{_v(36)}"),
    (
        "set -x trace",
        f"+ curl -sf -H 'Authorization: Bearer {_v(40, _LOWER_DIGITS)}' https://api.acme.io/deploy\n+ echo done\ndone",
    ),
    ("fish set -gx", f"set -gx OPENAI_API_KEY sk-proj-{_v(48, _URLSAFE)}T3BlbkFJ{_v(48, _URLSAFE)}"),
    ("powershell env", f'PS C:\\src> $env:AZURE_CLIENT_SECRET = "{_v(3)}8Q~{_v(31, _URLSAFE + ".~")}"'),
    (
        "az login sp",
        f"az login --service-principal -u {_uuid()} -p '{_v(4)}8Q~{_v(30, _URLSAFE + '.~')}' --tenant {_uuid()}",
    ),
    ("mc alias set", f"mc alias set prod https://minio.acme.io {_v(20, _UPPER_DIGITS)} {_v(40)}"),
    ("aws configure set", f"aws configure set aws_secret_access_key {_aws_secret()} --profile prod"),
    (
        "ldapsearch -w",
        f"ldapsearch -x -H ldaps://ldap.acme.io -D 'cn=admin,dc=acme,dc=io' -w '{_pw(14)}' -b 'dc=acme,dc=io'",
    ),
    ("openssl -k", f"openssl enc -aes-256-cbc -salt -pbkdf2 -in backup.tar -out backup.tar.enc -k {_human_pw()}"),
    ("pg_dump PGPASSWORD inline", f"PGPASSWORD='{_pw(16)}' pg_dump -h {_HOST} -U {_USER} orders > orders.sql"),
    ("zsh extended history", f": 1741690000:0;export STRIPE_SECRET_KEY=sk_live_{_v(99)}\n: 1741690012:0;npm run dev"),
    ("psql uri", f"psql 'postgresql://{_USER}:{_pw(16)}@{_HOST}:5432/orders?sslmode=require'"),
    ("smbclient -U user%pass", f"smbclient //fs01/share -U 'ACME\\{_USER}%{_human_pw()}'"),
    # --- terraform -----------------------------------------------------------------------------------------
    (
        "tfvars password",
        f'# prod.tfvars\nregion      = "eu-west-1"\ndb_password = "{_pw(20)}"\ninstance    = "db.r6g.large"',
    ),
    (
        "tfstate db attributes",
        json.dumps(
            {
                "mode": "managed",
                "type": "aws_db_instance",
                "name": "main",
                "instances": [
                    {"attributes": {"engine": "postgres", "username": _USER, "password": _pw(24), "port": 5432}}
                ],
            },
            indent=2,
        ),
    ),
    (
        "tfstate iam access key",
        json.dumps(
            {
                "type": "aws_iam_access_key",
                "instances": [
                    {"attributes": {"id": _akia(), "user": "ci", "secret": _aws_secret(), "status": "Active"}}
                ],
            },
            indent=2,
        ),
    ),
    (
        "provider block keys",
        f'provider "aws" {{\n  region     = "us-east-1"\n  access_key = "{_akia()}"\n  secret_key = "{_aws_secret()}"\n}}',
    ),
    ("TF_VAR export", f"export TF_VAR_client_secret='{_v(40, _URLSAFE)}'"),
    (
        "tfstate random_password",
        json.dumps(
            {
                "type": "random_password",
                "name": "db",
                "instances": [{"attributes": {"length": 24, "special": True, "result": _pw(24)}}],
            }
        ),
    ),
    (
        "azurerm provider secret",
        f'provider "azurerm" {{\n  features {{}}\n  client_id     = "{_uuid()}"\n  client_secret = "{_v(3)}8Q~{_v(31, _URLSAFE)}"\n  tenant_id     = "{_uuid()}"\n}}',
    ),
    ("cloudflare provider token", f'provider "cloudflare" {{\n  api_token = "{_v(40, _URLSAFE)}"\n}}'),
    ("datadog provider keys", f'provider "datadog" {{\n  api_key = "{_hex(32)}"\n  app_key = "{_hex(40)}"\n}}'),
    ("tfvars github token", f'github_owner = "acme"\ngithub_token = "ghp_{_v(36)}"'),
    # --- ansible, helm, CI logs, env dumps ------------------------------------------------------------------
    (
        "ansible group_vars become",
        f"# group_vars/prod.yml\nansible_user: {_USER}\nansible_become_pass: {_human_pw()}\nntp_server: time.acme.io",
    ),
    ("ansible mysql root", f'mysql_root_password: "{_pw(18)}"\nmysql_databases:\n  - name: orders'),
    ("ansible inventory ssh pass", f"[web]\nweb1 ansible_host={_ip()} ansible_user=root ansible_ssh_pass={_pw(14)}"),
    (
        "helm values postgres",
        f"postgresql:\n  enabled: true\n  auth:\n    username: app\n    password: {_pw(20)}\n    postgresPassword: {_pw(20)}\n    database: app",
    ),
    ("helm --set", f"helm upgrade --install redis bitnami/redis --set auth.password={_pw(22)} --namespace cache"),
    ("helm values minio", f"minio:\n  rootUser: admin\n  rootPassword: {_v(32)}\n  persistence:\n    size: 50Gi"),
    (
        "github actions log env",
        f"2025-03-11T10:20:01.1234567Z ##[group]Run npm publish\n2025-03-11T10:20:01.1234890Z npm publish --access public\n2025-03-11T10:20:01.1235012Z shell: /usr/bin/bash -e {{0}}\n2025-03-11T10:20:01.1235100Z env:\n2025-03-11T10:20:01.1235200Z   NODE_AUTH_TOKEN: npm_{_v(36)}\n2025-03-11T10:20:01.1235300Z ##[endgroup]",
    ),
    (
        "gitlab printenv",
        f"$ printenv | sort\nCI_COMMIT_SHA={_hex(40)}\nCI_PROJECT_NAME=api\nDEPLOY_TOKEN={_v(20, _URLSAFE)}\nGITLAB_USER_LOGIN=ops\nSENTRY_AUTH_TOKEN=sntrys_{_b64url(60)}",
    ),
    (
        "jenkins console",
        f"[Pipeline] sh\n+ docker login -u jenkins -p {_v(32, _LOWER_DIGITS)} nexus.acme.io:8443\nWARNING! Using --password via the CLI is insecure. Use --password-stdin.\nLogin Succeeded",
    ),
    (
        "ci env dump slack webhook",
        f"CI=true\nCIRCLE_BRANCH=main\nCIRCLE_BUILD_NUM=4821\nSLACK_WEBHOOK=https://hooks.slack.com/services/T{_v(8, _UPPER_DIGITS)}/B{_v(10, _UPPER_DIGITS)}/{_v(24)}",
    ),
    (
        "docker inspect env",
        json.dumps(
            {
                "Config": {
                    "Env": [
                        "PATH=/usr/local/sbin:/usr/local/bin",
                        f"POSTGRES_PASSWORD={_pw(18)}",
                        "PGDATA=/var/lib/postgresql/data",
                    ]
                }
            },
            indent=2,
        ),
    ),
    (
        "compose environment list",
        f"services:\n  db:\n    image: mysql:8\n    environment:\n      - MYSQL_ROOT_PASSWORD={_pw(16)}\n      - MYSQL_DATABASE=app",
    ),
    (
        "actions workflow service env",
        f"services:\n  postgres:\n    image: postgres:16\n    env:\n      POSTGRES_USER: ci\n      POSTGRES_PASSWORD: {_human_pw()}",
    ),
    (
        "buildkite env dump",
        f"~~~ Environment\nBUILDKITE_BRANCH=main\nBUILDKITE_AGENT_ACCESS_TOKEN={_v(50, _LOWER_DIGITS)}\nBUILDKITE_BUILD_NUMBER=912",
    ),
    # --- signed URLs --------------------------------------------------------------------------------------
    (
        "s3 presigned url",
        f"https://acme-exports.s3.eu-west-1.amazonaws.com/reports/q1.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={_akia()}%2F20250311%2Feu-west-1%2Fs3%2Faws4_request&X-Amz-Date=20250311T101500Z&X-Amz-Expires=604800&X-Amz-SignedHeaders=host&X-Amz-Signature={_hex(64)}",
    ),
    (
        "s3 presigned with session token",
        f"https://acme-uploads.s3.amazonaws.com/u/42/avatar.png?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=ASIA{_v(16, _UPPER_DIGITS)}%2F20250311%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20250311T101500Z&X-Amz-Expires=900&X-Amz-Security-Token={quote(_SESSION_TOKEN, safe='')}&X-Amz-SignedHeaders=host&X-Amz-Signature={_hex(64)}",
    ),
    (
        "gcs v4 signed url",
        f"https://storage.googleapis.com/acme-media/video/intro.mp4?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=uploader%40acme-prod.iam.gserviceaccount.com%2F20250311%2Fauto%2Fstorage%2Fgoog4_request&X-Goog-Date=20250311T101500Z&X-Goog-Expires=3600&X-Goog-SignedHeaders=host&X-Goog-Signature={_GCS_V4_SIG}",
    ),
    (
        "gcs v2 signed url",
        f"https://storage.googleapis.com/acme-media/a.pdf?GoogleAccessId=uploader@acme-prod.iam.gserviceaccount.com&Expires={_epoch()}&Signature={quote(_b64(256), safe='')}",
    ),
    (
        "azure account sas",
        f"https://acmedata.blob.core.windows.net/?sv=2022-11-02&ss=bfqt&srt=sco&sp=rwdlacupiytfx&se=2026-03-11T18:00:00Z&st=2025-03-11T10:00:00Z&spr=https&sig={_AZ_SAS_SIG}",
    ),
    (
        "azure blob sas in code",
        f'const url = "https://acmedata.blob.core.windows.net/backups/db.bak?sp=r&st=2025-03-11T10:00:00Z&se=2025-03-18T10:00:00Z&spr=https&sv=2022-11-02&sr=b&sig={quote(_b64(32), safe="")}";',
    ),
    (
        "cloudfront signed url",
        f"https://d1a2b3c4d5e6f7.cloudfront.net/courses/ep1.m3u8?Expires={_epoch()}&Signature={_CF_SIG}&Key-Pair-Id=K{_v(13, _UPPER_DIGITS)}",
    ),
    (
        "azure storage connection string",
        f"DefaultEndpointsProtocol=https;AccountName=acmedata;AccountKey={_ACCT_KEY};EndpointSuffix=core.windows.net",
    ),
    (
        "url api_key query",
        f"fetching https://api.weather-acme.io/v1/forecast?lat=52.52&lon=13.40&units=metric&api_key={_hex(32)} returns 429",
    ),
    # --- SQL ----------------------------------------------------------------------------------------------
    ("pg create user", f"CREATE USER reporting WITH PASSWORD '{_pw(18)}' VALID UNTIL 'infinity';"),
    ("pg alter user", f"ALTER USER postgres WITH PASSWORD '{_human_pw()}';"),
    (
        "mysql identified by",
        f"CREATE USER 'app'@'%' IDENTIFIED BY '{_pw(16)}';\nGRANT SELECT, INSERT ON orders.* TO 'app'@'%';",
    ),
    (
        "mysql grant identified",
        f"GRANT ALL PRIVILEGES ON *.* TO 'root'@'10.%' IDENTIFIED BY '{_pw(14)}' WITH GRANT OPTION;",
    ),
    ("mssql create login", f"CREATE LOGIN etl_user WITH PASSWORD = '{_pw(20)}', CHECK_POLICY = OFF;"),
    ("oracle identified by", f"ALTER USER scott IDENTIFIED BY {_v(12, _ALNUM)} ACCOUNT UNLOCK;"),
    ("insert api key row", f"INSERT INTO integrations (name, api_key) VALUES ('mailgun', 'key-{_hex(32)}');"),
    (
        "snowflake create user",
        f"CREATE USER loader PASSWORD = '{_pw(16)}' DEFAULT_ROLE = LOADER MUST_CHANGE_PASSWORD = FALSE;",
    ),
    (
        "postgres user mapping",
        f"CREATE USER MAPPING FOR app SERVER legacy OPTIONS (user 'legacy_ro', password '{_pw(16)}');",
    ),
    ("clickhouse plaintext", f"CREATE USER grafana IDENTIFIED WITH plaintext_password BY '{_human_pw()}';"),
    # --- hard-coded constants -----------------------------------------------------------------------------
    ("go const", f'package config\n\nconst stripeKey = "sk_live_{_v(24)}"'),
    (
        "go short var",
        f'func main() {{\n\tdbPassword := "{_pw(18)}"\n\tdb, _ := sql.Open("postgres", fmt.Sprintf("user=app password=%s", dbPassword))\n}}',
    ),
    ("rust const", f'const API_TOKEN: &str = "{_v(40, _URLSAFE)}";'),
    (
        "java static final",
        f'public final class Keys {{\n    private static final String CLIENT_SECRET = "{_v(32)}";\n}}',
    ),
    (
        "c# const connection",
        f'private const string Conn = "Host={_HOST};Username={_USER};Password={_pw(16)};Database=app";',
    ),
    (
        "swift let",
        f'enum Secrets {{\n    static let revenueCatKey = "sk_{_v(32)}"\n    static let apiSecret = "{_v(40)}"\n}}',
    ),
    ("kotlin const val", f'object Config {{\n    const val MAPS_SECRET = "{_v(40, _URLSAFE)}"\n}}'),
    ("php define", f"define('DB_PASSWORD', '{_pw(16)}');\ndefine('DB_HOST', 'localhost');"),
    ("php config array", f"$config['encryption_key'] = '{_v(32)}';"),
    ("ruby constant", f'API_SECRET = "{_hex(64)}".freeze'),
    ("elixir secret_key_base", f'config :acme, AcmeWeb.Endpoint,\n  secret_key_base: "{_v(64, _URLSAFE)}"'),
    ("scala val", f'val hmacSecret = "{_b64(32)}"'),
    ("dart const", f"const String kApiSecret = '{_v(40)}';"),
    ("objc static", f'static NSString *const kClientSecret = @"{_v(40)}";'),
    ("c define", f'#define DEVICE_SECRET "{_hex(32)}"\n#define FW_VERSION "2.4.1"'),
    ("lua local", f'local password = "{_pw(14)}"\nredis:auth(password)'),
    ("r setenv", f'Sys.setenv(OPENAI_API_KEY = "sk-{_v(48)}")'),
    ("perl my", f"my $dbpass = '{_pw(12)}';\nmy $dbh = DBI->connect($dsn, 'app', $dbpass);"),
    ("java aws credentials ctor", f'AWSCredentials creds = new BasicAWSCredentials("{_akia()}", "{_aws_secret()}");'),
    ("c# network credential", f'var cred = new NetworkCredential("{_USER}", "{_human_pw()}");'),
    ("kotlin okhttp basic", f'val auth = Credentials.basic("{_USER}", "{_pw(15)}")'),
    (
        "java jdbc getConnection",
        f'Connection c = DriverManager.getConnection("jdbc:postgresql://{_HOST}/app", "app", "{_pw(16)}");',
    ),
    (
        "go struct literal",
        f'cfg := mysql.Config{{User: "{_USER}", Passwd: "{_pw(16)}", Net: "tcp", Addr: "{_HOST}:3306"}}',
    ),
    # --- non-English prose --------------------------------------------------------------------------------
    ("german prose", f"Hier ist das Passwort für die Produktionsdatenbank: {_human_pw()} – bitte nicht weitergeben."),
    ("french prose", f"Le mot de passe du compte admin est {_pw(12)}, je l'ai changé hier."),
    ("spanish prose", f"La contraseña del servidor de staging es {_human_pw()} (usuario {_USER})."),
    ("portuguese prose", f"A senha do banco é {_pw(13)} e o usuário é {_USER}."),
    ("japanese prose", f"本番環境のAPIキーはこれです: {_v(40)} 使い終わったら教えてください。"),
    ("chinese prose", f"数据库密码是 {_pw(14)} ，请帮我检查连接配置。"),
    ("russian prose", f"Пароль от базы: {_human_pw()}, логин {_USER}."),
    ("korean prose", f"관리자 비밀번호는 {_pw(12)} 입니다. 배포 스크립트에 넣어 주세요."),
    ("italian prose", f"la password del server FTP è {_human_pw()}"),
    ("polish prose", f"hasło do panelu: {_pw(12)}"),
    ("turkish prose", f"Sunucu şifresi {_human_pw()} olarak ayarlandı."),
    ("dutch prose", f"Het wachtwoord voor de database is {_pw(14)}."),
    # --- unusual separators -------------------------------------------------------------------------------
    ("ruby hash rocket", f"Client.new('api_key' => '{_hex(32)}', 'api_secret' => '{_v(40)}')"),
    ("go := token", f'token := "{_v(40, _LOWER_DIGITS)}"'),
    ("r arrow", f'api_secret <- "{_v(32)}"'),
    ("tab separated", f"NAME\tVALUE\nREGION\teu-west-1\nAUTH_SECRET\t{_v(44, _URLSAFE)}"),
    ("makefile ?=", f"REGISTRY ?= registry.acme.io\nREGISTRY_PASSWORD ?= {_pw(18)}"),
    ("makefile :=", f"SIGNING_KEY := {_b64(32)}"),
    ("erlang tuple", f'{{password, "{_pw(14)}"}},\n{{host, "{_HOST}"}}'),
    ("nix attr", f'services.grafana.settings.security.admin_password = "{_human_pw()}";'),
    ("csv secrets export", f"name,value,env\nSTRIPE_SECRET,sk_live_{_v(24)},prod\nLOG_LEVEL,info,prod"),
    ("arrow ->", f"prod webhook secret -> whsec_{_v(32)}"),
    ("properties colon", f"spring.datasource.username:{_USER}\nspring.datasource.password:{_pw(16)}"),
    ("toml inline table", f'[database]\ncredentials = {{ user = "{_USER}", pass = "{_pw(16)}" }}'),
    # --- markdown tables ----------------------------------------------------------------------------------
    (
        "md table keys per env",
        f"| Env | Stripe key |\n|-----|------------|\n| staging | sk_test_{_v(24)} |\n| prod | sk_live_{_v(24)} |",
    ),
    (
        "md table service creds",
        f"| Service | User | Password |\n|---|---|---|\n| RabbitMQ | {_USER} | {_pw(14)} |\n| Grafana | admin | {_human_pw()} |",
    ),
    (
        "md table name value",
        f"| Name | Value |\n| --- | --- |\n| `GITHUB_TOKEN` | `ghp_{_v(36)}` |\n| `NODE_ENV` | `production` |",
    ),
    (
        "md table tokens with notes",
        f"| Token | Scope | Expires |\n|:--|:--|:--|\n| `{_v(40, _LOWER_DIGITS)}` | admin, write | never |",
    ),
    # --- value first, quoting, wrapping ------------------------------------------------------------------
    ("value before label", f"{_ANTHROPIC}  <- that's the prod key, can you check why it returns 401?"),
    ("value then is-the-password", f"`{_pw(16)}` is the root password on the new box"),
    ("typographic quotes", f"my token is “{_v(40, _LOWER_DIGITS)}” and it expires Friday"),
    (
        "backtick quoted secret key",
        f"Set the `SECRET_KEY` to `{_v(50, string.ascii_letters + string.digits + '!@#$%^&*(-_=+)')}` in prod settings.",
    ),
    ("python raw string", f"password = r'{_pw(14)}\\x'"),
    ("wrapped github token", f"here is the token i got:\n{_WRAPPED[:20]}\n{_WRAPPED[20:]}"),
    ("wrapped jwt in chat", "service role key (it got wrapped):\n" + lines(_LONG_JWT, 76)),
    (
        "line continuation",
        f"curl https://api.acme.io/v1/sync \\\n  -H 'Content-Type: application/json' \\\n  -H 'X-Api-Secret: {_v(40)}' \\\n  -d '{{}}'",
    ),
    ("json concat strings", f'"apiKey": "{_v(20)}" + "{_v(20)}",'),
    # --- providers ----------------------------------------------------------------------------------------
    ("digitalocean token", f"DIGITALOCEAN_TOKEN=dop_v1_{_hex(64)}"),
    ("supabase service role", f"SUPABASE_SERVICE_ROLE_KEY={_LONG_JWT}"),
    ("supabase access token", f"supabase login --token sbp_{_hex(40)}"),
    (
        "planetscale password",
        f"DATABASE_URL='mysql://{_v(12, _LOWER_DIGITS)}:pscale_pw_{_v(43, _URLSAFE)}@aws.connect.psdb.cloud/app?sslaccept=strict'",
    ),
    ("planetscale service token", f"PLANETSCALE_SERVICE_TOKEN=pscale_tkn_{_v(43, _URLSAFE)}"),
    ("neon api key", f"NEON_API_KEY=napi_{_v(64, _LOWER_DIGITS)}"),
    ("doppler service token", f"DOPPLER_TOKEN=dp.st.prd.{_v(43)}"),
    ("1password service account", f"OP_SERVICE_ACCOUNT_TOKEN=ops_eyJ{_v(300, _URLSAFE)}"),
    ("okta ssws", f"Authorization: SSWS 00{_v(40, _URLSAFE)}"),
    ("sentry user token", f"SENTRY_AUTH_TOKEN=sntryu_{_hex(64)}"),
    ("posthog personal key", f"POSTHOG_PERSONAL_API_KEY=phx_{_v(43)}"),
    ("launchdarkly sdk key", f"LD_SDK_KEY=sdk-{_uuid()}"),
    ("contentful cma", f"CONTENTFUL_MANAGEMENT_TOKEN=CFPAT-{_v(43, _URLSAFE)}"),
    ("airtable pat", f"AIRTABLE_TOKEN=pat{_v(14)}.{_hex(64)}"),
    ("notion integration", f"const notion = new Client({{ auth: 'ntn_{_v(11, string.digits)}{_v(35)}' }})"),
    ("linear api key", f"LINEAR_API_KEY=lin_api_{_v(40)}"),
    ("asana pat", f"ASANA_PAT=2/{_R.randint(10**15, 10**16 - 1)}/{_R.randint(10**15, 10**16 - 1)}:{_hex(32)}"),
    ("clickup token", f"CLICKUP_TOKEN=pk_{_R.randint(10**7, 10**8 - 1)}_{_v(32, _UPPER_DIGITS)}"),
    ("atlassian api token", f"JIRA_API_TOKEN=ATATT3xFfGF0{_v(170, _URLSAFE)}={_v(8, _UPPER_DIGITS)}"),
    ("figma token", f"FIGMA_TOKEN=figd_{_v(40, _URLSAFE)}"),
    ("dropbox short-lived", f"DROPBOX_ACCESS_TOKEN=sl.{_v(136, _URLSAFE)}"),
    ("hubspot private app", f"HUBSPOT_ACCESS_TOKEN=pat-na1-{_uuid()}"),
    ("telegram bot token", f"bot = telebot.TeleBot('{_R.randint(10**9, 10**10 - 1)}:AA{_v(33, _URLSAFE)}')"),
    ("openrouter key", f"OPENROUTER_API_KEY=sk-or-v1-{_hex(64)}"),
    ("groq key", f'client = Groq(api_key="gsk_{_v(52)}")'),
    ("replicate token", f"REPLICATE_API_TOKEN=r8_{_v(37)}"),
    ("huggingface token", f"huggingface-cli login --token hf_{_v(34, _LETTERS)}"),
    ("perplexity key", f"PPLX_API_KEY=pplx-{_v(48)}"),
    ("xai key", f"XAI_API_KEY=xai-{_v(80)}"),
    ("pinecone key", f"pc = Pinecone(api_key='pcsk_{_v(6)}_{_v(60, _URLSAFE)}')"),
    ("databricks pat", f"DATABRICKS_TOKEN=dapi{_hex(32)}"),
    (
        "confluent jaas",
        f'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="{_v(16, _UPPER_DIGITS)}" password="{_v(64, _B64)}";',
    ),
    ("tailscale auth key", f"tailscale up --authkey=tskey-auth-{_v(12)}CNTRL-{_v(32)}"),
    ("ngrok authtoken", f"ngrok config add-authtoken 2{_v(26)}_{_v(21)}"),
    ("cloudinary url", f"CLOUDINARY_URL=cloudinary://{_R.randint(10**14, 10**15 - 1)}:{_v(27, _URLSAFE)}@acme"),
    ("mapbox secret token", f"MAPBOX_DOWNLOADS_TOKEN=sk.eyJ1IjoiYWNtZSIsImEiOiJ{_v(20)}.{_v(22, _URLSAFE)}"),
    ("shippo live", f"SHIPPO_API_KEY=shippo_live_{_hex(40)}"),
    ("easypost key", f"EasyPost::Client.new(api_key: 'EZAK{_hex(54)}')"),
    (
        "age secret key",
        f"# created: 2025-03-11T10:30:00Z\n# public key: age1{_v(58, _BECH32)}\nAGE-SECRET-KEY-1{_v(58, _BECH32.upper())}",
    ),
    ("wireguard private key", f"[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {_b64(32)}\nDNS = 1.1.1.1"),
    ("openssh private key", _SSH_KEY),
    (
        "k8s bootstrap token",
        f"kubeadm join {_ip()}:6443 --token {_v(6, _LOWER_DIGITS)}.{_v(16, _LOWER_DIGITS)} --discovery-token-ca-cert-hash sha256:{_hex(64)}",
    ),
    (
        "swarm join token",
        f"docker swarm join --token SWMTKN-1-{_v(50, _LOWER_DIGITS)}-{_v(25, _LOWER_DIGITS)} {_ip()}:2377",
    ),
    ("rabbitmq amqp url", f"CELERY_BROKER_URL=amqps://{_USER}:{_pw(18)}@rabbit.acme.io:5671/prod"),
    ("new relic user key", f"NEW_RELIC_API_KEY=NRAK-{_v(27, _UPPER_DIGITS)}"),
    ("postman api key", f"POSTMAN_API_KEY=PMAK-{_hex(24)}-{_hex(34)}"),
    (
        "google oauth client secret",
        json.dumps(
            {
                "web": {
                    "client_id": f"{_R.randint(10**11, 10**12 - 1)}-{_v(32, _LOWER_DIGITS)}.apps.googleusercontent.com",
                    "client_secret": f"GOCSPX-{_v(28, _URLSAFE)}",
                    "redirect_uris": ["http://localhost:8080/callback"],
                }
            }
        ),
    ),
    ("cosmos db key", f"COSMOS_KEY={_b64(64)}"),
    (
        "service bus connection",
        f"Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={_SB_KEY}",
    ),
    ("alibaba access key", f"ALIBABA_CLOUD_ACCESS_KEY_ID=LTAI{_v(20)}\nALIBABA_CLOUD_ACCESS_KEY_SECRET={_v(30)}"),
    ("tencent secret", f'cred = credential.Credential("AKID{_v(32)}", "{_v(32)}")'),
    ("backblaze app key", f"B2_APPLICATION_KEY_ID=00{_hex(23)}\nB2_APPLICATION_KEY=K00{_v(28, _ALNUM + '/+')}"),
    ("scaleway secret", f"SCW_ACCESS_KEY=SCW{_v(17, _UPPER_DIGITS)}\nSCW_SECRET_KEY={_uuid()}"),
    ("sourcegraph token", f"SRC_ACCESS_TOKEN=sgp_{_hex(16)}_{_hex(40)}"),
    (
        "bitbucket app password",
        f"git remote set-url origin https://{_USER}:ATBB{_v(32)}{_v(8, _UPPER_DIGITS)}@bitbucket.org/acme/api.git",
    ),
    ("resend key", f"const resend = new Resend('re_{_v(8)}_{_v(24)}');"),
    ("mailersend token", f"MAILERSEND_API_KEY=mlsn.{_hex(64)}"),
    ("stytch secret", f"STYTCH_SECRET=secret-live-{_v(36, _URLSAFE)}"),
    ("prefect key", f"prefect cloud login -k pnu_{_v(36)}"),
    ("facebook page token", f"FB_PAGE_TOKEN=EAA{_v(180)}"),
    ("twitter bearer", f"TWITTER_BEARER_TOKEN=AAAAAAAAAAAAAAAAAAAAA{_v(30)}%3D{_v(50)}"),
    ("spotify client secret", f"SPOTIPY_CLIENT_ID={_hex(32)}\nSPOTIPY_CLIENT_SECRET={_hex(32)}"),
    ("eth private key", f"PRIVATE_KEY=0x{_hex(64)}  # deployer wallet for hardhat"),
    ("seed phrase", f"wallet recovery phrase (don't lose it): {_SEED_WORDS}"),
    ("travis token letters only", f"travis login --github-token {_v(22, _LETTERS)}\ntravis env set DEPLOY_KEY x"),
    ("travis env letters only", f"TRAVIS_TOKEN={_v(22, _LETTERS)}"),
    ("aws session token env", f"export AWS_SESSION_TOKEN={_SESSION_TOKEN}"),
    ("pgp private key", _pem("PGP PRIVATE KEY BLOCK", 900)),
]

KEEP_TEXTS: list[tuple[str, str]] = [
    # --- stack traces and HTTP dumps without secrets --------------------------------------------------------
    (
        "curl -v no auth",
        f'* Connected to api.acme.io ({_ip()}) port 443\n> GET /healthz HTTP/2\n> Host: api.acme.io\n> user-agent: curl/8.5.0\n< HTTP/2 200\n< etag: "{_hex(32)}"\n< x-request-id: {_uuid()}',
    ),
    ("curl bearer variable", 'curl -H "Authorization: Bearer $API_TOKEN" https://api.acme.io/v1/me'),
    ("curl bearer placeholder", "curl -H 'Authorization: Bearer <your-token-here>' https://api.acme.io/v1/me"),
    (
        "HAR redacted",
        json.dumps(
            {
                "request": {
                    "headers": [
                        {"name": "Authorization", "value": "[REDACTED]"},
                        {"name": "Cookie", "value": "[REDACTED]"},
                    ]
                }
            }
        ),
    ),
    (
        "python traceback plain",
        f'Traceback (most recent call last):\n  File "/srv/app/tasks.py", line 88, in run\n    result = client.fetch(job_id="{_uuid()}")\nKeyError: \'items\'\n<Task object at 0x7f{_hex(10)}>',
    ),
    (
        "go panic addresses",
        f"panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x{_hex(6)}]\n\ngoroutine 42 [running]:\nmain.(*Server).handle(0xc0000{_hex(5)}, {{0x{_hex(7)}, 0xc0000{_hex(5)}}})",
    ),
    (
        "java stack hash codes",
        f"java.lang.IllegalStateException: Pool closed\n\tat com.zaxxer.hikari.pool.HikariPool.getConnection(HikariPool.java:172)\n\tat com.acme.OrderRepo@{_hex(8)}.find(OrderRepo.java:51)",
    ),
    (
        "aws response headers",
        f"< HTTP/1.1 403 Forbidden\n< x-amz-request-id: {_v(16, _UPPER_DIGITS)}\n< x-amz-id-2: {_b64(54)}\n< x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ),
    ("w3c traceparent", f"traceparent: 00-{_hex(32)}-{_hex(16)}-01"),
    (
        "json request log masked",
        json.dumps(
            {
                "method": "POST",
                "path": "/api/login",
                "status": 200,
                "body": {"email": "ops@acme.io", "password": "********"},
            }
        ),
    ),
    ("csp nonce header", f"content-security-policy: script-src 'self' 'nonce-{_b64(16)}'; object-src 'none'"),
    (
        "pkce challenge url",
        f"https://auth.acme.io/authorize?response_type=code&client_id=web-app&code_challenge={_b64url(32)}&code_challenge_method=S256&redirect_uri=https%3A%2F%2Facme.io%2Fcb",
    ),
    # --- shell history without values --------------------------------------------------------------------
    (
        "mysql -p prompt",
        f"$ mysql -h {_HOST} -u root -p\nEnter password:\nERROR 1045 (28000): Access denied for user 'root'@'10.0.3.4' (using password: YES)",
    ),
    ("docker login stdin", "cat ~/.config/registry.pw | docker login -u deploy --password-stdin registry.acme.io"),
    ("export from vault", "export AWS_SECRET_ACCESS_KEY=$(vault kv get -field=secret_key secret/aws/ci)"),
    ("kubectl read secret cmd", "kubectl get secret db-creds -n prod -o jsonpath='{.data.password}' | base64 -d"),
    (
        "history ordinary",
        "  498  git pull --rebase\n  499  make test\n  500  export PATH=$HOME/.local/bin:$PATH\n  501  export NODE_ENV=production",
    ),
    (
        "env names alone",
        "You need STRIPE_SECRET_KEY, OPENAI_API_KEY and DATABASE_URL set before `npm run dev`; ask in #infra for the values.",
    ),
    (
        "powershell env from keyvault",
        "$env:AZURE_CLIENT_SECRET = (Get-AzKeyVaultSecret -VaultName acme-kv -Name sp-secret -AsPlainText)",
    ),
    (
        "ssh-keygen fingerprint",
        f"$ ssh-keygen -lf ~/.ssh/id_ed25519.pub\n256 SHA256:{_b64(32).rstrip('=')} ops@laptop (ED25519)",
    ),
    # --- terraform, ansible, helm, CI without values ---------------------------------------------------------
    (
        "terraform plan sensitive",
        '  + resource "aws_db_instance" "main" {\n      + engine   = "postgres"\n      + password = (sensitive value)\n      + username = "app"\n    }',
    ),
    (
        "terraform var reference",
        'provider "aws" {\n  access_key = var.aws_access_key\n  secret_key = var.aws_secret_key\n}',
    ),
    (
        "tfstate ids only",
        json.dumps(
            {
                "type": "aws_security_group",
                "instances": [
                    {
                        "attributes": {
                            "id": f"sg-0{_hex(16)}",
                            "arn": f"arn:aws:ec2:eu-west-1:{_R.randint(10**11, 10**12 - 1)}:security-group/sg-0{_hex(16)}",
                            "vpc_id": f"vpc-0{_hex(16)}",
                        },
                        "sensitive_attributes": [["password"]],
                    }
                ],
            }
        ),
    ),
    (
        "ansible vault reference",
        "ansible_become_pass: \"{{ vault_become_pass }}\"\nmysql_root_password: \"{{ lookup('env', 'MYSQL_ROOT_PASSWORD') }}\"",
    ),
    (
        "helm existing secret",
        "postgresql:\n  auth:\n    existingSecret: db-credentials\n    secretKeys:\n      adminPasswordKey: postgres-password\n      userPasswordKey: password",
    ),
    (
        "helm template ref",
        "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: {{ .Release.Name }}-db\n        key: password",
    ),
    (
        "github actions masked",
        f"2025-03-11T10:20:01.1235100Z env:\n2025-03-11T10:20:01.1235200Z   NODE_AUTH_TOKEN: ***\n2025-03-11T10:20:01.1235300Z   GITHUB_SHA: {_hex(40)}",
    ),
    (
        "ci env dump ordinary",
        f"CI=true\nGITHUB_RUN_ID={_R.randint(10**9, 10**10 - 1)}\nGITHUB_SHA={_hex(40)}\nRUNNER_OS=Linux\nGITHUB_REF=refs/heads/main\nRUNNER_TEMP=/home/runner/work/_temp",
    ),
    (
        "actions secrets ref",
        "env:\n  NPM_TOKEN: ${{ secrets.NPM_TOKEN }}\n  AWS_ACCESS_KEY_ID: ${{ secrets.AWS_ACCESS_KEY_ID }}",
    ),
    (
        "compose env from file",
        "services:\n  db:\n    image: postgres:16\n    env_file: .env\n    environment:\n      POSTGRES_PASSWORD_FILE: /run/secrets/db_password",
    ),
    (
        "k8s caBundle",
        f"webhooks:\n- name: validate.acme.io\n  clientConfig:\n    caBundle: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t{_b64(300)}",
    ),
    (
        "k8s uid resourceVersion",
        f'metadata:\n  name: api-7d9f8\n  uid: {_uuid()}\n  resourceVersion: "{_R.randint(10**6, 10**8)}"',
    ),
    # --- URLs without signatures ---------------------------------------------------------------------------
    ("s3 plain url", f"https://acme-exports.s3.eu-west-1.amazonaws.com/reports/{_uuid()}.csv"),
    ("gcs public url", "https://storage.googleapis.com/acme-public/fonts/Inter-Regular.woff2"),
    ("azure blob url no sas", "https://acmedata.blob.core.windows.net/public/logo.svg"),
    ("url with ids", f"https://app.acme.io/projects/{_uuid()}/runs/{_hex(24)}?tab=logs&page=3"),
    (
        "s3 presigned explained",
        "A presigned URL carries X-Amz-Signature and X-Amz-Credential; keep the expiry short (X-Amz-Expires=300).",
    ),
    # --- SQL without values ------------------------------------------------------------------------------
    ("psql variable password", "\\set pw `cat /run/secrets/reporting_pw`\nCREATE USER reporting WITH PASSWORD :'pw';"),
    ("sql placeholder password", "CREATE USER app WITH PASSWORD '<password>';  -- fill in from the vault"),
    (
        "sql grants only",
        "GRANT SELECT ON ALL TABLES IN SCHEMA public TO reporting;\nALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO reporting;",
    ),
    (
        "sql password hash column",
        "ALTER TABLE users ADD COLUMN password_hash text NOT NULL, ADD COLUMN api_key_prefix char(8);",
    ),
    # --- code reading from the environment -----------------------------------------------------------------
    ("go getenv", 'apiKey := os.Getenv("API_KEY")\nif apiKey == "" {\n\tlog.Fatal("API_KEY not set")\n}'),
    ("rust env var", 'let token = std::env::var("GITHUB_TOKEN").expect("GITHUB_TOKEN");'),
    ("java @Value", '@Value("${spring.datasource.password}")\nprivate String password;'),
    ("c# configuration", 'var secret = builder.Configuration["Stripe:SecretKey"];'),
    ("swift keychain", 'let token = try keychain.get("apiToken") ?? ""'),
    ("php getenv", "$pass = getenv('DB_PASSWORD') ?: throw new RuntimeException('DB_PASSWORD');"),
    ("ruby credentials", "Stripe.api_key = Rails.application.credentials.dig(:stripe, :secret_key)"),
    ("kotlin BuildConfig", "val key = BuildConfig.MAPS_API_KEY // injected from local.properties, not committed"),
    # --- non-English prose without values --------------------------------------------------------------------
    ("german no value", "Das Passwort steht im Tresor (1Password), nicht im Repository."),
    ("japanese no value", "パスワードは環境変数 DB_PASSWORD から読み込みます。"),
    ("spanish no value", "La contraseña se rota cada 90 días con el script rotate_keys.sh."),
    ("chinese no value", "密码存放在 Vault 的 secret/data/db 路径下，不要写进代码。"),
    # --- public keys, hashes, test vectors, redactions ----------------------------------------------------------
    ("wireguard public key", f"[Peer]\nPublicKey = {_b64(32)}\nAllowedIPs = 10.8.0.0/24\nEndpoint = vpn.acme.io:51820"),
    ("ssh public key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_b64(32).rstrip('=')} ops@laptop"),
    ("age recipient", f"age -r age1{_v(58, _BECH32)} -o secrets.tar.age secrets.tar"),
    ("mapbox public token", f"mapboxgl.accessToken = 'pk.eyJ1IjoiYWNtZSIsImEiOiJ{_v(20)}.{_v(22, _URLSAFE)}';"),
    ("posthog project key", f"posthog.init('phc_{_v(43)}', {{ api_host: 'https://eu.posthog.com' }})"),
    ("stripe publishable key", f"const stripe = Stripe('pk_live_{_v(24)}');  // publishable, safe in the browser"),
    (
        "eth tx hash",
        f"tx 0x{_hex(64)} confirmed in block {_R.randint(19_000_000, 20_000_000)}; contract at 0x{_hex(40)}",
    ),
    (
        "rfc 4231 hmac vector",
        'RFC 4231 test case 2: key = "Jefe", data = "what do ya want for nothing?", HMAC-SHA-256 = 5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    ),
    (
        "rfc 6238 totp secret",
        'RFC 6238 appendix B uses the ASCII seed "12345678901234567890" for SHA1; at T=59 the TOTP is 94287082.',
    ),
    ("stripe test card", "use 4242 4242 4242 4242 with any future expiry and any CVC in test mode"),
    (
        "redacted stripe key",
        "the log shows sk_live_****************************a91F, so it's the prod key that got rotated",
    ),
    (
        "truncated github token",
        "GitHub shows the token as ghp_…Xq2c in the settings page; it was created on 2025-01-04.",
    ),
    ("docker digest", f"ghcr.io/acme/api@sha256:{_hex(64)}"),
    ("npm integrity", f'"integrity": "sha512-{_b64(64)}"'),
    ("go.sum line", f"golang.org/x/crypto v0.21.0 h1:{_b64(32)}"),
    (
        "sri script tag",
        f'<script src="https://cdn.acme.io/app.js" integrity="sha384-{_b64(48)}" crossorigin="anonymous"></script>',
    ),
    (
        "gpg fingerprint",
        f'gpg: key {_hex(16).upper()}: public key "Release Signing <release@acme.io>" imported\nPrimary key fingerprint: {" ".join(_hex(4).upper() for _ in range(10))}',
    ),
    (
        "base64 of a config",
        f"config.json base64'd for the ConfigMap: {enc(json.dumps({'theme': 'dark', 'locale': 'de-DE', 'features': ['beta-search', 'new-nav']}))}",
    ),
    (
        "md table env names",
        "| Variable | Purpose |\n|---|---|\n| `DATABASE_URL` | Postgres DSN |\n| `STRIPE_SECRET_KEY` | payments (from vault) |\n| `SENTRY_DSN` | error reporting |",
    ),
    (
        "password policy prose",
        "passwords must be at least 14 characters with one digit and one symbol; we hash them with argon2id",
    ),
    (
        "git commit log",
        f"commit {_hex(40)}\nAuthor: Ops <ops@acme.io>\n\n    rotate the webhook secret and drop the old key id {_hex(12)}",
    ),
    (
        "ids in request log",
        f"req_id={_v(24, _LOWER_DIGITS)} user_id={_R.randint(10**5, 10**7)} session=anon duration_ms=42 cache=hit",
    ),
]

# Written as a keeper and refused on the first run: the project refuses a vendor's documented sample key like any key
# (people paste them as stand-ins for real ones; docs/security.md), so it is kept here, as set 20's policy texts.
POLICY_TEXTS: list[tuple[str, str]] = [
    (
        "aws docs example keys",
        "The AWS docs use AKIAIOSFODNN7EXAMPLE with wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY in every example.",
    ),
]


HELD_OUT_21: list[Form] = [(f"s21 {name}", fixed(text)) for name, text in SECRET_TEXTS]
HELD_OUT_21_KEEP: list[Form] = [(f"k21 keep {name}", fixed(text)) for name, text in KEEP_TEXTS]
REFUSED_BY_POLICY_21: list[Form] = [(f"k21 policy {name}", fixed(text)) for name, text in POLICY_TEXTS]

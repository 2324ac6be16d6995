"""The nineteenth held-out set, written before reading the scanner or any earlier set's texts.

HELD_OUT_19 are texts a developer might ask an assistant to remember that carry a secret; every one must be
refused. HELD_OUT_19_KEEP are ordinary texts in the same formats (placeholders, env var names, commit and
image digests, UUIDs that are ids, public keys and recipients, key ids, documentation examples marked as
such, masked values, encrypted values meant to be committed, references into secret managers); every one
must be stored.

This set aims at the newer platforms' tokens (Vault, Doppler, Infisical, Supabase, Clerk, Resend, Neon,
PlanetScale, Turso, Upstash, Fly.io, Railway, Render, Vercel, Netlify, Cloudflare), observability and
feature-flag keys (Sentry, Datadog, New Relic, PagerDuty, LaunchDarkly, Honeycomb), search and maps
(Algolia, Mapbox), model providers (OpenAI, Anthropic, Mistral, Groq, Cohere, Hugging Face, Replicate,
Pinecone, Weaviate, OpenRouter, Perplexity, xAI), basic auth in URLs of odd schemes, credential files
(.netrc, .pgpass, pip.conf, .npmrc, cargo, gem), private keys in other armours (PuTTY, age, minisign,
WireGuard, nostr, kubeconfig), SAML/OIDC client secrets, JDBC / ODBC / ADO.NET strings, passwords told in
prose in many languages, and secrets split across lines, base64-wrapped or URL-encoded.

The random values are drawn from one seeded generator, so every run sees the same texts.
"""

from __future__ import annotations

import base64
import json
import string
from urllib.parse import quote

from bench.secret_fill import Filler, fixed, lines, part
from bench.secret_forms_9 import Form

_F = Filler(1919)
_R = _F.rng
_v = _F.v
_hex = _F.hex
_bytes = _F.bytes
_b64 = _F.b64
_b64url = _F.b64url
_uuid = _F.uuid
_jwt = _F.jwt
_ipv4 = _F.ip
_ALNUM = string.ascii_letters + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_URLSAFE = _ALNUM + "-_"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_WORDS = [
    "orchid", "falcon", "marble", "cobalt", "willow", "ember", "quartz", "harbor", "saffron", "tundra",
    "lantern", "velvet", "meadow", "copper", "glacier", "thistle", "nimbus", "juniper", "basalt", "otter",
]  # fmt: skip


def _pw(n: int = 12) -> str:
    """A generated password: letters, digits and a symbol or two, in no fixed place."""
    return _F.pw(n, "!#%*@-_+$", "!#%*")


def _human_pw() -> str:
    """A password a person made up: two words, digits, a symbol."""
    a, b = _R.sample(_WORDS, 2)
    return f"{a}{_R.choice('-_.')}{b.capitalize()}{_R.randint(10, 9999)}{_R.choice('!?#$')}"


_PPK_PRIVATE = lines(_b64(48), 64)
_PPK_PUBLIC = lines("AAAAC3NzaC1lZDI1NTE5AAAAI" + _b64(32), 64)
_KUBE_KEY = base64.b64encode(
    ("-----BEGIN EC PRIVATE KEY-----\n" + lines(_b64(121)) + "\n-----END EC PRIVATE KEY-----\n").encode()
).decode()
_KUBE_CERT = base64.b64encode(
    ("-----BEGIN CERTIFICATE-----\n" + lines(_b64(400)) + "\n-----END CERTIFICATE-----\n").encode()
).decode()
_ANTHROPIC = "sk-ant-api03-" + _v(93, _URLSAFE) + "AA"
_SPLIT_TOKEN = "ghp_" + _v(36)
_OPENAI = "sk-proj-" + _v(74, _URLSAFE) + "T3BlbkFJ" + _v(74, _URLSAFE)

SECRET_TEXTS: list[tuple[str, str]] = [
    # --- secret managers ---
    ("vault hvs token in prose", f"the root token for the dev vault is {'hvs.' + _v(24)} — only use it to unseal"),
    (
        "vault token env export",
        f"export VAULT_ADDR=https://vault.internal:8200\nexport VAULT_TOKEN=hvs.{_v(90, _URLSAFE)}",
    ),
    ("vault batch token", f"CI job uses batch token hvb.{_v(130, _URLSAFE)} (ttl 20m)"),
    ("vault legacy s. token", f"old vault 0.x token for the lab cluster: s.{_v(24)}"),
    ("vault unseal keys", f"Unseal Key 1: {_b64(33)}\nUnseal Key 2: {_b64(33)}\nInitial Root Token: hvs.{_v(24)}"),
    ("vault approle secret id", f"approle login: role_id={_uuid()} secret_id={_uuid()}"),
    ("doppler service token", f"DOPPLER_TOKEN=dp.st.prd.{_v(43)}"),
    ("doppler personal token in chat", f"here's my doppler cli token, add it to the runner: dp.pt.{_v(43)}"),
    ("doppler service account", f"doppler service account token for terraform: dp.sa.{_v(43)}"),
    ("infisical service token", f"INFISICAL_TOKEN=st.{_uuid()}.{_hex(32)}.{_hex(32)}"),
    (
        "infisical universal auth",
        f"infisical login --method=universal-auth --client-id={_uuid()} --client-secret={_hex(64)}",
    ),
    ("1password service account", f"OP_SERVICE_ACCOUNT_TOKEN=ops_{_b64url(180)}"),
    ("bitwarden secrets manager token", f"BWS_ACCESS_TOKEN=0.{_uuid()}.{_v(30)}:{_b64(16)}"),
    # --- backend platforms ---
    (
        "supabase service role jwt",
        "SUPABASE_SERVICE_ROLE_KEY="
        + _jwt(
            {
                "iss": "supabase",
                "ref": _v(20, string.ascii_lowercase),
                "role": "service_role",
                "iat": 1718000000,
                "exp": 2033576000,
            }
        ),
    ),
    (
        "supabase secret key new style",
        f"the new supabase secret key is sb_secret_{_v(31, _URLSAFE)} (replaces service_role)",
    ),
    ("supabase personal access token", f"supabase login --token sbp_{_hex(40)}"),
    (
        "supabase db url",
        f"postgresql://postgres.{_v(20, string.ascii_lowercase)}:{_pw(16)}@aws-0-eu-central-1.pooler.supabase.co"
        "m:6543/postgres",
    ),
    ("clerk secret key", f"CLERK_SECRET_KEY=sk_live_{_v(40)}"),
    ("clerk test key in chat", f"clerk dev instance: publishable is in .env.local, secret is sk_test_{_v(40)}"),
    ("resend api key", f"Resend key for transactional mail: re_{_v(8)}_{_v(24)}"),
    (
        "neon connection string",
        f"DATABASE_URL=postgresql://neondb_owner:npg_{_v(12)}@ep-{_R.choice(_WORDS)}-{_R.choice(_WORDS)}-"
        f"{_v(8, _LOWER_DIGITS)}-pooler.us-east-2.aws.neon.tech/neondb?sslmode=require",
    ),
    ("neon api key", f"neon api key for the branch-per-PR action: napi_{_v(60, _LOWER_DIGITS)}"),
    (
        "planetscale password",
        f"pscale password for main branch: username {_v(12, _LOWER_DIGITS)}, password pscale_pw_{_v(43, _URLSAFE)}",
    ),
    (
        "planetscale service token",
        f"PLANETSCALE_SERVICE_TOKEN_ID={_v(12, _LOWER_DIGITS)}\nPLANETSCALE_SERVICE_TOKEN=pscale_tkn_"
        f"{_v(43, _URLSAFE)}",
    ),
    (
        "planetscale mysql url",
        f"mysql://{_v(12, _LOWER_DIGITS)}:pscale_pw_{_v(43, _URLSAFE)}@aws.connect.psdb.cloud/shop?sslaccept=strict",
    ),
    (
        "turso auth token in url",
        f"libsql://shop-{_R.choice(_WORDS)}.turso.io?authToken="
        + _jwt({"a": "rw", "iat": 1719000000, "id": _uuid()}, alg="EdDSA", sig_bytes=64),
    ),
    (
        "turso platform token",
        "TURSO_API_TOKEN=" + _jwt({"iat": 1719000000, "id": _v(22, _URLSAFE)}, alg="EdDSA", sig_bytes=64),
    ),
    (
        "upstash rest token",
        f"UPSTASH_REDIS_REST_URL=https://{_R.choice(_WORDS)}-{_R.randint(1000, 99999)}.upstash.io\nUPSTASH_REDIS"
        f"_REST_TOKEN=A{_v(3)}AAIjcDE{_v(50)}",
    ),
    ("upstash redis url", f"rediss://default:{_v(34)}@{_R.choice(_WORDS)}-{_R.randint(1000, 99999)}.upstash.io:6379"),
    ("upstash qstash signing key", f"QSTASH_CURRENT_SIGNING_KEY=sig_{_v(28)}\nQSTASH_NEXT_SIGNING_KEY=sig_{_v(28)}"),
    # --- hosting ---
    ("fly macaroon token", f"FLY_API_TOKEN=FlyV1 fm2_{_b64(220)}"),
    ("fly deploy token in chat", f"the fly deploy token for ci: fo1_{_v(43, _URLSAFE)}"),
    ("railway token uuid", f"RAILWAY_TOKEN={_uuid()}"),
    ("railway token in prose", f"railway project token (prod env) is {_uuid()} — set it as RAILWAY_TOKEN in actions"),
    ("render api key", f"render api key: rnd_{_v(32)}"),
    (
        "render deploy hook",
        f"deploy hook: https://api.render.com/deploy/srv-{_v(20, _LOWER_DIGITS)}?key={_v(11, _URLSAFE)}",
    ),
    ("vercel token", f"vercel --token {_v(24)} deploy --prod"),
    ("vercel env line", f"VERCEL_TOKEN={_v(24)}\nVERCEL_ORG_ID=team_{_v(24)}\nVERCEL_PROJECT_ID=prj_{_v(28)}"),
    ("netlify personal token", f"NETLIFY_AUTH_TOKEN=nfp_{_v(36)}"),
    (
        "netlify token in toml comment",
        f'# netlify token (don\'t commit!) nfp_{_v(36)}\n[build]\n  command = "npm run build"',
    ),
    ("cloudflare api token", f"wrangler: CLOUDFLARE_API_TOKEN={_v(40, _URLSAFE)}"),
    ("cloudflare global key", f"X-Auth-Email: ops@example.org\nX-Auth-Key: {_hex(37)}"),
    ("cloudflare origin ca key", f"origin CA key for cert-manager issuer: v1.0-{_hex(24)}-{_hex(146)}"),
    (
        "cloudflare tunnel token",
        "cloudflared tunnel run --token "
        + base64.b64encode(json.dumps({"a": _hex(32), "t": _uuid(), "s": _b64(32)}).encode()).decode(),
    ),
    ("heroku api key", f"heroku authorizations:create gave HRKU-{_v(60, _URLSAFE)}"),
    ("digitalocean token", f"doctl auth init -t dop_v1_{_hex(64)}"),
    # --- observability / ops ---
    (
        "sentry dsn with secret",
        f"SENTRY_DSN=https://{_hex(32)}:{_hex(32)}@o{_R.randint(100000, 999999)}.ingest.sentry.io/"
        f"{_R.randint(1000000, 9999999)}",
    ),
    ("sentry org token", f"SENTRY_AUTH_TOKEN=sntrys_{_b64url(120)}"),
    ("sentry user token", f"sentry-cli login --auth-token sntryu_{_hex(64)}"),
    ("datadog api and app key", f"DD_API_KEY={_hex(32)}\nDD_APP_KEY={_hex(40)}\nDD_SITE=datadoghq.eu"),
    (
        "datadog key in agent yaml",
        f"# /etc/datadog-agent/datadog.yaml\napi_key: {_hex(32)}\nsite: datadoghq.com\nlogs_enabled: true",
    ),
    ("new relic user key", f"New Relic user API key (NerdGraph): NRAK-{_v(27, _UPPER_DIGITS)}"),
    ("new relic license key", f"newrelic.yml:\n  license_key: {_hex(36)}NRAL"),
    ("new relic insert key", f"insights insert key: NRII-{_v(32, _URLSAFE)}"),
    ("pagerduty api key", f"PagerDuty REST key for the runbook bot: {_v(2, _URLSAFE)}+{_v(17, _URLSAFE)}"),
    ("pagerduty routing key", f"events v2 routing_key: {_hex(32)} (service 'payments-api')"),
    ("launchdarkly sdk key", f"LD_SDK_KEY=sdk-{_uuid()}"),
    ("launchdarkly api token", f"launchdarkly api access token (writer role): api-{_uuid()}"),
    ("launchdarkly mobile key", f"mobile key for the iOS app: mob-{_uuid()}"),
    ("honeycomb key", f"OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team={_v(22)}"),
    ("grafana cloud token", f"grafana cloud access policy token: glc_{_b64(120)}"),
    ("grafana service account", f"GF_SA_TOKEN=glsa_{_v(32)}_{_hex(8)}"),
    # --- search / maps ---
    ("algolia admin key", f"Algolia app {_v(10, _UPPER_DIGITS)} admin API key: {_hex(32)}"),
    ("algolia env", f"ALGOLIA_APP_ID={_v(10, _UPPER_DIGITS)}\nALGOLIA_ADMIN_KEY={_hex(32)}"),
    (
        "mapbox secret token",
        "MAPBOX_DOWNLOADS_TOKEN=sk."
        + part({"u": _R.choice(_WORDS) + str(_R.randint(1, 99)), "a": _v(25, _LOWER_DIGITS)})
        + "."
        + _v(22, _URLSAFE),
    ),
    # --- model providers ---
    ("openai project key", f"OPENAI_API_KEY={_OPENAI}"),
    ("openai service account key", f"the eval runner uses sk-svcacct-{_v(74, _URLSAFE)}T3BlbkFJ{_v(74, _URLSAFE)}"),
    ("openai admin key", f"org admin key (usage API only): sk-admin-{_v(60, _URLSAFE)}T3BlbkFJ{_v(60, _URLSAFE)}"),
    ("anthropic key", f"ANTHROPIC_API_KEY={_ANTHROPIC}"),
    ("anthropic admin key", f"console admin key: sk-ant-admin01-{_v(93, _URLSAFE)}AA"),
    ("mistral key", f"mistral la plateforme key: MISTRAL_API_KEY={_v(32)}"),
    ("groq key", f'client = Groq(api_key="gsk_{_v(52)}")'),
    ("cohere key", f'co = cohere.ClientV2("{_v(40)}")'),
    ("hugging face token", f"huggingface-cli login --token hf_{_v(34, string.ascii_letters)}"),
    (
        "hugging face in git url",
        f"git clone https://user:hf_{_v(34, string.ascii_letters)}@huggingface.co/org/private-model",
    ),
    ("replicate token", f"REPLICATE_API_TOKEN=r8_{_v(37)}"),
    ("pinecone key", f'pc = Pinecone(api_key="pcsk_{_v(6)}_{_v(60)}")'),
    ("pinecone legacy uuid key", f"PINECONE_API_KEY={_uuid()}\nPINECONE_ENVIRONMENT=us-west1-gcp"),
    ("weaviate api key", f'auth_credentials=weaviate.auth.AuthApiKey("{_v(40)}")'),
    ("openrouter key", f"OPENROUTER_API_KEY=sk-or-v1-{_hex(64)}"),
    ("perplexity key", f"perplexity: pplx-{_v(48)}"),
    ("xai key", f"grok api key xai-{_v(80)}"),
    ("together key", f"TOGETHER_API_KEY={_hex(64)}"),
    ("deepseek key", f"DeepSeek key: sk-{_hex(32)}"),
    ("google ai studio key", f"GEMINI_API_KEY=AIza{_v(35, _URLSAFE)}"),
    ("langsmith key", f"LANGCHAIN_API_KEY=lsv2_pt_{_hex(32)}_{_hex(10)}"),
    # --- odd url schemes ---
    ("amqps url", f"broker_url = 'amqps://celery:{_pw(18)}@b-{_uuid()}.mq.eu-west-1.amazonaws.com:5671//'"),
    ("redis sentinel url", f"redis+sentinel://:{_pw(16)}@sentinel-0:26379,sentinel-1:26379/mymaster/0"),
    (
        "mongodb srv url",
        f"mongodb+srv://app:{_pw(16)}@cluster0.{_v(5, _LOWER_DIGITS)}.mongodb.net/prod?retryWrites=true",
    ),
    ("sftp url", f"upload to sftp://partner_acme:{_pw(14)}@sftp.partner.example:22/inbound/"),
    ("smb url with domain", f"smb://CORP;svc_backup:{_pw(14)}@fileserver01/backups"),
    ("rtsp camera url", f"front door camera: rtsp://admin:{_pw(10)}@{_ipv4()}:554/Streaming/Channels/101"),
    ("nats url", f"NATS_URL=nats://orders:{_pw(20)}@nats.internal:4222"),
    ("ldaps bind url", f"ldaps://cn=readonly,dc=corp,dc=local:{_pw(14)}@ldap.corp.local:636"),
    (
        "git+https url in requirements",
        f"git+https://deploy:{_v(40, _URLSAFE)}@git.internal.example/libs/billing.git@v2.3.1#egg=billing",
    ),
    ("ftp url in shell history", f"  512  curl -T dump.sql ftp://backup:{_pw(12)}@{_ipv4()}/dumps/"),
    ("webdav url", f"nextcloud webdav: davs://alice:{_pw(16)}@cloud.family.example/remote.php/dav/files/alice"),
    (
        "kafka sasl jaas",
        'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="'
        f'{_v(16, _UPPER_DIGITS)}" password="{_v(64, _ALNUM + "+/")}";',
    ),
    # --- credential files ---
    (
        "netrc",
        f"# ~/.netrc\nmachine api.heroku.com\n  login me@example.org\n  password {_uuid()}\nmachine git.heroku.c"
        f"om\n  login me@example.org\n  password {_uuid()}",
    ),
    ("netrc one line", f"machine artifactory.corp.example login ci-bot password {_v(64, _LOWER_DIGITS)}"),
    ("pgpass", f"~/.pgpass line: db-prod.internal:5432:orders:orders_rw:{_pw(20)}"),
    (
        "pip conf",
        f"[global]\nindex-url = https://__token__:{_v(40, _URLSAFE)}@pkgs.corp.example/pypi/simple\ntimeout = 60",
    ),
    ("npmrc auth token", f"//npm.pkg.github.com/:_authToken=ghp_{_v(36)}\n@acme:registry=https://npm.pkg.github.com"),
    ("npmrc npm token", f"//registry.npmjs.org/:_authToken=npm_{_v(36)}"),
    ("cargo credentials", f'# ~/.cargo/credentials.toml\n[registry]\ntoken = "cio{_v(32)}"'),
    ("gem credentials", f"---\n:rubygems_api_key: rubygems_{_hex(48)}"),
    ("pypirc", f"[pypi]\n  username = __token__\n  password = pypi-AgEIcHlwaS5vcmc{_v(120, _URLSAFE)}"),
    (
        "docker config auth",
        '~/.docker/config.json: {"auths": {"registry.corp.example": {"auth": "'
        + base64.b64encode(f"ci:{_pw(20)}".encode()).decode()
        + '"}}}',
    ),
    ("composer auth", '{"http-basic": {"repo.packagist.com": {"username": "token", "password": "' + _hex(40) + '"}}}'),
    # --- private keys in other armours ---
    (
        "putty ppk v3",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: ed25519-key-20240611\nPublic-Lines: 2\n"
        + _PPK_PUBLIC
        + "\nPrivate-Lines: 1\n"
        + _PPK_PRIVATE
        + f"\nPrivate-MAC: {_hex(64)}",
    ),
    (
        "age secret key",
        f"# created: 2024-06-01T10:00:00Z\n# public key: age1{_v(58, _BECH32)}\nAGE-SECRET-KEY-1"
        f"{_v(58, _BECH32).upper()}",
    ),
    ("minisign secret key", f"untrusted comment: minisign encrypted secret key\nRWRTY0Iy{_b64(150)}"),
    (
        "wireguard private key",
        f"[Interface]\nPrivateKey = {_b64(32)}\nAddress = 10.8.0.2/24\nDNS = 1.1.1.1\n\n[Peer]\nPublicKey = "
        f"{_b64(32)}\nEndpoint = vpn.example.org:51820",
    ),
    ("nostr nsec", f"my nostr key (for the bot account): nsec1{_v(58, _BECH32)}"),
    ("ethereum private key", f"deployer wallet private key: 0x{_hex(64)}"),
    (
        "kubeconfig client key data",
        f"users:\n- name: admin@prod\n  user:\n    client-certificate-data: {_KUBE_CERT[:120]}\n    client-key-d"
        f"ata: {_KUBE_KEY}",
    ),
    (
        "kubeconfig bearer token",
        "users:\n- name: ci\n  user:\n    token: "
        + _jwt(
            {"iss": "kubernetes/serviceaccount", "sub": "system:serviceaccount:ci:deployer"}, alg="RS256", sig_bytes=256
        ),
    ),
    (
        "openssh key pasted in chat",
        "can you keep this for later:\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
        f"{lines('b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW' + _b64(260), 70)}\n--"
        "---END OPENSSH PRIVATE KEY-----",
    ),
    # --- SSO client secrets ---
    (
        "oidc client secret yaml",
        f"oidc:\n  issuer: https://login.corp.example/realms/main\n  client_id: grafana\n  client_secret: {_v(32)}",
    ),
    (
        "azure ad client secret",
        f"AZURE_CLIENT_ID={_uuid()}\nAZURE_TENANT_ID={_uuid()}\nAZURE_CLIENT_SECRET={_v(3)}8Q~"
        f"{_v(31, _URLSAFE + '.~')}",
    ),
    (
        "google oauth client secret",
        f'"client_id":"{_R.randint(10**11, 10**12)}-{_v(32, _LOWER_DIGITS)}.apps.googleusercontent.com","client_'
        f'secret":"GOCSPX-{_v(28, _URLSAFE)}"',
    ),
    ("auth0 client secret", f"AUTH0_CLIENT_SECRET={_v(64, _URLSAFE)}"),
    ("okta api token", f"Authorization: SSWS 00{_v(40, _URLSAFE)}"),
    (
        "saml sp private key setting",
        f'SAML_SP_PRIVATE_KEY="-----BEGIN PRIVATE KEY-----\\n{_b64(90)}\\n-----END PRIVATE KEY-----"',
    ),
    # --- unusual drivers ---
    (
        "jdbc sqlserver",
        f"jdbc:sqlserver://sql01.corp.local:1433;databaseName=Billing;user=svc_billing;password={_pw(16)};encrypt=true",
    ),
    ("jdbc oracle thin", f"spring.datasource.url=jdbc:oracle:thin:scott/{_pw(12)}@//ora-prod:1521/ORCLPDB1"),
    ("jdbc mysql query", f"jdbc:mysql://db.internal:3306/shop?user=shop&password={_pw(14)}&useSSL=true"),
    (
        "jdbc snowflake",
        f"jdbc:snowflake://acme-xy12345.snowflakecomputing.com/?user=ETL_USER&password={_pw(18)}&warehouse=ETL_WH",
    ),
    (
        "odbc sql server",
        f"Driver={{ODBC Driver 18 for SQL Server}};Server=tcp:sql01,1433;Database=HR;Uid=hr_app;Pwd={{{_pw(16)}}}"
        ";Encrypt=yes;",
    ),
    (
        "adonet azure sql",
        "Server=tcp:acme-sql.database.windows.net,1433;Initial Catalog=Orders;User ID=orders_admin;Password="
        f"{_pw(18)};Encrypt=True;",
    ),
    (
        "db2 connection",
        f"DATABASE=SAMPLE;HOSTNAME=db2.corp.local;PORT=50000;PROTOCOL=TCPIP;UID=db2inst1;PWD={_pw(12)};",
    ),
    ("firebird connection", f"User=SYSDBA;Password={_pw(10)};Database=C:\\data\\erp.fdb;DataSource=erp01;Port=3050;"),
    ("oracle sqlplus", f"sqlplus system/{_pw(12)}@//ora-prod:1521/ORCLPDB1 @migrate.sql"),
    # --- prose passwords, many languages ---
    ("prose english", f"the password for the shared QA account is {_human_pw()}"),
    ("prose english wifi", f"office wifi: network 'Acme-Guest', password {_human_pw()}"),
    ("prose english colon-less", f"remember that Dana's laptop login is dana and {_human_pw()} is the password"),
    ("prose german", f"Das Passwort für den Router lautet {_human_pw()}"),
    ("prose french", f"le mot de passe de la base de staging est {_pw(14)}"),
    ("prose spanish", f"la contraseña del servidor de correo es {_human_pw()}"),
    ("prose portuguese", f"a senha do painel admin é {_pw(12)}"),
    ("prose italian", f"la password dell'account di servizio è {_human_pw()}"),
    ("prose dutch", f"het wachtwoord van de NAS is {_human_pw()}"),
    ("prose polish", f"hasło do VPN to {_pw(14)}"),
    ("prose turkish", f"sunucunun şifresi {_pw(12)} olarak değiştirildi"),
    ("prose russian", f"пароль от тестовой базы: {_pw(14)}"),
    ("prose ukrainian", f"новий пароль адміністратора — {_human_pw()}"),
    ("prose japanese", f"本番DBのパスワードは {_pw(14)} です"),
    ("prose chinese", f"测试服务器的密码是 {_pw(12)}"),
    ("prose korean", f"관리자 비밀번호는 {_pw(12)} 입니다"),
    ("prose vietnamese", f"mật khẩu wifi văn phòng là {_human_pw()}"),
    ("prose indonesian", f"kata sandi akun admin adalah {_pw(12)}"),
    ("prose swedish", f"lösenordet till backup-servern är {_human_pw()}"),
    ("prose greek", f"ο κωδικός πρόσβασης του διακομιστή είναι {_pw(12)}"),
    ("prose hebrew", f"הסיסמה לשרת היא {_pw(12)}"),
    ("prose arabic", f"كلمة المرور لحساب المدير هي {_pw(12)}"),
    ("prose hindi", f"सर्वर का पासवर्ड {_pw(12)} है"),
    ("prose thai", f"รหัสผ่านของเซิร์ฟเวอร์คือ {_pw(12)}"),
    ("prose czech", f"heslo k databázi je {_human_pw()}"),
    ("prose finnish", f"palvelimen salasana on {_human_pw()}"),
    # --- hidden / split / wrapped ---
    (
        "token split across lines",
        f"the token is long so I'll paste it in two parts:\n{_SPLIT_TOKEN[:20]}\n{_SPLIT_TOKEN[20:]}",
    ),
    (
        "key with spaces",
        "anthropic key, spaced so slack doesn't unfurl: "
        + " ".join(_ANTHROPIC[i : i + 8] for i in range(0, len(_ANTHROPIC), 8)),
    ),
    (
        "base64 wrapped openai key",
        "echo " + base64.b64encode(_OPENAI.encode()).decode() + " | base64 -d > ~/.config/openai/key",
    ),
    ("base64 basic auth header", "Authorization: Basic " + base64.b64encode(f"admin:{_pw(14)}".encode()).decode()),
    (
        "base64 k8s secret",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: "
        f"{base64.b64encode(_pw(18).encode()).decode()}",
    ),
    ("url encoded password", f"postgres://app:{quote(_pw(16) + '@#', safe='')}@db.internal:5432/app"),
    (
        "url encoded form body",
        f"curl -d 'username=ops&password={quote(_human_pw(), safe='')}' https://intranet.example/login",
    ),
    (
        "password in log line",
        f"2024-06-11T10:22:03Z DEBUG connect params={{'host': 'db', 'user': 'etl', 'password': '{_pw(16)}'}}",
    ),
    (
        "token in stack trace",
        f"requests.exceptions.HTTPError: 401 Client Error for url: https://api.example.com/v1/items?api_key={_v(32)}",
    ),
    ("screenshot ocr", f"API Keys\nName  Secret key  Created\nprod-backend  sk_live_{_v(99)}  Jun 3, 2024"),
    # --- more providers ---
    ("stripe restricted key", f"rk_live_{_v(99)}"),
    ("twilio auth token", f"TWILIO_ACCOUNT_SID=AC{_hex(32)}\nTWILIO_AUTH_TOKEN={_hex(32)}"),
    ("sendgrid key", f"SENDGRID_API_KEY=SG.{_v(22, _URLSAFE)}.{_v(43, _URLSAFE)}"),
    ("mailgun key", f"mailgun api key: key-{_hex(32)}"),
    ("brevo key", f"BREVO_API_KEY=xkeysib-{_hex(64)}-{_v(16)}"),
    ("postmark server token", f"X-Postmark-Server-Token: {_uuid()}"),
    ("slack bot token", f"SLACK_BOT_TOKEN=xoxb-{_R.randint(10**11, 10**12)}-{_R.randint(10**12, 10**13)}-{_v(24)}"),
    (
        "slack webhook",
        f"alerts go to https://hooks.slack.com/services/T{_v(10, _UPPER_DIGITS)}/B{_v(10, _UPPER_DIGITS)}/{_v(24)}",
    ),
    ("discord webhook", f"https://discord.com/api/webhooks/{_R.randint(10**17, 10**18)}/{_v(68, _URLSAFE)}"),
    (
        "teams webhook",
        f"teams incoming webhook: https://acme.webhook.office.com/webhookb2/{_uuid()}@{_uuid()}/IncomingWebhook/"
        f"{_hex(32)}/{_uuid()}/V2{_v(40, _URLSAFE)}",
    ),
    ("telegram bot token", f'bot = telebot.TeleBot("{_R.randint(10**9, 10**10)}:AA{_v(33, _URLSAFE)}")'),
    ("linear key", f"LINEAR_API_KEY=lin_api_{_v(40)}"),
    ("notion token", f"notion integration secret: ntn_{_v(46)}"),
    ("airtable pat", f"AIRTABLE_TOKEN=pat{_v(14)}.{_hex(64)}"),
    ("gitlab pat", f"git remote set-url origin https://oauth2:glpat-{_v(20, _URLSAFE)}@gitlab.com/acme/api.git"),
    ("atlassian token", f"jira api token for ops-bot@acme.example: ATATT3xFfGF0{_v(170, _URLSAFE)}={_hex(8).upper()}"),
    ("postman key", f"postman api key PMAK-{_hex(24)}-{_hex(34)}"),
    ("docker hub pat", f"echo dckr_pat_{_v(27, _URLSAFE)} | docker login -u acmeci --password-stdin"),
    (
        "databricks token",
        f"DATABRICKS_HOST=https://adb-{_R.randint(10**15, 10**16)}.7.azuredatabricks.net\nDATABRICKS_TOKEN=dapi"
        f"{_hex(32)}-2",
    ),
    ("tailscale auth key", f"tailscale up --authkey=tskey-auth-{_v(17)}CNTRL-{_v(33)}"),
    ("ngrok authtoken", f"ngrok config add-authtoken {_v(27)}_{_v(21)}"),
    ("terraform cloud token", f'credentials "app.terraform.io" {{\n  token = "{_v(14)}.atlasv1.{_v(67)}"\n}}'),
    ("pulumi token", f"PULUMI_ACCESS_TOKEN=pul-{_hex(40)}"),
    ("figma token", f"figma personal access token: figd_{_v(40, _URLSAFE)}"),
    ("shopify admin token", f"X-Shopify-Access-Token: shpat_{_hex(32)}"),
    ("hubspot private app", f"HUBSPOT_ACCESS_TOKEN=pat-na1-{_uuid()}"),
    ("square access token", f"SQUARE_ACCESS_TOKEN=EAAA{_v(60, _URLSAFE)}"),
    ("braintree access token", f"access_token$production${_v(16, _LOWER_DIGITS)}${_hex(32)}"),
    ("plaid secret", f"PLAID_CLIENT_ID={_hex(24)}\nPLAID_SECRET={_hex(30)}\nPLAID_ENV=production"),
    ("cloudinary url", f"CLOUDINARY_URL=cloudinary://{_R.randint(10**14, 10**15)}:{_v(27, _URLSAFE)}@acme-media"),
    ("contentful pat", f"contentful login --management-token CFPAT-{_v(43, _URLSAFE)}"),
    (
        "azure storage connection",
        f"DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={_b64(64)};EndpointSuffix=core.windows.net",
    ),
    (
        "azure sas url",
        "https://acmelogs.blob.core.windows.net/exports?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-01-01T00:00:00Z"
        f"&sig={quote(_b64(32), safe='')}",
    ),
    (
        "aws key pair in prose",
        f"the backup user's keys: AKIA{_v(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')} / {_v(40, _ALNUM + '+/')}",
    ),
    (
        "gcp service account json",
        '{"type": "service_account", "project_id": "acme-prod", "private_key_id": "'
        + _hex(40)
        + '", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQ'
        + _b64(120)
        + '\\n-----END PRIVATE KEY-----\\n"}',
    ),
    (
        "totp seed",
        "2FA seed for the shared admin account (otpauth): otpauth://totp/Acme:admin?secret="
        f"{_v(32, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}&issuer=Acme",
    ),
    (
        "recovery codes",
        "GitHub recovery codes for the org owner account:\n" + "\n".join(f"{_hex(5)}-{_hex(5)}" for _ in range(8)),
    ),
    (
        "session cookie",
        f"curl -H 'Cookie: sessionid={_v(32, _LOWER_DIGITS)}; csrftoken={_v(64)}' https://admin.acme.example/",
    ),
    (
        "bearer jwt in curl",
        "curl -H 'Authorization: Bearer "
        + _jwt({"sub": _uuid(), "scope": "admin", "exp": 2000000000})
        + "' https://api.acme.example/v2/users",
    ),
    ("encrypted key passphrase", f'the passphrase for deploy_key.pem is "{_human_pw()}"'),
    (
        "django secret key",
        f"SECRET_KEY = 'django-insecure-{_v(50, string.ascii_lowercase + string.digits + '!@#$%^&*(-_=+)')}'",
    ),
    ("rails master key", f"config/master.key: {_hex(32)}"),
    ("laravel app key", f"APP_KEY=base64:{_b64(32)}"),
    ("jwt signing secret", f"JWT_SECRET={_v(64, _URLSAFE)}"),
    ("nextauth secret", f"NEXTAUTH_SECRET={_b64(32)}"),
]

KEEP_TEXTS: list[tuple[str, str]] = [
    # --- placeholders and env names ---
    ("vault token placeholder", "export VAULT_TOKEN=<your-vault-token>"),
    ("vault token from env", "VAULT_TOKEN=$(vault print token) terraform apply"),
    ("vault login oidc", "vault login -method=oidc role=developer  # opens a browser, no token to paste"),
    ("vault kv path", "the db creds live at vault kv get -field=password secret/data/prod/orders-db"),
    ("vault accessor", f"revoke by accessor, not token: vault token revoke -accessor {_v(24)}"),
    ("doppler run", "doppler run --project api --config prd -- npm start"),
    ("doppler token name", "DOPPLER_TOKEN is injected by the runner from the 'doppler-prd' secret"),
    ("1password reference", "DATABASE_URL=op://Engineering/orders-db/connection-string"),
    (
        "infisical placeholder",
        "INFISICAL_TOKEN=st.xxxxxxxx.xxxxxxxx.xxxxxxxx (create one in Project Settings → Service Tokens)",
    ),
    (
        "github actions secret ref",
        "env:\n  OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}\n  ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}",
    ),
    ("python env read", 'client = Anthropic(api_key=os.environ["ANTHROPIC_API_KEY"])'),
    (
        "k8s secret key ref",
        "env:\n- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: orders-db\n      key: password",
    ),
    ("aws secrets manager cmd", "aws secretsmanager get-secret-value --secret-id prod/orders/db --query SecretString"),
    (
        "env example file",
        "# .env.example\nCLERK_SECRET_KEY=\nRESEND_API_KEY=\nNEON_DATABASE_URL=\nUPSTASH_REDIS_REST_TOKEN=",
    ),
    ("angle placeholders url", "postgresql://<user>:<password>@<host>:5432/<db>"),
    ("braces placeholder url", "mysql://{username}:{password}@{host}/{database}"),
    ("shell var url", "redis://default:${REDIS_PASSWORD}@redis:6379/0"),
    ("jdbc placeholder", "jdbc:sqlserver://sql01:1433;databaseName=Billing;user=${DB_USER};password=${DB_PASSWORD}"),
    ("odbc placeholder", "Driver={ODBC Driver 18 for SQL Server};Server=tcp:sql01,1433;Uid=%DB_USER%;Pwd=%DB_PASS%;"),
    ("docs placeholder key", "Set OPENAI_API_KEY=sk-... in your shell before running the notebook."),
    # --- masked / redacted ---
    ("masked openai", f"rotated the key ending in ...{_v(4)} (shown as sk-proj-****{_v(4)} in the dashboard)"),
    ("masked github", f"token ghp_************************{_v(4)} expired on Jun 3"),
    ("masked password", "password: ******** (ask Dana for the real one)"),
    ("redacted log", "DEBUG connect params={'host': 'db', 'user': 'etl', 'password': '[REDACTED]'}"),
    ("redacted vault", "vault token lookup → token: hvs.****************, ttl 767h"),
    ("masked stripe", "Stripe shows it as sk_live_...4242 — that's the one to roll"),
    ("redacted dsn", "SENTRY_DSN=https://<key>@o0.ingest.sentry.io/<project>"),
    ("redacted connection", "Server=tcp:acme-sql.database.windows.net;User ID=orders_admin;Password=***;"),
    # --- docs examples clearly marked ---
    ("example password docs", "In the tutorial the example password is `example-password`; replace it."),
    # --- hashes and digests ---
    ("git commit", f"the regression came in with commit {_hex(40)} (merge of #4821)"),
    ("short shas", f"cherry-pick {_hex(7)} and {_hex(7)} onto release/2.3"),
    ("docker digest", f"image: ghcr.io/acme/api@sha256:{_hex(64)}"),
    ("sha256sum", f"{_hex(64)}  yullu-2.3.1-linux-amd64.tar.gz"),
    ("npm integrity", f'"integrity": "sha512-{_b64(64)}"'),
    ("sri hash", f'<script src="/app.js" integrity="sha384-{_b64(48)}" crossorigin="anonymous"></script>'),
    ("terraform lock hash", f'hashes = [\n  "h1:{_b64(32)}",\n  "zh:{_hex(64)}",\n]'),
    ("etag", f'ETag: "{_hex(32)}"'),
    ("cache key", f"restored cache key node-modules-{_hex(64)}"),
    # --- ids that are UUIDs or look like keys ---
    ("request id", f"support asked for the request id: {_uuid()}"),
    ("trace id", f"trace_id={_hex(32)} span_id={_hex(16)}"),
    ("azure ids", f"AZURE_TENANT_ID={_uuid()}\nAZURE_SUBSCRIPTION_ID={_uuid()}"),
    ("railway project id", f"railway link --project {_uuid()} --environment production"),
    ("cloudflare zone id", f'zone_id = "{_hex(32)}"\naccount_id = "{_hex(32)}"'),
    (
        "google oauth client id",
        f"GOOGLE_CLIENT_ID={_R.randint(10**11, 10**12)}-{_v(32, _LOWER_DIGITS)}.apps.googleusercontent.com",
    ),
    (
        "algolia app id and search key",
        f"ALGOLIA_APP_ID={_v(10, _UPPER_DIGITS)}\n# search-only key, safe in the browser bundle\nNEXT_PUBLIC_ALG"
        f"OLIA_SEARCH_KEY={_hex(32)}",
    ),
    ("launchdarkly client id", f"LaunchDarkly client-side ID (public, goes in the JS bundle): {_hex(24)}"),
    ("stripe account id", f"connected account acct_{_v(16)} payout failed"),
    ("vercel project ids", f"VERCEL_ORG_ID=team_{_v(24)}\nVERCEL_PROJECT_ID=prj_{_v(28)}"),
    (
        "datadog rum client token",
        f"datadogRum.init({{ applicationId: '{_uuid()}', clientToken: 'pub{_hex(32)}', site: 'datadoghq.eu' }})",
    ),
    ("kms key arn", f'kms_key_id = "arn:aws:kms:eu-west-1:{_R.randint(10**11, 10**12)}:key/{_uuid()}"'),
    (
        "gpg key id",
        f"signed with gpg key 0x{_hex(16).upper()}, fingerprint {' '.join(_hex(4).upper() for _ in range(10))}",
    ),
    ("jwks kid", f'{{"kid": "{_v(43, _URLSAFE)}", "kty": "RSA", "alg": "RS256", "use": "sig", "e": "AQAB"}}'),
    ("posthog project key", f"posthog.init('phc_{_v(43)}', {{ api_host: 'https://eu.i.posthog.com' }})"),
    ("stripe publishable", f"const stripe = Stripe('pk_live_{_v(99)}')"),
    (
        "clerk publishable",
        "NEXT_PUBLIC_CLERK_PUBLISHABLE_KEY=pk_live_" + base64.b64encode(b"clerk.acme.example$").decode().rstrip("="),
    ),
    (
        "supabase anon key",
        "NEXT_PUBLIC_SUPABASE_ANON_KEY="
        + _jwt(
            {
                "iss": "supabase",
                "ref": _v(20, string.ascii_lowercase),
                "role": "anon",
                "iat": 1718000000,
                "exp": 2033576000,
            }
        ),
    ),
    (
        "mapbox public token",
        "mapboxgl.accessToken = 'pk." + part({"u": "acme", "a": _v(25, _LOWER_DIGITS)}) + "." + _v(22, _URLSAFE) + "'",
    ),
    ("recaptcha site key", f'<div class="g-recaptcha" data-sitekey="6L{_v(38, _URLSAFE)}"></div>'),
    (
        "new relic browser key",
        f'NREUM.loader_config={{accountID:"{_R.randint(10**6, 10**7)}",licenseKey:"NRJS-{_hex(19)}",applicationI'
        f'D:"{_R.randint(10**8, 10**9)}"}}',
    ),
    # --- public keys ---
    ("ssh public key", f"add to authorized_keys: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_b64(32)} dana@laptop"),
    ("age recipient", f"encrypt backups to age1{_v(58, _BECH32)}"),
    # (as first run, at 6ca29a7, `RWS` and 52 characters: no minisign key, whose 42 bytes are `Ed`, an id and the key)
    ("minisign public key", f"minisign -Vm release.tar.gz -P {base64.b64encode(b'Ed' + _bytes(40)).decode()}"),
    (
        "wireguard public key only",
        f"[Peer]\nPublicKey = {_b64(32)}\nAllowedIPs = 10.8.0.0/24\nEndpoint = vpn.example.org:51820",
    ),
    ("nostr npub", f"follow the release bot: npub1{_v(58, _BECH32)}"),
    ("ethereum address", f"send the testnet ETH to 0x{_hex(40)}"),
    (
        "pem public key",
        f"-----BEGIN PUBLIC KEY-----\n{lines('MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA' + _b64(250))}\n----"
        "-END PUBLIC KEY-----",
    ),
    (
        "certificate",
        f"-----BEGIN CERTIFICATE-----\n{lines('MIIDdzCCAl+gAwIBAgIE' + _b64(300))}\n-----END CERTIFICATE-----",
    ),
    (
        "ppk public part only",
        'PuTTY public key export:\n---- BEGIN SSH2 PUBLIC KEY ----\nComment: "ed25519-key-20240611"\n'
        f"{_PPK_PUBLIC.replace(chr(10), '')}\n---- END SSH2 PUBLIC KEY ----",
    ),
    (
        "kubeconfig ca only",
        f"clusters:\n- cluster:\n    certificate-authority-data: {_KUBE_CERT[:300]}\n    server: https://10.0.0."
        "1:6443\n  name: prod",
    ),
    # --- encrypted-at-rest values meant to be committed ---
    ("sops value", f"password: ENC[AES256_GCM,data:{_b64(18)},iv:{_b64(32)},tag:{_b64(16)},type:str]"),
    (
        "ansible vault",
        "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  " + "\n  ".join(_hex(80) for _ in range(3)),
    ),
    # --- prompting commands / prose without the value ---
    ("psql prompt", "psql -h db-prod.internal -U orders_rw -W orders   # prompts for the password"),
    ("mysql prompt", "mysql -u root -p -h 127.0.0.1"),
    ("docker login stdin", "cat ~/token.txt | docker login ghcr.io -u acme-ci --password-stdin"),
    ("password policy", "the password must be at least 14 characters and rotate every 90 days"),
    ("password location", "the staging DB password is in 1Password under 'Staging / orders-db', not in the repo"),
    ("token expiry note", "Fly deploy tokens expire after 20 years unless you pass --expiry; ours use 30 days"),
    ("prose german no value", "Das Passwort für den Router steht auf dem Aufkleber unten am Gerät"),
    ("prose french no value", "le mot de passe de la base de staging a été changé hier, demande à Lucie"),
    ("prose japanese no value", "本番DBのパスワードは1Passwordの「本番」保管庫にあります"),
    ("prose spanish no value", "la contraseña del servidor de correo se renueva cada trimestre"),
    ("prose russian no value", "пароль от тестовой базы лежит в Vault, путь secret/qa/db"),
    ("config key names", "pgpass format is hostname:port:database:username:password, one per line, chmod 600"),
    ("netrc format doc", "~/.netrc entries look like: machine <host> login <user> password <token>"),
    (
        "rotation ticket",
        "OPS-2231: rotate the Datadog API key and the New Relic license key after the contractor offboarding",
    ),
    (
        "key naming convention",
        "Clerk keys: pk_test_/pk_live_ are publishable, sk_test_/sk_live_ are secret — never ship sk_ to the client",
    ),
    (
        "provider prefix doc",
        "Anthropic keys start with sk-ant-, OpenAI project keys with sk-proj-, Groq with gsk_, Replicate with r8_",
    ),
]

# The keeper of AWS's documented pair, refused on the first run and kept refused: a vendor's documented sample key is
# refused by policy (docs/security.md; bench/secret_forms.REFUSED_BY_POLICY, as sets 3-7 moved theirs).
# (and a Sentry DSN with its public key alone, which the ninth and twelfth sets count as a secret: it lets anyone send
# events to the project, and those sets stay refused)
POLICY_TEXTS: list[tuple[str, str]] = [
    (
        "sentry public dsn",
        f'Sentry.init({{ dsn: "https://{_hex(32)}@o{_R.randint(100000, 999999)}.ingest.sentry.io/'
        f'{_R.randint(1000000, 9999999)}" }})',
    ),
    (
        "aws docs example",
        "AWS docs example pair (not real): AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
]


HELD_OUT_19: list[Form] = [(f"s19 {name}", fixed(text)) for name, text in SECRET_TEXTS]
HELD_OUT_19_KEEP: list[Form] = [(f"k19 keep {name}", fixed(text)) for name, text in KEEP_TEXTS]
REFUSED_BY_POLICY_19: list[Form] = [(f"k19 policy {name}", fixed(text)) for name, text in POLICY_TEXTS]

"""The twenty-second held-out set, written before reading the scanner or any earlier set's texts.

HELD_OUT_22 are texts carrying a secret that an outside tester would try first, each provider's token written the
way that provider's own documentation shows it; every one must be refused. HELD_OUT_22_KEEP are look-alikes that are
not secrets (hashes, UUIDs, commit SHAs, public keys and publishable keys, placeholders, redacted values, variable
names alone, connection strings without a password, test vectors); every one must be stored.

The angle of this set is the outsider's checklist: about forty SaaS and cloud providers (payments, email, SMS,
observability, CI, package registries, LLM APIs, chat webhooks, maps, databases as a service, auth providers),
JWTs and session cookies of the common web frameworks, private keys in every PEM, OpenSSH, PuTTY, PGP and JWK form,
connection strings of every database and broker (URL, ADO.NET, JDBC, ODBC, Oracle EZConnect, Kafka JAAS), the
credential files tools write (`.npmrc`, `.pypirc`, `.netrc`, `.git-credentials`, docker `config.json`, kubeconfig,
`.pgpass`, `my.cnf`, Maven `settings.xml`, `.yarnrc.yml`, composer `auth.json`, `~/.aws/credentials`, gcloud ADC),
base64-wrapped and URL-encoded secrets, secrets split over two lines or concatenated in code, JSON quoted inside
YAML and YAML inside JSON, and prose around a password in twenty languages.

The random values are drawn from one seeded generator, so every run sees the same texts; bench.secret_reseed
re-runs the file with other seeds.
"""

# ruff: noqa: E501  (the texts are kept whole, one a line, as written before the first run; the values are drawn in
# this order from one seed, so a text cut by hand could change every text after it)

from __future__ import annotations

import hashlib
import json
import string
from urllib.parse import quote

from bench.secret_fill import Filler, enc, fixed, lines
from bench.secret_forms_9 import Form

_F = Filler(2222)
_R = _F.rng
_v = _F.v
_hex = _F.hex
_b64 = _F.b64
_b64url = _F.b64url
_uuid = _F.uuid
_jwt = _F.jwt
_pem = _F.pem
_epoch = _F.epoch
_ALNUM = string.ascii_letters + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_URLSAFE = _ALNUM + "-_"
_B64 = _ALNUM + "+/"
_B32U = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_WORDS = [
    "copper", "lantern", "glacier", "mango", "pylon", "cobalt", "ember", "fjord", "hazel", "indigo",
    "jasper", "kestrel", "lotus", "nimbus", "onyx", "prairie", "quill", "raven", "sierra", "tango",
]  # fmt: skip


def _pw(n: int = 16) -> str:
    """A generated password: letters, digits and a symbol or two, in no fixed place."""
    return _F.pw(n, "!#%*@-_+^$", "!#%*^")


def _human_pw() -> str:
    """A password a person made up: a word or two, digits, a symbol."""
    a, b = _R.sample(_WORDS, 2)
    return f"{a.capitalize()}{_R.choice(['', '-', '_', '.'])}{b}{_R.randint(1, 9999)}{_R.choice('!?#&$')}"


def _digits(n: int) -> str:
    return str(_R.randint(10 ** (n - 1), 10**n - 1))


def _word() -> str:
    return _R.choice(_WORDS)


_USER = _R.choice(["deploy", "svc_app", "ci", "admin", "etl_rw", "backup", "reporter"])
_DB = _R.choice(["orders", "billing", "app_prod", "analytics", "core"])
_PW = _pw()
_PW2 = _pw(20)
_HPW = _human_pw()
_HPW2 = _human_pw()
_PW_URL = quote(_pw(18) + "@/:", safe="")
_AKIA = "AKIA" + _v(16, _UPPER_DIGITS)
_AWS_SECRET = _v(40, _ALNUM + "/+")
_ASIA = "ASIA" + _v(16, _UPPER_DIGITS)
_AWS_SESSION = "IQoJb3JpZ2luX2Vj" + _v(360, _B64)
_GH_PAT = "ghp_" + _v(36)
_GH_FINE = "github_pat_11" + _v(20, _UPPER_DIGITS) + "_" + _v(59)
_GL_PAT = "glpat-" + _v(20, _URLSAFE)
_NPM = "npm_" + _v(36)
_PYPI = "pypi-AgEIcHlwaS5vcmc" + _v(150, _URLSAFE)
_OPENAI = "sk-proj-" + _v(156, _URLSAFE)
_ANTHROPIC = "sk-ant-api03-" + _v(93, _URLSAFE) + "AA"
_STRIPE = "sk_live_" + _v(99)
_SLACK_BOT = "xoxb-" + _digits(12) + "-" + _digits(13) + "-" + _v(24)
_JWT_SUPA = _jwt(
    {
        "iss": "supabase",
        "ref": _v(20, string.ascii_lowercase),
        "role": "service_role",
        "iat": _epoch(),
        "exp": _epoch() + 10**8,
    }
)
_DJANGO_SESSION = _v(32, _LOWER_DIGITS)
_RSA_KEY = _pem("RSA PRIVATE KEY", 1190)
_EC_KEY = _pem("EC PRIVATE KEY", 121)
_PKCS8 = _pem("PRIVATE KEY", 1218)
_ENC_PKCS8 = _pem("ENCRYPTED PRIVATE KEY", 1298)
_OPENSSH = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    + lines("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + _b64(330), 70)
    + "\n-----END OPENSSH PRIVATE KEY-----"
)
_GCP_KEY_ESCAPED = (
    "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(lines(_b64(1218)).split("\n")) + "\\n-----END PRIVATE KEY-----\\n"
)
_PUTTY = (
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20260114\nPublic-Lines: 2\n"
    + lines("AAAAC3NzaC1lZDI1NTE5AAAAI" + _b64(32), 64)
    + "\nPrivate-Lines: 1\n"
    + _b64(36)
    + "\nPrivate-MAC: "
    + _hex(64)
)
_PUTTY2 = (
    "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: rsa-key-20250302\nPublic-Lines: 6\n"
    + lines("AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + _b64(250), 64)
    + "\nPrivate-Lines: 14\n"
    + lines(_b64(880), 64)
    + "\nPrivate-MAC: "
    + _hex(40)
)
_PGP = (
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
    + lines("lQOYBG" + _b64(900), 64)
    + "\n="
    + _v(4, _B64)
    + "\n-----END PGP PRIVATE KEY BLOCK-----"
)
_JWK_RSA = json.dumps(
    {
        "kty": "RSA",
        "kid": _uuid(),
        "use": "sig",
        "n": _b64url(256),
        "e": "AQAB",
        "d": _b64url(256),
        "p": _b64url(128),
        "q": _b64url(128),
        "dp": _b64url(128),
        "dq": _b64url(128),
        "qi": _b64url(128),
    },
    indent=2,
)
_JWK_EC = json.dumps({"kty": "EC", "crv": "P-256", "x": _b64url(32), "y": _b64url(32), "d": _b64url(32)})
_JWK_OKP = json.dumps({"kty": "OKP", "crv": "Ed25519", "x": _b64url(32), "d": _b64url(32)})
_JWK_OCT = json.dumps({"kty": "oct", "kid": "hmac-1", "alg": "HS256", "k": _b64url(32)})
_DOCKER_AUTH = enc(f"{_USER}:{_pw()}")
_GHCR_AUTH = enc(f"{_word()}-bot:" + "ghp_" + _v(36))
_K8S_TOKEN = _jwt(
    {
        "iss": "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": "prod",
        "sub": "system:serviceaccount:prod:deployer",
    },
    "RS256",
    256,
)
_K8S_CLIENT_KEY = enc(_pem("RSA PRIVATE KEY", 1190) + "\n")
_K8S_CA = enc(_pem("CERTIFICATE", 780) + "\n")
_B64_ENV = enc(
    f"DATABASE_URL=postgres://{_USER}:{_pw()}@db.internal:5432/{_DB}\nSECRET_KEY={_v(50, _ALNUM + '!@#$%^&*(-_=+)')}\n"
)

SECRET_TEXTS: list[tuple[str, str]] = [
    # ---- payments ----
    ("stripe secret key env", f"STRIPE_SECRET_KEY={_STRIPE}"),
    ("stripe restricted key curl", f"curl https://api.stripe.com/v1/charges -u rk_live_{_v(99)}:"),
    ("stripe webhook secret", f"endpoint secret from the dashboard: whsec_{_v(32)}"),
    ("stripe test key in code", f'stripe.api_key = "sk_test_{_v(99)}"'),
    ("square access token", f"SQUARE_ACCESS_TOKEN=EAAA{_v(60, _URLSAFE)}"),
    ("square oauth secret", f"square application secret: sq0csp-{_v(43, _URLSAFE)}"),
    ("braintree access token", f"BT_ACCESS_TOKEN=access_token$production${_v(16, _LOWER_DIGITS)}${_hex(32)}"),
    ("paypal client secret", f"PAYPAL_CLIENT_ID={_v(80, _URLSAFE)}\nPAYPAL_CLIENT_SECRET={_v(80, _URLSAFE)}"),
    ("adyen api key header", f"X-API-Key: AQE{_v(4)}hmfxL{_v(120, _ALNUM + '+/=')}"),
    ("razorpay key pair", f'razorpay.Client(auth=("rzp_live_{_v(14)}", "{_v(24)}"))'),
    ("plaid secret", f"PLAID_CLIENT_ID={_hex(24)}\nPLAID_SECRET={_hex(30)}\nPLAID_ENV=production"),
    ("plaid access token", f"stored access token for the user: access-production-{_uuid()}"),
    ("shopify admin token", f"X-Shopify-Access-Token: shpat_{_hex(32)}"),
    ("coinbase api secret", f"COINBASE_API_KEY={_v(16)}\nCOINBASE_API_SECRET={_v(32)}"),
    # ---- email ----
    ("sendgrid api key", f"SENDGRID_API_KEY='SG.{_v(22, _URLSAFE)}.{_v(43, _URLSAFE)}'"),
    ("mailgun key", f"curl -s --user 'api:key-{_hex(32)}' https://api.mailgun.net/v3/mg.acme.io/messages"),
    ("mailgun new format key", f"MAILGUN_API_KEY={_hex(32)}-{_hex(8)}-{_hex(8)}"),
    ("mailchimp key", f'mailchimp.setConfig({{ apiKey: "{_hex(32)}-us21", server: "us21" }})'),
    ("postmark server token", f"X-Postmark-Server-Token: {_uuid()}"),
    ("resend key", f"const resend = new Resend('re_{_v(8)}_{_v(24)}');"),
    ("brevo key", f"BREVO_API_KEY=xkeysib-{_hex(64)}-{_v(16)}"),
    (
        "smtp password in settings",
        f"EMAIL_HOST = 'smtp.sendgrid.net'\nEMAIL_HOST_USER = 'apikey'\nEMAIL_HOST_PASSWORD = 'SG.{_v(22, _URLSAFE)}.{_v(43, _URLSAFE)}'",
    ),
    ("ses smtp creds", f"SES SMTP user {_AKIA}, SMTP password B{_v(43, _ALNUM + '+/')}"),
    # ---- SMS / voice ----
    ("twilio auth token", f"TWILIO_ACCOUNT_SID=AC{_hex(32)}\nTWILIO_AUTH_TOKEN={_hex(32)}"),
    ("twilio api key secret", f"client = Client('SK{_hex(32)}', '{_v(32)}', 'AC{_hex(32)}')"),
    ("vonage secret", f"VONAGE_API_KEY={_hex(8)}\nVONAGE_API_SECRET={_v(16)}"),
    ("messagebird key", f"messagebird.initClient('{_v(25)}')  # live key"),
    ("plivo auth", f"PLIVO_AUTH_ID=MA{_v(18, _UPPER_DIGITS)}\nPLIVO_AUTH_TOKEN={_v(40)}"),
    # ---- observability ----
    ("datadog keys", f"DD_API_KEY={_hex(32)}\nDD_APP_KEY={_hex(40)}"),
    ("datadog agent yaml", f"api_key: {_hex(32)}\nsite: datadoghq.eu\nlogs_enabled: true"),
    ("new relic user key", f"NEW_RELIC_API_KEY=NRAK-{_v(27, _UPPER_DIGITS)}"),
    ("new relic license key", f"license_key: {_hex(36)}NRAL"),
    ("sentry auth token", f"SENTRY_AUTH_TOKEN=sntrys_{_b64(120)}"),
    ("sentry user token", f"sentry-cli --auth-token sntryu_{_hex(64)} releases new 1.4.2"),
    ("honeycomb key", f"HONEYCOMB_API_KEY=hcaik_{_v(58, _LOWER_DIGITS)}"),
    ("grafana service account token", f"Authorization: Bearer glsa_{_v(32)}_{_hex(8)}"),
    ("grafana cloud token", f"GRAFANA_CLOUD_TOKEN=glc_{_b64(100)}"),
    ("pagerduty integration key", f'"routing_key": "{_hex(32)}"'),
    (
        "pagerduty api token",
        f"curl -H 'Authorization: Token token=u+{_v(18, _URLSAFE)}' https://api.pagerduty.com/incidents",
    ),
    ("splunk hec token", f"curl -k https://splunk:8088/services/collector -H 'Authorization: Splunk {_uuid()}'"),
    ("elastic cloud api key", f"Authorization: ApiKey {enc(_v(20) + ':' + _v(22, _URLSAFE))}"),
    ("posthog personal key", f"POSTHOG_PERSONAL_API_KEY=phx_{_v(43)}"),
    # ---- CI / code hosts ----
    ("github classic pat", f"git clone https://{_GH_PAT}@github.com/acme/infra.git"),
    ("github fine-grained pat", f"GH_TOKEN={_GH_FINE}"),
    ("github oauth token", f"gho_{_v(36)} is the token the OAuth app got back"),
    ("github app installation token", f"token: ghs_{_v(36)}"),
    ("gitlab pat", f'curl --header "PRIVATE-TOKEN: {_GL_PAT}" https://gitlab.com/api/v4/projects'),
    ("gitlab runner token", f"gitlab-runner register --url https://gitlab.com --token glrt-{_v(20, _URLSAFE)}"),
    (
        "gitlab deploy token",
        f"docker login registry.gitlab.com -u gitlab+deploy-token-{_digits(6)} -p gldt-{_v(20, _URLSAFE)}",
    ),
    (
        "bitbucket app password",
        f"git remote set-url origin https://{_word()}:ATBB{_v(28)}{_hex(8).upper()}@bitbucket.org/acme/api.git",
    ),
    ("circleci token", f"CIRCLE_TOKEN=CCIPAT_{_v(22)}_{_hex(40)}"),
    ("buildkite token", f"BUILDKITE_API_TOKEN=bkua_{_hex(40)}"),
    ("jenkins api token", f"curl -u admin:11{_hex(32)} https://jenkins.acme.io/job/deploy/build"),
    ("travis token", f"travis login --github-token {_v(22, _URLSAFE)}"),
    ("azure devops pat", f"AZURE_DEVOPS_EXT_PAT={_v(52, string.ascii_lowercase + '234567')}"),
    ("sonarqube token", f"mvn sonar:sonar -Dsonar.token=squ_{_hex(40)}"),
    ("snyk token", f"SNYK_TOKEN={_uuid()}"),
    ("codecov token", f"codecov upload-process -t {_uuid()}"),
    ("github actions secret in log", f'Run echo "token is ghp_{_v(36)}"\ntoken is ghp_{_v(36)}'),
    # ---- package registries ----
    ("npm token", f"NPM_TOKEN={_NPM}"),
    ("pypi token twine", f"twine upload -u __token__ -p {_PYPI} dist/*"),
    ("rubygems key", f"GEM_HOST_API_KEY=rubygems_{_hex(48)}"),
    (
        "nuget key",
        f"dotnet nuget push pkg.nupkg --api-key oy2{_v(43, _LOWER_DIGITS)} --source https://api.nuget.org/v3/index.json",
    ),
    ("docker hub pat", f"echo dckr_pat_{_v(27, _URLSAFE)} | docker login -u {_USER} --password-stdin"),
    ("crates io token", f"cargo login cio{_v(32)}"),
    ("jfrog token", f"JFROG_ACCESS_TOKEN=cmVmdGtuOjAxOj{_v(50)}"),
    ("packagist token", f"composer config --global --auth http-basic.repo.packagist.com token {_hex(40)}"),
    ("hex pm key", f"HEX_API_KEY={_hex(32)}"),
    # ---- LLM APIs ----
    ("openai project key", f"OPENAI_API_KEY={_OPENAI}"),
    ("openai legacy key", f"openai.api_key = 'sk-{_v(20)}T3BlbkFJ{_v(20)}'"),
    ("anthropic key", f"export ANTHROPIC_API_KEY={_ANTHROPIC}"),
    ("gemini key", f'genai.configure(api_key="AIza{_v(35, _URLSAFE)}")'),
    ("groq key", f"GROQ_API_KEY=gsk_{_v(52)}"),
    ("hugging face token", f"huggingface-cli login --token hf_{_v(34)}"),
    ("replicate token", f"REPLICATE_API_TOKEN=r8_{_v(37)}"),
    ("perplexity key", f"Authorization: Bearer pplx-{_v(48)}"),
    ("cohere key", f"co = cohere.Client('{_v(40)}')"),
    ("mistral key", f"MISTRAL_API_KEY={_v(32)}"),
    ("together key", f"TOGETHER_API_KEY={_hex(64)}"),
    ("openrouter key", f"OPENROUTER_API_KEY=sk-or-v1-{_hex(64)}"),
    ("deepseek key", f'client = OpenAI(api_key="sk-{_hex(32)}", base_url="https://api.deepseek.com")'),
    ("fireworks key", f"FIREWORKS_API_KEY=fw_{_v(24)}"),
    ("azure openai key", f"AZURE_OPENAI_API_KEY={_hex(32)}\nAZURE_OPENAI_ENDPOINT=https://acme-oai.openai.azure.com/"),
    ("xai key", f"XAI_API_KEY=xai-{_v(80)}"),
    ("langsmith key", f"LANGCHAIN_API_KEY=lsv2_pt_{_hex(32)}_{_hex(10)}"),
    ("pinecone key", f'pc = Pinecone(api_key="pcsk_{_v(6)}_{_v(60)}")'),
    # ---- chat webhooks / bots ----
    ("slack bot token", f"SLACK_BOT_TOKEN={_SLACK_BOT}"),
    ("slack user token", f"xoxp-{_digits(12)}-{_digits(12)}-{_digits(13)}-{_hex(32)}"),
    ("slack app token", f"SLACK_APP_TOKEN=xapp-1-A{_v(10, _UPPER_DIGITS)}-{_digits(13)}-{_hex(64)}"),
    (
        "slack webhook",
        f'curl -X POST -d \'{{"text":"deployed"}}\' https://hooks.slack.com/services/T{_v(8, _UPPER_DIGITS)}/B{_v(10, _UPPER_DIGITS)}/{_v(24)}',
    ),
    ("discord webhook", f"DISCORD_WEBHOOK=https://discord.com/api/webhooks/{_digits(19)}/{_v(68, _URLSAFE)}"),
    ("discord bot token", f"client.run('{enc(_digits(18)).rstrip('=')}.{_v(6, _URLSAFE)}.{_v(38, _URLSAFE)}')"),
    (
        "teams webhook",
        f"https://acme.webhook.office.com/webhookb2/{_uuid()}@{_uuid()}/IncomingWebhook/{_hex(32)}/{_uuid()}/V2{_v(43, _URLSAFE)}",
    ),
    ("telegram bot token", f"TELEGRAM_BOT_TOKEN={_digits(10)}:AA{_v(33, _URLSAFE)}"),
    (
        "google chat webhook",
        f"https://chat.googleapis.com/v1/spaces/AAAA{_v(7, _URLSAFE)}/messages?key=AIza{_v(35, _URLSAFE)}&token={_v(43, _URLSAFE)}%3D",
    ),
    ("mattermost webhook", f"MATTERMOST_HOOK=https://chat.acme.io/hooks/{_v(26, _LOWER_DIGITS)}"),
    # ---- maps ----
    ("mapbox secret token", f"MAPBOX_DOWNLOADS_TOKEN=sk.eyJ1Ijoi{_v(60, _URLSAFE)}.{_v(22, _URLSAFE)}"),
    (
        "google maps server key",
        f"https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key=AIza{_v(35, _URLSAFE)}",
    ),
    ("here api key", f"HERE_API_KEY={_v(43, _URLSAFE)}"),
    # ---- databases as a service ----
    (
        "mongodb atlas srv",
        f"MONGODB_URI=mongodb+srv://{_USER}:{_PW}@cluster0.{_v(5, _LOWER_DIGITS)}.mongodb.net/{_DB}?retryWrites=true&w=majority",
    ),
    (
        "planetscale password",
        f"DATABASE_URL='mysql://{_v(12, _LOWER_DIGITS)}:pscale_pw_{_v(43, _URLSAFE)}@aws.connect.psdb.cloud/{_DB}?sslaccept=strict'",
    ),
    (
        "neon url",
        f"postgresql://{_USER}:npg_{_v(12)}@ep-{_word()}-{_word()}-{_v(8, _LOWER_DIGITS)}.eu-central-1.aws.neon.tech/{_DB}?sslmode=require",
    ),
    ("supabase service role", f"SUPABASE_SERVICE_ROLE_KEY={_JWT_SUPA}"),
    ("supabase access token", f"supabase login --token sbp_{_hex(40)}"),
    (
        "upstash rest token",
        f"UPSTASH_REDIS_REST_URL=https://{_word()}-{_digits(5)}.upstash.io\nUPSTASH_REDIS_REST_TOKEN=A{_v(60, _ALNUM)}=",
    ),
    ("turso token", f"TURSO_AUTH_TOKEN={_jwt({'a': 'rw', 'iat': _epoch(), 'id': _uuid()}, 'EdDSA', 64)}"),
    ("firebase server key", f"Authorization: key=AAAA{_v(7, _URLSAFE)}:APA91b{_v(134, _URLSAFE)}"),
    (
        "cockroach url",
        f"postgresql://{_USER}:{_v(22, _URLSAFE)}@free-tier.gcp-us-central1.cockroachlabs.cloud:26257/defaultdb?sslmode=verify-full",
    ),
    # ---- auth providers ----
    ("auth0 client secret", f"AUTH0_CLIENT_ID={_v(32)}\nAUTH0_CLIENT_SECRET={_v(64, _URLSAFE)}"),
    ("okta api token", f"Authorization: SSWS 00{_v(40, _URLSAFE)}"),
    ("clerk secret", f"CLERK_SECRET_KEY=sk_live_{_v(40)}"),
    ("azure ad client secret", f'client_secret = "{_v(3, _URLSAFE)}8Q~{_v(31, _URLSAFE + ".~")}"'),
    ("google oauth client secret", f'"client_secret": "GOCSPX-{_v(28, _URLSAFE)}"'),
    ("google refresh token", f"refresh_token=1//0{_v(100, _URLSAFE)}"),
    ("keycloak client secret", f"KEYCLOAK_CLIENT_SECRET={_v(32)}"),
    ("workos key", f"WORKOS_API_KEY=sk_{_v(60)}"),
    # ---- cloud ----
    ("aws credentials file", f"[default]\naws_access_key_id = {_AKIA}\naws_secret_access_key = {_AWS_SECRET}"),
    (
        "aws sts creds json",
        json.dumps(
            {
                "Credentials": {
                    "AccessKeyId": _ASIA,
                    "SecretAccessKey": _v(40, _ALNUM + "/+"),
                    "SessionToken": _AWS_SESSION,
                }
            },
            indent=2,
        ),
    ),
    (
        "gcp service account json",
        json.dumps(
            {
                "type": "service_account",
                "project_id": f"acme-{_word()}",
                "private_key_id": _hex(40),
                "private_key": "<<PK>>",
                "client_email": f"deployer@acme-{_word()}.iam.gserviceaccount.com",
            },
            indent=2,
        ).replace("<<PK>>", _GCP_KEY_ESCAPED),
    ),
    (
        "azure storage connection string",
        f"DefaultEndpointsProtocol=https;AccountName=acme{_word()};AccountKey={_b64(64)};EndpointSuffix=core.windows.net",
    ),
    (
        "azure service bus",
        f"Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={_b64(32)}",
    ),
    ("azure cosmos key", f"COSMOS_KEY={_b64(64)}"),
    ("digitalocean token", f"doctl auth init -t dop_v1_{_hex(64)}"),
    ("heroku api key", f"HEROKU_API_KEY=HRKU-{_uuid()}"),
    ("cloudflare api token", f"CLOUDFLARE_API_TOKEN={_v(40, _URLSAFE)}"),
    ("cloudflare global key", f"X-Auth-Email: ops@acme.io\nX-Auth-Key: {_hex(37)}"),
    ("vercel token", f"vercel deploy --prod --token {_v(24)}"),
    ("netlify token", f"NETLIFY_AUTH_TOKEN=nfp_{_v(36)}"),
    ("linode token", f"LINODE_TOKEN={_hex(64)}"),
    ("alibaba keys", f"ALIBABA_CLOUD_ACCESS_KEY_ID=LTAI{_v(20)}\nALIBABA_CLOUD_ACCESS_KEY_SECRET={_v(30)}"),
    ("hashicorp vault token", f"VAULT_TOKEN=hvs.{_v(90, _URLSAFE)}"),
    ("terraform cloud token", f'credentials "app.terraform.io" {{\n  token = "{_v(14)}.atlasv1.{_v(67)}"\n}}'),
    ("pulumi token", f"PULUMI_ACCESS_TOKEN=pul-{_hex(40)}"),
    ("doppler token", f"DOPPLER_TOKEN=dp.st.prd.{_v(43)}"),
    ("1password service account", f"OP_SERVICE_ACCOUNT_TOKEN=ops_eyJ{_v(200, _URLSAFE)}"),
    ("tailscale auth key", f"tailscale up --authkey tskey-auth-k{_v(11)}CNTRL-{_v(33)}"),
    ("ngrok token", f"ngrok config add-authtoken 2{_v(26)}_{_v(21)}"),
    # ---- SaaS ----
    ("atlassian api token", f"JIRA_API_TOKEN=ATATT3xFfGF0{_v(170, _URLSAFE)}={_hex(8).upper()}"),
    ("linear key", f"LINEAR_API_KEY=lin_api_{_v(40)}"),
    ("notion token", f"NOTION_TOKEN=ntn_{_v(46)}"),
    ("airtable pat", f"AIRTABLE_PAT=pat{_v(14)}.{_hex(64)}"),
    ("figma token", f"X-Figma-Token: figd_{_v(40, _URLSAFE)}"),
    ("asana pat", f"Authorization: Bearer 2/{_digits(16)}/{_digits(16)}:{_hex(32)}"),
    ("hubspot private app", f"HUBSPOT_ACCESS_TOKEN=pat-na1-{_uuid()}"),
    ("postman key", f"POSTMAN_API_KEY=PMAK-{_hex(24)}-{_hex(34)}"),
    ("contentful token", f"CONTENTFUL_MANAGEMENT_TOKEN=CFPAT-{_v(43, _URLSAFE)}"),
    ("algolia admin key", f"algoliasearch('{_v(10, _UPPER_DIGITS)}', '{_hex(32)}')  // admin API key"),
    ("intercom token", f"INTERCOM_ACCESS_TOKEN=dG9rOj{_v(54)}="),
    ("zendesk token", f"curl https://acme.zendesk.com/api/v2/tickets.json -u ops@acme.io/token:{_v(40)}"),
    ("salesforce session", f"sf org display: Access Token 00D{_v(12)}!{_v(96, _ALNUM + '._')}"),
    ("dropbox token", f"DROPBOX_ACCESS_TOKEN=sl.{_v(135, _URLSAFE)}"),
    (
        "age secret key",
        f"# created: 2026-03-01T10:00:00Z\n# public key: age1{_v(58, 'qpzry9x8gf2tvdw0s3jn54khce6mua7l')}\nAGE-SECRET-KEY-1{_v(58, 'QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L')}",
    ),
    ("shopify shared secret", f"SHOPIFY_API_SECRET=shpss_{_hex(32)}"),
    # ---- JWTs and session cookies ----
    (
        "bearer jwt header",
        f"Authorization: Bearer {_jwt({'sub': _uuid(), 'email': 'ana@acme.io', 'exp': _epoch(), 'scope': 'admin'}, 'RS256', 256)}",
    ),
    (
        "jwt in query string",
        f"GET /export?format=csv&access_token={_jwt({'uid': _R.randint(1, 99999), 'exp': _epoch()})} HTTP/1.1",
    ),
    (
        "refresh token json",
        json.dumps(
            {
                "access_token": _jwt({"sub": _uuid(), "exp": _epoch()}),
                "refresh_token": _v(64, _URLSAFE),
                "token_type": "Bearer",
                "expires_in": 3600,
            }
        ),
    ),
    ("django session cookie", f"Cookie: csrftoken={_v(32)}; sessionid={_DJANGO_SESSION}"),
    ("express session cookie", f"Cookie: connect.sid=s%3A{_v(32, _URLSAFE)}.{quote(_b64(32), safe='')}"),
    (
        "laravel session",
        f"Set-Cookie: laravel_session={quote(enc(json.dumps({'iv': _b64(16), 'value': _b64(96), 'mac': _hex(64)})), safe='')}; path=/; httponly",
    ),
    ("rails session", f"Cookie: _myapp_session={_v(200, _ALNUM + '%')}--{_hex(40)}"),
    (
        "next-auth session",
        f"__Secure-next-auth.session-token={_v(30, _URLSAFE)}..{_v(180, _URLSAFE)}.{_v(22, _URLSAFE)}",
    ),
    ("php session", f"the PHPSESSID={_v(26, _LOWER_DIGITS)} from prod still works if you paste it"),
    ("jsessionid", f"curl -b 'JSESSIONID={_hex(32).upper()}' https://intranet.acme.io/admin"),
    ("aspnet cookie", f"Cookie: .AspNetCore.Cookies=CfDJ8{_v(300, _URLSAFE)}"),
    ("flask session", f"session={_b64url(40)}.{_v(6, _URLSAFE)}.{_v(27, _URLSAFE)}"),
    ("jwt alone", _jwt({"sub": "admin", "role": "superuser", "iat": _epoch()})),
    # ---- private keys ----
    ("rsa pem", f"here's the deploy key:\n{_RSA_KEY}"),
    ("ec pem", _EC_KEY),
    ("pkcs8 pem", _PKCS8),
    ("encrypted pkcs8 pem", f"{_ENC_PKCS8}\npassphrase is in 1Password"),
    ("openssh key", _OPENSSH),
    ("dsa pem", _pem("DSA PRIVATE KEY", 440)),
    ("putty v3", _PUTTY),
    ("putty v2", _PUTTY2),
    ("pgp private block", _PGP),
    ("jwk rsa private", _JWK_RSA),
    ("jwk ec private", _JWK_EC),
    ("jwk okp private", _JWK_OKP),
    ("jwk symmetric", _JWK_OCT),
    ("pem in yaml block", "tls:\n  key: |\n    " + _pem("EC PRIVATE KEY", 121).replace("\n", "\n    ")),
    ("ed25519 raw seed hex", f"ED25519_PRIVATE_KEY={_hex(64)}"),
    ("ethereum private key", f"PRIVATE_KEY=0x{_hex(64)}"),
    ("wireguard private key", f"[Interface]\nPrivateKey = {_b64(32)}\nAddress = 10.8.0.2/24"),
    # ---- connection strings ----
    ("postgres url", f"postgres://{_USER}:{_PW}@db.acme.internal:5432/{_DB}"),
    ("sqlalchemy url", f"SQLALCHEMY_DATABASE_URI = 'postgresql+psycopg2://{_USER}:{_HPW}@10.0.4.12/{_DB}'"),
    ("mysql url", f"mysql://root:{_PW2}@127.0.0.1:3306/{_DB}"),
    ("mariadb cli", f"mariadb -h db1 -u {_USER} -p'{_pw()}' {_DB}"),
    (
        "mssql ado",
        f"Server=tcp:acme-sql.database.windows.net,1433;Initial Catalog={_DB};User ID={_USER};Password={_pw()};Encrypt=True;",
    ),
    ("oracle ezconnect", f"sqlplus {_USER}/{_pw(12).replace('@', 'x').replace('/', 'y')}@//ora-prod:1521/ORCLPDB1"),
    ("jdbc url", f"spring.datasource.url=jdbc:postgresql://db:5432/{_DB}?user={_USER}&password={_pw()}"),
    ("odbc dsn", f"Driver={{ODBC Driver 18 for SQL Server}};Server=sql01;Database={_DB};Uid={_USER};Pwd={_pw()};"),
    ("redis url", f"REDIS_URL=redis://:{_v(32)}@redis-prod:6379/0"),
    ("rediss url", f"rediss://default:{_v(32)}@{_word()}-{_digits(5)}.upstash.io:6379"),
    ("amqp url", f"CELERY_BROKER_URL=amqp://{_USER}:{_pw()}@rabbitmq:5672/prod"),
    (
        "amqps cloudamqp",
        f"amqps://{_v(8, string.ascii_lowercase)}:{_v(32, _URLSAFE)}@goose.rmq2.cloudamqp.com/{_v(8, string.ascii_lowercase)}",
    ),
    (
        "kafka jaas",
        f'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="{_v(16, _UPPER_DIGITS)}" password="{_v(64, _ALNUM + "+/")}";',
    ),
    ("nats url", f"nats://{_USER}:{_pw()}@nats.acme.io:4222"),
    ("mqtt url", f"mqtt://{_USER}:{_pw()}@broker.hivemq.cloud:8883"),
    ("elasticsearch url", f"ELASTICSEARCH_URL=https://elastic:{_v(24)}@es.acme.io:9243"),
    ("clickhouse url", f"clickhouse://default:{_pw()}@ch.acme.io:9440/{_DB}?secure=true"),
    (
        "neo4j creds",
        f"driver = GraphDatabase.driver('neo4j+s://{_hex(8)}.databases.neo4j.io', auth=('neo4j', '{_v(43, _URLSAFE)}'))",
    ),
    ("snowflake", f"snowsql -a acme-xy12345 -u {_USER.upper()} --password '{_pw()}'"),
    ("smtp url", f"EMAIL_URL=smtp+tls://{_USER}%40acme.io:{_pw()}@smtp.mailgun.org:587"),
    ("ldap bind", f"ldapsearch -H ldaps://ldap.acme.io -D 'cn=admin,dc=acme,dc=io' -w '{_pw()}' '(uid=ana)'"),
    ("sftp url", f"sftp://{_USER}:{_pw()}@files.partner.com/inbox"),
    ("url-encoded password", f"DATABASE_URL=postgres://{_USER}:{_PW_URL}@db:5432/{_DB}"),
    ("cassandra", f"cqlsh cass1 -u cassandra -p {_pw()}"),
    ("couchdb", f"COUCHDB_URL=http://admin:{_pw()}@couch:5984"),
    # ---- credential files ----
    ("npmrc auth token", f"//registry.npmjs.org/:_authToken={_NPM}"),
    (
        "npmrc basic auth",
        f"registry=https://npm.acme.io/\n//npm.acme.io/:_auth={enc(_USER + ':' + _pw())}\nalways-auth=true",
    ),
    ("npmrc password b64", f"//npm.pkg.github.com/:username={_USER}\n//npm.pkg.github.com/:_password={enc(_pw())}"),
    ("pypirc", f"[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = {_PYPI}"),
    ("pypirc private index", f"[internal]\nrepository = https://pypi.acme.io/\nusername = {_USER}\npassword = {_HPW}"),
    ("netrc", f"machine api.heroku.com\n  login ops@acme.io\n  password {_uuid()}"),
    ("netrc one line", f"machine github.com login {_word()}bot password {_pw()}"),
    ("git-credentials", f"https://{_word()}:{_GH_PAT}@github.com"),
    ("git-credentials gitlab", f"https://oauth2:{_GL_PAT}@gitlab.acme.io"),
    (
        "docker config auths",
        json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": _DOCKER_AUTH}}}, indent="\t"),
    ),
    ("docker config ghcr", json.dumps({"auths": {"ghcr.io": {"auth": _GHCR_AUTH}}})),
    ("kubeconfig token", f"apiVersion: v1\nkind: Config\nusers:\n- name: deployer\n  user:\n    token: {_K8S_TOKEN}"),
    (
        "kubeconfig client key",
        f"users:\n- name: admin\n  user:\n    client-certificate-data: {_K8S_CA}\n    client-key-data: {_K8S_CLIENT_KEY}",
    ),
    ("kubeconfig basic", f"users:\n- name: legacy\n  user:\n    username: admin\n    password: {_pw()}"),
    (
        "k8s secret manifest",
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n  password: {enc(_pw())}",
    ),
    ("k8s secret stringData", f'kind: Secret\nstringData:\n  DB_PASSWORD: "{_pw()}"'),
    ("pgpass", f"db.acme.internal:5432:{_DB}:{_USER}:{_pw()}"),
    ("my.cnf", f'[client]\nuser={_USER}\npassword="{_pw()}"\nhost=mysql-prod'),
    (
        "maven settings",
        f"<server>\n  <id>nexus-releases</id>\n  <username>{_USER}</username>\n  <password>{_pw()}</password>\n</server>",
    ),
    ("gradle properties", f"ossrhUsername={_USER}\nossrhPassword={_pw()}\nsigning.password={_HPW2}"),
    (
        "yarnrc yml",
        f'npmScopes:\n  acme:\n    npmRegistryServer: "https://npm.pkg.github.com"\n    npmAuthToken: "ghp_{_v(36)}"',
    ),
    (
        "composer auth json",
        json.dumps(
            {
                "http-basic": {"repo.acme.io": {"username": _USER, "password": _pw()}},
                "github-oauth": {"github.com": "ghp_" + _v(36)},
            }
        ),
    ),
    (
        "gcloud adc",
        json.dumps(
            {
                "client_id": f"{_digits(12)}-{_v(32, _LOWER_DIGITS)}.apps.googleusercontent.com",
                "client_secret": "d-FL95Q" + _v(17, _URLSAFE),
                "refresh_token": "1//0" + _v(100, _URLSAFE),
                "type": "authorized_user",
            }
        ),
    ),
    (
        "pip conf",
        f"[global]\nindex-url = https://{_USER}:{_pw(20).replace('@', 'a').replace('/', 'b').replace(':', 'c')}@pypi.acme.io/simple/",
    ),
    ("bundler config", f'BUNDLE_GEMS__CONTRIBSYS__COM: "{_hex(8)}:{_hex(8)}"'),
    ("htpasswd plain-ish", f"curl -u {_USER}:{_pw()} https://registry.acme.io/v2/_catalog"),
    ("s3cfg", f"[default]\naccess_key = {_AKIA}\nsecret_key = {_v(40, _ALNUM + '/+')}\nhost_base = s3.amazonaws.com"),
    ("rclone conf", f"[b2]\ntype = b2\naccount = {_hex(12)}\nkey = K00{_v(28, _ALNUM + '/+')}"),
    ("env file many", f"APP_ENV=production\nAPP_DEBUG=false\nAPP_KEY=base64:{_b64(32)}\nDB_HOST=127.0.0.1"),
    (
        "django settings secret",
        f"SECRET_KEY = 'django-insecure-{_v(50, string.ascii_lowercase + string.digits + '!@#$%^&*(-_=+)')}'",
    ),
    ("rails master key", f"config/master.key: {_hex(32)}"),
    # ---- wrapped, encoded, split ----
    ("base64 env file", f"echo {_B64_ENV} | base64 -d > .env"),
    ("basic auth header", f"Authorization: Basic {enc(_USER + ':' + _pw())}"),
    ("proxy authorization", f"Proxy-Authorization: Basic {enc('proxyuser:' + _HPW)}"),
    ("base64 of a key", f"STRIPE_KEY_B64={enc(_STRIPE)}"),
    (
        "url-encoded token in a query",
        f"https://api.acme.io/hook?token={quote('ghp_' + _v(36), safe='')}&sig={quote(_b64(32), safe='')}",
    ),
    (
        "double-quoted json in yaml",
        f"env:\n  - name: CREDS\n    value: '{json.dumps({'user': _USER, 'password': _pw()})}'",
    ),
    (
        "escaped json string in json",
        json.dumps({"config": json.dumps({"api_key": "sk_live_" + _v(40), "region": "eu"})}),
    ),
    ("yaml inside json", json.dumps({"values.yaml": f"postgresql:\n  auth:\n    password: {_pw()}\n"})),
    ("split over two lines backslash", f"export OPENAI_API_KEY=sk-proj-{_v(60, _URLSAFE)}\\\n{_v(60, _URLSAFE)}"),
    ("concatenated in code", f'key = "sk_live_{_v(20)}" +\n      "{_v(24)}"'),
    (
        "split key in prose",
        f"the key is long so I'll send it in two parts: first half xoxb-{_digits(12)}-{_digits(13)} and the second half -{_v(24)}",
    ),
    ("hex-encoded password", f"password (hex): {_pw().encode().hex()}"),
    ("secret in docker run", f"docker run -e POSTGRES_PASSWORD={_pw()} -p 5432:5432 postgres:16"),
    ("secret in helm set", f"helm upgrade app ./chart --set redis.auth.password={_pw()}"),
    ("quoted in toml", f'[database]\nurl = "postgres://{_USER}:{_pw()}@localhost/{_DB}"'),
    ("php array", f"'password' => '{_pw()}',"),
    ("java properties", f"jdbc.password={_HPW}"),
    ("ini key", f"[smtp]\nhost = smtp.office365.com\npass = {_pw()}"),
    ("powershell secure string", f"$pw = ConvertTo-SecureString '{_pw()}' -AsPlainText -Force"),
    ("go struct", f'cfg := Config{{User: "{_USER}", Password: "{_pw()}"}}'),
    ("hmac signing secret", f"WEBHOOK_SIGNING_SECRET={_b64(32)}"),
    ("totp seed", f"otpauth://totp/Acme:ana@acme.io?secret={_v(32, _B32U)}&issuer=Acme"),
    ("2fa recovery", f"2FA seed for the shared admin account: {' '.join(_v(4, _B32U) for _ in range(8))}"),
    ("wifi password", f"WIFI:T:WPA;S:Acme-Office;P:{_HPW};;"),
    # ---- prose in many languages ----
    ("english prose", f"the password is {_HPW}"),
    ("english pw colon", f"pw: {_HPW2}"),
    ("english login for", f"login for the staging admin is admin / {_pw()}"),
    ("german", f"Das Passwort für den Server lautet {_human_pw()}"),
    ("french", f"le mot de passe de la base est {_human_pw()}"),
    ("spanish", f"la contraseña del router es {_human_pw()}"),
    ("portuguese", f"a senha do banco é {_human_pw()}"),
    ("italian", f"la password dell'utente admin è {_human_pw()}"),
    ("dutch", f"het wachtwoord is {_human_pw()}"),
    ("polish", f"hasło do serwera: {_human_pw()}"),
    ("russian", f"пароль от базы: {_human_pw()}"),
    ("ukrainian", f"пароль адміністратора — {_human_pw()}"),
    ("japanese", f"本番DBのパスワードは {_human_pw()} です"),
    ("chinese", f"数据库密码是 {_human_pw()}"),
    ("korean", f"관리자 비밀번호는 {_human_pw()} 입니다"),
    ("turkish", f"sunucu şifresi: {_human_pw()}"),
    ("swedish", f"lösenordet är {_human_pw()}"),
    ("czech", f"heslo k databázi je {_human_pw()}"),
    ("vietnamese", f"mật khẩu là {_human_pw()}"),
    ("indonesian", f"kata sandinya {_human_pw()}"),
    ("arabic", f"كلمة المرور هي {_human_pw()}"),
    ("hindi", f"सर्वर का पासवर्ड {_human_pw()} है"),
    ("greek", f"ο κωδικός είναι {_human_pw()}"),
    ("finnish", f"salasana on {_human_pw()}"),
]

KEEP_TEXTS: list[tuple[str, str]] = [
    ("sha256 of a file", f"sha256sum release.tar.gz\n{_hex(64)}  release.tar.gz"),
    ("git commit sha", f"fixed in {_hex(40)} (cherry-picked from {_hex(7)})"),
    ("uuid of a record", f"order {_uuid()} was refunded twice; see ticket OPS-{_R.randint(100, 9999)}"),
    ("docker image digest", f"image: ghcr.io/acme/api@sha256:{_hex(64)}"),
    ("npm integrity", f'"integrity": "sha512-{_b64(64)}"'),
    ("ssh public key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_b64(32)} ana@laptop"),
    ("rsa public key authorized_keys", f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{_b64(250)} deploy@ci"),
    ("pem public key", _pem("PUBLIC KEY", 294)),
    ("pem certificate", _pem("CERTIFICATE", 900)),
    (
        "jwk public",
        json.dumps({"kty": "RSA", "kid": _uuid(), "use": "sig", "alg": "RS256", "n": _b64url(256), "e": "AQAB"}),
    ),
    (
        "jwks ec public",
        json.dumps({"keys": [{"kty": "EC", "crv": "P-256", "x": _b64url(32), "y": _b64url(32), "kid": "k1"}]}),
    ),
    ("age public key", f"recipients: age1{_v(58, 'qpzry9x8gf2tvdw0s3jn54khce6mua7l')}"),
    (
        "pgp public block header",
        f"gpg --armor --export ana@acme.io > ana.asc  # fingerprint {' '.join(_hex(4).upper() for _ in range(10))}",
    ),
    ("ssh fingerprint", f"ED25519 key fingerprint is SHA256:{_b64(32).rstrip('=')}."),
    ("stripe publishable key", f"const stripe = Stripe('pk_live_{_v(99)}');  // publishable, safe in the browser"),
    ("mapbox public token", f"mapboxgl.accessToken = 'pk.eyJ1Ijoi{_v(60, _URLSAFE)}.{_v(22, _URLSAFE)}';"),
    ("placeholder angle", "curl -H 'Authorization: Bearer <token>' https://api.acme.io/v1/me"),
    ("placeholder env ref", "DATABASE_URL=postgres://${DB_USER}:${DB_PASSWORD}@${DB_HOST}:5432/app"),
    (
        "placeholder gh actions",
        "env:\n  NPM_TOKEN: ${{ secrets.NPM_TOKEN }}\n  OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}",
    ),
    ("placeholder x's", "STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx"),
    ("placeholder your key here", "OPENAI_API_KEY=your-api-key-here"),
    ("placeholder template", "password: {{ .Values.db.password }}"),
    ("redacted stars", "password: ********"),
    ("redacted marker", "Authorization: Bearer [REDACTED]"),
    ("redacted partial", "using key sk-...a1b2 (last four shown in the dashboard)"),
    (
        "env names alone",
        "set OPENAI_API_KEY, ANTHROPIC_API_KEY, STRIPE_SECRET_KEY and DATABASE_URL before running make dev",
    ),
    ("env names in code", 'api_key = os.environ["SENDGRID_API_KEY"]\nsecret = os.getenv("AWS_SECRET_ACCESS_KEY")'),
    ("npmrc with var", "//registry.npmjs.org/:_authToken=${NPM_TOKEN}"),
    ("pypirc without password", "[pypi]\nusername = __token__\n# password comes from keyring"),
    ("netrc placeholder", "machine api.example.com login <user> password <password>"),
    (
        "docker config creds store",
        json.dumps({"auths": {"https://index.docker.io/v1/": {}}, "credsStore": "desktop"}, indent="\t"),
    ),
    (
        "kubeconfig exec plugin",
        "users:\n- name: eks\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n      args: [eks, get-token, --cluster-name, prod]",
    ),
    ("connection string no password", "postgres://localhost:5432/app_dev"),
    ("redis local", "REDIS_URL=redis://localhost:6379/0"),
    ("mongo local", "mongodb://mongo:27017/test?replicaSet=rs0"),
    ("vault reference", "password: vault:secret/data/prod/db#password"),
    ("aws secrets manager arn", f"arn:aws:secretsmanager:eu-west-1:{_digits(12)}:secret:prod/db-{_v(6)}"),
    (
        "password policy prose",
        "the password must be rotated every 90 days and can't reuse the last 5; we store bcrypt hashes only",
    ),
    ("password reset prose", "the password reset link expires after 30 minutes; the token is single-use"),
    ("token bucket prose", "the rate limiter is a token bucket: 100 tokens, refilled at 10 per second"),
    ("csrf prose", "Django rejects the POST because the CSRF token in the form doesn't match the cookie"),
    ("jwt structure prose", "a JWT is three base64url parts joined by dots: header.payload.signature"),
    (
        "hmac rfc 4231 vector",
        'RFC 4231 test case 1: key = 0x0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b, data = "Hi There"',
    ),
    (
        "sha256 empty vector",
        "SHA-256 of the empty string is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ),
    (
        "md5 of text",
        f'md5("hello") = 5d41402abc4b2a76b9719d911017c592, our cache key is {hashlib.md5(_word().encode()).hexdigest()}',
    ),
    ("base64 of prose", f"echo {enc('hello from the build server, all tests passed')} | base64 -d"),
    ("ethereum address", f"send the refund to 0x{_hex(40)}"),
    ("trace ids", f"traceparent: 00-{_hex(32)}-{_hex(16)}-01"),
    ("request ids", f"x-request-id: {_uuid()} x-amzn-trace-id: Root=1-{_hex(8)}-{_hex(24)}"),
    ("k8s uid", f'metadata:\n  name: api-7d9f\n  uid: {_uuid()}\n  resourceVersion: "{_digits(8)}"'),
    ("css colors", "palette: #1a2b3c #ffcc00 #00aa88 #334455 #abcdef"),
    ("twilio account sid alone", f"the account SID AC{_hex(32)} is shown on the console home page"),
    ("github username and repo", "git clone git@github.com:acme/infra.git && cd infra"),
    ("test card number", "use the test card 4242 4242 4242 4242 with any future date and any CVC"),
    ("ip and port", "the db is at 10.0.4.12:5432, the replica at 10.0.4.13:5432"),
    ("semver build metadata", f"version 2.14.0+build.{_hex(12)}"),
    ("s3 url unsigned", f"https://acme-assets.s3.eu-west-1.amazonaws.com/img/{_uuid()}.png"),
    ("sentry issue url", f"https://acme.sentry.io/issues/{_digits(10)}/?project={_digits(7)}"),
    ("sri hash", f'<script src="/app.js" integrity="sha384-{_b64(48)}" crossorigin="anonymous"></script>'),
    (
        "k8s secret ref",
        "env:\n- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password",
    ),
    (
        "dotenv example",
        "# .env.example\nSTRIPE_SECRET_KEY=\nSENDGRID_API_KEY=\nDATABASE_URL=postgres://user:password@localhost:5432/app",
    ),
    ("password field label", "the login form has fields 'Email' and 'Password' and a 'Forgot password?' link"),
    (
        "hash of password prose",
        f"stored as argon2id, e.g. the row for user {_R.randint(1000, 9999)} has a 97-character hash",
    ),
    ("gpg key id", f"gpg --recv-keys {_hex(16).upper()}"),
    ("commit range", f"git log {_hex(12)}..{_hex(12)} --oneline"),
    ("lockfile resolved", f'resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#{_hex(40)}"'),
    (
        "ulid list",
        f"ids: 01J{_v(23, '0123456789ABCDEFGHJKMNPQRSTVWXYZ')}, 01J{_v(23, '0123456789ABCDEFGHJKMNPQRSTVWXYZ')}",
    ),
    (
        "base64 png",
        f"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk{_v(12, _B64)}AAAAAElFTkSuQmCC",
    ),
    ("password in a question", "what's the best way to store the password for the SMTP relay so it isn't in git?"),
    ("prose password german no value", "das Passwort steht im Tresor, frag Jana"),
]

# Vendors' documented sample values, which the project refuses like any key (docs/security.md).
POLICY_TEXTS: list[tuple[str, str]] = []


HELD_OUT_22: list[Form] = [(f"s22 {name}", fixed(text)) for name, text in SECRET_TEXTS]
HELD_OUT_22_KEEP: list[Form] = [(f"k22 keep {name}", fixed(text)) for name, text in KEEP_TEXTS]
REFUSED_BY_POLICY_22: list[Form] = [(f"k22 policy {name}", fixed(text)) for name, text in POLICY_TEXTS]

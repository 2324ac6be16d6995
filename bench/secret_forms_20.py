"""The twentieth held-out set, written before reading the scanner or any earlier set's texts.

HELD_OUT_20 are texts a developer pastes into a chat with an assistant that carry a secret; every one must be
refused. HELD_OUT_20_KEEP are ordinary developer texts that look close to a secret and are not (content hashes,
commit SHAs, image digests, lock-file checksums, UUIDs that are ids, trace ids, public keys and certificates,
placeholders, documentation examples said to be such, masked or truncated values, build paths); every one must be
stored.

This set aims at providers the nineteenth set did not name: payments (Stripe restricted keys and webhook secrets,
Square, Adyen, PayPal, Razorpay, Paystack, Mollie, Flutterwave, Checkout.com, Plaid, Paddle, GoCardless, Shopify),
CI (CircleCI, Buildkite, GitLab's token family, Azure DevOps, Bitbucket, Jenkins, SonarQube, Snyk, Codecov),
observability (Grafana, Dynatrace, Splunk HEC, Rollbar, Axiom, Elastic, Coralogix, Logz.io), model APIs (Gemini,
DeepSeek, Together, Fireworks, Voyage, ElevenLabs, Deepgram, AssemblyAI, LangSmith, Langfuse, NVIDIA, Cerebras,
W&B, Azure OpenAI), package registries (npm, PyPI, RubyGems, NuGet, crates.io, Docker Hub, JFrog, Terraform Cloud,
Pulumi), chat ops (Slack, Discord, Teams, Mattermost, Zulip, Twilio), mobile push (FCM, APNs, Expo, OneSignal,
Pusher, Ably), maps (HERE, TomTom, Google Maps server keys), e-mail (SendGrid, Mailgun, Postmark, Mailchimp, Brevo,
Mailjet, SES SMTP), webhook signing secrets, JWTs in headers, cookies and logs, private keys in odd wrappings (JSON
with escaped newlines, YAML blocks, JWK, base64'd PEM, PKCS#12), base64'd credentials, and secrets split across
lines or quoted in JSON/YAML/TOML/.netrc/.pgpass/docker config.json/kubeconfig.

The random values are drawn from one seeded generator, so every run sees the same texts; bench.secret_reseed
re-runs the file with other seeds.
"""

# ruff: noqa: E501  (the texts are kept whole, one a line, as written before the first run; the values are drawn in
# this order from one seed, so a text cut by hand could change every text after it)

from __future__ import annotations

import json
import string

from bench.secret_fill import Filler, enc, fixed, lines
from bench.secret_forms_9 import Form

_F = Filler(2020)
_R = _F.rng
_v = _F.v
_hex = _F.hex
_b64 = _F.b64
_b64url = _F.b64url
_uuid = _F.uuid
_jwt = _F.jwt
_pem = _F.pem
_ipv4 = _F.ip
_epoch = _F.epoch
_ALNUM = string.ascii_letters + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_URLSAFE = _ALNUM + "-_"
_B32 = "abcdefghijklmnopqrstuvwxyz234567"
_WORDS = [
    "pelican", "granite", "mosaic", "tangerine", "cascade", "walrus", "sequoia", "paprika", "lagoon", "nebula",
    "bramble", "cinder", "fjord", "hazel", "ivory", "kestrel", "lupine", "mistral", "nutmeg", "obsidian",
]  # fmt: skip


def _HEXU(n: int) -> str:
    return _v(n, "0123456789ABCDEF")


def _pw(n: int = 14) -> str:
    """A generated password: letters, digits and a symbol or two, in no fixed place."""
    return _F.pw(n, "!#%*@-_+^", "!#%*^")


def _human_pw() -> str:
    """A password a person made up: two words, digits, a symbol."""
    a, b = _R.sample(_WORDS, 2)
    return f"{a.capitalize()}{_R.choice('-_.')}{b}{_R.randint(10, 9999)}{_R.choice('!?#&')}"


_USER = _R.choice(["deploy", "svc_app", "ci-bot", "admin", "jenkins", "release", "app_rw"])
_RSA_PEM = _pem("RSA PRIVATE KEY")
_PKCS8_PEM = _pem("PRIVATE KEY", 1218)
_EC_PEM = _pem("EC PRIVATE KEY", 121)
_SA_JSON = json.dumps(
    {
        "type": "service_account",
        "project_id": f"acme-{_v(6, string.ascii_lowercase)}-prod",
        "private_key_id": _hex(40),
        "private_key": _PKCS8_PEM + "\n",
        "client_email": "ci-deployer@acme-prod.iam.gserviceaccount.com",
        "client_id": str(_R.randint(10**20, 10**21 - 1)),
    },
    indent=2,
)
_SPLIT_SLACK = "xoxb-" + f"{_R.randint(10**11, 10**12 - 1)}-{_R.randint(10**12, 10**13 - 1)}-{_v(24)}"
_PYPI = "pypi-AgEIcHlwaS5vcmc" + _v(150, _URLSAFE)
_DOCKER_AUTH = enc(f"{_USER}:dckr_pat_{_v(27, _URLSAFE)}")
_KUBE_TOKEN = _jwt(
    {"iss": "kubernetes/serviceaccount", "sub": "system:serviceaccount:ci:deployer", "exp": _epoch()}, "RS256", 256
)

SECRET_TEXTS: list[tuple[str, str]] = [
    # --- payments ---
    ("stripe restricted key env", f"STRIPE_RESTRICTED_KEY=rk_live_{_v(99)}"),
    (
        "stripe webhook secret",
        f"stripe listen printed: Ready! Your webhook signing secret is whsec_{_v(32)} (^C to quit)",
    ),
    ("stripe secret in python", f'stripe.api_key = "sk_live_{_v(99)}"'),
    ("square access token", f"SQUARE_ACCESS_TOKEN=EAAA{_v(60, _URLSAFE)}"),
    ("square oauth secret", f"square app secret for oauth: sq0csp-{_v(43, _URLSAFE)}"),
    ("adyen api key", f"ADYEN_API_KEY=AQE{_v(60, _ALNUM + '+/')}==-{_b64(32)}-{_v(16, _ALNUM)}"),
    (
        "paypal client secret json",
        json.dumps({"paypal": {"client_id": "A" + _v(79, _URLSAFE), "client_secret": "E" + _v(79, _URLSAFE)}}),
    ),
    ("razorpay key pair", f"razorpay = Razorpay::Client.new('rzp_live_{_v(14)}', '{_v(24)}')"),
    ("paystack secret", f"Authorization: Bearer sk_live_{_hex(40)}  (paystack, from their dashboard)"),
    ("mollie live key", f"MOLLIE_API_KEY=live_{_v(30)}"),
    ("flutterwave secret", f"FLW_SECRET_KEY=FLWSECK-{_hex(32)}-X"),
    ("checkout.com secret", f'const cko = new Checkout("sk_sbox_{_v(26, _B32)}m");'),
    ("plaid secret", f"PLAID_CLIENT_ID={_hex(24)}\nPLAID_SECRET={_hex(30)}\nPLAID_ENV=production"),
    ("paddle api key", f"paddle api key: pdl_live_apikey_01{_v(24, _LOWER_DIGITS)}_{_v(22)}_{_v(3)}"),
    ("gocardless token", f'GoCardlessPro::Client.new(access_token: "live_{_v(40, _URLSAFE)}", environment: :live)'),
    ("shopify admin token", f"X-Shopify-Access-Token: shpat_{_hex(32)}"),
    ("shopify shared secret", f"SHOPIFY_API_SECRET=shpss_{_hex(32)}"),
    (
        "braintree private key",
        f'braintree.Configuration.configure(braintree.Environment.Production, "{_v(16, _LOWER_DIGITS)}", "{_v(16, _LOWER_DIGITS)}", "{_hex(32)}")',
    ),
    (
        "lemon squeezy key",
        f"LEMONSQUEEZY_API_KEY={_jwt({'aud': '94d59cef', 'jti': _hex(40), 'iat': _epoch(), 'sub': '123456', 'scopes': []}, 'RS256', 256)}",
    ),
    # --- CI / code hosts ---
    ("circleci personal token", f"circleci setup --token CCIPAT_{_v(22)}_{_hex(40)} --host https://circleci.com"),
    ("buildkite agent api token", f"BUILDKITE_API_TOKEN=bkua_{_hex(40)}"),
    (
        "gitlab pat in remote",
        f"git remote set-url origin https://oauth2:glpat-{_v(20, _URLSAFE)}@gitlab.com/acme/api.git",
    ),
    (
        "gitlab runner token",
        f'[[runners]]\n  name = "build-01"\n  url = "https://gitlab.acme.io"\n  token = "glrt-{_v(20, _URLSAFE)}"\n  executor = "docker"',
    ),
    (
        "gitlab deploy token",
        f"deploy token for the helm chart registry: user gitlab+deploy-token-{_R.randint(100, 9999)} / gldt-{_v(20, _URLSAFE)}",
    ),
    (
        "gitlab trigger token",
        f"curl -X POST --fail -F token=glptt-{_hex(40)} -F ref=main https://gitlab.com/api/v4/projects/{_R.randint(1000, 99999)}/trigger/pipeline",
    ),
    ("azure devops pat", f"AZURE_DEVOPS_EXT_PAT={_v(52, _B32)}"),
    ("bitbucket app password", f"bitbucket app password for the deploy user: ATBB{_v(32)}{_HEXU(8)}"),
    ("jenkins api token curl", f"curl -X POST -u {_USER}:11{_hex(32)} https://jenkins.acme.io/job/api/build"),
    ("sonarqube token", f"mvn sonar:sonar -Dsonar.host.url=https://sonar.acme.io -Dsonar.token=squ_{_hex(40)}"),
    ("snyk token", f"SNYK_TOKEN={_uuid()}"),
    ("codecov token yaml", f"      - uses: codecov/codecov-action@v4\n        with:\n          token: {_uuid()}"),
    ("github actions secret pasted", f"I set secrets.DEPLOY_KEY to ghs_{_v(36)} but the job still 403s"),
    ("github fine grained pat", f"GH_TOKEN=github_pat_11{_v(20, _UPPER_DIGITS)}_{_v(59)}"),
    ("drone token", f"export DRONE_SERVER=https://drone.acme.io\nexport DRONE_TOKEN={_v(32)}"),
    ("travis token", f"travis login --pro --api-token {_v(22, _URLSAFE)}"),
    # --- observability ---
    ("grafana service account token", f"GRAFANA_TOKEN=glsa_{_v(32)}_{_hex(8)}"),
    (
        "grafana cloud token",
        f"grafana cloud access policy token: glc_{enc(json.dumps({'o': str(_R.randint(100000, 999999)), 'n': 'stack-otlp', 'k': _v(24), 'm': {'r': 'prod-eu-west-2'}}))}",
    ),
    ("dynatrace token", f"DT_API_TOKEN=dt0c01.{_v(24, _UPPER_DIGITS)}.{_v(64, _UPPER_DIGITS)}"),
    (
        "splunk hec header",
        f'curl -k https://splunk.acme.io:8088/services/collector -H "Authorization: Splunk {_uuid()}" -d \'{{"event":"hi"}}\'',
    ),
    ("rollbar token", f"ROLLBAR_ACCESS_TOKEN={_hex(32)}"),
    ("axiom token", f"AXIOM_TOKEN=xaat-{_uuid()}"),
    ("elastic api key header", f"Authorization: ApiKey {enc(_v(20, _URLSAFE) + ':' + _v(22, _URLSAFE))}"),
    (
        "elastic cloud auth",
        f'cloud.id: "acme-prod:{enc("eu-west-1.aws.found.io$" + _hex(32) + "$" + _hex(32))}"\ncloud.auth: "elastic:{_pw(24)}"',
    ),
    ("coralogix key", f"CORALOGIX_PRIVATE_KEY=cxtp_{_v(30)}"),
    (
        "logzio token",
        f'output.logstash:\n  hosts: ["listener.logz.io:5015"]\nfields:\n  token: {_v(32, string.ascii_letters)}',
    ),
    ("datadog app key", f"DD_APP_KEY={_hex(40)}"),
    ("sentry auth token", f"SENTRY_AUTH_TOKEN=sntrys_{_b64url(90)}"),
    ("new relic user key", f"NEW_RELIC_API_KEY=NRAK-{_v(27, _UPPER_DIGITS)}"),
    ("opsgenie key", f"OPSGENIE_API_KEY={_uuid()}"),
    ("pagerduty routing key", f'"routing_key": "{_hex(32)}",  // pagerduty events v2 integration key'),
    ("pagerduty api key no digit", f"PAGERDUTY_TOKEN={_v(20, string.ascii_letters + '_+-')}"),
    # --- model APIs ---
    ("gemini key", f"GEMINI_API_KEY=AIza{_v(35, _URLSAFE)}"),
    ("deepseek key", f'client = OpenAI(api_key="sk-{_hex(32)}", base_url="https://api.deepseek.com")'),
    ("together key", f"TOGETHER_API_KEY={_hex(64)}"),
    ("fireworks key", f"FIREWORKS_API_KEY=fw_{_v(24)}"),
    ("voyage key", f"vo = voyageai.Client(api_key='pa-{_v(43, _URLSAFE)}')"),
    ("elevenlabs key", f"xi-api-key: sk_{_hex(48)}"),
    (
        "deepgram key",
        f'curl https://api.deepgram.com/v1/listen -H "Authorization: Token {_hex(40)}" --data-binary @a.wav',
    ),
    ("assemblyai key", f'aai.settings.api_key = "{_hex(32)}"'),
    ("langsmith key", f"LANGCHAIN_API_KEY=lsv2_pt_{_hex(32)}_{_hex(10)}"),
    ("langfuse secret", f"LANGFUSE_PUBLIC_KEY=pk-lf-{_uuid()}\nLANGFUSE_SECRET_KEY=sk-lf-{_uuid()}"),
    ("nvidia key", f"NVIDIA_API_KEY=nvapi-{_v(64, _URLSAFE)}"),
    ("cerebras key", f"CEREBRAS_API_KEY=csk-{_v(48, _LOWER_DIGITS)}"),
    ("wandb netrc", f"machine api.wandb.ai\n  login user\n  password {_hex(40)}"),
    ("wandb env", f"WANDB_API_KEY={_hex(40)}"),
    (
        "azure openai key",
        f'AzureOpenAI(azure_endpoint="https://acme-oai.openai.azure.com/", api_key="{_hex(32)}", api_version="2024-06-01")',
    ),
    ("stability key", f"STABILITY_API_KEY=sk-{_v(48)}"),
    ("replicate in curl", f'-H "Authorization: Bearer r8_{_v(37)}"'),
    ("huggingface in cli output", f"huggingface-cli login --token hf_{_v(34, string.ascii_letters)}"),
    ("mistral key toml", f'[providers.mistral]\napi_key = "{_v(32)}"'),
    # --- package registries ---
    ("npm token npmrc", f"//registry.npmjs.org/:_authToken=npm_{_v(36)}"),
    ("npmrc basic auth", f"registry=https://npm.acme.io/\n_auth={enc(_USER + ':' + _pw())}\nalways-auth=true"),
    ("pypi token pypirc", f"[pypi]\n  username = __token__\n  password = {_PYPI}"),
    ("pypi token twine", f"TWINE_USERNAME=__token__ TWINE_PASSWORD={_PYPI} twine upload dist/*"),
    ("rubygems key", f"---\n:rubygems_api_key: rubygems_{_hex(48)}"),
    (
        "nuget key",
        f"dotnet nuget push bin/Release/Acme.1.2.0.nupkg --api-key oy2{_v(43, _LOWER_DIGITS)} --source https://api.nuget.org/v3/index.json",
    ),
    ("crates token", f'[registry]\ntoken = "cio{_v(32)}"'),
    ("docker hub pat login", f"echo dckr_pat_{_v(27, _URLSAFE)} | docker login -u {_USER} --password-stdin"),
    ("jfrog api key", f"ARTIFACTORY_API_KEY=AKCp{_v(69)}"),
    ("jfrog reference token", f"jf c add --url https://acme.jfrog.io --access-token cmVmdGtuOjAxOj{_v(50)}"),
    ("terraform cloud token", f'credentials "app.terraform.io" {{\n  token = "{_v(14)}.atlasv1.{_v(67)}"\n}}'),
    ("pulumi token", f"PULUMI_ACCESS_TOKEN=pul-{_hex(40)}"),
    (
        "maven settings password",
        f"<server>\n  <id>acme-releases</id>\n  <username>{_USER}</username>\n  <password>{_pw()}</password>\n</server>",
    ),
    ("gradle properties", f"ossrhUsername={_USER}\nossrhPassword={_pw()}\nsigning.password={_human_pw()}"),
    (
        "composer auth json",
        json.dumps({"http-basic": {"repo.packagist.com": {"username": "token", "password": _hex(40)}}}, indent=4),
    ),
    (
        "github packages npmrc",
        f"@acme:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken=ghp_{_v(36)}",
    ),
    # --- chat ops ---
    ("slack bot token", f"SLACK_BOT_TOKEN={_SPLIT_SLACK}"),
    ("slack app token", f"SLACK_APP_TOKEN=xapp-1-A{_v(10, _UPPER_DIGITS)}-{_R.randint(10**12, 10**13 - 1)}-{_hex(64)}"),
    ("slack webhook", f"https://hooks.slack.com/services/T{_v(8, _UPPER_DIGITS)}/B{_v(10, _UPPER_DIGITS)}/{_v(24)}"),
    ("slack signing secret", f"SLACK_SIGNING_SECRET={_hex(32)}"),
    (
        "discord webhook",
        f"DISCORD_WEBHOOK=https://discord.com/api/webhooks/{_R.randint(10**17, 10**18)}/{_v(68, _URLSAFE)}",
    ),
    ("discord bot token", f"client.run('MT{_v(24)}.{_v(6, _URLSAFE)}.{_v(38, _URLSAFE)}')"),
    (
        "teams webhook",
        f"https://acme.webhook.office.com/webhookb2/{_uuid()}@{_uuid()}/IncomingWebhook/{_hex(32)}/{_uuid()}/V2{_v(40, _URLSAFE)}",
    ),
    (
        "mattermost webhook",
        f'curl -X POST -d \'payload={{"text":"done"}}\' https://chat.acme.io/hooks/{_v(26, _LOWER_DIGITS)}',
    ),
    ("zuliprc", f"[api]\nemail=deploy-bot@acme.zulipchat.com\nkey={_v(32)}\nsite=https://acme.zulipchat.com"),
    ("twilio auth token", f"TWILIO_ACCOUNT_SID=AC{_hex(32)}\nTWILIO_AUTH_TOKEN={_hex(32)}"),
    ("twilio api key secret", f"twilio api key SK{_hex(32)} secret {_v(32)}"),
    (
        "telegram in url",
        f"https://api.telegram.org/bot{_R.randint(10**9, 10**10)}:AA{_v(33, _URLSAFE)}/sendMessage?chat_id=-100123",
    ),
    # --- mobile push ---
    ("fcm server key", f"Authorization: key=AAAA{_v(7, _URLSAFE)}:APA91b{_v(134, _URLSAFE)}"),
    ("apns p8 key", f"AuthKey_{_v(10, _UPPER_DIGITS)}.p8:\n{_pem('PRIVATE KEY', 138)}"),
    ("expo token", f"EXPO_TOKEN={_v(40, _URLSAFE)}"),
    ("onesignal rest key", f"Authorization: Basic {_v(48, _LOWER_DIGITS)}  # onesignal REST API key"),
    ("onesignal v2 key", f"ONESIGNAL_REST_API_KEY=os_v2_app_{_v(100, _B32)}"),
    ("pusher secret", f"PUSHER_APP_ID={_R.randint(100000, 9999999)}\nPUSHER_KEY={_hex(20)}\nPUSHER_SECRET={_hex(20)}"),
    ("ably key", f"new Ably.Realtime('{_v(6)}.{_v(6)}:{_v(43, _URLSAFE)}')"),
    ("firebase admin json", _SA_JSON),
    # --- maps ---
    ("here api key", f"https://geocode.search.hereapi.com/v1/geocode?q=Berlin&apiKey={_v(43, _URLSAFE)}"),
    ("tomtom key", f"TOMTOM_API_KEY={_v(32)}"),
    ("google maps server key", f"GOOGLE_MAPS_SERVER_KEY=AIza{_v(35, _URLSAFE)}"),
    ("bing maps key", f"BING_MAPS_KEY={_v(64, _URLSAFE)}"),
    # --- e-mail ---
    ("sendgrid key", f"SENDGRID_API_KEY=SG.{_v(22, _URLSAFE)}.{_v(43, _URLSAFE)}"),
    ("mailgun key", f"curl -s --user 'api:key-{_hex(32)}' https://api.mailgun.net/v3/mg.acme.io/messages"),
    ("postmark server token", f"X-Postmark-Server-Token: {_uuid()}"),
    ("mailchimp key", f"MAILCHIMP_API_KEY={_hex(32)}-us{_R.randint(1, 21)}"),
    ("brevo key", f"BREVO_API_KEY=xkeysib-{_hex(64)}-{_v(16)}"),
    ("mailjet pair", f"MJ_APIKEY_PUBLIC={_hex(32)}\nMJ_APIKEY_PRIVATE={_hex(32)}"),
    (
        "ses smtp password",
        f"EMAIL_HOST=email-smtp.eu-west-1.amazonaws.com\nEMAIL_HOST_USER=AKIA{_v(16, _UPPER_DIGITS)}\nEMAIL_HOST_PASSWORD=B{_v(43, _ALNUM + '+/')}",
    ),
    ("smtp url", f"SMTP_URL=smtps://apikey:{_pw(20)}@smtp.sendgrid.net:465"),
    ("django email password", f"EMAIL_HOST_PASSWORD = '{_human_pw()}'"),
    # --- webhook signing ---
    ("svix secret", f"CLERK_WEBHOOK_SECRET=whsec_{_b64(24)}"),
    ("github webhook secret", f"GITHUB_WEBHOOK_SECRET={_hex(40)}"),
    ("linear webhook secret", f"LINEAR_WEBHOOK_SECRET=lin_wh_{_v(40)}"),
    ("zoom secret token", f"ZOOM_WEBHOOK_SECRET_TOKEN={_v(22, _URLSAFE)}"),
    ("paddle notification secret", f"PADDLE_WEBHOOK_SECRET=pdl_ntfset_01{_v(24, _LOWER_DIGITS)}_{_v(32)}"),
    ("generic hmac secret yaml", f'webhooks:\n  signing_secret: "{_b64(32)}"\n  tolerance_seconds: 300'),
    # --- productivity / SaaS APIs ---
    ("atlassian token", f"JIRA_API_TOKEN=ATATT3xFfGF0{_v(180, _URLSAFE)}={_HEXU(8)}"),
    ("linear api key", f"LINEAR_API_KEY=lin_api_{_v(40)}"),
    ("notion token", f"NOTION_TOKEN=ntn_{_v(46)}"),
    ("airtable pat", f"AIRTABLE_PAT=pat{_v(14)}.{_hex(64)}"),
    ("figma token", f"X-Figma-Token: figd_{_v(40, _URLSAFE)}"),
    ("hubspot private app", f"HUBSPOT_ACCESS_TOKEN=pat-na1-{_uuid()}"),
    ("contentful pat", f"CONTENTFUL_MANAGEMENT_TOKEN=CFPAT-{_v(43, _URLSAFE)}"),
    ("postman key", f"POSTMAN_API_KEY=PMAK-{_hex(24)}-{_hex(34)}"),
    ("dropbox token", f"DROPBOX_ACCESS_TOKEN=sl.{_v(135, _URLSAFE)}"),
    ("okta token", f"Authorization: SSWS 00{_v(40, _URLSAFE)}"),
    ("auth0 client secret", f"AUTH0_CLIENT_ID={_v(32)}\nAUTH0_CLIENT_SECRET={_v(64, _URLSAFE)}"),
    ("asana pat", f"ASANA_PAT=2/{_R.randint(10**15, 10**16)}/{_R.randint(10**15, 10**16)}:{_hex(32)}"),
    ("zendesk token", f"curl https://acme.zendesk.com/api/v2/tickets.json -u agent@acme.io/token:{_v(40)}"),
    ("twitter bearer", f"TWITTER_BEARER_TOKEN=AAAAAAAAAAAAAAAAAAAAA{_v(20)}%3D{_v(50)}"),
    ("facebook page token", f"FB_PAGE_ACCESS_TOKEN=EAA{_v(180)}"),
    ("twitch oauth", f"PASS oauth:{_v(30, _LOWER_DIGITS)}"),
    ("cloudinary url", f"CLOUDINARY_URL=cloudinary://{_R.randint(10**14, 10**15)}:{_v(27, _URLSAFE)}@acme"),
    ("intercom token", f"INTERCOM_ACCESS_TOKEN=dG9rOj{_v(54)}="),
    ("typeform token", f"TYPEFORM_TOKEN=tfp_{_v(44)}_{_v(14)}"),
    # --- clouds and data platforms ---
    ("digitalocean token", f"doctl auth init -t dop_v1_{_hex(64)}"),
    ("linode token", f"LINODE_CLI_TOKEN={_hex(64)}"),
    ("hetzner token", f'provider "hcloud" {{\n  token = "{_v(64)}"\n}}'),
    ("scaleway keys", f"SCW_ACCESS_KEY=SCW{_v(17, _UPPER_DIGITS)}\nSCW_SECRET_KEY={_uuid()}"),
    ("alibaba keys", f"ALIBABA_CLOUD_ACCESS_KEY_ID=LTAI{_v(20)}\nALIBABA_CLOUD_ACCESS_KEY_SECRET={_v(30)}"),
    ("tencent keys", f"TENCENTCLOUD_SECRET_ID=AKID{_v(32)}\nTENCENTCLOUD_SECRET_KEY={_v(32)}"),
    (
        "azure storage connection",
        f"DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={_b64(64)};EndpointSuffix=core.windows.net",
    ),
    (
        "azure sas url",
        f"https://acmeprod.blob.core.windows.net/backups?sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2026-12-31T00:00:00Z&st=2026-01-01T00:00:00Z&spr=https&sig={_b64(32).replace('+', '%2B').replace('/', '%2F').replace('=', '%3D')}",
    ),
    ("azure client secret", f"AZURE_CLIENT_SECRET={_v(3)}8Q~{_v(34, _URLSAFE + '.~')}"),
    (
        "aws credentials file",
        f"[prod]\naws_access_key_id = AKIA{_v(16, _UPPER_DIGITS)}\naws_secret_access_key = {_v(40, _ALNUM + '+/')}",
    ),
    (
        "aws session env",
        f"AWS_ACCESS_KEY_ID=ASIA{_v(16, _UPPER_DIGITS)}\nAWS_SECRET_ACCESS_KEY={_v(40, _ALNUM + '+/')}\nAWS_SESSION_TOKEN=IQoJb3JpZ2luX2Vj{_v(300, _ALNUM + '+/')}",
    ),
    ("gcp service account", _SA_JSON.replace("ci-deployer", "terraform")),
    ("ibm cloud key", f"IBMCLOUD_API_KEY={_v(44, _URLSAFE)}"),
    (
        "databricks token",
        f"DATABRICKS_HOST=https://adb-{_R.randint(10**15, 10**16)}.azuredatabricks.net\nDATABRICKS_TOKEN=dapi{_hex(32)}",
    ),
    (
        "confluent keys",
        f'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="{_v(16, _UPPER_DIGITS)}" password="{_v(64, _ALNUM + "+/")}";',
    ),
    (
        "mongodb atlas api keys",
        f"MONGODB_ATLAS_PUBLIC_KEY={_v(8, string.ascii_lowercase)}\nMONGODB_ATLAS_PRIVATE_KEY={_uuid()}",
    ),
    ("snowflake password", f"snowsql -a acme-xy12345 -u {_USER} --password '{_pw()}'"),
    ("influxdb token", f"INFLUX_TOKEN={_b64(64).rstrip('=')}=="),
    ("heroku key", f"HEROKU_API_KEY=HRKU-{_uuid()}"),
    # --- connection strings and CLI lines ---
    ("amqps url", f"CELERY_BROKER_URL=amqps://{_USER}:{_pw()}@rabbit.acme.io:5671/prod"),
    ("neo4j url", f"NEO4J_URI=bolt://neo4j:{_human_pw()}@graph.acme.io:7687"),
    ("nats url", f"nats sub -s nats://{_USER}:{_pw()}@nats.acme.io:4222 'orders.>'"),
    ("clickhouse url", f"clickhouse://default:{_pw()}@ch.acme.io:9440/analytics?secure=true"),
    ("elasticsearch url", f"ELASTICSEARCH_URL=https://elastic:{_pw(20)}@es.acme.io:9243"),
    ("mysql cli", f"mysql -h {_ipv4()} -u root -p'{_pw()}' shop < dump.sql"),
    ("psql conninfo", f'psql "host=db.acme.io port=5432 dbname=app user={_USER} password={_pw()} sslmode=require"'),
    ("pgpassword env", f"PGPASSWORD='{_human_pw()}' pg_dump -h db.acme.io -U {_USER} app > app.sql"),
    ("sshpass", f"sshpass -p '{_pw()}' ssh {_USER}@{_ipv4()} 'sudo systemctl restart api'"),
    ("docker login -p", f"docker login registry.acme.io -u {_USER} -p {_pw(16)}"),
    ("curl basic", f"curl -u {_USER}:{_pw()} https://nexus.acme.io/service/rest/v1/components"),
    (
        "kubectl create secret",
        f"kubectl create secret generic db-creds --from-literal=username={_USER} --from-literal=password='{_pw()}'",
    ),
    ("htpasswd -b", f"htpasswd -bc /etc/nginx/.htpasswd {_USER} {_human_pw()}"),
    ("az login password", f"az login -u {_USER}@acme.onmicrosoft.com -p '{_pw()}'"),
    ("openssl pass", f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{_pw()}"),
    ("7z password", f"7z a -p{_pw()} -mhe=on backup.7z ./secrets/"),
    ("wget password", f"wget --user={_USER} --password='{_pw()}' https://files.acme.io/release.tar.gz"),
    ("ldap bind", f"ldapsearch -x -H ldaps://ldap.acme.io -D 'cn=admin,dc=acme,dc=io' -w '{_pw()}' '(uid=jdoe)'"),
    ("redis-cli auth", f"redis-cli -h cache.acme.io -p 6380 --tls -a '{_pw(20)}' INFO"),
    ("mssql sqlcmd", f"sqlcmd -S tcp:sql.acme.io,1433 -U sa -P '{_pw()}' -Q 'SELECT 1'"),
    ("ftp url", f"lftp ftp://{_USER}:{_pw()}@ftp.acme.io/incoming"),
    # --- credential files ---
    (
        "netrc",
        f"machine api.heroku.com\n  login ops@acme.io\n  password {_uuid()}\nmachine git.heroku.com\n  login ops@acme.io\n  password {_uuid()}",
    ),
    ("netrc one line", f"machine nexus.acme.io login {_USER} password {_pw()}"),
    ("pgpass", f"db.acme.io:5432:*:{_USER}:{_pw()}"),
    ("docker config json", json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": _DOCKER_AUTH}}}, indent=2)),
    ("docker config ghcr", json.dumps({"auths": {"ghcr.io": {"auth": enc(_USER + ":ghp_" + _v(36))}}})),
    ("kubeconfig token", f"users:\n- name: ci-deployer\n  user:\n    token: {_KUBE_TOKEN}"),
    (
        "kubeconfig client key",
        f"users:\n- name: admin\n  user:\n    client-certificate-data: {_b64(600)}\n    client-key-data: {enc(_RSA_PEM)}",
    ),
    (
        "k8s secret manifest",
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\ntype: Opaque\ndata:\n  DATABASE_PASSWORD: {enc(_pw())}\n  STRIPE_KEY: {enc('sk_live_' + _v(24))}",
    ),
    (
        "k8s dockerconfigjson",
        f"data:\n  .dockerconfigjson: {enc(json.dumps({'auths': {'registry.acme.io': {'username': _USER, 'password': _pw(), 'auth': enc(_USER + ':x')}}}))}",
    ),
    ("git credentials", f"https://{_USER}:{_pw()}@git.acme.io"),
    ("gh hosts yml", f"github.com:\n    oauth_token: gho_{_v(36)}\n    user: {_USER}\n    git_protocol: https"),
    (
        "s3cfg",
        f"[default]\naccess_key = AKIA{_v(16, _UPPER_DIGITS)}\nsecret_key = {_v(40, _ALNUM + '+/')}\nhost_base = s3.amazonaws.com",
    ),
    ("rclone conf", f"[b2]\ntype = b2\naccount = {_hex(12)}\nkey = K00{_v(28, _ALNUM)}"),
    ("wpa supplicant", f'network={{\n    ssid="acme-office"\n    psk="{_human_pw()}"\n}}'),
    ("cargo credentials", f'[registries.acme]\ntoken = "{_v(32)}"'),
    (
        "spring properties",
        f"spring.datasource.url=jdbc:postgresql://db:5432/app\nspring.datasource.username={_USER}\nspring.datasource.password={_pw()}",
    ),
    (
        "appsettings json",
        json.dumps(
            {
                "ConnectionStrings": {
                    "Default": f"Server=tcp:sql.acme.io,1433;Database=app;User Id={_USER};Password={_pw()};Encrypt=True;"
                }
            },
            indent=2,
        ),
    ),
    (
        "wp-config",
        f"define( 'DB_PASSWORD', '{_pw()}' );\ndefine( 'AUTH_KEY', '{_v(64, _ALNUM + '!@#$%^&*()-_[]{{}}<>~+=,.;:/?|')}' );",
    ),
    ("laravel app key", f"APP_KEY=base64:{_b64(32)}"),
    (
        "django secret key",
        f"SECRET_KEY = 'django-insecure-{_v(50, string.ascii_lowercase + string.digits + '!@#$%^&*(-_=+)')}'",
    ),
    ("rails master key", f"config/master.key is {_hex(32)} — copy it to the new laptop"),
    ("rails secret key base", f"SECRET_KEY_BASE={_hex(128)}"),
    ("nextauth secret", f"NEXTAUTH_SECRET={_b64(32)}"),
    ("jwt secret toml", f'[auth]\njwt_secret = "{_v(48)}"\ntoken_ttl = "15m"'),
    (
        "ansible vault password file",
        f"echo '{_human_pw()}' > ~/.vault_pass && ansible-playbook site.yml --vault-password-file ~/.vault_pass",
    ),
    (
        "android signing",
        f"signingConfigs {{\n  release {{\n    storeFile file('release.jks')\n    storePassword '{_pw()}'\n    keyAlias 'upload'\n    keyPassword '{_pw()}'\n  }}\n}}",
    ),
    # --- JWTs ---
    (
        "jwt bearer header",
        f"Authorization: Bearer {_jwt({'sub': _uuid(), 'scope': 'admin', 'iat': _epoch(), 'exp': _epoch()}, 'RS256', 256)}",
    ),
    (
        "jwt cookie",
        f"Cookie: session={_jwt({'uid': _R.randint(1, 99999), 'role': 'staff', 'exp': _epoch()})}; csrftoken={_v(32)}",
    ),
    (
        "jwt refresh json",
        json.dumps(
            {
                "access_token": _jwt({"sub": "42", "exp": _epoch()}),
                "refresh_token": _v(64, _URLSAFE),
                "token_type": "Bearer",
            }
        ),
    ),
    (
        "id token in log",
        f"2026-03-02T10:11:12Z DEBUG oidc callback id_token={_jwt({'iss': 'https://accounts.google.com', 'aud': 'x.apps.googleusercontent.com', 'sub': str(_R.randint(10**20, 10**21)), 'email': 'jo@acme.io', 'exp': _epoch()}, 'RS256', 256)}",
    ),
    (
        "supabase service key",
        f"SUPABASE_SERVICE_KEY={_jwt({'iss': 'supabase', 'ref': _v(20, string.ascii_lowercase), 'role': 'service_role', 'iat': _epoch()})}",
    ),
    # --- private keys in odd wrappings ---
    ("pem in json escaped", json.dumps({"key": _RSA_PEM})),
    ("pem in yaml block", "tls:\n  key: |\n    " + _EC_PEM.replace("\n", "\n    ")),
    ("pem base64 env", f"SSH_PRIVATE_KEY_B64={enc(_pem('OPENSSH PRIVATE KEY', 400))}"),
    (
        "jwk private",
        json.dumps(
            {"kty": "EC", "crv": "P-256", "x": _b64url(32), "y": _b64url(32), "d": _b64url(32), "kid": "sig-2026"}
        ),
    ),
    (
        "pgp private block",
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{lines(_b64(900))}\n={_b64(3)}\n-----END PGP PRIVATE KEY BLOCK-----",
    ),
    ("pkcs12 base64 env", f"SIGNING_CERT_P12={_b64(1600)}\nSIGNING_CERT_PASSWORD={_pw()}"),
    ("pem key one line env", 'PRIVATE_KEY="' + _PKCS8_PEM.replace("\n", "\\n") + '"'),
    ("encrypted pem with passphrase", f"{_pem('ENCRYPTED PRIVATE KEY', 1250)}\npassphrase: {_human_pw()}"),
    (
        "coinbase cdp key",
        json.dumps({"name": f"organizations/{_uuid()}/apiKeys/{_uuid()}", "privateKey": _EC_PEM + "\n"}),
    ),
    # --- base64'd credentials ---
    ("basic auth header", f"Authorization: Basic {enc(_USER + ':' + _pw())}"),
    ("basic auth in python", f"headers = {{'Authorization': 'Basic {enc('api:' + _v(32))}'}}"),
    ("base64 password in yaml", f"# base64 of the prod db password\ndb_password_b64: {enc(_human_pw())}"),
    # --- split across lines / concatenated ---
    ("slack token concatenated", f'token = (\n    "{_SPLIT_SLACK[:20]}"\n    "{_SPLIT_SLACK[20:]}"\n)'),
    ("pypi token folded yaml", f"env:\n  TWINE_PASSWORD: >-\n    {_PYPI[:60]}\n    {_PYPI[60:120]}\n    {_PYPI[120:]}"),
    (
        "aws pair split across messages",
        f"key id AKIA{_v(16, _UPPER_DIGITS)}\nand the secret (second half first because slack cut it): {_v(40, _ALNUM + '+/')}",
    ),
    # --- logs and output ---
    (
        "traceback with dsn",
        f"sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to server failed\n(Background on this error at: https://sqlalche.me/e/20/e3q8)\n  engine = create_engine('postgresql://{_USER}:{_pw()}@db.acme.io/app')",
    ),
    (
        "nginx log access token",
        f'{_ipv4()} - - [02/Mar/2026:10:11:12 +0000] "GET /api/export?access_token={_v(40, _URLSAFE)} HTTP/1.1" 200 5123',
    ),
    (
        "debug headers dict",
        f"DEBUG:urllib3: request headers: {{'User-Agent': 'python-requests/2.32', 'X-API-Key': '{_v(40)}'}}",
    ),
    ("env dump in ci log", f"+ env | sort\nHOME=/home/runner\nNPM_TOKEN=npm_{_v(36)}\nPATH=/usr/bin:/bin"),
    (
        "terraform state snippet",
        json.dumps(
            {
                "type": "aws_db_instance",
                "instances": [{"attributes": {"username": "admin", "password": _pw(), "engine": "postgres"}}],
            },
            indent=2,
        ),
    ),
    (
        "helm values",
        f'postgresql:\n  auth:\n    username: app\n    password: "{_pw()}"\n    postgresPassword: "{_pw()}"',
    ),
    (
        "docker compose env",
        f"services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: {_human_pw()}",
    ),
    (
        "github actions log unmasked",
        f'Run curl -H "PRIVATE-TOKEN: glpat-{_v(20, _URLSAFE)}" https://gitlab.acme.io/api/v4/projects',
    ),
    # --- prose ---
    ("prose wifi", f"guest wifi is acme-guest, password {_human_pw()}"),
    ("prose root pw", f"root pw for the staging box is {_pw()} (don't tell Dave)"),
    ("prose admin login", f"admin login for grafana: admin / {_human_pw()}"),
    ("prose german", f"Das Passwort für den Build-Server lautet {_pw()}"),
    ("prose spanish", f"la contraseña del servidor de staging es {_human_pw()}"),
    ("prose french", f"le mot de passe de la base de prod est {_pw()}"),
    ("prose portuguese", f"a senha do banco de homologação é {_pw()}"),
    ("prose italian", f"la password dell'utente deploy è {_human_pw()}"),
    ("prose dutch", f"het wachtwoord van de testomgeving is {_pw()}"),
    ("prose polish", f"hasło do panelu admina to {_human_pw()}"),
    ("prose japanese", f"本番DBのパスワードは {_pw()} です"),
    ("prose chinese", f"测试服务器的密码是 {_pw()}"),
    ("prose korean", f"스테이징 서버 비밀번호는 {_pw()} 입니다"),
    ("prose turkish", f"sunucunun şifresi {_human_pw()}"),
    ("prose api key sentence", f"remember: our internal billing API key is {_v(40)}"),
    ("prose passphrase", f"the gpg passphrase for the release key is '{_human_pw()} {_R.choice(_WORDS)}'"),
    ("prose pin", f"the HSM admin PIN is {_R.randint(10000000, 99999999)}, SO PIN {_R.randint(10000000, 99999999)}"),
    (
        "prose recovery codes",
        f"GitHub recovery codes: {_hex(5)}-{_hex(5)} {_hex(5)}-{_hex(5)} {_hex(5)}-{_hex(5)} {_hex(5)}-{_hex(5)}",
    ),
    ("prose totp seed", f"TOTP seed for the shared ops account: {_v(32, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}"),
]

KEEP_TEXTS: list[tuple[str, str]] = [
    ("git sha", f"the regression came in with {_hex(40)}, revert it on release/2.3"),
    (
        "git log line",
        f"commit {_hex(40)}\nAuthor: Jo Park <jo@acme.io>\nDate:   Mon Mar 2 10:11:12 2026 +0000\n\n    fix: retry on 502",
    ),
    ("image digest", f"image: ghcr.io/acme/api@sha256:{_hex(64)}"),
    ("sha256sum output", f"{_hex(64)}  yullu-2.4.0-py3-none-any.whl"),
    ("npm integrity", f'"integrity": "sha512-{_b64(64)}"'),
    (
        "sri attribute",
        f'<script src="https://cdn.acme.io/app.js" integrity="sha384-{_b64(48)}" crossorigin="anonymous"></script>',
    ),
    ("go sum", f"golang.org/x/net v0.25.0 h1:{_b64(32)}"),
    (
        "terraform lock",
        f'provider "registry.terraform.io/hashicorp/aws" {{\n  version = "5.40.0"\n  hashes = [\n    "h1:{_b64(32)}",\n    "zh:{_hex(64)}",\n  ]\n}}',
    ),
    ("pip hash", f"requests==2.32.3 --hash=sha256:{_hex(64)}"),
    (
        "cargo lock checksum",
        f'[[package]]\nname = "serde"\nversion = "1.0.203"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "{_hex(64)}"',
    ),
    ("request id uuid", f"request {_uuid()} failed with 502 after 30s, retried as {_uuid()}"),
    ("trace id", f"traceparent: 00-{_hex(32)}-{_hex(16)}-01"),
    ("sentry event id", f"Sentry event {_hex(32)} is the same crash as yesterday"),
    ("s3 etag", f'ETag: "{_hex(32)}"'),
    ("nix store path", f"/nix/store/{_v(32, '0123456789abcdfghijklmnpqrsvwxyz')}-python3-3.11.9/bin/python3"),
    ("webpack chunk", f"static/js/main.{_hex(8)}.chunk.js is 1.2 MB, split vendor out"),
    ("bazel out path", f"bazel-out/k8-fastbuild/bin/api/_objs/server/{_hex(16)}/server.o"),
    ("ssh public key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_b64(32)[:43]} jo@laptop"),
    ("ssh rsa public key", f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{_b64(256)} deploy@ci"),
    ("ssh fingerprint", f"ED25519 key fingerprint is SHA256:{_b64(32).rstrip('=')}."),
    (
        "pgp public block",
        f"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n{lines(_b64(400))}\n-----END PGP PUBLIC KEY BLOCK-----",
    ),
    ("certificate", f"-----BEGIN CERTIFICATE-----\n{lines(_b64(900))}\n-----END CERTIFICATE-----"),
    ("public key pem", f"-----BEGIN PUBLIC KEY-----\n{lines(_b64(294))}\n-----END PUBLIC KEY-----"),
    (
        "gpg fingerprint",
        f"pub   ed25519 2025-01-04 [SC]\n      {_HEXU(40)}\nuid           [ultimate] Jo Park <jo@acme.io>",
    ),
    ("eth address", f"send the test ETH to 0x{_hex(40)} on sepolia"),
    (
        "placeholder env",
        "STRIPE_SECRET_KEY=<your-stripe-secret-key>\nSENDGRID_API_KEY=<your-key>\nSLACK_BOT_TOKEN=xoxb-your-token",
    ),
    ("placeholder angle", "curl -H 'Authorization: Bearer <TOKEN>' https://api.acme.io/v1/me"),
    ("placeholder dollar", 'docker login -u "$DOCKER_USER" -p "$DOCKER_PASSWORD" registry.acme.io'),
    ("actions secret ref", "env:\n  NPM_TOKEN: ${{ secrets.NPM_TOKEN }}\n  PYPI_TOKEN: ${{ secrets.PYPI_API_TOKEN }}"),
    ("helm template ref", "password: {{ .Values.postgresql.auth.password | quote }}"),
    ("env var read", 'DATABASE_PASSWORD = os.environ["DATABASE_PASSWORD"]'),
    (
        "k8s secretKeyRef",
        "env:\n- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db-creds\n      key: password",
    ),
    ("masked value", "SENDGRID_API_KEY=SG.****************************** (masked in the UI)"),
    ("truncated key", "the failing key ends in ...a9f3, rotate it in the dashboard"),
    ("xxx placeholder", "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx goes in STRIPE_SECRET_KEY, never in the repo"),
    ("doc prefix list", "GitLab tokens: glpat- personal, glrt- runner, gldt- deploy, glptt- pipeline trigger"),
    ("doc env names", "set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN in .env; see docs/twilio.md"),
    ("stripe object ids", f"refund failed for cus_{_v(14)} / pi_{_v(24)} with card_declined"),
    ("stripe publishable key", f"const stripe = Stripe('pk_live_{_v(99)}');"),
    (
        "google oauth client id",
        f"GOOGLE_CLIENT_ID={_R.randint(10**11, 10**12)}-{_v(32, _LOWER_DIGITS)}.apps.googleusercontent.com",
    ),
    ("ga measurement id", f"gtag('config', 'G-{_v(10, _UPPER_DIGITS)}');"),
    ("aws arn", f"arn:aws:iam::{_R.randint(10**11, 10**12 - 1)}:role/github-actions-deploy"),
    (
        "sts identity output",
        json.dumps(
            {
                "UserId": "AROA" + _v(17, _UPPER_DIGITS) + ":jo",
                "Account": str(_R.randint(10**11, 10**12 - 1)),
                "Arn": "arn:aws:sts::123456789012:assumed-role/dev/jo",
            },
            indent=4,
        ),
    ),
    (
        "kubectl get secrets",
        "NAME                  TYPE                             DATA   AGE\ndb-creds              Opaque                           2      41d\nregcred               kubernetes.io/dockerconfigjson   1      120d",
    ),
    (
        "ansible vault encrypted",
        f"db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  {_hex(64)}\n  {_hex(64)}\n  {_hex(64)}",
    ),
    ("sealed secret", f"spec:\n  encryptedData:\n    password: Ag{_b64(300)}"),
    ("age recipient", f"age -r age1{_v(58, 'qpzry9x8gf2tvdw0s3jn54khce6mua7l')} -o secrets.enc secrets.txt"),
    ("wireguard public", f"[Peer]\nPublicKey = {_b64(32)}\nAllowedIPs = 10.8.0.2/32\nEndpoint = vpn.acme.io:51820"),
    (
        "base64 image",
        f"background: url(data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk{_v(20)}AAAAAElFTkSuQmCC)",
    ),
    (
        "docker images output",
        f"REPOSITORY        TAG       IMAGE ID       CREATED        SIZE\nacme/api          2.4.0     {_hex(12)}   2 days ago     187MB",
    ),
    ("uuid primary key", f"SELECT * FROM memories WHERE id = '{_uuid()}';"),
    ("password policy", "passwords must be 14+ characters with a digit and a symbol; rotate every 90 days"),
    ("twilio sid alone", f"messages for account AC{_hex(32)} are throttled at 1/s"),
    (
        "firebase web config",
        f"const firebaseConfig = {{ projectId: 'acme-web', authDomain: 'acme-web.firebaseapp.com', appId: '1:{_R.randint(10**11, 10**12)}:web:{_hex(22)}' }};",
    ),
    ("csp hash", f"Content-Security-Policy: script-src 'self' 'sha256-{_b64(32)}'"),
    (
        "docker layer pull",
        f"{_hex(12)}: Pull complete\nDigest: sha256:{_hex(64)}\nStatus: Downloaded newer image for postgres:16",
    ),
    ("jwt shape doc", "a JWT is header.payload.signature, each part base64url; never log the whole thing"),
    (
        "random seed",
        f"torch.manual_seed({_R.randint(0, 2**31)}) and numpy seed {_R.randint(0, 2**31)} for reproducible runs",
    ),
    ("hex color and ids", f"button color #{_hex(6)}, experiment id exp_{_hex(12)}, build #{_R.randint(1000, 99999)}"),
    ("md5 checksum", f"MD5 ({_R.choice(_WORDS)}.iso) = {_hex(32)}"),
    (
        "password reset flow",
        "the reset link carries a one-time token valid for 30 minutes; it is hashed before storage",
    ),
    (
        "env example file",
        "# .env.example\nDATABASE_URL=postgres://user:password@localhost:5432/app\nREDIS_URL=redis://localhost:6379/0\nSECRET_KEY=change-me",
    ),
    ("vault path reference", "read the key from vault at secret/data/payments/stripe, field api_key"),
    (
        "aws secrets manager ref",
        f"arn:aws:secretsmanager:eu-west-1:{_R.randint(10**11, 10**12 - 1)}:secret:prod/db-{_v(6)}",
    ),
    ("ci build path", f"/home/runner/work/api/api/node_modules/.cache/babel-loader/{_hex(40)}.json"),
    (
        "gradle cache path",
        f"~/.gradle/caches/modules-2/files-2.1/com.google.guava/guava/33.0.0-jre/{_hex(40)}/guava-33.0.0-jre.jar",
    ),
    ("ipfs cid", f"pinned bafybei{_v(52, 'abcdefghijklmnopqrstuvwxyz234567')} to the gateway"),
    ("pr and issue refs", f"see #4821 and {_hex(7)}; the token refresh race is in auth/refresh.py:118"),
    ("onesignal app id", f"OneSignal.init({{ appId: '{_uuid()}' }})"),
    ("mapbox style url", "style: 'mapbox://styles/acme/clx0example0style' with the public token from config"),
]

POLICY_TEXTS: list[tuple[str, str]] = []


HELD_OUT_20: list[Form] = [(f"s20 {name}", fixed(text)) for name, text in SECRET_TEXTS]
HELD_OUT_20_KEEP: list[Form] = [(f"k20 keep {name}", fixed(text)) for name, text in KEEP_TEXTS]
REFUSED_BY_POLICY_20: list[Form] = [(f"k20 policy {name}", fixed(text)) for name, text in POLICY_TEXTS]

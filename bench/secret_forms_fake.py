"""Hand-typed fake secrets, the way an outside tester writes them (lane secrets27).

Every earlier set fills its forms with RANDOM values, so a token's body always looks random. An outside tester
types a FAKE value by hand: `ghp_abcdefghijklmnopqrstuvwxyz0123456789`, `sk-ant-api03-abcdef…`, `AKIA1234567890ABCDEF`,
`password: password123`, `JWT_SECRET=secret`. Those are low-entropy and sequential, and the scanner stored them
(the lead's probe of main found 24 such forms stored). The policy they test (docs/benchmarks.md "Secret scanner"):
(a) a value in a vendor's token format is a secret however plain its body, unless it is an obvious placeholder;
(b) a value told or assigned to a secret-named key is a secret even when it is a dictionary word or low-entropy,
unless it is a placeholder or a reference in code.

FAKE_SECRETS must all be refused; FAKE_KEEP (placeholders, env var names, code references, type annotations,
advice about passwords, hashes, ids) must all be stored. The texts are fixed: no seed changes them.
"""

# ruff: noqa: E501  (one text a line, as typed)

from __future__ import annotations

from bench.secret_fill import fixed
from bench.secret_forms_9 import Form

# Vendor formats with hand-typed bodies (policy a).
VENDOR_TEXTS: list[tuple[str, str]] = [
    ("github ghp export", "export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("github ghp digits first", "GITHUB_TOKEN=ghp_1234567890abcdefghijklmnopqrstuvwxyz"),
    ("github ghp bare", "use ghp_abcdefghijklmnopqrstuvwxyz0123456789 for the release job"),
    ("github gho", "the oauth token is gho_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("github ghs", "GH_TOKEN: ghs_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
    ("github ghu", "ghu_0123456789abcdefghijklmnopqrstuvwxyz works for the app"),
    ("github ghr", "refresh with ghr_abcdefghijklmnopqrstuvwxyz0123456789"),
    (
        "github fine-grained",
        "GITHUB_PAT=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVW",
    ),
    ("openai sk", "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz1234567890ABCDEFGHIJ"),
    ("openai sk-proj", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOP"),
    ("openai sk-proj env", 'OPENAI_API_KEY="sk-proj-1234567890abcdefghijklmnopqrstuvwxyzABCDEFGH"'),
    ("openai sk prose", "my openai key is sk-1234567890abcdefghijklmnopqrstuvwxyzABCDEFGH"),
    ("anthropic", "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"),
    ("anthropic bare", "claude key sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWXYZ-abcdefghijklmnop0123456789"),
    ("anthropic admin", "sk-ant-admin01-abcdefghijklmnopqrstuvwxyz0123456789ABCDEF"),
    ("npm", "npm token npm_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("npmrc", "//registry.npmjs.org/:_authToken=npm_1234567890abcdefghijklmnopqrstuvwxyz"),
    ("huggingface", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"),
    ("huggingface env", "HF_TOKEN=hf_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefgh"),
    ("aws akia", "AKIA1234567890ABCDEF"),
    ("aws akia sentence", "the access key id is AKIAABCDEFGHIJKLMNOP"),
    ("aws asia", "AWS_ACCESS_KEY_ID=ASIA1234567890ABCDEF"),
    ("google aiza", "AIzaSyAbCdEfGhIjKlMnOpQrStUvWxYz0123456"),
    ("google aiza env", "GOOGLE_API_KEY=AIzaSy1234567890abcdefghijklmnopqrstu"),
    ("sendgrid", "SENDGRID_API_KEY=SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"),
    ("sendgrid bare", "mail key SG.1234567890abcdefghijkl.1234567890abcdefghijklmnopqrstuvwxyzABCDEFG"),
    ("gitlab", "GITLAB_TOKEN=glpat-abcdefghijklmnopqrst"),
    ("gitlab bare", "clone with glpat-1234567890abcdefghij"),
    ("slack bot", "SLACK_BOT_TOKEN=xoxb-1234567890-1234567890-abcdefghijklmnopqrstuvwx"),
    ("slack user", "xoxp-1234567890-1234567890-1234567890-abcdefghijklmnopqrstuvwxyz012345"),
    ("stripe live", "STRIPE_SECRET_KEY=sk_live_abcdefghijklmnopqrstuvwxyz"),
    ("stripe test", "sk_test_1234567890abcdefghijklmnop"),
    ("stripe restricted", "rk_live_abcdefghijklmnopqrstuvwxyz0123"),
    ("digitalocean", "DIGITALOCEAN_TOKEN=dop_v1_abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123"),
    ("pypi", "TWINE_PASSWORD=pypi-AgEIcHlwaS5vcmcabcdefghijklmnopqrstuvwxyz0123456789"),
    ("shopify", "shpat_abcdef0123456789abcdef0123456789"),
    ("linear", "LINEAR_API_KEY=lin_api_abcdefghijklmnopqrstuvwxyz0123456789ABCD"),
    ("groq", "GROQ_API_KEY=gsk_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQR"),
    ("twilio", "TWILIO_AUTH_TOKEN=0123456789abcdef0123456789abcdef"),
    ("mailgun", "MAILGUN_API_KEY=key-abcdef0123456789abcdef0123456789"),
    ("discord webhook", "https://discord.com/api/webhooks/123456789012345678/abcdefghijklmnopqrstuvwxyz0123456789"),
]

# Secret-named keys given plain values in config, env files, JSON, YAML, TOML and code (policy b).
NAMED_TEXTS: list[tuple[str, str]] = [
    ("aws secret", "AWS_SECRET_ACCESS_KEY=abcdefghijklmnopqrstuvwxyz0123456789ABCD"),
    ("aws secret digits", "aws_secret_access_key = 1234567890abcdefghijklmnopqrstuvwxyzABCD"),
    ("doppler", "DOPPLER_TOKEN=dp.st.abcdefghijklmnopqrstuvwxyz0123456789ABCD"),
    ("telegram bot", "TELEGRAM_BOT_TOKEN=123456789:ABCdefGHIjklMNOpqrSTUvwxYZ0123456789"),
    ("password colon", "password: password123"),
    ("password env", "PASSWORD=password123"),
    ("db password", "DB_PASSWORD=supersecret"),
    ("secret key", "SECRET_KEY=mysecretkey"),
    ("jwt secret", "JWT_SECRET=secret"),
    ("api key digits", "API_KEY=1234567890"),
    ("token colon", "token: test-token-123"),
    ("postgres password env", "POSTGRES_PASSWORD=postgres123"),
    ("mysql root", "MYSQL_ROOT_PASSWORD=rootpass"),
    ("redis password", "REDIS_PASSWORD=redispass"),
    ("yaml password", "database:\n  user: app\n  password: letmein"),
    ("yaml nested secret", "auth:\n  client_secret: mysecret123"),
    ("json password", '{"username": "admin", "password": "admin123"}'),
    ("json api key", '{"api_key": "testkey123"}'),
    ("python password", 'password = "welcome1"'),
    ("python secret key", "SECRET_KEY = 'django-insecure-abc123'"),
    ("js apiKey", "const apiKey = 'abcdef123456';"),
    ("ini password", "[database]\nhost = localhost\npassword = qwerty123"),
    ("toml token", 'token = "mytoken123"'),
    ("prose wifi", "wifi password: coffeeshop2024"),
    ("prose api key is", "the api key is 1234567890abcdef"),
    ("prose use password", "use password Passw0rd! for the staging box"),
    ("passwd", "passwd=hunter22"),
    ("pwd upper", "PWD: letmein123"),
    ("auth token env", "AUTH_TOKEN=abc123def456"),
    ("access token", "ACCESS_TOKEN=testtoken"),
    ("private key env", "PRIVATE_KEY=myprivatekey"),
    ("encryption key", "ENCRYPTION_KEY=encryptme123"),
    ("webhook secret", "WEBHOOK_SECRET=whsec_test123"),
    ("redis url password", "redis://:secret123@cache:6379/0"),
    ("client secret env", "OAUTH_CLIENT_SECRET=clientsecret"),
    ("bearer", "Authorization: Bearer test-token-123"),
    ("basic auth curl", "curl -u admin:admin123 https://api.example.com/v1/items"),
]

# Secret-named words given plain values in a sentence or a login pair (policy b).
TOLD_TEXTS: list[tuple[str, str]] = [
    ("password prose", "the password is password123"),
    ("api key prose", "api key = abc123"),
    ("prose my password", "my password is sunshine"),
    ("prose secret is", "the client secret is topsecret"),
    ("prose token is", "my github token is mytoken123"),
    ("creds pair", "username: admin, password: admin"),
]

# Left for a later round (stored today): a `changeme`-style default (set 10 keeps `DB_PASSWORD=changeme123`), a
# login pair without a password's word, a client's password option, a URL's password, a value told after "with
# password" and a value of two words; their rules still ask a value to look drawn at random.
LEFT_TEXTS: list[tuple[str, str]] = [
    ("prose set to", "I set the admin password to changeme123"),
    ("admin slash", "admin/admin123 is the login"),
    ("admin colon", "login with admin:admin"),
    ("docker password flag", "docker login -u admin -p admin123"),
    ("mysql inline", "mysql -u root -pfoobar123 mydb"),
    ("url password", "postgres://admin:password123@localhost:5432/app"),
    ("login prose", "log in as root with password toor"),
    ("session secret", "SESSION_SECRET=keyboard cat"),
]

KEEP_TEXTS: list[tuple[str, str]] = [
    # placeholders in a vendor format
    ("aws example", "AKIAIOSFODNN7EXAMPLE is the key id in AWS's docs"),
    ("ghp xs", "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    ("sk stars", "OPENAI_API_KEY=sk-************************************"),
    ("sk angle", "OPENAI_API_KEY=sk-<your-key-here>"),
    ("sk dots", "set OPENAI_API_KEY to sk-... in your shell"),
    ("ant ellipsis", "ANTHROPIC_API_KEY=sk-ant-…"),
    ("hf placeholder", "HF_TOKEN=hf_YOUR_TOKEN_HERE"),
    ("akia zeros", "AKIA0000000000000000"),
    ("aiza xs", "AIzaSyXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"),
    ("npm redacted", "npm_REDACTED"),
    ("glpat example", "GITLAB_TOKEN=glpat-EXAMPLE"),
    # placeholders after a secret-named key
    ("password angle", "password: <your password>"),
    ("password env ref", "PASSWORD=${DB_PASSWORD}"),
    ("password dollar", "DB_PASSWORD=$POSTGRES_PASSWORD"),
    ("password braces", "password: {{ vault_db_password }}"),
    ("password stars", "password: ********"),
    ("api key your", "API_KEY=your_api_key_here"),
    ("secret placeholder", "SECRET_KEY=PLACEHOLDER"),
    ("token redacted", "token: [REDACTED]"),
    ("token empty", "GITHUB_TOKEN="),
    # code references
    ("environ", "password = os.environ['DB_PASSWORD']"),
    ("getenv", "api_key = os.getenv('OPENAI_API_KEY')"),
    ("process env", "const token = process.env.GITHUB_TOKEN;"),
    ("settings ref", "key = settings.SECRET_KEY"),
    ("get secret call", "secret = get_secret('stripe')"),
    ("variable name", "password = user_password"),
    ("type annotation", "def login(username: str, password: str) -> bool:"),
    ("dataclass field", "class Config:\n    api_key: str\n    token: Optional[str] = None"),
    ("kwarg pass-through", "client = Client(api_key=api_key, token=token)"),
    ("env var names", "Set OPENAI_API_KEY and ANTHROPIC_API_KEY in .env before running."),
    # advice and talk about secrets
    ("strong password", "set a strong password for the admin account"),
    ("rotate key", "rotate the API key every 90 days"),
    ("token expired", "the token expired so the CI job failed with 401"),
    ("password reset", "the password reset email goes out through SES"),
    ("secret in vault", "the JWT secret lives in Vault under secret/app/jwt"),
    ("forgot password", "I forgot my password again, reset it via the admin page"),
    ("password policy", "password must be at least 12 characters with a digit"),
    ("api key header", "send the API key in the X-Api-Key header"),
    # hashes and ids
    ("sha256", "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
    ("commit", "fixed in commit 3f2a9c1b7e4d5a6f8091a2b3c4d5e6f708192a3b"),
    ("uuid", "request id 123e4567-e89b-12d3-a456-426614174000"),
    ("md5", "md5 of the file is d41d8cd98f00b204e9800998ecf8427e"),
    ("order id", "order_id=1234567890 shipped"),
    ("docker digest", "image@sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"),
    ("bcrypt talk", "we store bcrypt hashes, cost 12"),
]

SECRET_TEXTS: list[tuple[str, str]] = VENDOR_TEXTS + NAMED_TEXTS + TOLD_TEXTS + LEFT_TEXTS


FAKE_SECRETS: list[Form] = [(f"fake {name}", fixed(text)) for name, text in SECRET_TEXTS]
FAKE_KEEP: list[Form] = [(f"fake keep {name}", fixed(text)) for name, text in KEEP_TEXTS]

"""The seventeenth held-out secret set, written before reading the scanner or any earlier set's texts.

HELD_OUT_17 are texts a developer might paste into an assistant's memory that carry a secret; every one
must be refused. HELD_OUT_17_KEEP are ordinary texts in the same formats (placeholders, hashes named as
hashes, public keys, key ids, commands without the value); every one must be stored. (A 74th keeper, a Sentry DSN
with its public key only, was dropped after the first run: sets 9 and 12 hold such a DSN as a secret, and the
scanner refuses it by their decision; docs/security.md.)

This set aims at the places earlier sets may have been thin on: config files of other ecosystems (Java,
Spring, .NET, PHP, Rails, Maven, Gradle, Go, Rust, Elixir, .pypirc, .s3cfg, rclone, WireGuard, OpenVPN,
Cisco, IPsec), secrets on a command line (sshpass, mysql -p, PGPASSWORD=, redis-cli -a, docker login -p,
az --password, kubectl --from-literal, ldapsearch -w, smbclient U%P), secrets in CSV rows, markdown
tables and SQL, encoded (URL, base64, hex), reversed or spelled out, after a negation, rotated
(old/new), backup-code and recovery-phrase lists, chat quotes, and non-English prose.

The random values are drawn from one seeded generator, so every run sees the same texts.
"""

from __future__ import annotations

import base64
import random
import string

from bench.secret_fill import fixed
from bench.secret_forms_9 import Form

_R = random.Random(1717)
_ALNUM = string.ascii_letters + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_HEX = "0123456789abcdef"
_OP = string.ascii_uppercase + "23456789"
_SYMBOLS = "!#%*@-_"


def _v(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_R.choice(alphabet) for _ in range(n))


def _pw(n: int = 12) -> str:
    """A person's password: letters and digits with one symbol somewhere inside."""
    body = list(_v(n - 2, string.ascii_letters) + _v(2, string.digits))
    _R.shuffle(body)
    body.insert(_R.randrange(1, n - 1), _R.choice(_SYMBOLS))
    return "".join(body[:n])


def _b64(n_bytes: int) -> str:
    return base64.b64encode(bytes(_R.randrange(256) for _ in range(n_bytes))).decode()


def _luhn(prefix: str, length: int = 16) -> str:
    digits = prefix + _v(length - len(prefix) - 1, string.digits)
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return digits + str((10 - total % 10) % 10)


def _grouped(value: str, size: int = 4, sep: str = " ") -> str:
    return sep.join(value[i : i + size] for i in range(0, len(value), size))


_CARD = _luhn("4539")
_WG_KEY = _b64(32)
_BIP39 = [
    *("orbit", "lumber", "canyon", "velvet", "harvest", "tribe", "pistol", "ocean", "gravity", "window"),
    *("credit", "salmon", "embark", "fossil", "journey", "nephew", "ritual", "sunny", "tackle", "uncle"),
    *("wagon", "yellow", "zebra", "bridge"),
]
_R.shuffle(_BIP39)
_GHP = "ghp_" + _v(36)
_SPELLED = _pw(10)
_REVERSED = _pw(11)
_OLD_KEY, _NEW_KEY = _v(32, _HEX), _v(32, _HEX)
_OVPN = "\n".join(_v(32, _HEX) for _ in range(4))
_HEX_SECRET = _pw(12)

SECRET_TEXTS: list[tuple[str, str]] = [
    # --- config files of other ecosystems ---
    (
        "java properties datasource",
        "src/main/resources/application-prod.properties:\n"
        "spring.datasource.url=jdbc:postgresql://db.internal:5432/orders\n"
        "spring.datasource.username=orders_app\n"
        f"spring.datasource.password={_pw(14)}",
    ),
    (
        "spring yml datasource",
        "application.yml for the billing service:\nspring:\n  datasource:\n"
        "    url: jdbc:mysql://mysql-billing:3306/billing\n    username: billing\n"
        f"    password: {_pw(13)}\n  jpa:\n    hibernate:\n      ddl-auto: validate",
    ),
    (
        "spring mail app password",
        "mail settings that finally worked with Gmail: spring.mail.host=smtp.gmail.com, "
        f"spring.mail.username=alerts@shopco.io, spring.mail.password={_grouped(_v(16, string.ascii_lowercase))}",
    ),
    (
        "dotnet appsettings connection string",
        '"ConnectionStrings": {\n  "Default": "Server=sql01.corp.local;Database=Shop;'
        f'User Id=shop_app;Password={_pw(12)};TrustServerCertificate=True"\n}}',
    ),
    (
        "web.config connectionStrings",
        '<connectionStrings>\n  <add name="Crm" connectionString="Data Source=SQL02;Initial Catalog=Crm;'
        f'User ID=crm_web;Password={_pw(11)}" providerName="System.Data.SqlClient" />\n</connectionStrings>',
    ),
    (
        "php config array",
        "config/database.php on the old box still has the literal: 'mysql' => [ 'host' => '10.0.3.7', "
        f"'database' => 'forum', 'username' => 'forum', 'password' => '{_pw(12)}', ],",
    ),
    (
        "wordpress define",
        f"wp-config.php: define( 'DB_USER', 'wp_blog' ); define( 'DB_PASSWORD', '{_pw(15)}' );",
    ),
    (
        "wordpress auth key",
        "define( 'AUTH_KEY', '" + _v(64, _ALNUM + "!@#$%^&*()-_[]{}<>~+=,.;:/?|") + "' );",
    ),
    (
        "rails database.yml",
        "config/database.yml\nproduction:\n  adapter: postgresql\n  database: storefront_production\n"
        f"  username: storefront\n  password: {_pw(12)}\n  host: pg-primary",
    ),
    (
        "rails secret_key_base",
        f"decrypted credentials.yml.enc for staging: secret_key_base: {_v(128, _HEX)}",
    ),
    (
        "maven settings.xml server",
        "~/.m2/settings.xml\n<servers>\n  <server>\n    <id>nexus-releases</id>\n"
        f"    <username>deployment</username>\n    <password>{_pw(13)}</password>\n  </server>\n</servers>",
    ),
    (
        "gradle.properties signing",
        f"gradle.properties (local only): signing.keyId=3A7F21C9\nsigning.password={_pw(12)}\n"
        f"ossrhUsername=acme-dev\nossrhPassword={_pw(14)}",
    ),
    (
        "go const",
        f'internal/payments/client.go has `const webhookSigningSecret = "{_v(40, _ALNUM)}"` — move it to env',
    ),
    (
        "rust const",
        f'src/config.rs: pub const SMTP_PASS: &str = "{_pw(13)}"; // TODO read from env',
    ),
    (
        "elixir repo config",
        'config/prod.exs:\nconfig :shop, Shop.Repo,\n  username: "shop",\n'
        f'  password: "{_pw(12)}",\n  hostname: "db.shop.internal",\n  pool_size: 10',
    ),
    (
        "elixir endpoint secret_key_base",
        f'config :shop, ShopWeb.Endpoint, secret_key_base: "{_v(64, _ALNUM + "+/")}"',
    ),
    (
        "pypirc token",
        f"~/.pypirc\n[pypi]\n  username = __token__\n  password = pypi-AgEIcHlwaS5vcmc{_v(70, _ALNUM + '-_')}",
    ),
    (
        "pypirc internal index",
        "[distutils]\nindex-servers = internal\n\n[internal]\nrepository = https://pypi.corp.local/\n"
        f"username = release-bot\npassword = {_pw(12)}",
    ),
    (
        "s3cfg",
        f".s3cfg for the backup bucket:\n[default]\naccess_key = AKIA{_v(16, string.ascii_uppercase + '234567')}\n"
        f"secret_key = {_v(40, _ALNUM + '+/')}\nhost_base = s3.amazonaws.com",
    ),
    (
        "rclone conf b2",
        f"rclone.conf\n[b2-archive]\ntype = b2\naccount = 0025{_v(8, _HEX)}0000000003\n"
        f"key = K002{_v(27, _ALNUM)}\nhard_delete = true",
    ),
    (
        "rclone conf sftp pass",
        f"[nas]\ntype = sftp\nhost = 192.168.1.20\nuser = backup\npass = {_v(44, _ALNUM + '-_')}",
    ),
    (
        "wireguard private key",
        f"/etc/wireguard/wg0.conf\n[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {_WG_KEY}\nDNS = 1.1.1.1",
    ),
    (
        "openvpn static key",
        "ta.key from the office VPN:\n-----BEGIN OpenVPN Static key V1-----\n"
        f"{_OVPN}\n-----END OpenVPN Static key V1-----",
    ),
    (
        "htpasswd plaintext",
        f"staging basic auth, .htpasswd line (plain, nginx accepts {{PLAIN}}): deploy:{{PLAIN}}{_pw(11)}",
    ),
    (
        "cisco enable secret 0",
        f"core switch config: enable secret 0 {_pw(11)}\nusername netops privilege 15 password 0 {_pw(10)}",
    ),
    (
        "ipsec secrets psk",
        f'/etc/ipsec.secrets\n%any 203.0.113.10 : PSK "{_v(24, _ALNUM)}"',
    ),
    (
        "terraform tfvars",
        f'terraform.tfvars (not committed): region = "eu-west-1"\ndb_password = "{_pw(14)}"',
    ),
    (
        "k8s secret data base64",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-db\ndata:\n  username: YXBp\n"
        f"  password: {base64.b64encode(_pw(12).encode()).decode()}",
    ),
    (
        "docker config auths",
        '~/.docker/config.json: {"auths": {"registry.corp.local": {"auth": "'
        + base64.b64encode(f"deploy:{_pw(12)}".encode()).decode()
        + '"}}}',
    ),
    (
        "laravel app key",
        f".env on prod: APP_ENV=production\nAPP_KEY=base64:{_b64(32)}\nAPP_DEBUG=false",
    ),
    (
        "flask secret bytes",
        "app.py: app.secret_key = b'" + "".join(f"\\x{_R.randrange(256):02x}" for _ in range(16)) + "'",
    ),
    (
        "postman env key value",
        '{"key": "apiKey", "value": "' + _v(32, _ALNUM) + '", "type": "secret", "enabled": true}',
    ),
    (
        "wpa supplicant psk",
        f'wpa_supplicant.conf for the lab Pi: network={{ ssid="LabNet" psk="{_pw(13)}" }}',
    ),
    (
        "kubeconfig client key data",
        "kubeconfig user entry: client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n"
        "client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVB" + _v(120, _ALNUM + "+/"),
    ),
    (
        "putty ppk",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: jump-host\nPublic-Lines: 2\n"
        f"AAAAC3NzaC1lZDI1NTE5AAAAI{_v(43, _ALNUM + '+/')}\nPrivate-Lines: 1\n{_v(44, _ALNUM + '+/')}\n"
        f"Private-MAC: {_v(64, _HEX)}",
    ),
    (
        "jdbc url password param",
        f"jdbc:mysql://db.internal:3306/shop?user=shop&password={_pw(12)}&useSSL=true",
    ),
    (
        "odbc pwd",
        "Driver={ODBC Driver 18 for SQL Server};Server=tcp:reports.corp.local,1433;Database=Reports;"
        f"Uid=sa;Pwd={_pw(12)};Encrypt=yes;",
    ),
    (
        "oracle sqlplus",
        f"sqlplus system/{_pw(12)}@//oradb01:1521/ORCLPDB1 @migrate.sql",
    ),
    (
        "redis url",
        f"CACHE_URL=redis://:{_v(24, _ALNUM)}@cache.internal:6379/0",
    ),
    (
        "amqp url",
        f"celery broker is amqp://worker:{_pw(12)}@rabbit.internal:5672/prod",
    ),
    # --- secrets on a command line ---
    (
        "sshpass -p",
        f"sshpass -p '{_pw(12)}' ssh -o StrictHostKeyChecking=no root@10.0.4.12 'systemctl restart app'",
    ),
    (
        "mysql -p glued",
        f"mysql -h 127.0.0.1 -u root -p{_pw(12)} shop < dump.sql",
    ),
    (
        "PGPASSWORD inline",
        f"PGPASSWORD={_v(16, _ALNUM)} psql -h db.internal -U app -d app_prod -c 'select count(*) from orders'",
    ),
    (
        "redis-cli -a",
        f"redis-cli -h cache.internal -p 6379 -a {_v(20, _ALNUM)} --no-auth-warning INFO memory",
    ),
    (
        "docker login -p",
        f"docker login registry.corp.local -u deploy -p {_pw(13)}",
    ),
    (
        "az login password",
        "az login --service-principal -u 5f0e3c1a-7b2d-4e9f-8a6c-1d2e3f4a5b6c "
        f"--password '{_v(8, _ALNUM)}~{_v(31, _ALNUM + '._-')}' "
        "--tenant 72f988bf-86f1-41af-91ab-2d7cd011db47",
    ),
    (
        "kubectl from-literal",
        f"kubectl -n prod create secret generic api-db --from-literal=username=api --from-literal=password='{_pw(12)}'",
    ),
    (
        "psql url in history",
        f'shell history: 512  psql "postgres://reporting:{_pw(12)}@pg.internal:5432/reports?sslmode=require"',
    ),
    (
        "ldapsearch -w",
        "ldapsearch -x -H ldaps://ldap.corp.local -D 'cn=admin,dc=corp,dc=local' "
        f"-w '{_pw(12)}' -b 'ou=people,dc=corp,dc=local'",
    ),
    (
        "smbclient user percent pass",
        f"smbclient //fs01/finance -U 'CORP\\svc_backup%{_pw(12)}' -c 'ls'",
    ),
    (
        "curl -u",
        f"curl -u admin:{_pw(12)} https://jenkins.corp.local/api/json?pretty=true",
    ),
    (
        "net use",
        f"net use Z: \\\\fs01\\share /user:CORP\\svc_backup {_pw(12)} /persistent:yes",
    ),
    (
        "powershell securestring",
        f"$pw = ConvertTo-SecureString '{_pw(13)}' -AsPlainText -Force; "
        "$cred = New-Object PSCredential('CORP\\deploy', $pw)",
    ),
    (
        "keytool storepass",
        "keytool -importkeystore -srckeystore app.p12 -srcstoretype PKCS12 -destkeystore app.jks "
        f"-srcstorepass {_pw(12)} -deststorepass {_pw(12)}",
    ),
    (
        "openssl pass arg",
        f"openssl enc -aes-256-cbc -pbkdf2 -in backup.tar -out backup.tar.enc -pass pass:{_pw(14)}",
    ),
    (
        "gpg passphrase",
        f"gpg --batch --yes --passphrase '{' '.join(_R.sample(_BIP39, 4))}' -c backups/db-2024-06-01.sql",
    ),
    (
        "rabbitmqctl add_user",
        f"rabbitmqctl add_user deploy '{_pw(12)}' && rabbitmqctl set_user_tags deploy administrator",
    ),
    (
        "htpasswd -b",
        f"htpasswd -b -c /etc/nginx/.htpasswd admin '{_pw(11)}'",
    ),
    (
        "heroku config set",
        f"heroku config:set SESSION_SECRET={_v(48, _HEX)} -a storefront-prod",
    ),
    (
        "gh secret set body",
        f'gh secret set NPM_PUBLISH --repo acme/widgets --body "npm_{_v(36, _ALNUM)}"',
    ),
    (
        "aws configure set",
        f"aws configure set aws_secret_access_key {_v(40, _ALNUM + '+/')} --profile backup",
    ),
    # --- SQL, CSV, tables ---
    (
        "insert into users plaintext",
        f"seed.sql: INSERT INTO users (email, password, role) VALUES ('qa-admin@example.com', '{_pw(12)}', 'admin');",
    ),
    (
        "alter user password",
        f"ALTER USER reporting WITH PASSWORD '{_pw(13)}';",
    ),
    (
        "mysql identified by",
        f"CREATE USER 'report'@'%' IDENTIFIED BY '{_pw(12)}'; GRANT SELECT ON shop.* TO 'report'@'%';",
    ),
    (
        "csv accounts row",
        f"service,username,password,notes\ngitlab,ops-admin,{_pw(12)},root account\ngrafana,admin,{_pw(11)},",
    ),
    (
        "markdown accounts table",
        f"| system | user | password |\n|---|---|---|\n| jenkins | admin | {_pw(12)} |\n| sonar | admin | {_pw(11)} |",
    ),
    # --- encoded, reversed, spelled ---
    (
        "url encoded form body",
        f"from the access log: POST /login body=user%3Dadmin%26password%3D{_v(6, _ALNUM)}%21{_v(5, _ALNUM)}",
    ),
    (
        "base64 of the token said so",
        f"base64 of the deploy token (so the linter doesn't catch it): {base64.b64encode(_GHP.encode()).decode()}",
    ),
    (
        "hex of the password said so",
        f"the admin password, hex-encoded: {_HEX_SECRET.encode().hex()}",
    ),
    (
        "reversed password",
        f"router admin password written backwards so it's not greppable: {_REVERSED[::-1]}",
    ),
    (
        "spelled with spaces",
        f"p a s s w o r d  for the kiosk: {' '.join(_SPELLED)}",
    ),
    (
        "spelled with dashes",
        f"the vault unseal passphrase, one char at a time: {'-'.join(_pw(10))}",
    ),
    # --- negation, rotation, lists ---
    (
        "after a negation",
        f"FYI the staging db password is not hunter2 anymore, now it is {_pw(12)}",
    ),
    (
        "old key new key",
        f"rotated the payments webhook secret today. old key: {_OLD_KEY} (revoked) / new key: {_NEW_KEY}",
    ),
    (
        "totp backup codes",
        "GitHub 2FA recovery codes for the org owner account:\n"
        + "\n".join(f"{_v(5, _HEX)}-{_v(5, _HEX)}" for _ in range(8)),
    ),
    (
        "recovery phrase numbered lines",
        "treasury wallet recovery phrase:\n" + "\n".join(f"{i + 1}. {w}" for i, w in enumerate(_BIP39[:12])),
    ),
    (
        "seed phrase inline",
        "hardware wallet seed (24 words): " + " ".join(_BIP39),
    ),
    (
        "totp secret base32",
        "TOTP seed for the shared ops account (add to authenticator manually): "
        f"{_grouped(_v(32, string.ascii_uppercase + '234567'))}",
    ),
    (
        "bitlocker recovery key",
        "BitLocker recovery key for LAPTOP-0231: " + "-".join(_v(6, string.digits) for _ in range(8)),
    ),
    (
        "1password secret key",
        f"my 1Password Secret Key: A3-{_v(6, _OP)}-{_v(6, _OP)}-{_v(5, _OP)}-{_v(5, _OP)}-{_v(5, _OP)}-{_v(5, _OP)}",
    ),
    (
        "apple app specific password",
        f"app-specific password for the notarization step: {'-'.join(_v(4, string.ascii_lowercase) for _ in range(4))}",
    ),
    # --- chat quotes ---
    (
        "chat quote pw",
        f"> Sam: the pw for the staging box is {_pw(12)}\n> Me: thx",
    ),
    (
        "slack style quote",
        f"[10:42] priya: use `{_pw(11)}` for the grafana admin login, I'll rotate it friday",
    ),
    # --- webhooks, bots, cookies ---
    (
        "discord webhook",
        f"alerts go to https://discord.com/api/webhooks/{_v(18, string.digits)}/{_v(68, _ALNUM + '-_')}",
    ),
    (
        "telegram bot token",
        f"deploy-notify bot token: {_v(10, string.digits)}:AA{_v(33, _ALNUM + '-_')}",
    ),
    (
        "session cookie",
        f"to reproduce, send Cookie: sessionid={_v(32, _LOWER_DIGITS)}; csrftoken={_v(32, _ALNUM)} (my admin session)",
    ),
    (
        "sentry legacy dsn secret",
        f"SENTRY_DSN=https://{_v(32, _HEX)}:{_v(32, _HEX)}@sentry.corp.local/4",
    ),
    # --- cards, PINs, codes ---
    (
        "company card",
        f"company card for the AWS bill: {_grouped(_CARD)} exp 09/28 cvc {_v(3, string.digits)}",
    ),
    (
        "sim pin puk",
        f"test phone SIM: PIN {_v(4, string.digits)}, PUK {_v(8, string.digits)}",
    ),
    (
        "door code",
        f"the server room door code is {_v(4, string.digits)}# (changed last week)",
    ),
    (
        "snmp community",
        f"snmp v2c community on the core switches: {_pw(12)}",
    ),
    (
        "radius shared secret",
        f"radius shared secret between the APs and freeradius: {_v(20, _ALNUM)}",
    ),
    (
        "erlang cookie",
        f"the erlang cookie for the rabbit cluster is {_v(20, string.ascii_uppercase)}",
    ),
    # --- non-English prose ---
    (
        "german password",
        f"Das Passwort für den Testserver lautet {_pw(12)} – bitte nicht weitergeben.",
    ),
    (
        "german wlan key",
        f"WLAN-Schlüssel der Fritzbox im Büro: {_grouped(_v(20, string.digits))}",
    ),
    (
        "spanish password",
        f"La contraseña del router de la oficina es {_pw(12)}",
    ),
    (
        "spanish safe code",
        f"el código de la caja fuerte es {_v(2, string.digits)}-{_v(2, string.digits)}-{_v(2, string.digits)}",
    ),
    (
        "french password",
        f"Le mot de passe de la base de recette est {_pw(12)}",
    ),
    (
        "portuguese password",
        f"A senha do banco de produção é {_pw(12)}, não compartilhe.",
    ),
    (
        "portuguese gate code",
        f"o código do portão da garagem é {_v(4, string.digits)}",
    ),
    (
        "polish password",
        f"Hasło do serwera backupów: {_pw(12)}",
    ),
    (
        "polish pin",
        f"PIN do karty firmowej to {_v(4, string.digits)}",
    ),
    (
        "japanese romaji password",
        f"tesuto sābā no pasuwādo wa {_pw(12)} desu",
    ),
    (
        "japanese romaji pin",
        f"kādo no anshō bangō wa {_v(4, string.digits)} desu",
    ),
    (
        "italian password",
        f"la password del NAS è {_pw(12)}",
    ),
    (
        "dutch password",
        f"het wachtwoord van de testomgeving is {_pw(12)}",
    ),
]

KEEP_TEXTS: list[tuple[str, str]] = [
    (
        "properties placeholder",
        "spring.datasource.url=jdbc:postgresql://db.internal:5432/orders\n"
        "spring.datasource.username=${DB_USER}\nspring.datasource.password=${DB_PASSWORD}",
    ),
    (
        "spring yml env placeholder",
        "spring:\n  datasource:\n    username: billing\n    password: ${SPRING_DATASOURCE_PASSWORD:}",
    ),
    (
        "appsettings placeholder",
        '"ConnectionStrings": { "Default": "Server=sql01;Database=Shop;User Id=shop_app;Password=<your password>;" }',
    ),
    (
        "web.config integrated security",
        '<add name="Crm" connectionString="Data Source=SQL02;Initial Catalog=Crm;Integrated Security=SSPI" '
        'providerName="System.Data.SqlClient" />',
    ),
    (
        "php env call",
        "'mysql' => [ 'host' => env('DB_HOST'), 'username' => env('DB_USERNAME'), "
        "'password' => env('DB_PASSWORD', ''), ],",
    ),
    (
        "rails database.yml erb",
        "production:\n  adapter: postgresql\n  username: storefront\n  password: <%= ENV['DATABASE_PASSWORD'] %>",
    ),
    (
        "rails credentials edit",
        "to change the SMTP password run bin/rails credentials:edit --environment production "
        "(needs config/credentials/production.key)",
    ),
    (
        "maven env password",
        "<server>\n  <id>nexus-releases</id>\n  <username>${env.NEXUS_USER}</username>\n"
        "  <password>${env.NEXUS_PASSWORD}</password>\n</server>",
    ),
    (
        "gradle key id and ring file",
        "gradle.properties: signing.keyId=24875D73 and signing.secretKeyRingFile=/home/ci/.gnupg/secring.gpg; "
        "the password comes from ORG_GRADLE_PROJECT_signingPassword",
    ),
    (
        "go header const",
        'const apiKeyHeader = "X-Api-Key" // the value is read from os.Getenv("PAYMENTS_API_KEY")',
    ),
    (
        "rust env var",
        'let password = std::env::var("DB_PASSWORD").expect("DB_PASSWORD must be set");',
    ),
    (
        "elixir system env",
        'config :shop, Shop.Repo, username: "shop", password: System.fetch_env!("DB_PASSWORD")',
    ),
    (
        "pypirc placeholder",
        "[pypi]\n  username = __token__\n  password = <your PyPI API token>",
    ),
    (
        "s3cfg empty",
        "[default]\naccess_key =\nsecret_key =\nhost_base = s3.amazonaws.com\n# filled in by s3cmd --configure",
    ),
    (
        "rclone env auth",
        "[s3-archive]\ntype = s3\nprovider = AWS\nenv_auth = true\nregion = eu-west-1",
    ),
    (
        "wireguard peer public key",
        "[Peer]\nPublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\n"
        "Endpoint = vpn.corp.example:51820\nAllowedIPs = 10.8.0.0/24",
    ),
    (
        "openvpn tls-auth file",
        "client.ovpn uses tls-auth ta.key 1 and cipher AES-256-GCM; ta.key is distributed via the MDM, never by chat",
    ),
    (
        "htpasswd bcrypt",
        "admin:$2y$05$SFkMPNPIjw3cnS3WvPNUc.L0bUIKvMe1zQ9hZKhsYjZlNQ1S3lFz6",
    ),
    (
        "htpasswd apr1",
        "the .htpasswd line is deploy:$apr1$x9Ju1LQh$5G4RdrNfWsk3fq0dxvV8q/ (apr1 MD5 hash, switch to bcrypt)",
    ),
    (
        "cisco enable secret 5 hash",
        "enable secret 5 $1$mERr$hx5rVt7rPNoS4wqbXKX7m0",
    ),
    (
        "sshpass from file",
        "sshpass -f ~/.config/sshpass/nas ssh backup@192.168.1.20 (the file is chmod 600)",
    ),
    (
        "mysql prompt",
        "mysql -h 127.0.0.1 -u root -p shop < dump.sql   # -p with nothing after it prompts",
    ),
    (
        "PGPASSWORD from file",
        'PGPASSWORD="$(cat /run/secrets/pg_password)" psql -h db.internal -U app -d app_prod',
    ),
    (
        "redis-cli askpass",
        "redis-cli -h cache.internal --askpass INFO memory",
    ),
    (
        "docker login stdin",
        'echo "$CI_REGISTRY_PASSWORD" | docker login registry.corp.local -u deploy --password-stdin',
    ),
    (
        "az login variables",
        'az login --service-principal -u "$APP_ID" --password "$CLIENT_SECRET" --tenant "$TENANT_ID"',
    ),
    (
        "kubectl from-file",
        "kubectl -n prod create secret generic api-db --from-file=password=./db-password.txt",
    ),
    (
        "psql url no password",
        'psql "postgres://reporting@pg.internal:5432/reports?sslmode=require"  # password from ~/.pgpass',
    ),
    (
        "csv redacted",
        "service,username,password\ngitlab,ops-admin,********\ngrafana,admin,(in 1Password)",
    ),
    (
        "markdown table vault refs",
        "| system | user | where the password is |\n|---|---|---|\n"
        "| jenkins | admin | vault: secret/ci/jenkins |\n| sonar | admin | 1Password › Infra |",
    ),
    (
        "insert bcrypt hash",
        "INSERT INTO users (email, password_hash) VALUES "
        "('qa@example.com', '$2b$12$KIXQJ8P0cN6Yw0n5bq3yTOWm7xH9fJr2oE3uL1sV4aD6gZ8hC0eRu');",
    ),
    (
        "argon2 hash",
        "stored hashes look like $argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG",
    ),
    (
        "url encoded search",
        "GET /search?q=password%20reset%20email%20not%20sent&page=2 returns 500",
    ),
    (
        "base64 of hello",
        "base64 of the string 'hello world' is aGVsbG8gd29ybGQ=, handy for testing the decoder",
    ),
    (
        "negation no password",
        "the staging db password is not in the repo anymore; it moved to Vault at secret/data/staging/db",
    ),
    (
        "old key id new key id",
        "rotated the release signing key: old key id 3F2A9C1B (revoked), new key id 7D41E0A2",
    ),
    (
        "2fa codes where",
        "2FA backup codes for the org owner are in the team vault under 'github-org-owner'; each code works once",
    ),
    (
        "numbered setup steps",
        "release checklist:\n1. bump version\n2. update changelog\n3. tag\n4. push tag\n5. wait for CI\n"
        "6. publish\n7. announce\n8. close milestone\n9. open next\n10. merge back\n11. docs\n12. done",
    ),
    (
        "chat quote where",
        "> Sam: the pw is in the usual place (1Password, Staging vault)\n> Me: found it, thanks",
    ),
    (
        "german policy",
        "Das Passwort muss beim ersten Login geändert werden; Mindestlänge 12 Zeichen.",
    ),
    (
        "spanish policy",
        "La contraseña debe tener al menos 12 caracteres y un símbolo; caduca cada 90 días.",
    ),
    (
        "french vault",
        "Le mot de passe est stocké dans Vault sous secret/data/app, jamais dans le dépôt.",
    ),
    (
        "portuguese expiry",
        "A senha expira a cada 90 dias e o sistema avisa uma semana antes.",
    ),
    (
        "polish policy",
        "Hasło musi mieć co najmniej 12 znaków i nie może zawierać loginu.",
    ),
    (
        "japanese romaji vault",
        "pasuwādo wa Vault ni hozon shite imasu",
    ),
    (
        "ssh public key",
        "add to authorized_keys: ssh-ed25519 "
        "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl deploy@ci",
    ),
    (
        "gpg fingerprint",
        "release key fingerprint: 4AEE 18F8 3AFD EB23 8A15  1D0A 6E3B 0F6E 2B1A 7C55",
    ),
    (
        "cert serial",
        "the expiring cert: Serial Number: 04:3a:8f:21:9c:0d:77:5e:aa:31:6b:02:c4:e9:18:f0, notAfter=Jun 30 2025",
    ),
    (
        "vault kv get",
        "vault kv get -field=password secret/data/prod/db",
    ),
    (
        "iam policy",
        '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"], '
        '"Resource": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-*"}]}',
    ),
    (
        "kms key arn",
        "encrypt with arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    ),
    (
        "sha256 checksum",
        "sha256 of the release tarball: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    ),
    (
        "stripe test card",
        "use the documented test card 4242 4242 4242 4242 with any future expiry in Stripe test mode",
    ),
    (
        "pin policy",
        "the PIN pad accepts 4 to 8 digits and locks after 3 wrong tries",
    ),
    (
        "door code process",
        "the server room door code changes every Monday; ask reception for the new one",
    ),
    (
        "session tag",
        "session:5b0e6f9a-1c2d-4e3f-8a7b-6c5d4e3f2a1b resumed after the crash; commit 3f9a2b7c1d fixed it",
    ),
    (
        "telegram env",
        "the bot is @deploy_notify_bot; its token is in TELEGRAM_BOT_TOKEN on the runner",
    ),
    (
        "set-cookie redacted",
        "Set-Cookie: sessionid=<redacted>; HttpOnly; Secure; SameSite=Lax; Path=/",
    ),
    (
        "k8s secret stringData placeholder",
        "kind: Secret\nstringData:\n  password: ${DB_PASSWORD}  # substituted by envsubst in CI",
    ),
    (
        "docker creds store",
        '~/.docker/config.json: {"credsStore": "desktop", "currentContext": "default"}',
    ),
    (
        "laravel key generate",
        "APP_KEY= is empty in .env.example; run php artisan key:generate after cloning",
    ),
    (
        "env example changeme",
        ".env.example (template, replaced at deploy): DB_PASSWORD=changeme",
    ),
    (
        "xxxx placeholder",
        "API_KEY=xxxxxxxxxxxxxxxxxxxxxxxx  # put your own key here",
    ),
    (
        "terraform sensitive var",
        'variable "db_password" {\n  type      = string\n  sensitive = true\n}',
    ),
    (
        "ipsec rsa file",
        "/etc/ipsec.secrets\n: RSA server-key.pem",
    ),
    (
        "bitlocker key id",
        "BitLocker recovery key ID: 3A7F2C1B-9D4E-4F60-8A1B-2C3D4E5F6A7B (the key itself is in Entra ID)",
    ),
    (
        "1password secret key where",
        "the 1Password Secret Key starts with A3- and is printed in the Emergency Kit PDF",
    ),
    (
        "az login placeholder",
        "az login -u user@corp.example -p <password> (interactive login is preferred)",
    ),
    (
        "discord webhook env",
        "the alert webhook lives in DISCORD_WEBHOOK_URL; rotate it from Server Settings › Integrations",
    ),
    (
        "fritzbox key where",
        "Der WLAN-Schlüssel steht auf dem Aufkleber an der Rückseite der Fritzbox.",
    ),
    (
        "keytool no password",
        "keytool -list -v -keystore app.jks   # asks for the store password",
    ),
    (
        "openssl env pass",
        "openssl enc -aes-256-cbc -pbkdf2 -in backup.tar -out backup.tar.enc -pass env:BACKUP_PASSPHRASE",
    ),
]


HELD_OUT_17: list[Form] = [(f"s17 {name}", fixed(text)) for name, text in SECRET_TEXTS]
HELD_OUT_17_KEEP: list[Form] = [(f"k17 keep {name}", fixed(text)) for name, text in KEEP_TEXTS]

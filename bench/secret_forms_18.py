"""The eighteenth held-out set, written before reading the scanner or any earlier set's texts.

HELD_OUT_18 are texts a developer might ask an assistant to remember that carry a secret; every one must be
refused. HELD_OUT_18_KEEP are ordinary texts in the same formats (placeholders, public ids, key ids and
fingerprints, public keys, digests and signatures of payloads, commands that prompt, redacted values, variable
names); every one must be stored.

This set aims at what sets 1-17 named least: connection strings and config files of less common databases
(ClickHouse, Cassandra, Neo4j, CockroachDB, Snowflake, Databricks, InfluxDB, Couchbase, ArangoDB), cloud CLIs'
own files (gcloud, az, doctl, flyctl, wrangler, vercel, netlify, heroku, hcloud, scw, oci, linode), CI systems'
secrets (GitHub Actions, GitLab, CircleCI, Buildkite, Jenkins, Azure DevOps, Bitbucket), package registries'
credential files (.npmrc `_auth`, .yarnrc.yml, pip.conf, NuGet.Config, cargo, gem, composer, poetry, JFrog),
mobile signing (key.properties, Gradle's signingConfigs, fastlane, notarytool, App Store Connect .p8, FCM),
webhooks whose URL is the secret, JWTs in prose, TOTP seeds in other spellings, private keys in other armours
(PuTTY .ppk, minisign, signify, Tor, Solana, nostr, JWK, a GPG or JKS key in base64), cluster join tokens,
Terraform state and outputs, secrets inside stack traces and HTTP clients' commands, and passwords told in
languages earlier sets did not list.

The random values are drawn from one seeded generator, so every run sees the same texts.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid

from bench.secret_fill import fixed
from bench.secret_forms_9 import Form

_R = random.Random(1818)
_ALNUM = string.ascii_letters + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_B32 = string.ascii_uppercase + "234567"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_URLSAFE = _ALNUM + "-_"
_SYMBOLS = "!#%*@-_+"


def _v(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_R.choice(alphabet) for _ in range(n))


def _pw(n: int = 12) -> str:
    """A person's password: letters and digits with one symbol somewhere inside."""
    body = list(_v(n - 3, string.ascii_letters) + _v(2, string.digits))
    _R.shuffle(body)
    body.insert(_R.randrange(1, n - 2), _R.choice(_SYMBOLS))
    return "".join(body[: n - 1]) + _R.choice(string.ascii_lowercase)


def _bytes(n: int) -> bytes:
    return bytes(_R.randrange(256) for _ in range(n))


def _b64(n_bytes: int) -> str:
    return base64.b64encode(_bytes(n_bytes)).decode()


def _b64url(n_bytes: int) -> str:
    return base64.urlsafe_b64encode(_bytes(n_bytes)).decode().rstrip("=")


def _uuid() -> str:
    return str(uuid.UUID(int=_R.getrandbits(128), version=4))


def _jwt(payload: dict[str, object], alg: str = "HS256", sig_bytes: int = 32) -> str:
    def enc(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")

    return f"{enc({'alg': alg, 'typ': 'JWT'})}.{enc(payload)}.{_b64url(sig_bytes)}"


def _lines(text: str, width: int = 64) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def _app_specific() -> str:
    """Apple's app-specific password: four groups of four lower-case letters."""
    return "-".join(_v(4, string.ascii_lowercase) for _ in range(4))


_PEM_P8 = _lines("MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg" + _b64(96)[:140])
_SA_KEY = _lines("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + _b64(600))
_PKCS8_ENC = _lines("MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI" + _b64(720))
_OPENSSH_BODY = _lines("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + _b64(280), 70)
_PGP_B64 = base64.b64encode(("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQVYBGX" + _b64(300) + "\n").encode()).decode()
_KUBE_CLIENT_KEY = base64.b64encode(
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA" + _b64(240) + "\n-----END RSA PRIVATE KEY-----\n").encode()
).decode()
_JKS_B64 = "/u3+7QAAAAIAAAABAAAAAQAHdXBsb2FkAAABj" + _b64(420)
_SOLANA = json.dumps(list(_bytes(64)), separators=(",", ":"))
_TOR_KEY = "PT0gZWQyNTUxOXYxLXNlY3JldDogdHlwZTAgPT0AAAA" + _b64(64)

SECRET_TEXTS: list[tuple[str, str]] = [
    # --- less common databases ---
    (
        "clickhouse-client password flag",
        "to query prod analytics: clickhouse-client --host ch-prod-01.internal --secure --user analytics "
        f"--password '{_pw(14)}' --database events",
    ),
    (
        "clickhouse users.xml",
        "/etc/clickhouse-server/users.d/etl.xml\n<clickhouse>\n  <users>\n    <etl>\n"
        f"      <password>{_pw(13)}</password>\n      <networks><ip>10.0.0.0/8</ip></networks>\n"
        "    </etl>\n  </users>\n</clickhouse>",
    ),
    (
        "clickhouse go dsn",
        f"the ingest worker's DSN: clickhouse://ingest:{_pw(12)}@ch-lb.internal:9440/raw?secure=true&dial_timeout=5s",
    ),
    (
        "cqlsh password",
        f"cassandra ring check: cqlsh cass-1.dc1.internal 9042 -u cass_ops -p '{_pw(13)}' --ssl -e 'DESCRIBE "
        "KEYSPACES'",
    ),
    (
        "cqlshrc credentials",
        "~/.cassandra/cqlshrc\n[authentication]\nusername = reporting\n"
        f"password = {_pw(12)}\n\n[connection]\nhostname = cass-1.dc1.internal\nport = 9042",
    ),
    (
        "datastax driver application.conf",
        'datastax-java-driver {\n  basic.contact-points = ["cass-1:9042"]\n  advanced.auth-provider {\n'
        "    class = PlainTextAuthProvider\n    username = orders_svc\n"
        f'    password = "{_pw(14)}"\n  }}\n}}',
    ),
    (
        "neo4j auth env",
        "docker-compose.yml, graph service:\n  neo4j:\n    image: neo4j:5.18\n    environment:\n"
        f"      - NEO4J_AUTH=neo4j/{_pw(13)}\n    ports:\n      - 7474:7474",
    ),
    (
        "neo4j python driver aura",
        f'driver = GraphDatabase.driver("neo4j+s://4f2a9c1e.databases.neo4j.io", auth=("neo4j", "{_v(43, _URLSAFE)}"))',
    ),
    (
        "cypher-shell password",
        f"cypher-shell -a bolt://graph.internal:7687 -u neo4j -p {_pw(12)} 'MATCH (n) RETURN count(n)'",
    ),
    (
        "cockroachdb cloud url",
        f"CockroachDB serverless: postgresql://maxroach:{_v(22, _URLSAFE)}@free-tier14.aws-us-east-1."
        "cockroachlabs.cloud:26257/defaultdb?sslmode=verify-full&options=--cluster%3Dgolden-otter-4411",
    ),
    (
        "cockroach sql alter password",
        f"ran in cockroach sql as root: ALTER USER app_rw WITH PASSWORD '{_pw(14)}';",
    ),
    (
        "snowsql config",
        "~/.snowsql/config\n[connections.prod]\naccountname = xy12345.eu-central-1\nusername = ETL_SVC\n"
        f"password = {_pw(15)}\nwarehousename = TRANSFORM_WH",
    ),
    (
        "snowflake connections.toml",
        '~/.snowflake/connections.toml\n[default]\naccount = "xy12345.eu-central-1"\nuser = "dbt_runner"\n'
        f'password = "{_pw(14)}"\nrole = "TRANSFORMER"',
    ),
    (
        "snowflake sqlalchemy url",
        f"snowflake://looker_svc:{_pw(13)}@xy12345.eu-central-1/ANALYTICS/PUBLIC?warehouse=BI_WH&role=BI_READER",
    ),
    (
        "dbt profiles snowflake",
        "profiles.yml\nacme:\n  target: prod\n  outputs:\n    prod:\n      type: snowflake\n"
        f"      account: xy12345.eu-central-1\n      user: DBT_PROD\n      password: '{_pw(14)}'\n"
        "      warehouse: TRANSFORM_WH",
    ),
    (
        "databrickscfg",
        "~/.databrickscfg\n[DEFAULT]\nhost = https://adb-4417201736512345.5.azuredatabricks.net\n"
        f"token = dapi{_v(32, _HEX)}",
    ),
    (
        "databricks jdbc pwd",
        "jdbc:databricks://adb-4417201736512345.5.azuredatabricks.net:443/default;transportMode=http;ssl=1;"
        f"httpPath=/sql/1.0/warehouses/8e1f2a3b4c5d6e7f;AuthMech=3;UID=token;PWD=dapi{_v(32, _HEX)}-2",
    ),
    (
        "influx token",
        f"influx config create --config-name prod --host-url https://influx.acme.io --org acme "
        f"--token {_b64(64).rstrip('=')}== --active",
    ),
    (
        "elastic api key header",
        'curl -H "Authorization: ApiKey '
        + base64.b64encode((_v(20, _URLSAFE) + ":" + _v(22, _URLSAFE)).encode()).decode()
        + '" '
        "https://es-prod.internal:9200/_cat/indices?v",
    ),
    (
        "couchbase cbq",
        f"cbq -e couchbase://cb-1.internal -u Administrator -p {_pw(12)} -s 'SELECT COUNT(*) FROM orders'",
    ),
    (
        "arangosh server password",
        f"arangosh --server.endpoint ssl://arango.internal:8529 --server.username root --server.password {_pw(13)}",
    ),
    # --- cloud CLIs' own files ---
    (
        "gcloud adc refresh token",
        "~/.config/gcloud/application_default_credentials.json:\n"
        '{"client_id": "764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps.googleusercontent.com", '
        '"client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty", '
        f'"refresh_token": "1//0g{_v(98, _URLSAFE)}", "type": "authorized_user"}}',
    ),
    (
        "gcloud access token output",
        f"$ gcloud auth print-access-token\nya29.a0AfB_by{_v(150, _URLSAFE)}",
    ),
    (
        "az service principal login",
        f"az login --service-principal -u {_uuid()} -p {_v(3, _ALNUM)}8Q~{_v(34, _URLSAFE + '.~')} --tenant {_uuid()}",
    ),
    (
        "azure client secret env",
        f"for the terraform runs: ARM_CLIENT_ID={_uuid()}\nARM_CLIENT_SECRET={_v(3, _ALNUM)}8Q~{_v(34, _URLSAFE)}\n"
        f"ARM_TENANT_ID={_uuid()}",
    ),
    (
        "doctl config",
        f"~/.config/doctl/config.yaml\naccess-token: dop_v1_{_v(64, _HEX)}\ncontext: default",
    ),
    (
        "flyctl deploy token",
        f'GitHub secret for fly deploys: FLY_API_TOKEN="FlyV1 fm2_{_v(180, _ALNUM + "+/")}=="',
    ),
    (
        "wrangler oauth toml",
        "~/.wrangler/config/default.toml\n"
        f'oauth_token = "{_v(43, _URLSAFE)}.{_v(43, _URLSAFE)}"\nexpiration_time = "2026-11-28T09:14:02.113Z"\n'
        f'refresh_token = "{_v(43, _URLSAFE)}.{_v(43, _URLSAFE)}"',
    ),
    (
        "cloudflare api token env",
        f"wrangler in CI uses CLOUDFLARE_API_TOKEN={_v(40, _URLSAFE)} and CLOUDFLARE_ACCOUNT_ID={_v(32, _HEX)}",
    ),
    (
        "vercel auth.json",
        '~/.local/share/com.vercel.cli/auth.json: {"// Note": "This is your Vercel credentials file. DO NOT SHARE!", '
        f'"token": "{_v(24, _ALNUM)}"}}',
    ),
    (
        "netlify config token",
        '~/.config/netlify/config.json: {"userId": "5f1c2d3e4a5b6c7d8e9f0a1b", "users": {"5f1c2d3e4a5b6c7d8e9f0a1b": '
        f'{{"auth": {{"token": "nfp_{_v(36, _ALNUM)}"}}}}}}}}',
    ),
    (
        "heroku api key",
        f"HEROKU_API_KEY=HRKU-AA{_v(58, _URLSAFE)} is what the release pipeline uses",
    ),
    (
        "hcloud cli toml",
        '~/.config/hcloud/cli.toml\nactive_context = "prod"\n[[contexts]]\n  name = "prod"\n'
        f'  token = "{_v(64, _ALNUM)}"',
    ),
    (
        "scaleway secret uuid",
        f"~/.config/scw/config.yaml\naccess_key: SCW{_v(17, _UPPER_DIGITS)}\nsecret_key: {_uuid()}\n"
        "default_organization_id: 0c3b2a1f-7e6d-4c5b-9a8f-1e2d3c4b5a69\ndefault_region: fr-par",
    ),
    (
        "oci pass_phrase",
        "~/.oci/config\n[DEFAULT]\nuser=ocid1.user.oc1..aaaaaaaa"
        + _v(52, string.ascii_lowercase + string.digits)
        + "\nfingerprint=3f:9a:12:7c:44:0e:8b:91:d2:5f:6a:3b:c0:1e:77:af\nkey_file=~/.oci/oci_api_key.pem\n"
        f"pass_phrase={_pw(14)}\nregion=eu-frankfurt-1",
    ),
    (
        "linode cli token",
        "~/.config/linode-cli\n[DEFAULT]\ndefault-user = acme-ops\n\n[acme-ops]\ntoken = "
        f"{_v(64, _HEX)}\nregion = eu-central",
    ),
    (
        "railway uuid token",
        f"the Railway project token for deploys is {_uuid()} (RAILWAY_TOKEN in the runner)",
    ),
    (
        "aws sso cache",
        '~/.aws/sso/cache/2f1e3d4c.json: {"startUrl": "https://acme.awsapps.com/start", "region": "eu-west-1", '
        f'"accessToken": "aoa{_v(60, _ALNUM)}:{_v(120, _ALNUM + "+/")}", "expiresAt": "2026-11-28T04:12:55Z"}}',
    ),
    (
        "aws session credentials",
        "[acme-temp]\naws_access_key_id = ASIA" + _v(16, _B32) + "\n"
        f"aws_secret_access_key = {_v(40, _ALNUM + '+/')}\naws_session_token = "
        f"IQoJb3JpZ2luX2VjE{_v(200, _ALNUM + '+/')}",
    ),
    # --- CI systems ---
    (
        "actions hardcoded npm token",
        f"- name: Publish\n  run: npm publish --access public\n  env:\n    NODE_AUTH_TOKEN: npm_{_v(36, _ALNUM)}",
    ),
    (
        "actions docker login with",
        "- uses: docker/login-action@v3\n  with:\n    registry: harbor.acme.io\n    username: robot$ci\n"
        f"    password: {_v(32, _ALNUM)}",
    ),
    (
        "gitlab ci sonar token",
        f'.gitlab-ci.yml\nsonarqube-check:\n  variables:\n    SONAR_HOST_URL: "https://sonar.acme.io"\n'
        f'    SONAR_TOKEN: "squ_{_v(40, _HEX)}"',
    ),
    (
        "gitlab runner token",
        '/etc/gitlab-runner/config.toml\n[[runners]]\n  name = "docker-1"\n  url = "https://gitlab.acme.io"\n'
        f'  token = "glrt-{_v(20, _URLSAFE)}"\n  executor = "docker"',
    ),
    (
        "gitlab deploy token remote",
        f"helm repo add acme https://gitlab+deploy-token-42:gldt-{_v(20, _URLSAFE)}@gitlab.acme.io/api/v4/"
        "projects/7/packages/helm/stable",
    ),
    (
        "circleci cli yml",
        f"~/.circleci/cli.yml\nhost: https://circleci.com\ntoken: {_v(40, _HEX)}",
    ),
    (
        "circleci personal token",
        f"curl -H 'Circle-Token: CCIPAT_{_v(22, _ALNUM)}_{_v(40, _HEX)}' https://circleci.com/api/v2/me",
    ),
    (
        "buildkite agent cfg",
        f'/etc/buildkite-agent/buildkite-agent.cfg\ntoken="{_v(50, _HEX)}"\nname="%hostname-%spawn"\n'
        'tags="queue=deploy"',
    ),
    (
        "buildkite api token",
        f"BUILDKITE_API_TOKEN=bkua_{_v(40, _HEX)} for the pipeline-sync script",
    ),
    (
        "jenkins casc credentials",
        "jenkins.yaml (JCasC)\ncredentials:\n  system:\n    domainCredentials:\n      - credentials:\n"
        "          - usernamePassword:\n              scope: GLOBAL\n              id: nexus-deploy\n"
        f'              username: deployer\n              password: "{_pw(14)}"',
    ),
    (
        "jenkins api token curl",
        f"trigger the nightly job: curl -X POST -u ci-admin:11{_v(32, _HEX)} "
        "https://jenkins.acme.io/job/nightly/buildWithParameters?ENV=staging",
    ),
    (
        "jenkins credentials.xml secret",
        "<org.jenkinsci.plugins.plaincredentials.impl.StringCredentialsImpl>\n  <scope>GLOBAL</scope>\n"
        f"  <id>slack-bot</id>\n  <secret>xoxb-{_v(12, string.digits)}-{_v(13, string.digits)}-{_v(24, _ALNUM)}"
        "</secret>\n"
        "</org.jenkinsci.plugins.plaincredentials.impl.StringCredentialsImpl>",
    ),
    (
        "azure devops pat remote",
        f"git clone https://build:{_v(52, string.ascii_lowercase + '234567')}@dev.azure.com/acme/Platform/_git/infra",
    ),
    (
        "bitbucket app password",
        f"git remote set-url origin https://jdoe:ATBB{_v(32, _ALNUM)}{_v(8, _HEX).upper()}@bitbucket.org/acme/"
        "mobile.git",
    ),
    (
        "actions runner registration",
        f"./config.sh --url https://github.com/acme/api --token A{_v(28, _UPPER_DIGITS)} --labels gpu,linux",
    ),
    # --- package registries ---
    (
        "npmrc _auth",
        "~/.npmrc\nregistry=https://nexus.acme.io/repository/npm-group/\n"
        f"_auth={base64.b64encode(f'deployer:{_pw(13)}'.encode()).decode()}\nalways-auth=true",
    ),
    (
        "yarnrc npmAuthToken",
        '.yarnrc.yml\nnpmScopes:\n  acme:\n    npmRegistryServer: "https://npm.pkg.github.com"\n'
        f'    npmAuthToken: "ghp_{_v(36, _ALNUM)}"',
    ),
    (
        "yarnrc npmAuthIdent",
        '.yarnrc.yml\nnpmRegistryServer: "https://artifactory.acme.io/api/npm/npm/"\nnpmAuthIdent: '
        f'"ci-reader:{_pw(13)}"',
    ),
    (
        "pip.conf codeartifact",
        "~/.config/pip/pip.conf\n[global]\nindex-url = https://"
        "aws:eyJ2ZXIiOjEsImlzdSI6MTcwMDAwMDAwMCwiZW5jIjoiQTEyOEdDTSJ9"
        f"{_v(120, _ALNUM)}@acme-123456789012.d.codeartifact.eu-west-1.amazonaws.com/pypi/py/simple/",
    ),
    (
        "nuget cleartext password",
        'NuGet.Config\n<packageSourceCredentials>\n  <acme-feed>\n    <add key="Username" value="build" />\n'
        f'    <add key="ClearTextPassword" value="{_v(52, string.ascii_lowercase + "234567")}" />\n'
        "  </acme-feed>\n</packageSourceCredentials>",
    ),
    (
        "cargo credentials",
        f'~/.cargo/credentials.toml\n[registry]\ntoken = "cio{_v(32, _ALNUM)}"',
    ),
    (
        "cargo alternate registry bearer",
        f'[registries.acme]\ntoken = "Bearer {_v(40, _URLSAFE)}"',
    ),
    (
        "gem credentials",
        f"~/.gem/credentials\n---\n:rubygems_api_key: rubygems_{_v(48, _HEX)}\n:github: Bearer ghp_{_v(36, _ALNUM)}",
    ),
    (
        "composer auth.json",
        'auth.json next to composer.json:\n{\n  "http-basic": {\n    "repo.packagist.com": {\n'
        f'      "username": "token",\n      "password": "{_v(40, _HEX)}"\n    }}\n  }}\n}}',
    ),
    (
        "composer bitbucket oauth",
        '{"bitbucket-oauth": {"bitbucket.org": {"consumer-key": "'
        + _v(18, _ALNUM)
        + '", "consumer-secret": "'
        + _v(32, _ALNUM)
        + '"}}}',
    ),
    (
        "poetry http-basic",
        f"poetry config http-basic.acme-private deployer {_pw(14)}",
    ),
    (
        "jfrog access token",
        f"jf c add acme --url https://acme.jfrog.io --access-token cmVmdGtuOjAxOjE3{_v(48, _ALNUM)} "
        "--interactive=false",
    ),
    (
        "cocoapods trunk netrc",
        "~/.netrc entry the pod trunk session wrote:\nmachine trunk.cocoapods.org\n  login dev@acme.io\n  "
        f"password {_v(32, _HEX)}",
    ),
    # --- mobile signing ---
    (
        "android key.properties",
        f"android/key.properties\nstorePassword={_pw(12)}\nkeyPassword={_pw(12)}\nkeyAlias=upload\n"
        "storeFile=/Users/dev/keys/upload-keystore.jks",
    ),
    (
        "gradle signingConfigs groovy",
        "signingConfigs {\n    release {\n        storeFile file('release.jks')\n"
        f"        storePassword '{_pw(13)}'\n        keyAlias 'release'\n        keyPassword '{_pw(13)}'\n    }}\n}}",
    ),
    (
        "apksigner ks-pass",
        f"apksigner sign --ks release.jks --ks-key-alias release --ks-pass pass:{_pw(12)} app-release-unsigned.apk",
    ),
    (
        "fastlane app-specific password",
        f"fastlane env for TestFlight uploads: FASTLANE_USER=ios-release@acme.io\n"
        f"FASTLANE_APPLE_APPLICATION_SPECIFIC_PASSWORD={_app_specific()}\nMATCH_PASSWORD={_pw(14)}",
    ),
    (
        "notarytool password",
        "xcrun notarytool store-credentials AC_NOTARY --apple-id release@acme.io --team-id 7QX2ABCD9K "
        f"--password {_app_specific()}",
    ),
    (
        "app-specific password prose",
        f"remember for notarization: the app-specific password on the release Apple ID is {_app_specific()}",
    ),
    (
        "app store connect p8 in json",
        '{"key_id": "D383SF739Q", "issuer_id": "69a6de70-03db-47e3-e053-5b8c7c11a4d1", '
        '"key": "-----BEGIN PRIVATE KEY-----\\n' + _PEM_P8.replace("\n", "\\n") + '\\n-----END PRIVATE KEY-----", '
        '"in_house": false}',
    ),
    (
        "firebase service account",
        '{\n  "type": "service_account",\n  "project_id": "acme-mobile-prod",\n'
        f'  "private_key_id": "{_v(40, _HEX)}",\n'
        '  "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + _SA_KEY.replace("\n", "\\n")
        + '\\n-----END PRIVATE KEY-----\\n",\n'
        '  "client_email": "firebase-adminsdk-x1y2z@acme-mobile-prod.iam.gserviceaccount.com"\n}',
    ),
    (
        "fcm legacy server key",
        f"push still goes through the legacy FCM server key AAAA{_v(7, _URLSAFE)}:APA91b{_v(134, _URLSAFE)}",
    ),
    (
        "keychain create password",
        f"CI step: security create-keychain -p {_pw(12)} build.keychain && security import dist.p12 -k build.keychain "
        f"-P {_pw(12)} -T /usr/bin/codesign",
    ),
    (
        "signtool pfx password",
        f"signtool sign /f codesign.pfx /p {_pw(13)} /fd sha256 /tr http://timestamp.digicert.com /td sha256 Setup.exe",
    ),
    (
        "openssl passout",
        f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{_pw(12)}",
    ),
    (
        "jks base64 secret",
        f"ANDROID_KEYSTORE_BASE64 (GitHub secret) is:\n{_lines(_JKS_B64, 76)}",
    ),
    (
        "expo token",
        f"EXPO_TOKEN={_v(40, _URLSAFE)} lets eas build run without a login",
    ),
    # --- webhooks whose URL is the secret ---
    (
        "teams incoming webhook",
        f"https://acme.webhook.office.com/webhookb2/{_uuid()}@{_uuid()}/IncomingWebhook/{_v(32, _HEX)}/{_uuid()}/"
        f"V2{_v(43, _URLSAFE)}",
    ),
    (
        "logic app sig",
        f"https://prod-12.westeurope.logic.azure.com:443/workflows/{_v(32, _HEX)}/triggers/manual/paths/invoke?"
        f"api-version=2016-10-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig={_v(43, _URLSAFE)}",
    ),
    (
        "google chat webhook",
        f"alerts go to https://chat.googleapis.com/v1/spaces/AAAA{_v(7, _URLSAFE)}/messages?"
        f"key=AIzaSy{_v(33, _URLSAFE)}&token={_v(43, _URLSAFE)}%3D",
    ),
    (
        "azure function key",
        f"POST https://acme-ingest.azurewebsites.net/api/orders?code={_v(54, _URLSAFE)}== (function-level key)",
    ),
    (
        "ifttt maker key",
        f"the garage opener: curl -X POST https://maker.ifttt.com/trigger/garage_open/with/key/{_v(22, _URLSAFE)}",
    ),
    (
        "telegram bot url",
        f"https://api.telegram.org/bot{_v(10, string.digits)}:AA{_v(33, _URLSAFE)}/sendMessage?chat_id=-1001234567890",
    ),
    (
        "stripe webhook secret prose",
        f"the endpoint's signing secret for prod webhooks is whsec_{_v(32, _ALNUM)}",
    ),
    # --- JWTs in prose ---
    (
        "supabase service role jwt",
        "Supabase service_role key (bypasses RLS!): "
        + _jwt(
            {"iss": "supabase", "ref": "qwertyuiopasdfgh", "role": "service_role", "iat": 1712000000, "exp": 2027576000}
        ),
    ),
    (
        "jwt in sentence",
        "I grabbed a working token from devtools so you can test the admin API: "
        + _jwt({"sub": "u_8812", "role": "admin", "exp": 1893456000}, "RS256", 256)
        + ". It expires in 2030.",
    ),
    (
        "jwt har header lowercase",
        '"headers": [{"name": "authorization", "value": "bearer '
        + _jwt({"sub": "svc-report", "scope": "read:all", "exp": 1893456000})
        + '"}]',
    ),
    # --- TOTP seeds ---
    (
        "otpauth migration",
        f"exported from Google Authenticator: otpauth-migration://offline?data=CjEKCj{_v(110, _ALNUM + '+/')}%3D%3D",
    ),
    (
        "grouped setup key",
        f"AWS root MFA setup key (typed into 1Password): {' '.join(_v(4, _B32.lower()) for _ in range(8))}",
    ),
    (
        "oathtool seed",
        f"oathtool --totp -b {_v(32, _B32)}   # prints the shared admin's current code",
    ),
    (
        "rails otp_secret seed",
        f'db/seeds.rb: User.create!(email: "ops@acme.io", otp_secret: "{_v(32, _B32)}", otp_required_for_login: true)',
    ),
    # --- private keys in other armours ---
    (
        "putty ppk v3",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: ed25519-key-20240312\nPublic-Lines: 2\n"
        f"AAAAC3NzaC1lZDI1NTE5AAAAI{_b64(32)[:43]}\n{_b64(9)}\nPrivate-Lines: 1\nAAAAI{_b64(36)[:43]}\n"
        f"Private-MAC: {_v(64, _HEX)}",
    ),
    (
        "openssh body without armour",
        f"the deploy key, I stripped the BEGIN/END lines by mistake:\n{_OPENSSH_BODY}",
    ),
    (
        "pkcs8 encrypted with passphrase",
        f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{_PKCS8_ENC}\n-----END ENCRYPTED PRIVATE KEY-----\n"
        f"passphrase for it: {_pw(14)}",
    ),
    (
        "sops age key env",
        f"export SOPS_AGE_KEY=AGE-SECRET-KEY-1{_v(58, _BECH32).upper()}",
    ),
    (
        "minisign secret key",
        f"~/.minisign/minisign.key\nuntrusted comment: minisign encrypted secret key\nRWRTY0Iy{_b64(150)}",
    ),
    (
        "signify secret key",
        f"/etc/signify/acme-release.sec\nuntrusted comment: signify secret key\nRWRCSwAAACo{_b64(78)}",
    ),
    (
        "gpg key base64 env",
        f"GPG_PRIVATE_KEY for the release workflow (gpg --export-secret-keys --armor | base64 -w0):\n{_PGP_B64}",
    ),
    (
        "tor onion secret key base64",
        f"hs_ed25519_secret_key of the onion service, base64: {_TOR_KEY}",
    ),
    (
        "solana keypair json",
        f"~/.config/solana/id.json (the devnet deployer): {_SOLANA}",
    ),
    (
        "nostr nsec",
        f"my nostr key for the bot account: nsec1{_v(58, _BECH32)}",
    ),
    (
        "ec private jwk",
        json.dumps(
            {"kty": "EC", "crv": "P-256", "kid": "sig-2024-11", "x": _b64url(32), "y": _b64url(32), "d": _b64url(32)}
        ),
    ),
    (
        "ethereum private key prose",
        f"the faucet wallet's private key is 0x{_v(64, _HEX)} (testnet, but still)",
    ),
    # --- cluster tokens ---
    (
        "kubeconfig client-key-data",
        "users:\n- name: admin@prod\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"
        f"{_v(60, _ALNUM)}\n    client-key-data: {_KUBE_CLIENT_KEY}",
    ),
    (
        "kubeconfig oidc refresh",
        "user:\n  auth-provider:\n    name: oidc\n    config:\n      client-id: kubernetes\n"
        f"      client-secret: {_v(32, _ALNUM)}\n      id-token: "
        f"{_jwt({'iss': 'https://dex.acme.io', 'sub': 'alice'}, 'RS256', 256)}\n"
        f"      idp-issuer-url: https://dex.acme.io\n      refresh-token: {_v(26, _LOWER_DIGITS)}",
    ),
    (
        "k3s node token",
        f"join workers with K3S_TOKEN=K10{_v(64, _HEX)}::server:{_v(32, _HEX)}",
    ),
    (
        "kubeadm join token",
        f"kubeadm join 10.0.0.10:6443 --token {_v(6, _LOWER_DIGITS)}.{_v(16, _LOWER_DIGITS)} "
        f"--discovery-token-ca-cert-hash sha256:{_v(64, _HEX)}",
    ),
    (
        "docker swarm join token",
        f"docker swarm join --token SWMTKN-1-{_v(50, _LOWER_DIGITS)}-{_v(25, _LOWER_DIGITS)} 10.0.0.5:2377",
    ),
    (
        "vault init output",
        f"vault operator init output, keep it safe:\nUnseal Key 1: {_b64(32)}\nUnseal Key 2: {_b64(32)}\n"
        f"Unseal Key 3: {_b64(32)}\n\nInitial Root Token: hvs.{_v(24, _ALNUM)}",
    ),
    (
        "consul acl token uuid",
        f"export CONSUL_HTTP_TOKEN={_uuid()}   # bootstrap (global-management) token",
    ),
    (
        "rancher api key",
        f"rancher login https://rancher.acme.io/v3 --token token-{_v(5, _LOWER_DIGITS)}:{_v(54, _LOWER_DIGITS)}",
    ),
    # --- terraform state and outputs ---
    (
        "tfstate db password",
        '"resources": [{"mode": "managed", "type": "aws_db_instance", "name": "main", "instances": [{"attributes": '
        f'{{"engine": "postgres", "username": "dbadmin", "password": "{_pw(16)}", "port": 5432}}}}]}}]',
    ),
    (
        "tfstate random_password result",
        '{"mode": "managed", "type": "random_password", "name": "redis", "instances": [{"schema_version": 3, '
        f'"attributes": {{"length": 24, "special": true, "result": "{_pw(24)}"}}}}]}}',
    ),
    (
        "terraform output raw",
        f"$ terraform output -raw grafana_admin_password\n{_pw(18)}",
    ),
    (
        "terraform cloud credentials",
        '~/.terraform.d/credentials.tfrc.json\n{"credentials": {"app.terraform.io": '
        f'{{"token": "{_v(14, _ALNUM)}.atlasv1.{_v(67, _ALNUM)}"}}}}}}',
    ),
    (
        "pulumi access token",
        f"PULUMI_ACCESS_TOKEN=pul-{_v(40, _HEX)}",
    ),
    # --- stack traces ---
    (
        "java jdbc url in exception",
        "com.mysql.cj.jdbc.exceptions.CommunicationsException: Communications link failure\n"
        "  at com.mysql.cj.jdbc.ConnectionImpl.createNewIO(ConnectionImpl.java:836)\n"
        f"Caused by: url=jdbc:mysql://db-replica:3306/shop?user=shop_ro&password={_pw(13)}&useSSL=true",
    ),
    (
        "axios error headers",
        "AxiosError: Request failed with status code 429\n    at settle (node_modules/axios/lib/core/settle.js:19:12)\n"
        "  config: {\n    url: 'https://api.openweathermap.org/data/3.0/onecall',\n    headers: {\n"
        f"      'X-Api-Key': '{_v(32, _HEX)}',\n      'User-Agent': 'axios/1.6.7'\n    }}\n  }}",
    ),
    (
        "celery amqp traceback",
        "kombu.exceptions.OperationalError: [Errno 111] Connection refused\n"
        f'  broker: amqp://celery:{_pw(13)}@rabbit-0.rabbit.svc:5672/prod\n  File "/app/tasks.py", line 12',
    ),
    (
        "go panic clickhouse dsn",
        "panic: code: 516, message: default: Authentication failed\n\ngoroutine 1 [running]:\n"
        'main.main()\n\t/src/cmd/ingest/main.go:41 +0x1c4\n\tdsn="tcp://'
        f'ch-1:9000?username=default&password={_pw(12)}"',
    ),
    (
        "ruby faraday headers",
        "Faraday::UnauthorizedError (the server responded with status 401)\n"
        f'request headers: {{"X-Shopify-Access-Token"=>"shpat_{_v(32, _HEX)}", "Content-Type"=>"application/json"}}',
    ),
    # --- HTTP clients' commands ---
    (
        "curl oauth2-bearer",
        f"curl --oauth2-bearer {_v(40, _ALNUM)} https://api.acme.io/v2/reports/daily",
    ),
    (
        "curl client credentials form",
        "curl -X POST https://login.acme.io/oauth/token -d grant_type=client_credentials "
        f"-d client_id=reporting-svc -d client_secret={_v(40, _URLSAFE)}",
    ),
    (
        "httpie basic auth",
        f"http -a admin:{_pw(12)} POST https://grafana.acme.io/api/dashboards/db < dash.json",
    ),
    (
        "wget http-password",
        f"wget --http-user=backup --http-password={_pw(13)} https://files.acme.io/dumps/latest.sql.gz",
    ),
    (
        "grpcurl lowercase bearer",
        f"grpcurl -H 'authorization: bearer {_v(48, _URLSAFE)}' api.acme.io:443 acme.v1.Orders/List",
    ),
    (
        "curl access_token query",
        f"curl 'https://graph.facebook.com/v19.0/me/accounts?access_token=EAAB{_v(180, _ALNUM)}'",
    ),
    # --- passwords told in other languages ---
    (
        "romanian",
        f"parola pentru serverul de backup este {_pw(12)}",
    ),
    (
        "norwegian",
        f"passordet til admin-kontoen på NAS-en er {_pw(12)}",
    ),
    (
        "catalan",
        f"la contrasenya del wifi de l'oficina és {_pw(12)}",
    ),
    (
        "malay",
        f"kata laluan untuk pelayan pangkalan data ialah {_pw(12)}",
    ),
    (
        "swahili",
        f"nenosiri la seva ya majaribio ni {_pw(12)}",
    ),
    (
        "ukrainian",
        f"пароль від адмінки сервера: {_pw(12)}",
    ),
    (
        "persian",
        f"رمز عبور سرور تست {_pw(12)} است",
    ),
    (
        "traditional chinese",
        f"測試伺服器的密碼是 {_pw(12)}",
    ),
    (
        "japanese pin wording",
        f"本番DBの管理者パスワードは「{_pw(12)}」です。",
    ),
    (
        "icelandic",
        f"lykilorðið að þjóninum er {_pw(12)}",
    ),
    (
        "tagalog",
        f"ang password ng staging server ay {_pw(12)}",
    ),
    (
        "afrikaans",
        f"die wagwoord vir die bediener is {_pw(12)}",
    ),
    (
        "latvian",
        f"servera parole ir {_pw(12)}",
    ),
    (
        "slovak",
        f"heslo k serveru je {_pw(12)}",
    ),
]

KEEP_TEXTS: list[tuple[str, str]] = [
    # --- less common databases ---
    (
        "clickhouse url no password",
        "ClickHouse URL for the ingest worker: clickhouse://ingest@ch-lb.internal:9440/raw?secure=true "
        "(the password comes from CLICKHOUSE_PASSWORD)",
    ),
    (
        "clickhouse sha256 hex field",
        "users.xml stores only a digest: use <password_sha256_hex> instead of <password>, generated with "
        'echo -n "$PASSWORD" | sha256sum',
    ),
    (
        "cqlsh prompts",
        "cqlsh cass-1.dc1.internal 9042 -u cass_ops --ssl   # prompts for the password",
    ),
    (
        "neo4j auth env reference",
        'environment:\n  - NEO4J_AUTH=neo4j/${NEO4J_PASSWORD}\n  - NEO4J_PLUGINS=["apoc"]',
    ),
    (
        "neo4j auth none",
        "for the local graph only: NEO4J_AUTH=none (never on a shared host)",
    ),
    (
        "cockroach cert auth url",
        "postgresql://app_rw@cockroach-lb:26257/app?sslmode=verify-full&sslrootcert=certs/ca.crt"
        "&sslcert=certs/client.app_rw.crt&sslkey=certs/client.app_rw.key",
    ),
    (
        "snowflake key pair path",
        '[default]\naccount = "xy12345.eu-central-1"\nuser = "dbt_runner"\nauthenticator = "SNOWFLAKE_JWT"\n'
        'private_key_path = "~/.snowflake/rsa_key.p8"',
    ),
    (
        "dbt profiles env_var",
        "      password: \"{{ env_var('DBT_SNOWFLAKE_PASSWORD') }}\"\n      warehouse: TRANSFORM_WH",
    ),
    (
        "databricks secrets get",
        'jdbc_password = dbutils.secrets.get(scope="prod-db", key="warehouse-password")',
    ),
    (
        "databricks redacted token",
        "the old token (dapi…3f9c) was revoked on Monday; the new one is in the prod-ci scope",
    ),
    # --- cloud CLIs ---
    (
        "gcloud configuration",
        "~/.config/gcloud/configurations/config_default\n[core]\naccount = ops@acme.io\nproject = acme-prod-4721\n"
        "[compute]\nregion = europe-west3",
    ),
    (
        "gcloud adc login command",
        "run gcloud auth application-default login once; the file lands in "
        "~/.config/gcloud/application_default_credentials.json",
    ),
    (
        "az account show",
        '{"environmentName": "AzureCloud", "id": "9b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d", "isDefault": true, '
        '"name": "Acme Prod", "tenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47", '
        '"user": {"name": "ops@acme.io", "type": "user"}}',
    ),
    (
        "doctl auth init",
        "doctl auth init --context staging   # paste the token when asked, it is not echoed",
    ),
    (
        "fly secrets list digest",
        "$ fly secrets list\nNAME           DIGEST            CREATED AT\nDATABASE_URL   a1f3c9e07b2d4e58  "
        "2024-03-12T10:41:07Z\n"
        "SENTRY_DSN     5e0b7c21d9f4a3b6  2024-03-12T10:41:07Z",
    ),
    (
        "wrangler.toml ids",
        'name = "edge-cache"\nmain = "src/index.ts"\naccount_id = "3f8a2c1d9e7b4a6c5d0e1f2a3b4c5d6e"\n\n'
        '[[kv_namespaces]]\nbinding = "CACHE"\nid = "a9c8e7d6f5b4a3c2d1e0f9a8b7c6d5e4"',
    ),
    (
        "vercel project json",
        '.vercel/project.json: {"projectId": "prj_7QzK2mN9pX4vB8cR1tY6uW3eA5sD", '
        '"orgId": "team_Jk3Lm9Np2Qr7St5Vw8Xy1Za4"}',
    ),
    (
        "netlify state site id",
        '.netlify/state.json: {"siteId": "4c1f8a2e-9b3d-4e7f-a6c5-0d2b1e8f7a93"}',
    ),
    (
        "scaleway access key only",
        "Scaleway's access key SCWXXXXXXXXXXXXXXXXX is the public half; the secret key is shown once at creation",
    ),
    (
        "oci fingerprint",
        "the API key's fingerprint in the console is 3f:9a:12:7c:44:0e:8b:91:d2:5f:6a:3b:c0:1e:77:af, "
        "key_file=~/.oci/oci_api_key.pem",
    ),
    (
        "aws sso config",
        "[profile acme-prod]\nsso_session = acme\nsso_account_id = 123456789012\nsso_role_name = AdministratorAccess\n"
        "region = eu-west-1",
    ),
    # --- CI systems ---
    (
        "actions secrets reference",
        "- name: Publish\n  run: npm publish\n  env:\n    NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}",
    ),
    (
        "actions add-mask",
        'echo "::add-mask::$DEPLOY_TOKEN"   # keeps the token out of the log',
    ),
    (
        "gitlab job token remote",
        "git clone https://gitlab-ci-token:${CI_JOB_TOKEN}@gitlab.acme.io/platform/shared-lib.git",
    ),
    (
        "circleci context",
        "workflows:\n  deploy:\n    jobs:\n      - deploy-prod:\n          context: aws-prod\n"
        "orbs:\n  aws-cli: circleci/aws-cli@4.1.3",
    ),
    (
        "buildkite secret get",
        "steps:\n  - command: export DEPLOY_KEY=$(buildkite-agent secret get DEPLOY_KEY) && ./deploy.sh",
    ),
    (
        "jenkins withCredentials",
        "withCredentials([usernamePassword(credentialsId: 'nexus-deploy', usernameVariable: 'NEXUS_USER', "
        "passwordVariable: 'NEXUS_PASS')]) { sh './gradlew publish' }",
    ),
    (
        "jenkins casc env reference",
        '              id: nexus-deploy\n              username: deployer\n              password: "${NEXUS_PASSWORD}"',
    ),
    (
        "runner token redacted",
        'token = "glrt-[MASKED]" in the runner config; re-register if it is lost',
    ),
    # --- package registries ---
    (
        "npmrc env token",
        "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n@acme:registry=https://npm.pkg.github.com",
    ),
    (
        "yarnrc env token",
        'npmScopes:\n  acme:\n    npmRegistryServer: "https://npm.pkg.github.com"\n    npmAuthToken: '
        '"${NPM_AUTH_TOKEN}"',
    ),
    (
        "pip.conf plain index",
        "[global]\nindex-url = https://pypi.corp.local/simple\ntrusted-host = pypi.corp.local\ntimeout = 60",
    ),
    (
        "nuget env password",
        '<add key="Username" value="build" />\n<add key="ClearTextPassword" value="%NUGET_FEED_PAT%" />',
    ),
    (
        "cargo credential provider",
        '[registries.acme]\nindex = "sparse+https://cargo.acme.dev/index/"\ncredential-provider = "cargo:token"',
    ),
    (
        "gem credentials permissions",
        "~/.gem/credentials must be chmod 0600 or gem push refuses it; create it with gem signin",
    ),
    (
        "composer config auth placeholder",
        "composer config --global --auth github-oauth.github.com <your-github-token>",
    ),
    (
        "poetry config token command",
        "poetry config pypi-token.pypi $PYPI_TOKEN   # the token itself lives in the CI vault",
    ),
    (
        "npm integrity",
        '"integrity": "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVG'
        'edAJv8XZ1tvj5FvSg=="',
    ),
    # --- mobile signing ---
    (
        "key.properties template",
        "android/key.properties (template in the wiki)\nstorePassword=<store password from 1Password>\n"
        "keyPassword=<key password>\nkeyAlias=upload\nstoreFile=<path to upload-keystore.jks>",
    ),
    (
        "gradle signing env",
        "storePassword System.getenv('ANDROID_STORE_PASSWORD')\nkeyPassword System.getenv('ANDROID_KEY_PASSWORD')",
    ),
    (
        "app store connect ids",
        "App Store Connect API key: Key ID 2X9R4HXF34, Issuer ID 57246542-96fe-1a63-e053-0824d011072a; "
        "the .p8 is in the release vault",
    ),
    (
        "firebase sa metadata",
        '"client_email": "firebase-adminsdk-x1y2z@acme-mobile-prod.iam.gserviceaccount.com", '
        '"client_id": "104857392017465839201", "private_key_id": "see the vault"',
    ),
    (
        "signing cert sha1",
        "upload certificate SHA-1: 5E:8F:16:06:2E:A3:CD:2C:4A:0D:54:78:76:BA:A6:F3:8C:AB:F6:25 (register it "
        "in Firebase)",
    ),
    (
        "notarytool keychain profile",
        "xcrun notarytool submit App.zip --keychain-profile AC_NOTARY --wait",
    ),
    (
        "app-specific password howto",
        "an app-specific password looks like xxxx-xxxx-xxxx-xxxx; make one at appleid.apple.com under "
        "Sign-In and Security",
    ),
    # --- webhooks and signatures ---
    (
        "github signature header",
        "X-Hub-Signature-256: sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17 "
        "(the delivery's HMAC of the body; our check compares it in constant time)",
    ),
    (
        "stripe signature header docs",
        "Stripe-Signature: t=1492774577,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd "
        "is the example in Stripe's docs",
    ),
    (
        "teams webhook redacted",
        "the Teams connector URL is https://acme.webhook.office.com/webhookb2/…/IncomingWebhook/<redacted>; "
        "the full one is in TEAMS_WEBHOOK_URL",
    ),
    (
        "webhook secret variable names",
        "required env: STRIPE_WEBHOOK_SECRET, GITHUB_WEBHOOK_SECRET, SLACK_SIGNING_SECRET (see .env.example)",
    ),
    # --- JWTs, TOTP ---
    (
        "jwks kid",
        "the JWKS at https://acme.eu.auth0.com/.well-known/jwks.json rotated; the new kid is "
        "'NjVBRjY5MDlCMUIwNzU4RTA2QzZFMDQ4QzQ2MDAyQjVDNjk1RTM2Qg'",
    ),
    (
        "public jwk",
        '{"kty": "EC", "crv": "P-256", "kid": "sig-2024-11", "use": "sig", '
        '"x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}',
    ),
    (
        "otpauth placeholder",
        "the QR code encodes otpauth://totp/Acme:alice@acme.io?secret=<SECRET>&issuer=Acme&digits=6&period=30",
    ),
    (
        "totp parameters",
        "our TOTP: SHA1, 6 digits, 30 s period, ±1 step of clock drift allowed",
    ),
    # --- public keys and fingerprints ---
    (
        "ssh2 public key",
        '---- BEGIN SSH2 PUBLIC KEY ----\nComment: "ed25519-key-20240312"\n'
        "AAAAC3NzaC1lZDI1NTE5AAAAIHlQHhX9o7tqz3cV2k9Yb8mP1wR4sT6uN0aE5dF2gJ7h\n---- END SSH2 PUBLIC KEY ----",
    ),
    (
        "age recipient",
        "SOPS encrypts for the recipient age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p "
        "(the team's public key)",
    ),
    (
        "minisign public key",
        "verify releases with: minisign -Vm app.tar.gz -P RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3",
    ),
    (
        "gpg fingerprint",
        "release tags are signed by 3AA5 C343 7156 7BD2 ... full fingerprint 7A3B9C2D1E0F4A5B6C7D8E9F3AA5C34371567BD2",
    ),
    (
        "nostr npub",
        "follow the bot at npub1sg6plzptd64u62a878hep2kev88swjh3tw00gjsfl8f237lmu63q0uf63m",
    ),
    (
        "ethereum address",
        "send testnet ETH to the faucet at 0x742d35Cc6634C0532925a3b844Bc454e4438f44e",
    ),
    (
        "solana pubkey",
        "the program id is 4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T (devnet)",
    ),
    # --- cluster config ---
    (
        "kubeconfig exec",
        "users:\n- name: eks-prod\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
        "      command: aws\n      args: [eks, get-token, --cluster-name, prod]",
    ),
    (
        "kubeconfig ca data",
        "clusters:\n- cluster:\n    certificate-authority-data: "
        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWTVJNd0VRWURWUVFERXdwcmRXSmwKY201bGRHVnpNQjRYRFRJME1ETXhNakV3TkRFd04xb1hEVE0wTURNeE1ERXdOREV3TjFvd0ZURVRNQkVHQTFVRQpBeE1LYTNWaVpYSnVaWFJsY3pDQ0FTSXdEUVlKS29aSWh2Y05BUUVCQlFBRGdnRVBBRENDQVFvQ2dnRUJBTUFzCg==\n"
        "    server: https://10.0.0.10:6443\n  name: prod",
    ),
    (
        "kubeadm join placeholder",
        "kubeadm join 10.0.0.10:6443 --token <token> --discovery-token-ca-cert-hash "
        "sha256:8cb2de97839780a412b93877f8507ad6c94f73add17d5d7058e91741c9d5ec78",
    ),
    (
        "vault status",
        "Seal Type: shamir, Initialized: true, Sealed: false, Total Shares: 5, Threshold: 3, Version: 1.15.6",
    ),
    (
        "consul token accessor",
        "AccessorID: 6a1253d2-1785-24fd-91c2-f8e78c745511 (the accessor, not the SecretID) is policy global-management",
    ),
    # --- terraform ---
    (
        "terraform state show sensitive",
        '$ terraform state show aws_db_instance.main\n  engine   = "postgres"\n  username = "dbadmin"\n'
        "  password = (sensitive value)\n  port     = 5432",
    ),
    (
        "tfstate header",
        '{"version": 4, "terraform_version": "1.7.5", "serial": 42, "lineage": "0f3d8a2b-6c1e-4b9f-a7d5-3e2c1b0a9f8e", '
        '"outputs": {}}',
    ),
    (
        "terraform output sensitive",
        '$ terraform output\ngrafana_admin_password = <sensitive>\ngrafana_url = "https://grafana.acme.io"',
    ),
    # --- stack traces ---
    (
        "keyerror env name",
        'Traceback (most recent call last):\n  File "/app/settings.py", line 41, in <module>\n'
        "    STRIPE_SECRET_KEY = os.environ[\"STRIPE_SECRET_KEY\"]\nKeyError: 'STRIPE_SECRET_KEY'",
    ),
    (
        "password auth failed",
        'psycopg2.OperationalError: connection to server at "db.internal" (10.0.3.7), port 5432 failed: '
        'FATAL:  password authentication failed for user "app_rw"',
    ),
    (
        "django masked settings",
        "DATABASES = {'default': {'ENGINE': 'django.db.backends.postgresql', 'NAME': 'shop', "
        "'PASSWORD': '********************', 'USER': 'shop'}}",
    ),
    # --- curl and clients ---
    (
        "curl env bearer",
        'curl -H "Authorization: Bearer $API_TOKEN" https://api.acme.io/v2/reports/daily',
    ),
    (
        "curl oauth2-bearer subshell",
        'curl --oauth2-bearer "$(gcloud auth print-access-token)" https://storage.googleapis.com/storage/v1/'
        "b/acme-logs/o",
    ),
    (
        "ci test db url",
        "services:\n  postgres:\n    image: postgres:16\n    env:\n      POSTGRES_PASSWORD: postgres\n"
        "DATABASE_URL: postgresql://postgres:postgres@localhost:5432/app_test",
    ),
    (
        "doc example url",
        "the docs' example: mongodb://username:password@example.com:27017/mydb?authSource=admin",
    ),
    # --- ids, hashes, redactions ---
    (
        "commit and request ids",
        "deploy 9f2c1e7b4a fixed the 502s; request id 7f3e2b1a-4c5d-4e6f-8a9b-0c1d2e3f4a5b shows the last failure",
    ),
    (
        "image digest",
        "pin the image: ghcr.io/acme/api@sha256:3b5f9c2e1a7d4b6c8e0f2a4b6c8d0e1f3a5b7c9d1e3f5a7b9c1d3e5f7a9b1c3d",
    ),
    (
        "redacted key list",
        "rotated today: AWS key AKIA************WXYZ, Databricks dapi********************3f9c, "
        'Snowflake password "[REDACTED]"',
    ),
    # --- prose about passwords in other languages ---
    (
        "romanian policy",
        "parola trebuie să aibă cel puțin 12 caractere și o cifră",
    ),
    (
        "norwegian vault",
        "passordet til NAS-en ligger i Bitwarden under samlingen «Drift»",
    ),
    (
        "catalan reset",
        "la contrasenya es canvia cada 90 dies des del portal intern",
    ),
    (
        "japanese where",
        "本番DBのパスワードは1Passwordの「本番DB」アイテムにあります。",
    ),
    (
        "ukrainian where",
        "пароль від адмінки зберігається у Vault за шляхом secret/admin",
    ),
    (
        "swahili policy",
        "nenosiri linapaswa kuwa na herufi 12 au zaidi",
    ),
]


HELD_OUT_18: list[Form] = [(f"s18 {name}", fixed(text)) for name, text in SECRET_TEXTS]
HELD_OUT_18_KEEP: list[Form] = [(f"k18 keep {name}", fixed(text)) for name, text in KEEP_TEXTS]

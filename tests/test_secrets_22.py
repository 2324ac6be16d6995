"""The twenty-second held-out secret set (bench/secret_forms_22.py, secrets26): every form refused, every keeper kept,
what its first run stored and refused wrongly, each with the rule that reads it now, and their neighbours; and the
new rules' cost, measured by scaling the text, not by a bound on time.
(Values assembled at run time where a vendor's prefix is in them: no literal token in this file.)"""

import random

import pytest

from bench import secret_forms_22
from bench.secret_forms import ALNUM, HEX, chars
from memories.secrets import find_secret
from memories.secrets.views import _scan_views
from tests.scan_cost import cpu_to_scan_repeated

R = random.Random(2226)
URLSAFE = ALNUM + "-_"


@pytest.mark.parametrize("text", [text for _, text in secret_forms_22.SECRET_TEXTS])
def test_every_form_of_the_twenty_second_held_out_set_is_found(text: str) -> None:
    assert find_secret(text), text


@pytest.mark.parametrize("text", [text for _, text in secret_forms_22.KEEP_TEXTS])
def test_the_twenty_second_held_out_sets_keepers_are_kept(text: str) -> None:
    assert find_secret(text) is None, text


def _guid() -> str:
    h = chars(HEX, 32)(R)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


# What set twenty-two's first run stored (4 of 287), and what 40 other fillings stored (1 of 11,480), in other
# fillings, each with the rule that reads it now.
TWENTY_SECOND_SET_CAUSES = {
    "a vendor SDK's client given its key": (
        "messagebird.initClient('" + chars(ALNUM, 25)(R) + "')",
        "client-key-argument",
    ),
    "a client's constructor with an id before the key": (
        'client = pusher.Client("app", "' + chars(HEX, 20)(R) + '", "' + chars(ALNUM, 20)(R) + '")',
        "client-key-argument",
    ),
    "a quoted key a comment names": (
        "algoliasearch('" + chars(ALNUM.upper(), 10)(R) + "', '" + chars(HEX, 32)(R) + "')  // admin API key",
        "key-argument-commented",
    ),
    "Codecov's token after -t": ("codecov upload-process -t " + _guid(), "token-short-option"),
    "a Flask session cookie without Cookie:": (
        "session=" + chars(URLSAFE, 52)(R) + "." + chars(URLSAFE, 6)(R) + "." + chars(URLSAFE, 27)(R),
        "session-cookie-signed",
    ),
    "a Rails session cookie without Cookie:": (
        "_shop_session=" + chars(ALNUM, 60)(R) + "--" + chars(HEX, 40)(R),
        "session-cookie-signed",
    ),
    "a generated password starting with a digit and *": (
        "<password>9*" + chars(ALNUM, 6)(R) + "@" + chars(ALNUM, 7)(R) + "</password>",
        "xml-secret-element",
    ),
    # (and two left-overs of sets 14 and 17 in other fillings, reported since set 21)
    "a password starting with - after net use's user": (
        "net use Z: \\\\fs01\\share /user:CORP\\svc_backup -" + chars("0123456789", 1)(R) + chars(ALNUM, 13)(R),
        "client-password-option",
    ),
    "a WordPress salt starting with < and holding >@": (
        "define( 'AUTH_KEY', '<:" + chars(ALNUM, 20)(R) + "@>@cQ/0EN;;" + chars(ALNUM, 20)(R) + "!V;rN>C)' );",
        "quoted-name-value",
    ),
}


@pytest.mark.parametrize("name", TWENTY_SECOND_SET_CAUSES)
def test_each_cause_of_the_twenty_second_sets_stored_secrets_is_refused_by_its_rule(name: str) -> None:
    text, rule = TWENTY_SECOND_SET_CAUSES[name]
    assert rule in {finding.rule for finding, _, _ in _scan_views(text)}, name


@pytest.mark.parametrize(
    "text",
    [
        # what set twenty-two's first run refused among its keepers (1 of 70), and other stores' references
        "password: vault:secret/data/prod/db#password",
        "api_key: vault:kv/data/stripe#api_key",
        "password: op://Private/db/password",
        "DB_PASSWORD=ref+vault://secret/db#/password",
        "db_password: ssm:/prod/db/password",
        "password: ref+awssecrets://prod/db",
        # the new rules' neighbours that are no secret
        "session=anon",
        "session=abc123.def456",
        "SESSION_ENGINE=django.contrib.sessions.backends.signed_cookies",
        "see session=request.session.get_token and sid=module.attr.value",
        "az login --service-principal -t " + _guid(),
        "tmux attach -t " + _guid(),
        "docker build -t api:1.4.2 .",
        'db.collection("users").doc("oLR4uRCxpR74IhWG5RnH")',
        'const id = "oLR4uRCxpR74IhWG5RnH"; // the key of the row',
        'client = httpx.Client("https://api.acme.io")',
        'redis_client = redis.Client("redis_cache_primary_node")',
        't.init("feature_flags_bootstrap")  # token bucket size',
        'x = "abcdefghijklmnopqrstuvwxyz"  # the secret alphabet',
        "net use Z: \\\\fs01\\share /user:CORP\\svc_backup /persistent:yes",
        "net use Z: \\\\fs01\\share /user:CORP\\svc_backup -persistent",
        "DATABASE_URL=postgres://${DB_USER}:${DB_PASSWORD}@db:5432/app",
        "remote: gitlab-ci-token:${CI_JOB_TOKEN}@gitlab.acme.io/acme/api.git",
        "password: <password>@db.internal:5432/app?sslmode=require",
        # (an outside probe after the set: analytics cookies in a pasted Cookie header)
        "Cookie: _ga=GA1.2.1234567890.1700000000; _gid=GA1.2.987654321.1700000000",
        "size = 3*width",
        "timeout = batchSize*2",
    ],
)
def test_the_twenty_second_sets_near_misses_are_kept(text: str) -> None:
    assert find_secret(text) is None, text


@pytest.mark.parametrize(
    "text",
    [
        # the same places with a secret in them stay refused
        "password: vault:Xk9mP2qLw7Rz",
        "password: vault:xIftrk/GbqXba",
        "pw: op:Tr0ub4dor/x9Kq2",
        "storePassword=7*Kq2mXw9Lp",
        'sdk.init("' + chars(ALNUM, 22)(R) + '")',
        'hmac = "' + chars(ALNUM, 22)(R) + '"  // signing secret',
        "az login\ncodecov -t " + _guid(),
        "Cookie: _ga=GA1.2.1234567890.1700000000; sessionid=" + chars(ALNUM.lower(), 32)(R),
        "Cookie: token=" + chars(ALNUM, 24)(R),
    ],
)
def test_the_twenty_second_sets_keepers_neighbours_with_a_secret_are_refused(text: str) -> None:
    assert find_secret(text), text


@pytest.mark.parametrize(
    "unit",
    [
        "session=" + "a1" * 10 + ".",  # the signed session value's dotted parts
        "sid=",  # a session's name inside Rails' base64 run (`=`, `+`, `/`, `%`): read again from each was quadratic
        "sid=a/",
        "x.Client('",  # a client's call, its quoted arguments
        "'" + "a1B" * 8 + "' ",  # quoted values before a comment
        "'" + "a1B" * 8 + "' # ",  # a comment after each
        "vault:a/",  # a store's reference's segments
        "-t ",  # the short option
        "9*",  # a factor's `*`
    ],
)
def test_the_twenty_second_sets_rules_cost_work_in_proportion_to_the_text(unit: str) -> None:
    """Eight times the text costs about eight times the CPU when linear, sixty-four times when quadratic."""
    small, large = cpu_to_scan_repeated(unit)
    assert large < 24 * max(small, 1e-4), (unit, small, large)

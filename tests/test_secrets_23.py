"""The twenty-third held-out secret set (bench/secret_forms_23.py, secrets28): every form refused but the one left,
every keeper kept; what its first run stored and refused wrongly, each with the rule that reads it now, and their
neighbours; and the new rule's cost, measured by scaling the text, not by a bound on time.
(Values assembled at run time where a vendor's prefix is in them: no literal token in this file.)"""

import random

import pytest

from bench import secret_forms_23
from bench.secret_forms import ALNUM, chars
from memories.secrets import find_secret
from memories.secrets.views import _scan_views
from tests.scan_cost import cpu_to_scan_repeated

R = random.Random(2328)
LOWER_DIGITS = "abcdefghijklmnopqrstuvwxyz0123456789"
SYMBOLS = ALNUM + "!#%*^"

# Left: `mongodb://root:example123@mongo…` (hand-typed). `example…` is a template's word to the scanner, as
# `changeme123` is (set 10 keeps `DB_PASSWORD=changeme123`), and the mongo image's own docs set the password `example`:
# refusing it would refuse the documented sample too. Reported in docs/benchmarks.md.
LEFT = {"hand typed dsn"}


@pytest.mark.parametrize("text", [text for name, text in secret_forms_23.SECRET_TEXTS if name not in LEFT])
def test_every_form_of_the_twenty_third_held_out_set_is_found(text: str) -> None:
    assert find_secret(text), text


@pytest.mark.parametrize("text", [text for _, text in secret_forms_23.KEEP_TEXTS])
def test_the_twenty_third_held_out_sets_keepers_are_kept(text: str) -> None:
    assert find_secret(text) is None, text


# What set twenty-three's first run stored (2 of 196, one of them left) and what 40 other fillings stored (17 of 40
# fillings of one form), in other fillings, each with the rule that reads it now.
TWENTY_THIRD_SET_CAUSES = {
    "a CI log echoing a token's variable, the value on the next line": (
        "[deploy] $ echo $DEPLOY_TOKEN\n[deploy] " + chars(LOWER_DIGITS, 40)(R) + "\n[deploy] $ ./release.sh",
        "echoed-secret-variable",
    ),
    "a terminal's printenv of a password": (
        "$ printenv DB_PASSWORD\n" + chars(SYMBOLS, 18)(R) + "\n$ ",
        "echoed-secret-variable",
    ),
    "a password after `user X / pass`, letters and symbols only": (
        "creds for the test tenant: user ops / pass LYfoHYSxYSzD^iYB",
        "password-named",
    ),
    "a password after `user: X | pass`": ("user: ops | pass " + chars(SYMBOLS, 16)(R), "password-named"),
    # (a probe after the set: a chat's question, the answer a value alone on the next turn)
    "a password asked, the answer's turn a value alone": (
        "Q: root password for bastion?\nA: BGYgmjDs!MP3Hq",
        "secret-asked-then-answered",
    ),
    "a Wi-Fi pw asked in bracketed turns": (
        "[user] whats the wifi pw\n[assistant] XQAhDRxo#YfAAm",
        "secret-asked-then-answered",
    ),
}


@pytest.mark.parametrize("name", TWENTY_THIRD_SET_CAUSES)
def test_each_cause_of_the_twenty_third_sets_stored_secrets_is_refused_by_its_rule(name: str) -> None:
    text, rule = TWENTY_THIRD_SET_CAUSES[name]
    assert rule in {finding.rule for finding, _, _ in _scan_views(text)}, name


@pytest.mark.parametrize(
    "text",
    [
        # what set twenty-three's first run refused among its keepers (2 of 70)
        "Cookie: cookieconsent_status=dismiss; theme=dark; lang=en",
        'password: "changeme"  # overridden by the chart in every real environment',
        # their neighbours that are no secret
        "Cookie: cookie_banner_state=accepted; visits=12",
        'admin_password = "placeholder"',
        "[deploy] $ echo $DEPLOY_TOKEN\n[deploy] ***\n",
        "echo $API_KEY_URL\nhttps://api.acme.io/v1\n",
        "echo $TOKEN_COUNT\n1234567890123\n",
        "tests: 3 fail / pass rate is low",
        "A/B: variant a / pass through to the old handler",
        "Q: root password for bastion?\nA: we use SSH keys only, no password",
        "User: what's the token limit?\nAssistant: 128000",
        "Q: which secret manager?\nA: Vault",
        "[user] the api key rotation doc?\n[assistant] docs/security/rotation.md",
    ],
)
def test_the_twenty_third_sets_near_misses_are_kept(text: str) -> None:
    assert find_secret(text) is None, text


@pytest.mark.parametrize(
    "text",
    [
        # the same places with a secret in them stay refused
        "Cookie: cookieconsent_status=dismiss; sessionid=" + chars(LOWER_DIGITS, 32)(R),
        'password: "password123"',
        'password = "' + chars("abcdefghijklmnopqrstuvwxyz", 14)(R) + '"',
    ],
)
def test_the_twenty_third_sets_keepers_neighbours_with_a_secret_are_refused(text: str) -> None:
    assert find_secret(text), text


@pytest.mark.parametrize(
    "unit",
    [
        *(
            "echo $DB_PASSWORD\n",
            "echo $TOKEN_TOKEN_TOKEN_",
            "printenv key\n[x] ",
            "echo " + "a_key" * 20,
            "user / pass ",
        ),
        *("password?\nA: x\n", "token\n[assistant] ", "pw pw pw pw ", "secret\n<"),
    ],
)
def test_the_twenty_third_sets_rules_cost_work_in_proportion_to_the_text(unit: str) -> None:
    """Eight times the text costs about eight times the CPU when linear, sixty-four times when quadratic."""
    small, large = cpu_to_scan_repeated(unit)
    assert large < 24 * max(small, 1e-4), (unit, small, large)

"""Hand-typed fake secrets (bench/secret_forms_fake.py, secrets27): an outside tester's `ghp_abcdef…`,
`AKIA1234567890ABCDEF`, `password: password123`. A value in a vendor's token format, or a plain value given to a
secret's name in config (`DB_PASSWORD=supersecret`, `password: letmein`), is a secret however plain, unless it is an
obvious placeholder, a type or a reference in code; every keeper (placeholders, code references, advice, hashes) is
kept. The new patterns' cost is measured by scaling the text, not by a bound on time."""

import pytest

from bench import secret_forms_fake
from memories.secrets import find_secret
from tests.scan_cost import cpu_to_scan_repeated


@pytest.mark.parametrize("text", [text for _, text in secret_forms_fake.VENDOR_TEXTS])
def test_a_vendor_format_with_a_hand_typed_body_is_a_secret(text: str) -> None:
    assert find_secret(text), text


@pytest.mark.parametrize("text", [text for _, text in secret_forms_fake.NAMED_TEXTS])
def test_a_plain_value_given_to_a_secrets_name_in_config_is_a_secret(text: str) -> None:
    assert find_secret(text), text


@pytest.mark.parametrize("text", [text for _, text in secret_forms_fake.TOLD_TEXTS])
def test_a_weak_password_or_a_self_named_token_told_in_a_sentence_is_a_secret(text: str) -> None:
    assert find_secret(text), text


@pytest.mark.parametrize(
    "text", ["the token is expired", "my api key is revoked", "the secret is out", "the key is monkey", "my key is F5"]
)
def test_a_state_or_a_plain_word_told_after_a_tokens_name_is_kept(text: str) -> None:
    assert find_secret(text) is None, text


@pytest.mark.parametrize(
    "text",
    [
        "password: str",
        "  token: expired",
        "PASSWORD=${DB_PASSWORD}",
        "api_key = settings.OPENAI_KEY",
        "run(api_key=api_key, token=token)",
        "password = current_password",
        "SECRET_KEY=<generate one>",
        "JWT_SECRET=xxxxxxxx",
        '"password": "${DB_PASSWORD}"',
        "POSTGRES_PASSWORD: postgres",
        "max_tokens: 4096",
        "bypass: true",
    ],
)
def test_a_placeholder_type_or_reference_given_to_a_secrets_name_is_kept(text: str) -> None:
    assert find_secret(text) is None, text


@pytest.mark.parametrize("text", [text for _, text in secret_forms_fake.KEEP_TEXTS])
def test_the_fake_sets_keepers_are_kept(text: str) -> None:
    assert find_secret(text) is None, text


@pytest.mark.parametrize(
    "text",
    [
        "ghp_" + "x" * 36,
        "GITHUB_TOKEN=ghp_" + "0" * 36,
        "AKIA" + "0" * 16,
        "AKIAIOSFODNN7EXAMPLE",
        "HF_TOKEN=hf_" + "REDACTED" + "x" * 26,
        "npm_" + "<token>",
        "sk-ant-api03-" + "..." + "abc",
    ],
)
def test_a_vendor_formats_obvious_placeholder_is_kept(text: str) -> None:
    assert find_secret(text) is None, text


@pytest.mark.parametrize(
    "unit",
    [
        "AKIA",
        "AKIA1 ",
        "a" * 7 + "b",
        "ghp_" + "a" * 7,
        "${{<...",
        "x-EXAMPLE ",
        "a_" * 4 + "password=",
        "PASSWORD=a\n",
        "password: ",
        "'password':'",
        "a_b_c_d_e_",
    ],
)
def test_the_fake_policys_patterns_cost_work_in_proportion_to_the_text(unit: str) -> None:
    """Eight times the text costs about eight times the CPU when linear, sixty-four times when quadratic."""
    small, large = cpu_to_scan_repeated(unit)
    assert large < 24 * max(small, 1e-4), (unit, small, large)


@pytest.mark.parametrize(
    "text",
    [
        "DATABASE_URL=postgres://admin:password123@db.internal:5432/app",
        "postgres://app:hunter2@db:5432/orders",
        "redis://:password123@cache:6379/0",
        "docker login -u admin -p admin123 registry.acme.io",
        "sshpass -p admin123 ssh root@10.0.0.4",
        "mysql -u root -pfoobar123 mydb",
        "mysql -u root -pXy7#kq2 orders",
        "mysqldump -u backup -pS3cret shop > shop.sql",
    ],
)
def test_a_weak_or_short_password_where_only_a_password_stands_is_a_secret(text: str) -> None:
    """A URL's `user:X@`, a client's `-p X`, mysql's glued `-pX`: the lead's probe after set "fake" (all stored)."""
    assert find_secret(text), text


@pytest.mark.parametrize(
    "text",
    [
        "postgres://user:password@localhost/db",
        "postgres://app:changeme@db:5432/x",
        "mysql -u root -p mydb",
        "mysql -uroot -p$MYSQL_PWD",
        "mysql -h db -P3306 -uroot -p",
        'mysql -u root -p"${DB_PASS}" app',
        "mysql -u root -p<password>",
        "mysql -u root -ppassword",
        "use mysql -p to be prompted for the password",
    ],
)
def test_a_placeholder_or_a_prompt_where_a_password_stands_is_kept(text: str) -> None:
    assert find_secret(text) is None, text


@pytest.mark.parametrize(
    "text",
    ["ssh into bastion with password Welcome123", "the default password admin123", "login as deploy, password qwerty1"],
)
def test_a_famous_weak_password_right_after_a_passwords_name_is_a_secret(text: str) -> None:
    assert find_secret(text), text


@pytest.mark.parametrize(
    "text",
    ["pass 12345 as the seed", "the password policy requires 12 characters", "Password123 is banned by the policy"],
)
def test_a_passwords_name_before_an_ordinary_word_is_kept(text: str) -> None:
    assert find_secret(text) is None, text


@pytest.mark.parametrize("text", ["credentials are admin:admin123", "sign in as ops/Welcome1"])
def test_a_login_pair_told_with_a_weak_or_random_password_is_a_secret(text: str) -> None:
    assert find_secret(text), text


@pytest.mark.parametrize(
    "text",
    ["sign in with google/oauth", "login flow lives in auth/login", "credentials are in 1Password/Engineering"],
)
def test_a_login_followed_by_a_path_is_kept(text: str) -> None:
    assert find_secret(text) is None, text

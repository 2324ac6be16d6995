"""The secret scanner itself (memories/write/secrets.py): the forms the issue-33 probes stored, the tuning
set of bench/secret_forms.py, hiding tricks, memories about secrets, and redaction.
Every path calling this one function is tested in tests/test_secret_paths.py."""

import json
import random
from pathlib import Path
from typing import Any

import pytest

from bench import secret_forms
from bench.secret_forms import ALNUM, HEX, URLSAFE, b64, b64_of, chars, cyrillic, full_width, zero_width
from memories.write.secrets import find_secret, gitleaks, redact

DATA = Path(__file__).resolve().parents[1] / "bench" / "data"
R = random.Random(33)
GH = "ghp_" + chars(ALNUM, 36)(R)

# What the probes stored (values assembled at run time: no literal token in this file).
PROBED = {
    "pypi": "pypi-AgEIcHlwaS5vcmc" + chars(URLSAFE, 120)(R),
    "sendgrid": f"SG.{chars(URLSAFE, 22)(R)}.{chars(URLSAFE, 43)(R)}",
    "twilio": "SK" + chars(HEX, 32)(R),
    "hugging face": "hf_" + chars("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 34)(R),
    "signing key hex": "JWT_SIGNING_KEY=" + chars(HEX, 64)(R),
    "basic auth header": "Authorization: Basic " + b64("deploy:Xk9#mP2vL8qR"),
    "bare aws secret": "the backup key is " + b64_of(30)(R),
    "pem body": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ"
    + chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 128)(R),
    "slack xapp": f"xapp-1-A{chars('ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', 10)(R)}-1234567890123-{chars(HEX, 64)(R)}",
    "npm": "npm_" + chars(ALNUM, 36)(R),
    "DB_PASS line": "DB_PASS=Zq8#kP2!mw4",
    "ENCRYPTION_KEY line": "ENCRYPTION_KEY=" + b64_of(32)(R),
    "db url with / in password": "postgres://app:pa9/ss7Wd@db.internal:5432/app",
    "bearer header": "Authorization: Bearer " + chars(URLSAFE, 40)(R),
    "split over two lines": f"token: {GH[:20]}\n{GH[20:]}",
    "zero-width": zero_width(GH),
    "full-width": full_width(GH),
    "cyrillic": cyrillic("ghp_") + GH[4:],
    "base64 of a token": "encoded " + b64(GH),
}


@pytest.mark.parametrize("name", PROBED)
def test_each_form_the_probe_stored_is_now_found(name: str) -> None:
    assert find_secret(PROBED[name]) is not None


@pytest.mark.parametrize(("name", "text"), secret_forms.texts(secret_forms.TUNE, seed=7))
def test_every_form_of_the_tuning_set_is_found(name: str, text: str) -> None:
    assert find_secret(text) is not None, name


# A password told in a sentence, as a new user typed one (stored, then in every session's primer and
# in the team log); and sentences about passwords that carry none.
PASSWORD_PROSE = [
    "the admin password is 'Sup3rS3cret!2024' for the staging box",
    "the staging password is Sup3rS3cret!2024",
    "The wifi password was changed to Gr33nT34-Pot!",
    "The password for the db is now kX9#mQ2vL7",
    "root passwords were reset to Zq8!vB2nW4",
    "machine github.com login deploybot password Gh7!kQ2mZ9xW",
    "office wifi: SSID AcmeGuest, password Welcome2Acme!",
    "ssh deploy@10.0.0.5 with password Zq8!vB2nW4",
]
# A client's short option with the password glued on or next to it.
PASSWORD_OPTIONS = [
    "connect with mysql -u root -pKx9vQ7mZ3pL shop",
    "docker login -u acme -p Kx9vQ7mZ3pL registry.acme.io",
]
PASSWORD_TALK = [
    "the password is hashed with argon2id",
    "The password policy is NIST-800-63b compliant",
    "password hashing uses PBKDF2-SHA256 with 600k iterations",
    "The password is stored in Vault at secret/app/db",
    "the password is in 1Password under Staging DB",
    "The Redis password is set in REDIS_PASSWORD",
    "the default password is changeme",
    "the password is ${DB_PASSWORD}",
    "Use the password manager for shared logins",
    "password protected zip files are rejected by the uploader",
    "run mysql -u root -p shop and type the password",
    'docker login -p "$(cat token.txt)" registry',
]


@pytest.mark.parametrize("text", PASSWORD_PROSE)
def test_a_password_told_in_a_sentence_is_found_and_cut_out(text: str) -> None:
    assert find_secret(text) == "a password"
    assert redact(text).split() != text.split() and "REDACTED" in redact(text)


@pytest.mark.parametrize("text", PASSWORD_OPTIONS)
def test_a_password_given_to_a_short_option_is_found(text: str) -> None:
    assert find_secret(text) == "a password on a command line"


@pytest.mark.parametrize("text", PASSWORD_TALK)
def test_a_sentence_about_passwords_without_one_is_kept(text: str) -> None:
    assert find_secret(text) is None


def test_the_kind_names_the_rule_and_never_the_secret() -> None:
    kind = find_secret(f"push with {GH}")
    assert kind == "a credential (github-pat)"
    assert GH not in kind


MEMORIES_ABOUT_SECRETS = json.loads((DATA / "secret_talk.json").read_text())["memories"]


@pytest.mark.parametrize("text", MEMORIES_ABOUT_SECRETS)
def test_memories_about_secrets_are_not_secrets(text: str) -> None:
    assert find_secret(text) is None


def test_the_codebase_set_is_never_refused() -> None:
    code = json.loads((DATA / "codebase_dev.json").read_text())
    texts = [m["content"] for m in code["memories"]] + [q["q"] for q in code["questions"]]
    assert [t for t in texts if find_secret(t)] == []


def test_all_of_gitleaks_rules_load() -> None:
    rules, _ = gitleaks()
    assert len(rules) >= 200 and {"github-pat", "generic-api-key", "sendgrid-api-token"} <= {r.id for r in rules}


def test_redaction_removes_the_secret_and_keeps_the_prose() -> None:
    text = f"use {GH} to push, and DB_PASSWORD=Xk9mP2vL8qR4tZ77 for the db"
    out = redact(text)
    assert GH not in out and "Xk9mP2vL8qR4tZ77" not in out
    assert out.startswith("use [REDACTED") and "to push" in out and "for the db" in out


def test_redaction_cuts_a_hidden_secret_out_of_the_original_text() -> None:
    hidden = zero_width(GH)
    out = redact(f"before {hidden} after, and encoded {b64(GH)} too")
    assert hidden not in out and b64(GH) not in out and GH[6:20] not in out
    assert out.startswith("before [REDACTED") and "after, and encoded [REDACTED" in out and out.endswith(" too")


def test_a_text_scanned_again_reuses_its_verdict_and_the_cache_keeps_no_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """An import checks each row and the write path checks it again: the second check is a lookup.
    The cache is keyed by a digest, so no secret it has seen stays in it."""
    from memories.write import secrets

    scans: list[str] = []
    real = secrets._scan_views

    def counted(text: str, depth: int = 0) -> Any:
        scans.append(text)
        return real(text, depth)

    monkeypatch.setattr(secrets, "_scan_views", counted)
    text = f"the deploy token is {GH}, rotate it monthly ({R.random()})"
    assert find_secret(text) == find_secret(text) == "a credential (github-pat)"
    assert scans == [text]
    assert all(isinstance(k, bytes) and len(k) == 16 for k in secrets._VERDICTS)
    assert GH not in repr(secrets._VERDICTS)

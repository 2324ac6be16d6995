import pytest

from memories.secrets import find_secret, redact

# Assembled at run time so this file itself never holds a literal token.
GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SECRETS = [
    ("AKIA" + "IOSFODNN7EXAMPLE", "AWS access key"),
    ("aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS secret"),
    ("AIza" + "SyA-1234567890abcdefghijklmnopqrstu", "Google Cloud API key"),
    ('{"type": "service_account", "project_id": "x"}', "service-account"),
    ("DefaultEndpointsProtocol=https;AccountKey=" + "a" * 20 + "B" * 20 + "==", "Azure storage key"),
    (f"token {GH}", "GitHub token"),
    ("glpat-" + "abcdefghij1234567890", "GitLab token"),
    ("xoxb-" + "123456789012-abcdefghij", "Slack token"),
    ("sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "Stripe key"),
    ("sk-ant-" + "api03-abcdefghijklmnopqrstuvwx", "Anthropic API key"),
    ("sk-proj-" + "abcdefghijklmnopqrstuvwxyz123456", "OpenAI API key"),
    ("pa-" + "abcdefghijklmnopqrstuvwxyz1234567890", "Voyage API key"),
    (
        "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "JSON Web Token",
    ),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA", "PEM private key"),
    ("postgres://admin:hunter2secret@db.example.com/app", "password in a URL"),
    ("DATABASE_PASSWORD=Xk9#mP2$vL8qR4tZ", "secret assignment"),
    ("export API_KEY='9f8e7d6c5b4a39281706f5e4d3c2b1a0'", "secret assignment"),
]

NEAR_MISSES = [
    "Memory ids are UUIDs like 3b52929f-ade0-4451-bf87-696ba63dfee1.",
    "The fix landed in commit 4f1c2a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39.",
    "We pass the token through the Authorization header, never in URLs.",
    "Set API_KEY=${OPENAI_API_KEY} in the shell, not in the repo.",
    "PASSWORD=changeme is only the docker-compose default for local dev.",
    "Use https://github.com/acme/app for issues; ssh://git@host:2222/o/r for the mirror.",
    "The sk- prefix marks OpenAI keys; ours live in the vault.",
    "TOKEN_TTL=3600 controls how long sessions last.",
]


@pytest.mark.parametrize(("text", "kind"), SECRETS)
def test_each_kind_of_secret_is_found_and_named(text: str, kind: str) -> None:
    found = find_secret(text)
    assert found is not None and kind.lower() in found.lower()


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_pass(text: str) -> None:
    assert find_secret(text) is None


def test_redaction_removes_the_secret_and_keeps_the_prose() -> None:
    text = f"use {GH} to push, and DB_PASSWORD=Xk9mP2vL8qR4tZ77 for the db"
    out = redact(text)
    assert GH not in out and "Xk9mP2vL8qR4tZ77" not in out
    assert out.startswith("use [REDACTED") and "to push" in out

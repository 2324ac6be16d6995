"""Secret scanning for everything that could end up in a committed event file.

`find_secret()` names the kind of secret found (never the secret itself);
`redact()` replaces secrets in text (used on conversation messages before they
are stored or sent to a reasoner).
"""

from __future__ import annotations

import math
import re
from collections import Counter

PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("a PEM private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    ("an AWS secret access key", re.compile(r"(?i)aws_?secret_?access_?key\s*[:=]\s*['\"]?[A-Za-z0-9/+=]{40}\b")),
    ("a Google Cloud API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("a Google Cloud service-account key", re.compile(r'"type"\s*:\s*"service_account"')),
    ("an Azure storage key", re.compile(r"(?i)AccountKey=[A-Za-z0-9+/=]{40,}")),
    ("an Azure client secret", re.compile(r"\b[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34}\b")),
    ("a GitHub token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{60,}\b")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    (
        "a Slack webhook URL",
        re.compile(r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"),
    ),
    ("a Stripe key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}\b")),
    ("an Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}\b")),
    ("an OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}\b")),
    ("a Voyage API key", re.compile(r"\bpa-[A-Za-z0-9_\-]{30,}\b")),
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\b")),
    ("a password in a URL", re.compile(r"\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:[^/\s@]{3,}@[^\s/]+", re.IGNORECASE)),
]

ASSIGNMENT = re.compile(
    r"""(?ix)
    \b([A-Z0-9_]*(?:SECRET|TOKEN|PASSWORD|PASSWD|PWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|AUTH)[A-Z0-9_]*)
    \s*[:=]\s*
    ['"]?([^\s'"]{8,})['"]?
    """
)
PLACEHOLDER = re.compile(r"(?i)^(?:x+|\*+|<.*>|\$\{.*\}|\$[A-Z_]+|changeme|example|your[-_].*|none|null|true|false)$")


def entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _secret_assignment(match: re.Match[str]) -> bool:
    value = match.group(2)
    if PLACEHOLDER.match(value) or value.startswith(("os.environ", "process.env", "settings.")):
        return False
    return (
        len(value) >= 12
        and entropy(value) >= 3.2
        or len(value) >= 8
        and entropy(value) >= 3.0
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


def find_secret(text: str) -> str | None:
    """The kind of the first secret in `text`, or None."""
    for kind, pattern in PATTERNS:
        if pattern.search(text):
            return kind
    for match in ASSIGNMENT.finditer(text):
        if _secret_assignment(match):
            return f"a secret assignment ({match.group(1)}=…)"
    return None


def redact(text: str) -> str:
    for kind, pattern in PATTERNS:
        text = pattern.sub(f"[REDACTED {kind.split(' ', 1)[1]}]", text)

    def sub_assignment(match: re.Match[str]) -> str:
        if not _secret_assignment(match):
            return match.group(0)
        return f"{match.group(1)}=[REDACTED]"

    return ASSIGNMENT.sub(sub_assignment, text)

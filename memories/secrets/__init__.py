"""Secret scanning: the one check every write path shares (docs/security.md), below both the write side and
search (the recall log redacts queries with it) in memories' rooms.

`find_secret(text)` names the kind of the first secret found (never the secret itself);
`validation.refuse_secrets` calls it for MCP, REST, the admin, import, dreaming's operations and the
CLI, and `sync.schema` for teammates' events. `redact(text)` cuts secrets out of conversation turns
before they are buffered or reach a reasoner.

The rules are gitleaks' default rule set (MIT, `secret_rules/gitleaks.toml`, kept as the upstream
data file: update it by copying a newer one), translated from RE2 to Python's `re` when loaded and
applied as gitleaks applies them (keyword prefilter, secret group, entropy floor, allowlists and
stopwords), plus a few rules of ours (`OURS`) for forms gitleaks leaves to its file-path context or
does not cover: bare private-key bodies, Authorization headers, passwords in URLs (also with `/`),
`NAME=value` assignments of secret-looking names, passwords and tokens told in a sentence, keys in a
URL's query, clients' short password options, and bare high-entropy tokens.

Each text is scanned in several views, so a secret cannot hide by its spelling: folded (NFKC,
invisible characters removed, look-alike letters mapped to ASCII: `yullu_core.textnorm`), with line
breaks inside a token joined (a key split over two lines), and base64 / percent-encoded segments
decoded (a token that decodes to a secret is one), and a value spelled one character at a time, in a TOTP
seed's groups of four, or in hex said so, joined or decoded in place (`views._respelled`).

Modules: `model` (rule, finding, entropy), `gitleaks` (their rules, translated), `decoding`,
`values` and `shapes` (what a value or a bare token is), `told` (a value told in a sentence), `words`,
`phrases` and `names` (the words that name a secret and what links them to a value), `rules_assigned`,
`rules_named`, `rules_formats`, `rules_entry`, `rules_wrapped`, `rules_spoken` and `rules_kinds` (our rules, in
order), `scan` (the rules applied to one view), `tables` and `views` (the views of a text); this module is the public
API.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from .gitleaks import gitleaks
from .model import Finding, Rule, entropy
from .views import _scan_views

__all__ = ["REFUSAL", "Finding", "Rule", "entropy", "find_secret", "first_secret", "gitleaks", "redact"]

# The one sentence every write path answers a secret with, whichever field held it (content, a tag, the project id).
REFUSAL = "refused: the content contains {kind}; remove it and try again (nothing was stored)."


def find_secret(text: str) -> str | None:
    """The kind of the first secret in `text`, or None. Never returns the secret itself."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _VERDICTS_LOCK:
        if key in _VERDICTS:
            _VERDICTS.move_to_end(key)
            return _VERDICTS[key]
    kind = next((finding.kind for finding, _, _ in _scan_views(text)), None)
    with _VERDICTS_LOCK:
        _VERDICTS[key] = kind
        if len(_VERDICTS) > VERDICTS_KEPT:
            _VERDICTS.popitem(last=False)
    return kind


# The last verdicts, by a digest of the text (the cache holds no text, so no secret stays in
# memory): an import checks each row before its batch is written and the write path checks it
# again, which scanned every text twice (a sixth of an import of 2,000 rows with vectors). The
# rules are fixed for the process's life, so a verdict cannot go out of date. 8,192 covers a batch
# of 2,000 rows with their tags.
VERDICTS_KEPT = 8192
_VERDICTS: OrderedDict[bytes, str | None] = OrderedDict()
_VERDICTS_LOCK = threading.Lock()


def first_secret(*texts: str) -> str | None:
    """The kind of the first secret in any of `texts`: the one check of every write path and of a
    teammate's event (sync.schema)."""
    for text in texts:
        if kind := find_secret(text):
            return kind
    return None


def redact(text: str) -> str:
    """`text` with every secret replaced by `[REDACTED <rule>]`; the prose around it is kept."""
    spans = sorted({(s, e, f.rule) for f, s, e in _scan_views(text)})
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for start, end, rule in spans:
        if end <= pos:
            continue
        out.append(text[pos : max(pos, start)])
        out.append(f"[REDACTED {rule}]")
        pos = end
    out.append(text[pos:])
    return "".join(out)

"""Counting tokens the way current assistants' models do: OpenAI's o200k_base BPE, run by tiktoken.

Budgets (the context block, dream transcripts) are in tokens. The encoding's ranks ship with this
package (data/o200k_base.tiktoken.gz, the file tiktoken itself would download, checked against the
sha256 tiktoken pins), because nothing may be downloaded at run time. tiktoken is ~4 MB installed;
the package that bundled the same ranks before carried a 72 MB binary (docs/decisions.md).
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib.resources

import tiktoken

RANKS_FILE = "data/o200k_base.tiktoken.gz"
RANKS_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"  # tiktoken_ext.openai_public
# o200k_base's split pattern, as tiktoken_ext.openai_public defines it (inline there, not importable).
PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@functools.cache
def encoding() -> tiktoken.Encoding:
    raw = gzip.decompress((importlib.resources.files("yullu_core") / RANKS_FILE).read_bytes())
    if hashlib.sha256(raw).hexdigest() != RANKS_SHA256:
        raise RuntimeError(f"yullu_core/{RANKS_FILE} is damaged (sha256 mismatch): reinstall Yul'lu.")
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in raw.splitlines() if line)}
    return tiktoken.Encoding(name="o200k_base", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})


def count_tokens(text: str) -> int:
    return len(encoding().encode_ordinary(text))

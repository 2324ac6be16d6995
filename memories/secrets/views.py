"""The views a text is scanned in: folded, with tokens split over lines or literals joined, as a table,
and with base64 and percent-encoded segments decoded; findings mapped back to the text's characters."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import unquote

from yullu_core.textnorm import fold_with_origin

from .decoding import _decoded
from .model import Finding
from .scan import _matches
from .tables import _table_view

# A line break inside a token: token characters on both sides (a key wrapped at 64 columns, a
# token split over two lines, a trailing backslash).
# Also string literals glued in code: `'ghp_' + 'wKqi…'`, Python's implicit `"abc"\n    "def"`, PHP's `.`,
# VB's `&`, Lua's `..` (a token split so that a pre-commit hook does not see it).
# (not a line of code after a line of code: `status.HTTP_503_SERVICE_UNAVAILABLE` / `default_detail = "…"` is an
# assignment, `name = ` or `call(`, which no wrapped key's next line is: a key has no space and no parenthesis;
# nor a mapping's next key, `DB_PASSWORD_FILE: /run/secrets/db` / `SECRET_KEY_FILE: …`, glued into one token;
# nor an env file's next `OPENAI_API_KEY=…`, glued onto the value before it)
# (nor a Content-Security-Policy's next source, `'self' 'sha256-…='`, `'nonce-…' 'strict-dynamic'`: a list, not a
# string cut in two; set 20's keeper)
_WRAP = re.compile(
    r"(?<=[A-Za-z0-9+/=_-])(?:\\?[ \t]*\r?\n[ \t]*"
    r"(?![A-Za-z_][\w.]*(?:[ \t]+[-+*/|&]?=[ \t]|\()|[A-Za-z_][\w.-]*:(?:[ \t]|\r?\n|$)"
    r"|[A-Z][A-Z0-9]*_[A-Z0-9_]*=(?!=))"
    r"|([\"'`])\s*(?:\+|\.\.?|&|\|\|)?\s*\1(?!sha(?:256|384|512)-|nonce-|strict-dynamic|unsafe-|report-sample|wasm-unsafe-eval))"
    r"(?=[A-Za-z0-9+/=_-])"
)
# A YAML block scalar's indicator and the line break after it: `password: |` then the value indented on the next line
# reads as `password: <value>` once they are cut (set sixteen: every rule of a name and its value reads it then). Only
# after a mapping key's colon and space, the body indented (a markdown table's row ending in `|` starts at column 0).
_BLOCK_SCALAR = re.compile(r"(?<=:[ \t])[ \t]*[|>][-+]?[1-9]?[ \t]*\r?\n[ \t]+(?=\S)")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{20,}={0,2}(?![A-Za-z0-9+/=_-])")
# A percent-encoded segment is a whole run of non-space characters holding an escape. Found as runs first, then an
# escape looked for in each: `\S*%XX\S*` tried again from every character of a run with no escape in it
# (`redis://:$` and `a%` x 4,000: 0.3-2 s; x 8,000: 3.6 s), where this reads each character twice.
_RUN = re.compile(r"\S+")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")
# A join matters when the token it makes is long enough to be a key (prose lines ending and starting
# with short words are left alone), and only the text around it is scanned again.
MIN_JOINED_TOKEN = 20
JOIN_CONTEXT = 300


def _token_run(text: str, at: int, step: int) -> int:
    """How many token characters (up to MIN_JOINED_TOKEN) run from `at` forwards (step 1) or end
    just before it (step -1)."""
    i, n = (at - 1 if step < 0 else at), 0
    while 0 <= i < len(text) and text[i] in _TOKEN_CHARS and n < MIN_JOINED_TOKEN:
        i, n = i + step, n + 1
    return n


# `["8f3k", "9vLx", "4tW1"].join("")`, `"".join(["8f3k", "9vLx"])`: a token split into a list of literals and
# joined again. Inside such a list the quotes and commas between literals are joins, however short the parts.
_JOINED_LIST = re.compile(
    r"\[([^\[\]\n]{1,2000})\]\s*\.join\(\s*([\"'])\2\s*\)|([\"'])\3\.join\(\s*[\[(]([^\[\]()\n]{1,2000})[\])]\s*\)"
)
_LIST_SEPARATOR = re.compile(r"(?<=[A-Za-z0-9+/=_-])([\"'])\s*,\s*\1(?=[A-Za-z0-9+/=_-])")


def _separators(text: str) -> list[tuple[int, int]]:
    """The spans to cut out of `text` to join a token: line breaks and glued literals inside a long token,
    a YAML block scalar's indicator, and the separators of a list of literals joined again."""
    spans = [
        m.span()
        for m in _WRAP.finditer(text)
        if _token_run(text, m.start(), -1) + _token_run(text, m.end(), 1) >= MIN_JOINED_TOKEN
    ]
    if "|" in text or ">" in text:
        spans += [m.span() for m in _BLOCK_SCALAR.finditer(text)]
    if ".join(" in text:
        for m in _JOINED_LIST.finditer(text):
            group = 1 if m.group(1) is not None else 4
            at = m.start(group)
            inside = [(at + s.start(), at + s.end()) for s in _LIST_SEPARATOR.finditer(m.group(group))]
            if inside:  # (and the list's bracket: `secret = ["8f3k…"` reads as `secret = "8f3k…`)
                spans += [(at - 1, at), *inside]
    return sorted(spans)


def _joined(text: str) -> tuple[str, list[int], list[tuple[int, int]]] | None:
    """`text` with line breaks inside long tokens removed, each character's index in `text`, and
    the windows of the joined text around the joins (the only places a new match can appear)."""
    if "\n" not in text and not ("'" in text or '"' in text or "`" in text):
        return None
    parts: list[str] = []
    origin: list[int] = []
    joins: list[int] = []
    pos = size = 0
    for start, end in _separators(text):
        if start < pos:
            continue
        parts.append(text[pos:start])
        origin.extend(range(pos, start))
        size += start - pos
        joins.append(size)
        pos = end
    if not joins:
        return None
    parts.append(text[pos:])
    origin.extend(range(pos, len(text)))
    windows: list[tuple[int, int]] = []
    for at in joins:
        start, end = max(0, at - JOIN_CONTEXT), min(len(origin), at + JOIN_CONTEXT)
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
    return "".join(parts), origin, windows


# A value spelled so that no rule sees one word (held-out set 17): one character at a time between single spaces or
# dashes ("I 5 M 8 v # b K e o", "5-F-M-r-Q-*-C-2-b-m", six characters or more), a TOTP seed in groups of four as
# authenticator apps show it ("QBGH C6DY SCPG 5IFQ …", four groups or more, in a text about one-time codes), and
# bytes in hex that read as printable ASCII in a text that says hex ("the admin password, hex-encoded: 5038404252…",
# six bytes or more; a hash's or an id's hex is not ASCII). The respelled view has each joined or decoded.
# (each form has a cheap test first, a literal or a word, so a text without one costs under a microsecond: the
# patterns themselves, tried at every position, were 40 µs on a 300-character text)
_SPACED = re.compile(r"(?<!\S)(?:\S ){5,}\S(?!\S)")
_SPACED_HINT = re.compile(r" \S \S \S \S ")
# (a `-` of the value spelled between its two dashes, `T---p`: other fillings of set 17's forms)
_DASHED = re.compile(r"(?<![\w-])(?:(?:[^\s-]|(?<=-)-(?=-))-){5,}[^\s-](?![\w-])")
_DASHED_HINT = re.compile(r"-[^\s-]-[^\s-]-[^\s-]-")
_GROUPED = re.compile(r"(?<![\w-])(?:[A-Z2-7]{4} ){3,}[A-Z2-7]{4}(?![\w-])")
_GROUPED_WORDS = ("otp", "2fa", "mfa", "authenticator", "seed")
_HEX_RUN = re.compile(
    r"(?<![0-9A-Fa-f])(?:[0-9a-f]{2}){6,}(?![0-9A-Fa-f])|(?<![0-9A-Fa-f])(?:[0-9A-F]{2}){6,}(?![0-9A-Fa-f])"
)
_HEX_WORDS = ("hex", "xxd")


def _respelled_runs(text: str) -> list[tuple[int, int, str]]:
    """Each spelled-out or hex run of `text` that reads as a value: its span and the value."""
    lowered = text.lower()
    forms: list[tuple[re.Pattern[str], bool]] = []
    if _SPACED_HINT.search(text):
        forms.append((_SPACED, False))
    if _DASHED_HINT.search(text):
        forms.append((_DASHED, False))
    if any(w in lowered for w in _GROUPED_WORDS):
        forms.append((_GROUPED, False))
    if any(w in lowered for w in _HEX_WORDS):
        forms.append((_HEX_RUN, True))
    runs: list[tuple[int, int, str]] = []
    for pattern, hexed in forms:
        for m in pattern.finditer(text):
            if not hexed:
                # (one character, then one space or dash: every other character is the value's)
                runs.append(
                    (m.start(), m.end(), m.group(0)[::2] if pattern is _DASHED else m.group(0).replace(" ", ""))
                )
                continue
            plain = bytes.fromhex(m.group(0)).decode("ascii", "replace")
            if all("!" <= c <= "~" for c in plain):
                runs.append((m.start(), m.end(), plain))
    return sorted(runs)


def _respelled(text: str) -> tuple[str, list[int]] | None:
    """`text` with each spelled-out value joined and each hex run of ASCII decoded, and each character's index in
    `text` (a decoded run's characters spread over its hex, so a finding inside it covers the run)."""
    parts: list[str] = []
    origin: list[int] = []
    pos = 0
    for start, end, plain in _respelled_runs(text):
        if start < pos:
            continue
        parts += [text[pos:start], plain]
        origin += range(pos, start)
        origin += [start + (end - start - 1) * k // max(1, len(plain) - 1) for k in range(len(plain))]
        pos = end
    if not parts:
        return None
    parts.append(text[pos:])
    origin += range(pos, len(text))
    return "".join(parts), origin


def _small_word_of_letters(span: str) -> bool:
    """A word of small letters with one beyond ASCII (`зберігається`, "is kept", after Ukrainian's `пароль`): folding
    maps its look-alike letters to Latin ones and its `з` to a `3`, and the folded word read as a password (set 18's
    keeper). A password or a key has a capital, a digit or a symbol of ASCII, or is ASCII."""
    return len(span) >= 2 and all(c.isalpha() and not c.isupper() for c in span) and any(ord(c) > 127 for c in span)


def _scan_views(text: str, depth: int = 0) -> Iterator[tuple[Finding, int, int]]:
    """Findings with the span of `text` they cover: a secret's own span in the folded or joined
    views, the whole encoded segment for a decoded one."""
    folded, origin = fold_with_origin(text)

    def back(i: int, j: int, table: list[int] | None) -> tuple[int, int]:
        if table is None:
            return i, j
        return table[i], table[j - 1] + 1

    for f in _matches(folded):
        s, e = back(f.start, f.end, origin)
        if not _small_word_of_letters(text[s:e]):
            yield (f, s, e)
    joined = _joined(folded)
    if joined is not None:
        jtext, jorigin, windows = joined
        for a, b in windows:
            for f in _matches(jtext[a:b]):
                s, e = back(*back(a + f.start, a + f.end, jorigin), origin)
                if not _small_word_of_letters(text[s:e]):
                    yield (f, s, e)
    respelled = _respelled(folded) if depth == 0 else None
    if respelled is not None:
        rtext, rorigin = respelled
        for f in _matches(rtext):
            s, e = back(f.start, f.end, rorigin)
            yield (f, *back(s, e, origin))
    table = _table_view(folded)
    if table is not None:
        ttext, torigin = table
        for f in _matches(ttext):
            s, e = back(*back(f.start, f.end, torigin), origin)
            if not _small_word_of_letters(text[s:e]):
                yield (f, s, e)
    if depth >= 2:
        return
    for m in _BASE64.finditer(folded):
        decoded = _decoded(m.group(0))
        if decoded is not None:
            for f, _, _ in _scan_views(decoded, depth + 1):
                yield (f, *back(m.start(), m.end(), origin))
    if "%" in folded:
        for m in _RUN.finditer(folded):
            if "%" not in m.group(0) or not _PERCENT_ESCAPE.search(m.group(0)):
                continue
            plain = unquote(m.group(0))
            if plain != m.group(0):
                for f, _, _ in _scan_views(plain, depth + 1):
                    yield (f, *back(m.start(), m.end(), origin))

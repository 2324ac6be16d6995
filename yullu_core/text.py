"""Control characters in stored text: refused on write, shown escaped when printed.

A teammate's memory, tag or file name may carry ANSI/OSC escapes (OSC 52 writes the
clipboard), C1 controls or bidi overrides (text that reads differently than it is).

- Written text (content, tags, every write path through memories.write.validation.clean_*, so
  MCP, REST, admin, import and teammates' events alike) refuses C0 controls other than tab,
  newline and carriage return, DEL, C1 controls and bidi controls: `CONTROL_RE`.
- Names (project ids, clone URLs, tags) refuse every C0 and C1 control, tab and newline included:
  `find_id_control` (a teammate's tag from an earlier version reads its tab or newline as a space).
- Printed text (CLI output) escapes those plus carriage return, zero-width, line/paragraph
  separator and Unicode tag characters, as a visible `\\x1b` / `\\u202e`: `escape_controls`.
  Zero-width joiner and non-joiner are kept (emoji sequences, Persian and Indic scripts).
"""

from __future__ import annotations

import re

_C0_C1 = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_INVISIBLE = "\r\u00ad\u180e\u200b\u2028\u2029\u2060-\u2064\ufeff\ufff9-\ufffb\U000e0000-\U000e007f"

CONTROL_RE = re.compile(f"[{_C0_C1}{_BIDI}]")  # refused on write
# In a name (a project id, a clone URL) tab, newline and carriage return are controls too. `yullu grant ana
# $'acme/app\x07' write` made a project no checkout names, printed as if it were acme/app.
_ID_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f]")
_UNSAFE_RE = re.compile(f"[{_C0_C1}{_BIDI}{_INVISIBLE}]")  # escaped on print


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_controls(text: str) -> str:
    """`text` safe for a terminal: every control, bidi and invisible character as a visible escape."""
    return _UNSAFE_RE.sub(_escape, text)


def find_control(text: str) -> str | None:
    """The first character a write refuses, as a visible escape (`\\x1b`), or None."""
    match = CONTROL_RE.search(text)
    return None if match is None else _escape(match)


def find_id_control(text: str) -> str | None:
    """The first C0/C1 control character of a name (tab and newline included), as `\\x07 at character 9`."""
    match = _ID_CONTROL_RE.search(text)
    return None if match is None else f"{_escape(match)} at character {match.start() + 1}"


def refuse_id_control(text: str, what: str = "project_id") -> None:
    """One sentence for a name with a control character, judged before any trim (which dropped a trailing
    newline or tab unseen): the same from every path that takes a project id or clone URL."""
    if bad := find_id_control(text):
        from .errors import UserError  # here: the hooks import this module, and errors imports pathlib (slow)

        raise UserError(f"{what} holds a control character ({bad}); send it without.")


def label_problem(text: str, what: str, most: int) -> str | None:
    """Why a short label (a token's name) is refused, or None: longer than its column, or holding a control
    character. A 500-character token name was cut to 100 without a word, and listed so (walk 22)."""
    if bad := find_id_control(text):
        return f"{what} holds a control character ({bad}); type it without."
    if len(text.strip()) > most:
        return f"{what} must be at most {most} characters, not {len(text.strip()):,}."
    return None


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a JSON string names an astral character by its UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_safe(json_text: str) -> str:
    """JSON text (from json.dumps(ensure_ascii=False)) with the characters `escape_controls`
    escapes written as JSON escapes: it decodes to the same value and prints safely."""
    return _UNSAFE_RE.sub(_json_escape, json_text)

"""Base64 segments decoded, and what decodes to a file or to readable text rather than to a key."""

from __future__ import annotations

import base64
import binascii
import json

# A file's first bytes (PNG, JPEG, GIF, PDF, gzip, zip, WebAssembly, WOFF): `data:image/png;base64,iVBORw0KGgo…`
# in a README's badge is an image, not a key.
_FILE_MAGIC = (
    *(b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"%PDF-", b"\x1f\x8b\x08", b"PK\x03\x04"),
    *(b"\x00asm", b"wOFF", b"wOF2"),
)


def _encoded_file(token: str) -> bool:
    head = token[:12]
    try:
        raw = base64.b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return raw.startswith(_FILE_MAGIC)


def _encoded_text(token: str) -> bool:
    """Base64 of words (a fixture's greeting) or of a JSON document (a JWT's header alone,
    `{"alg":"HS256","typ":"JWT"}`): readable text, not random bytes. Its decoded text is scanned as a
    view of its own, so a key encoded inside it is still found."""
    decoded = _decoded(token) if "=" not in token.rstrip("=") else None  # (padding inside: two glued tokens)
    if decoded is None:
        return False
    if decoded.count(" ") >= 2:
        return True
    if decoded.lstrip()[:1] not in ("{", "["):
        return False
    try:
        return isinstance(json.loads(decoded), dict | list)
    except ValueError:
        return False


def _decoded(segment: str) -> str | None:
    """A base64 segment's text when it decodes to readable UTF-8 (else None)."""
    padded = segment + "=" * (-len(segment) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            raw = decode(padded)
        except (binascii.Error, ValueError):
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text and sum(c.isprintable() or c in "\n\r\t" for c in text) >= 0.95 * len(text):
            return text
    return None

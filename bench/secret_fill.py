"""The random fillings the held-out secret sets 19 to 22 draw their values from, and `fixed`, a form whose text is
drawn once (every set from 13 on, and the hand-typed fake set).

Each set draws from its own seeded generator (`Filler(1919)`), once, when its module is imported: its texts are the
same from run to run, and a fix here reaches every set. A filling's draws are part of the sets' texts: changing
which calls a method makes on its generator, or their order, changes every text drawn after it.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def fixed(text: str) -> Callable[[random.Random], str]:
    """A form whose text was drawn once, from its set's own seed, or typed by hand: the runner's rng is not needed."""
    return lambda _rng: text


def enc(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def part(obj: dict[str, object]) -> str:
    """A JWT's header or claims: compact JSON, base64url without padding."""
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def lines(text: str, width: int = 64) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


class Filler:
    """One set's seeded generator and the values drawn from it."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def v(self, n: int, alphabet: str = ALNUM) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def hex(self, n: int) -> str:
        return self.v(n, HEX)

    def pw(self, n: int, first_symbols: str, symbols: str) -> str:
        """A generated password: a capital, a digit and one of `first_symbols`, then letters, digits and `symbols`,
        shuffled into no fixed place."""
        chars = [
            self.rng.choice(string.ascii_uppercase),
            self.rng.choice(string.digits),
            self.rng.choice(first_symbols),
        ]
        chars += [self.rng.choice(ALNUM + symbols) for _ in range(n - 3)]
        self.rng.shuffle(chars)
        return "".join(chars)

    def bytes(self, n: int) -> bytes:
        return bytes(self.rng.getrandbits(8) for _ in range(n))

    def b64(self, n_bytes: int) -> str:
        return base64.b64encode(self.bytes(n_bytes)).decode()

    def b64url(self, n_bytes: int) -> str:
        return base64.urlsafe_b64encode(self.bytes(n_bytes)).decode().rstrip("=")

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def jwt(self, payload: dict[str, object], alg: str = "HS256", sig_bytes: int = 32) -> str:
        return f"{part({'alg': alg, 'typ': 'JWT'})}.{part(payload)}.{self.b64url(sig_bytes)}"

    def pem(self, kind: str, n_bytes: int = 1190) -> str:
        return f"-----BEGIN {kind}-----\n{lines(self.b64(n_bytes))}\n-----END {kind}-----"

    def ip(self) -> str:
        """A private 10.x address."""
        return f"10.{self.rng.randint(0, 255)}.{self.rng.randint(0, 255)}.{self.rng.randint(1, 254)}"

    def epoch(self) -> int:
        return self.rng.randint(1_760_000_000, 1_790_000_000)

"""argparse types shared by the commands: a mistyped value is a usage error (exit 2, the command's
usage line and one sentence), never a failure of the command (exit 1) or a silent default."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from yullu_core.text import find_id_control, label_problem

MAX_ID = 2**63 - 1  # PostgreSQL's bigint


def whole_number(lowest: int, highest: int) -> Callable[[str], int]:
    """A whole number in [lowest, highest]: `--port 99999` was taken and the resolver wrapped it to port
    34463 while the banner said 99999; `--port 0` meant the default; `--limit 0` was exit 1 where
    `--limit abc` was exit 2."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = lowest - 1
        if not lowest <= value <= highest:
            # Under an id's range, its bound is the one to say; past it (an id past PostgreSQL's bigint is a whole
            # number of at least 1 too: walk 14), both.
            shown = f"of at least {lowest}" if highest >= MAX_ID and value < lowest else f"from {lowest} to {highest}"
            raise argparse.ArgumentTypeError(f"must be a whole number {shown}, not {text!r}")
        return value

    return parse


def days(highest: int) -> Callable[[str], float]:
    """A number of days in (0, highest], fractions allowed (a token for an afternoon): `--expires-days abc` answered
    argparse's "invalid float value" and `--expires-days 0` was exit 1 (walk 22)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if not 0 < value <= highest:  # NaN fails it too
            raise argparse.ArgumentTypeError(
                f"must be a number of days more than 0 and at most {highest}, not {text!r}"
            )
        return value

    return parse


# memories.write.validation's MIN_TTL_DAYS, MAX_TTL_DAYS and TTL_PROBLEM, not imported: building the parser loads
# no Django (tests/test_field_rules.py holds them equal).
MIN_TTL_DAYS, MAX_TTL_DAYS = 1, 3650
TTL_PROBLEM = f"ttl_days must be a number of days from {MIN_TTL_DAYS} to {MAX_TTL_DAYS}."


def ttl_days(text: str) -> float:
    """`memories add --ttl-days`: a number of days from 1 to 3650, in the service's sentence. Judged by the store,
    `--ttl-days 0` was exit 1 where `--limit 0` is exit 2 (walk 22)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not MIN_TTL_DAYS <= value <= MAX_TTL_DAYS:  # NaN fails it too
        raise argparse.ArgumentTypeError(TTL_PROBLEM)
    return value


def a_token_name(text: str) -> str:
    """`tokens create --name`: access.services' rule (at most 100 characters, no control character) as a usage
    error; the service cut a longer name to 100 without a word (walk 22)."""
    if problem := label_problem(text, "a token's name", 100):  # access.services.MAX_TOKEN_NAME
        raise argparse.ArgumentTypeError(problem)
    return text


def an_id(text: str) -> int:
    """A memory's or a token's id: `memories show abc` was exit 1 ('id must be an integer.'),
    `tokens revoke ''` said 'token  not found'."""
    return whole_number(1, MAX_ID)(text)


def a_path(kind: str) -> Callable[[str], str]:
    """A path, relative to this folder; an empty one is refused: read as this folder, `--cwd ""` made
    `yullu reconcile` publish the current checkout's memories and `yullu import ""` import it."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"must name a {kind}, not be empty")
        return os.path.abspath(text)

    return parse


folder = a_path("folder")


def a_project(text: str) -> str:
    """A project id or clone URL as typed. A control character in it (`$'acme/app\\x07'`, a pasted newline)
    is a usage error here: `yullu grant` made a project no checkout names and printed it as acme/app."""
    if bad := find_id_control(text):
        raise argparse.ArgumentTypeError(f"holds a control character ({bad}); type it without")
    return text

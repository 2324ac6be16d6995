"""A tool's or endpoint's argument rule, declared once (STYLE.md 10): what it accepts, the one sentence
a bad value gets, and the JSON schema that describes it to MCP clients and OpenAPI.

The services clean their arguments with these rules; the MCP tools take the value as given
(`AS_GIVEN`, no pydantic check first) and the REST serializers' fields run the same rule, so the same
bad value gets the same sentence over MCP, REST and the command line (tests/test_argument_rules.py).
The memory fields' own rules (content, tags, category, …) are memories/write/validation.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import PlainValidator

from .errors import UserError

# An MCP tool argument passed to the service as given: the service's rule judges it.
AS_GIVEN = PlainValidator(lambda value: value)


def _nullable(schema: dict[str, Any], optional: bool) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]} if optional else schema


def _number(value: Any, problem: str) -> float:
    """`value` as a float, or `problem` as the error: a JSON number or a query string's text, never a boolean.
    (An integer too large for a float, `limit: 1` and 400 zeros in a JSON body, raised OverflowError: a 500.)"""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UserError(problem)
    try:
        return float(value)
    except (ValueError, OverflowError):
        raise UserError(problem) from None


@dataclass(frozen=True)
class WholeNumber:
    """An integer from `lo` to `hi` (JSON 5 or 5.0, or text "5": a query string's); never a boolean."""

    name: str
    lo: int
    hi: int

    @property
    def problem(self) -> str:
        return f"{self.name} must be a whole number from {self.lo} to {self.hi}."

    def clean(self, value: Any) -> int:
        number = _number(value, self.problem)
        if not math.isfinite(number) or number != int(number) or not self.lo <= number <= self.hi:
            raise UserError(self.problem)
        return int(number)

    def schema(self, *, optional: bool = False) -> dict[str, Any]:
        return _nullable({"type": "integer", "minimum": self.lo, "maximum": self.hi}, optional)


@dataclass(frozen=True)
class Number:
    """A finite number from `lo` to `hi` (JSON number, or text: a query string's); never a boolean.
    None means "not given"."""

    name: str
    lo: float
    hi: float

    @property
    def problem(self) -> str:
        return f"{self.name} must be a number from {self.lo:g} to {self.hi:g}."

    def clean(self, value: Any) -> float | None:
        if value is None:
            return None
        number = _number(value, self.problem)
        if not self.lo <= number <= self.hi:  # NaN fails both comparisons
            raise UserError(self.problem)
        return number

    def schema(self, *, optional: bool = True) -> dict[str, Any]:
        return _nullable({"type": "number", "minimum": self.lo, "maximum": self.hi}, optional)


@dataclass(frozen=True)
class Text:
    """A string of at most `max_chars`. `required`: blank (empty or only spaces) is refused, as a
    missing value would be; otherwise None and blank both mean "not given" and clean to ""."""

    name: str
    max_chars: int
    required: bool = False

    def clean(self, value: Any) -> str:
        if value is None and not self.required:
            return ""
        if not isinstance(value, str):
            raise UserError(f"{self.name} must be a string.")
        if self.required and not value.strip():
            raise UserError(f"{self.name} must not be empty; say in plain words what you want to know.")
        if len(value) > self.max_chars:
            raise UserError(f"{self.name} is {len(value)} characters; the limit is {self.max_chars}.")
        return value

    def schema(self) -> dict[str, Any]:
        text = {"type": "string", "maxLength": self.max_chars}
        return {**text, "minLength": 1} if self.required else _nullable(text, True)


@dataclass(frozen=True)
class Strings:
    """A list of strings; None means an empty list."""

    name: str

    def clean(self, value: Any) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise UserError(f"{self.name} must be a list of strings.")
        return list(value)

    def schema(self) -> dict[str, Any]:
        return _nullable({"type": "array", "items": {"type": "string"}}, True)


# A conversation's id, as store_memory and dream_now take it (optional; record_messages requires its own).
SESSION_ID = Text("session_id", 200)


def unknown_arguments(unknown: list[str], known: list[str]) -> str:
    """The sentence for arguments a tool or endpoint does not declare (docs/contract.md §3: a misspelt `limt` is
    refused, not ignored), the same over MCP, a REST body and a REST query string."""
    names = ", ".join(repr(name) for name in sorted(unknown))
    takes = ", ".join(sorted(known)) or "none"
    return f"unknown argument{'s' if len(unknown) > 1 else ''} {names}; this call takes: {takes}."


# A wrong type or a missing argument, said alike by MCP (pydantic's errors, yullu_site/mcp/server.py) and REST
# (DRF's, yullu_core/rest.valid): "to_id: Input should be a valid integer" and "to: A valid integer is required."
# were two sentences for one mistake.
KINDS = {
    "integer": "must be a whole number",
    "boolean": "must be true or false",
    "list": "must be a list",
    "string": "must be a string",
}


# What a JSON value is, in the words of the sentences above ("must be a list"; bool before int: True is an int).
JSON_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "true or false"),
    ((int, float), "a number"),
    (str, "a string"),
    (list, "a list"),
    (type(None), "null"),
)


def not_json(why: str) -> str:
    """A REST body the JSON parser refused (DRF said "JSON parse error - Expecting value: line 1 column 2 (char 1)")."""
    return f"the body is not JSON: {why}."


def not_an_object(value: Any) -> str:
    """A REST body that is JSON but not the object of named arguments every endpoint takes (DRF said "Expected a
    dictionary, but got list."); over MCP a tool's arguments are an object by the protocol."""
    kind = next((name for cls, name in JSON_KINDS if isinstance(value, cls)), type(value).__name__)
    return f"the body must be a JSON object, got {kind}."


def missing(name: str) -> str:
    return f"{name} is required."


def wrong_type(name: str, kind: str) -> str:
    return f"{name} {KINDS[kind]}."


def too_long(name: str, length: int, limit: int) -> str:
    return f"{name} is {length} characters; the limit is {limit}."  # as Text's rule says it

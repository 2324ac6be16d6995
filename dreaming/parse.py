"""Tolerant parsing of the reasoner's answer: code fences and prose around the JSON are fine."""

from __future__ import annotations

import json
import re
from typing import Any

FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class ParseError(Exception):
    pass


def _objects(text: str) -> list[str]:
    """Candidate JSON objects: fenced blocks first, then each balanced {...} span."""
    found = [m.group(1).strip() for m in FENCE_RE.finditer(text)]
    depth, start, in_str, escape = 0, -1, False, False
    for i, ch in enumerate(text):
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                found.append(text[start : i + 1])
    return found


def parse_operations(text: str) -> list[dict[str, Any]]:
    for candidate in _objects(text or ""):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("operations"), list):
            return [op for op in data["operations"] if isinstance(op, dict)]
    excerpt = (text or "").strip().replace("\n", " ")[:200]
    raise ParseError(f"the reasoner's answer held no JSON object with an 'operations' list: {excerpt!r}")


DECISIONS = ("create", "skip", "update", "supersede", "contradicts")


def parse_decision(text: str) -> dict[str, Any]:
    """The judge's answer: {"decision": one of DECISIONS, "uuid": ...}."""
    for candidate in _objects(text or ""):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and data.get("decision") in DECISIONS:
            return data
    excerpt = (text or "").strip().replace("\n", " ")[:200]
    raise ParseError(f"the reasoner's answer held no decision: {excerpt!r}")

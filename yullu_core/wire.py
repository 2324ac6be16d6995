"""Markers for the wire-shape TypedDicts (memories.wire, sync and dreaming results):
what a plain `str` or `int` field means on the wire. yullu_core.rest reads them to derive
the schema; nothing else needs them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    """An OpenAPI string format (`Annotated[str, UUID]`)."""

    name: str


UUID = Format("uuid")
DATETIME = Format("date-time")


@dataclass(frozen=True)
class Doc:
    """A field's description in the schema."""

    text: str

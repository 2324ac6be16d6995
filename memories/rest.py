"""Memories' REST pieces, public to every app's views: the scope arguments (project_id or cwd) and
how a REST caller's project is resolved, and the OpenAPI shapes of memories' wire TypedDicts
(memories.wire) the views answer with. The shared kit (validation, `documented`, `shape`) is
yullu_core.rest."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.request import Request

from memories import lifecycle, wire
from yullu_core.errors import UserError
from yullu_core.rest import PROJECT, StrictText, obj, query, shape

from .scope import NO_PROJECT, Scope, project_of, resolve


class ScopeIn(serializers.Serializer):
    # No length here: memories.scope.validate_project_id judges it, with the sentence every path gives. Not
    # trimmed either: a blank id is judged as MCP's tools judge it ("project_id must not be empty.").
    project_id = StrictText(required=False, allow_blank=True, trim_whitespace=False)
    cwd = StrictText(required=False, allow_blank=True, max_length=4096, trim_whitespace=False)


def rest_scope(data: dict[str, Any], *, remember: bool = True) -> Scope:
    """REST callers name their project: the server's own folder is never a default project
    (it would file memories, and their sync files, under wherever the server was started).
    Reads pass `remember=False`: they never record a location."""
    # Judged as MCP's tools judge them (memories.scope.resolve): the same sentence for a missing project,
    # and a blank project_id is the id's own error ("project_id must not be empty."), not a missing one.
    if not data.get("project_id") and not data.get("cwd"):
        raise UserError(NO_PROJECT)
    return resolve(data.get("project_id"), data.get("cwd"), remember=remember)


CWD = query("cwd", description="the absolute path of a folder in the project's checkout (instead of project_id)")
# How a GET or DELETE names its project in the query string: a list is narrowed to it, a memory must be its.
WHERE = [PROJECT, CWD]


def project_param(request: Request) -> str | None:
    """The project a read names by `?project_id=` or `?cwd=` (docs/contract.md §2: every endpoint acting on
    a project takes both, as every tool does), resolved as MCP's reads are (a read records no location);
    None when it names neither. A list then shows every project the caller may read."""
    project_id = request.query_params.get("project_id") or None
    cwd = request.query_params.get("cwd") or None
    # An id is checked as MCP's are: a malformed one is its sentence, not a 200 listing nothing.
    return project_of(project_id, cwd) if cwd or project_id else None


MemoryOut = shape(wire.MemoryOut)
UpdatedOut = shape(wire.UpdatedOut)
MemoryDetailOut = shape(lifecycle.MemoryDetail)
HitOut = shape(wire.HitOut)
RejectedOut = shape(wire.RejectedOut)
ProjectOut = shape(wire.ProjectOut)
LIMIT = query("limit", int, "how many (bounded; see the error for the range)")
DAYS = query("days", int, "window in days, 1–3650 (default 30)")

MemoryPage = obj(
    "MemoryPage",
    next=serializers.URLField(allow_null=True),
    previous=serializers.URLField(allow_null=True),
    results=serializers.ListField(child=MemoryOut()),
)
SearchOut = shape(wire.SearchResults)
RecallOut = shape(wire.RecallResults)
CreatedOut = shape(wire.Created)
DuplicateOut = shape(wire.Duplicate)
DeletedOut = shape(wire.Deleted)
RatedOut = shape(wire.Rated)

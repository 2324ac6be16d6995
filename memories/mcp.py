"""The memory tools over MCP: store, retrieve, build_context, update, delete, list, get_memory,
link_memories, list_conflicts, resolve_conflict, rate_recall and get_usage, each a thin adapter over
memories' services. The server that carries them (and the other apps' tools) is assembled in
yullu_site/mcp/server.py.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field, WithJsonSchema

from yullu_core.arguments import AS_GIVEN, SESSION_ID
from yullu_core.mcp import Cwd, ProjectId, run

from . import lifecycle
from .scope import SCOPES, project_of, resolve, scope_for
from .search import stats
from .search.context import BUDGET, CONTEXT_QUERY, DEFAULT_BUDGET, PREFER_CATEGORIES, PREFER_HELP
from .search.context import build_context as make_context
from .search.merged import CATEGORIES as CATEGORY_LIST
from .search.merged import LIMIT, MIN_SIMILARITY, QUERY, Recall
from .wire import deleted_to_wire, recall_to_wire
from .write import create, edit, validation

# The memory fields' and the searches' arguments are passed to the service as given (AS_GIVEN: no pydantic
# check first), so a bad value gets its rule's one sentence (memories/write/validation.py,
# yullu_core/arguments.py), the same as on REST, the admin and the CLI; their JSON schemas come from the
# same rules.
ContentArg = Annotated[
    str,
    AS_GIVEN,
    WithJsonSchema(validation.json_schema("content")),
    Field(description=f"The fact, self-contained and forward-looking (max {validation.max_content_chars()} chars)."),
]
NewContentArg = Annotated[
    str | None,
    AS_GIVEN,
    WithJsonSchema(validation.json_schema("content", update=True)),
    Field(description="New content; re-embeds the memory."),
]
CategoryArg = Annotated[
    str | None,
    AS_GIVEN,
    WithJsonSchema(validation.json_schema("category")),
    Field(
        description="One of: "
        + "; ".join(f"{name} ({meaning})" for name, meaning in validation.CATEGORY_MEANINGS.items())
        + ". Empty = uncategorised; others: error."
    ),
]
ScopeArg = Annotated[
    str | None,
    AS_GIVEN,
    WithJsonSchema({"anyOf": [{"type": "string", "enum": list(SCOPES)}, {"type": "null"}]}),
    Field(
        description="'project' (default) or 'user': a personal preference that applies to every project "
        "(never shared with the team)."
    ),
]
TagsArg = Annotated[
    list[str] | None,
    AS_GIVEN,
    WithJsonSchema(validation.json_schema("tags")),
    Field(description="Short labels for the memory, e.g. ['auth', 'ci']."),
]
NewTagsArg = Annotated[
    list[str] | None,
    AS_GIVEN,
    WithJsonSchema(validation.json_schema("tags", update=True)),
    Field(description="New tags (replaces the old ones; [] clears)."),
]
ImportanceArg = Annotated[
    str | None,
    AS_GIVEN,
    WithJsonSchema(validation.json_schema("importance")),
    Field(description="low, normal (default) or high; high-importance memories lead the project's context."),
]
AnchorsArg = Annotated[
    list[str] | None,
    Field(
        description="Code this memory is about, relative to the repository root: 'app/clock.py', "
        "'app/clock.py:40-58' or 'app/clock.py::Clock.now'. Pinned to HEAD (needs cwd), so retrieval can say "
        "when that code changed. Paths written in the content are detected too."
    ),
]
TtlArg = Annotated[
    float | None,
    AS_GIVEN,
    WithJsonSchema(validation.json_schema("ttl_days")),
    Field(description="Forget after this many days (1-3650), e.g. for a temporary workaround. Omit: keep."),
]
NewTtlArg = Annotated[
    float | None,
    AS_GIVEN,
    WithJsonSchema(validation.json_schema("ttl_days", update=True)),
    Field(description="Forget after this many days from now (1-3650); 0: no expiry."),
]


def register(server: MCPServer) -> None:
    register_memory_tools(server)
    register_feedback_tools(server)
    register_link_tools(server)


def addressed(memory_id: int, project_id: str | None, cwd: str | None) -> None:
    """With `cwd` or `project_id` (docs/contract.md §2: every tool acting on a project accepts them), the memory
    must belong to that project (or be the caller's personal one)."""
    if project_id or cwd:
        edit.get_memory_in(memory_id, project_of(project_id, cwd))


def register_memory_tools(server: MCPServer) -> None:
    _register_store_tool(server)
    _register_recall_tools(server)
    _register_change_tools(server)
    _register_list_tool(server)


def _register_store_tool(server: MCPServer) -> None:
    @server.tool(
        description="Store one durable, self-contained fact about this codebase. A near-duplicate of an existing "
        "memory is not stored twice (created: false, duplicate_of: id); otherwise `similar` lists related memories."
    )
    async def store_memory(
        content: ContentArg,
        category: CategoryArg = None,
        tags: TagsArg = None,
        project_id: ProjectId = None,
        cwd: Cwd = None,
        scope: ScopeArg = None,
        supersedes: Annotated[
            int | None,
            Field(description="Id of a memory this one replaces (a reversed decision, a renamed command)."),
        ] = None,
        importance: ImportanceArg = None,
        ttl_days: TtlArg = None,
        session_id: Annotated[
            str | None,
            AS_GIVEN,
            WithJsonSchema(SESSION_ID.schema()),
            Field(
                description="Your conversation/session id (the one you give record_messages), if you know it: "
                "memories stored in one session are recalled together.",
            ),
        ] = None,
        anchors: AnchorsArg = None,
    ) -> CallToolResult:
        def body() -> dict[str, Any]:
            where = scope_for(scope, project_id, cwd)
            stored = create.store_memory(
                where,
                content,
                category,
                validation.with_session(tags, session_id),
                source="mcp",
                supersedes=supersedes,
                importance=importance,
                ttl_days=ttl_days,
                anchors=anchors,
            )
            return dict(stored.as_dict())

        return await run(body)


def _register_recall_tools(server: MCPServer) -> None:
    @server.tool(description="Search this codebase's memories; call before answering questions about the code.")
    async def retrieve_memories(
        query: Annotated[
            str, AS_GIVEN, WithJsonSchema(QUERY.schema()), Field(description="What you want to know, in plain words.")
        ],
        limit: Annotated[
            int, AS_GIVEN, WithJsonSchema(LIMIT.schema()), Field(description="How many memories at most (1-50).")
        ] = 5,
        categories: Annotated[
            list[str] | None,
            AS_GIVEN,
            WithJsonSchema(CATEGORY_LIST.schema()),
            Field(description="Only these categories (any of them); unknown values are ignored."),
        ] = None,
        min_similarity: Annotated[
            float | None,
            AS_GIVEN,
            WithJsonSchema(MIN_SIMILARITY.schema()),
            Field(
                description="Optional cosine floor (0-1) replacing the calibrated relevance gate for this call; "
                "0 returns the best matches however weak. Omit it to use the gate.",
            ),
        ] = None,
        project_id: ProjectId = None,
        cwd: Cwd = None,
    ) -> CallToolResult:
        def body() -> dict[str, Any]:
            asked = Recall.judged(query, limit, categories, min_similarity)  # before the project, as on REST
            project = project_of(project_id, cwd)
            found = asked.run(project)
            return dict(recall_to_wire(project, found.recall_id, found.results))

        return await run(body)

    @server.tool(
        description="One ready block of this project's memories (and your personal ones) within a token budget: "
        "with a query, the memories that matter for it; without, the project primer."
    )
    async def build_context(
        query: Annotated[
            str | None,
            AS_GIVEN,
            WithJsonSchema(CONTEXT_QUERY.schema()),
            Field(description="What you are about to do or ask; omit for the primer."),
        ] = None,
        budget_tokens: Annotated[
            int,
            AS_GIVEN,
            WithJsonSchema(BUDGET.schema()),
            Field(description="Most tokens the block may use (40-32000)."),
        ] = DEFAULT_BUDGET,
        categories: Annotated[
            list[str] | None,
            AS_GIVEN,
            WithJsonSchema(CATEGORY_LIST.schema()),
            Field(description="Only memories of these categories (any of them); unknown values are ignored."),
        ] = None,
        prefer_categories: Annotated[
            list[str] | None,
            AS_GIVEN,
            WithJsonSchema(PREFER_CATEGORIES.schema()),
            Field(description=PREFER_HELP),
        ] = None,
        project_id: ProjectId = None,
        cwd: Cwd = None,
    ) -> CallToolResult:
        def body() -> dict[str, Any]:
            project = project_of(project_id, cwd)
            return make_context(project, query, budget_tokens, categories, prefer_categories=prefer_categories)

        return await run(body)


def _register_change_tools(server: MCPServer) -> None:
    @server.tool(
        description="Change a memory by its local id. With supersede: true the old memory is kept in history and "
        "a new one with the new content replaces it in retrieval."
    )
    async def update_memory(
        id: Annotated[int, Field(description="The memory's local id (from store/retrieve/list).")],
        content: NewContentArg = None,
        tags: NewTagsArg = None,
        category: CategoryArg = None,
        importance: ImportanceArg = None,
        ttl_days: NewTtlArg = None,
        supersede: Annotated[
            bool, Field(description="Keep the old memory as history and store the new content as its successor.")
        ] = False,
        anchors: Annotated[
            list[str] | None,
            Field(description="New code anchors (replace the old ones; [] clears), as for store_memory."),
        ] = None,
        project_id: ProjectId = None,
        cwd: Cwd = None,
    ) -> CallToolResult:
        def body() -> dict[str, Any]:
            if project_id or cwd:  # a write: records where the checkout is, so the anchors pin there (as REST)
                edit.get_memory_in(id, resolve(project_id, cwd).project_id)
            memory = edit.update_memory(
                id,
                content=content,
                tags=tags,
                category=category,
                importance=importance,
                ttl_days=ttl_days,
                supersede=supersede,
                source="mcp",
                anchors=anchors,
            )
            out: dict[str, Any] = dict(edit.updated_answer(memory, anchors is not None))
            if supersede:
                out["supersedes"] = id
            return out

        return await run(body)

    @server.tool(description="Delete a memory by its local id.")
    async def delete_memory(
        id: Annotated[int, Field(description="The memory's local id.")],
        project_id: ProjectId = None,
        cwd: Cwd = None,
    ) -> CallToolResult:
        def body() -> dict[str, Any]:
            addressed(id, project_id, cwd)
            m = edit.delete_memory(id, source="mcp")
            return dict(deleted_to_wire(id, m))

        return await run(body)


def _register_list_tool(server: MCPServer) -> None:
    @server.tool(description="List the most recently updated memories of this project.")
    async def list_memories(
        limit: Annotated[
            int,
            AS_GIVEN,
            WithJsonSchema(stats.LIST_LIMIT.schema()),
            Field(description="How many memories at most (1-200)."),
        ] = 20,
        project_id: ProjectId = None,
        cwd: Cwd = None,
    ) -> CallToolResult:
        def body() -> dict[str, Any]:
            project = project_of(project_id, cwd)
            return {"project_id": project, "memories": stats.list_memories(project, limit)}

        return await run(body)


def register_feedback_tools(server: MCPServer) -> None:
    @server.tool(description="Say whether a memory a retrieval returned was useful (unhelpful ones sink).")
    async def rate_recall(
        # Judged by the service, as on REST (the same sentence).
        recall_id: Annotated[
            str,
            AS_GIVEN,
            WithJsonSchema({"type": "string", "format": "uuid"}),
            Field(description="The recall_id retrieve_memories returned."),
        ],
        memory_id: Annotated[
            int,
            AS_GIVEN,
            WithJsonSchema({"type": "integer", "minimum": 1}),
            Field(description="The id of one memory from that retrieval."),
        ],
        useful: Annotated[
            bool,
            AS_GIVEN,
            WithJsonSchema({"type": "boolean"}),
            Field(description="true: it helped answer; false: irrelevant or misleading."),
        ],
        comment: Annotated[
            str | None, AS_GIVEN, WithJsonSchema(lifecycle.COMMENT.schema()), Field(description="Optional: why.")
        ] = None,
    ) -> CallToolResult:
        def body() -> dict[str, Any]:
            from .lifecycle import rate_recall as rate

            return dict(rate(recall_id, memory_id, useful, comment or "", source="mcp"))

        return await run(body)

    @server.tool(description="Model usage (calls, tokens, cost in USD microcents) by provider, model and kind.")
    async def get_usage(
        since_hours: Annotated[
            float | None,
            AS_GIVEN,
            WithJsonSchema(stats.SINCE_HOURS.schema()),
            Field(description="Only the last N hours."),
        ] = None,
        recent: Annotated[bool, Field(description="Also list the most recent calls.")] = False,
        recent_limit: Annotated[
            int,
            AS_GIVEN,
            WithJsonSchema(stats.RECENT_LIMIT.schema()),
            Field(description="How many recent calls (1-200)."),
        ] = 20,
    ) -> CallToolResult:
        return await run(lambda: stats.usage_summary(since_hours, recent, recent_limit))


MemoryId = Annotated[int, Field(description="A memory's local id (the #id in context blocks and results).")]


def register_link_tools(server: MCPServer) -> None:
    _register_memory_links(server)
    _register_conflict_tools(server)


def _register_memory_links(server: MCPServer) -> None:
    @server.tool(
        description="One memory by its id (the #id a context block or result shows): full text, the code it "
        "cites (anchors) with their status, its links, and a summary of its change history."
    )
    async def get_memory(id: MemoryId, project_id: ProjectId = None, cwd: Cwd = None) -> CallToolResult:
        def body() -> dict[str, Any]:
            return dict(lifecycle.memory_detail(id, project_of(project_id, cwd) if project_id or cwd else None))

        return await run(body)

    @server.tool(
        description="Link two memories of one project: 'supersedes' (from replaces to, which leaves retrieval), "
        "'contradicts' (opens a conflict for review) or 'related'. Linking twice changes nothing."
    )
    async def link_memories(
        from_id: Annotated[int, Field(description="The memory the link starts from (e.g. the newer fact).")],
        to_id: Annotated[int, Field(description="The memory it points to.")],
        kind: Annotated[
            str,
            AS_GIVEN,
            WithJsonSchema({"type": "string", "enum": list(lifecycle.LINK_KINDS)}),
            Field(description="supersedes, contradicts or related."),
        ],
        note: Annotated[str | None, Field(description="Optional: why (shown to reviewers).", max_length=2000)] = None,
        project_id: ProjectId = None,
        cwd: Cwd = None,
    ) -> CallToolResult:
        def body() -> dict[str, Any]:
            addressed(from_id, project_id, cwd)
            link = lifecycle.link_memories(from_id, to_id, kind, note=note or "", source="mcp")
            return dict(lifecycle.link_dict(link))

        return await run(body)


def _register_conflict_tools(server: MCPServer) -> None:
    @server.tool(description="Open conflicts of this project: pairs of current memories that contradict each other.")
    async def list_conflicts(project_id: ProjectId = None, cwd: Cwd = None) -> CallToolResult:
        def body() -> dict[str, Any]:
            project = project_of(project_id, cwd)
            return {"project_id": project, "conflicts": lifecycle.open_conflicts(project)}

        return await run(body)

    @server.tool(
        description="Resolve an open conflict (its id from list_conflicts): keep_from or keep_to (the other is "
        "superseded), keep_both (they become related), or merge (`content` replaces the from memory's text and "
        "the to memory is superseded)."
    )
    async def resolve_conflict(
        conflict_id: Annotated[int, Field(description="The conflict's id (from list_conflicts).")],
        resolution: Annotated[
            str,
            AS_GIVEN,
            WithJsonSchema({"type": "string", "enum": list(lifecycle.RESOLUTIONS)}),
            Field(description="keep_from, keep_to, keep_both or merge."),
        ],
        content: Annotated[
            str | None, Field(description="The merged text; required with merge only.", max_length=8000)
        ] = None,
        project_id: ProjectId = None,
        cwd: Cwd = None,
    ) -> CallToolResult:
        def body() -> dict[str, Any]:
            if project_id or cwd:
                lifecycle.conflict_in(conflict_id, project_of(project_id, cwd))
            return dict(lifecycle.resolve_conflict(conflict_id, resolution, merged_content=content, source="mcp"))

        return await run(body)

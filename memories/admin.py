"""Admin for memories. Every change goes through memories.write (validated, secret-scanned, synced)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import (
    BooleanField,
    Case,
    Exists,
    Field,
    FloatField,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.http import HttpRequest
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import capfirst
from unfold.admin import ModelAdmin
from unfold.widgets import UnfoldAdminSelectWidget, UnfoldAdminTextareaWidget, UnfoldAdminTextInputWidget

from access.people import username
from yullu_core.errors import UserError
from yullu_core.forms import untrimmed

from . import authors, lifecycle, tallies
from .admin_views import (
    conflicts_view,
    graph_data_view,
    graph_view,
    recall_verdict_view,
    retrievals_view,
    review_view,
    settings_view,
    stale_view,
    stats_view,
    usage_view,
)
from .anchors import refs as anchor_refs
from .anchors import store as anchor_store
from .embedding.embedders import get_embedder
from .models import (
    CATEGORIES,
    IMPORTANCES,
    ArchiveReason,
    Memory,
    MemoryChange,
    MemoryVector,
    ProjectLocation,
    RecallFeedback,
    RejectedMemory,
    Term,
)
from .scope import Scope, known_root, validate_project_id
from .search import admin_queries
from .wire import HitOut
from .write import create, edit, validation
from .write.history import HISTORY_SOURCES


def _who(source: str, user: str | None) -> str:
    """The channel and, when a person made the change, who (docs/contract.md §11)."""
    return f"{source} ({user})" if user else source


class MemoryForm(forms.ModelForm):
    tags_text = forms.CharField(
        required=False, label="Tags", help_text="Comma-separated.", widget=UnfoldAdminTextInputWidget()
    )
    # Text in, judged by the fields' rules in clean() (memories/write/validation.py): a bad value gets the
    # same sentence here as on REST, MCP and the CLI, not a form field's own message.
    category = forms.CharField(
        required=False,
        widget=UnfoldAdminSelectWidget(choices=[("", "(uncategorised)")] + [(c, c) for c in CATEGORIES]),
    )
    importance = forms.CharField(
        required=False,
        widget=UnfoldAdminSelectWidget(choices=[("", "(unchanged / normal)")] + [(i, i) for i in IMPORTANCES]),
    )
    ttl_days = forms.CharField(
        required=False,
        label="Expires in (days)",
        help_text="Blank keeps the current expiry; 0 removes it (on an existing memory).",
        widget=UnfoldAdminTextInputWidget(),
    )

    anchors_text = forms.CharField(
        required=False,
        label="Code anchors",
        help_text="Code this memory is about, one per line: app/clock.py, app/clock.py:40-58 or "
        "app/clock.py::Clock.now (pinned to the project's checkout HEAD). Paths in the content are detected too.",
        widget=UnfoldAdminTextareaWidget(attrs={"rows": 3}),
    )

    class Meta:
        model = Memory
        fields = ["project_id", "content", "category", "importance"]
        widgets = {"content": UnfoldAdminTextareaWidget(attrs={"rows": 6}), "project_id": UnfoldAdminTextInputWidget()}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["tags_text"].initial = ", ".join(self.instance.tags or [])
            self.fields["anchors_text"].initial = "\n".join(anchor_store.cited(self.instance))
            self.fields["importance"].initial = self.instance.importance
            self.fields["project_id"].disabled = True
        # Empty content or project id gets its rule's sentence, not also Django's "This field is required." (walk 15)
        self.fields["content"].required = self.fields["project_id"].required = False
        self.fields["project_id"].validators = []  # its length: validate_project_id's sentence, as on every path
        untrimmed(self)  # validate_project_id judges a control character before any trim

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        rules = {
            "project_id": lambda: (
                data.get("project_id") if self.instance.pk else validate_project_id(data.get("project_id") or "")
            ),
            "content": lambda: validation.clean_content(data.get("content", "")),
            "tags_text": lambda: validation.clean_tags(validation.tags_from_text(data.get("tags_text", ""))),
            "category": lambda: validation.clean_category(data.get("category")),
            "importance": lambda: validation.clean_importance(data.get("importance")),
            "ttl_days": lambda: validation.clean_ttl_days(data.get("ttl_days"), zero_clears=bool(self.instance.pk)),
        }
        for name, rule in rules.items():
            try:
                data[{"tags_text": "tags"}.get(name, name)] = rule()
            except UserError as exc:
                self.add_error(name, str(exc))
        if self.errors:
            return data
        # Each field is judged on its own so the refusal stands under the field that held the secret: one
        # sentence for them all said "the content contains" above a form whose content had none (walk 18: a
        # token pasted as a tag). The project id of a new memory too, as every write path refuses it.
        held = {"content": [data["content"]], "tags_text": data["tags"]}
        if not self.instance.pk:
            held["project_id"] = [data["project_id"]]
        for name, texts in held.items():
            try:
                validation.refuse_secrets(*texts)
            except UserError as exc:
                self.add_error(name, str(exc))
        if self.errors:
            return data
        try:
            # (and together, as the write path judges them: a key split between fields)
            validation.refuse_secrets(data["content"], *data["tags"], "" if self.instance.pk else data["project_id"])
            data["anchors"] = [line.strip() for line in data.get("anchors_text", "").splitlines() if line.strip()]
            anchor_refs.parse_all(data["anchors"])
        except UserError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


def _change_text(row: dict[str, Any]) -> str:
    """A short before → after, field by field (content trimmed)."""
    before, after = row.get("before") or {}, row.get("after") or {}
    parts = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old != new:
            parts.append(
                f"{key}: {str(old)[:80] if old is not None else '—'} → {str(new)[:80] if new is not None else '—'}"
            )
    return "; ".join(parts) or "—"


def _filtered_project(request: HttpRequest) -> str | None:
    """The project the list is filtered on: the Filters panel's (ProjectFilter: ?project_id=) or the dashboard's
    links' field lookup. With only the latter read, a project picked under Filters, as the search box says,
    searched words and found none for a question (walk 18: "how do I ship a release" in a project: 0 results)."""
    return request.GET.get(ProjectFilter.parameter_name) or request.GET.get("project_id__exact")


class ProjectFilter(admin.SimpleListFilter):
    """The projects that hold memories, from the tallies (memories.tallies): Django's own filter ran
    a DISTINCT over every visible memory on each load of the list (70 ms at 1M)."""

    title = "project id"
    parameter_name = "project_id"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(pid, pid) for pid in sorted(tallies.memory_counts().by_project)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> QuerySet[Memory]:
        return queryset.filter(project_id=self.value()) if self.value() else queryset


class RatedFilter(admin.SimpleListFilter):
    title = "review"
    parameter_name = "rated"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("no", "Unrated"), ("yes", "Rated")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> QuerySet[Memory]:
        if self.value() == "no":
            return queryset.filter(rating__isnull=True)
        if self.value() == "yes":
            return queryset.filter(rating__isnull=False)
        return queryset


class HeldFilter(admin.SimpleListFilter):
    title = "held for review"
    parameter_name = "held"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Held (instructs the assistant)"), ("no", "Not held")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> QuerySet[Memory]:
        if self.value() == "yes":
            return queryset.exclude(held_reason="")
        if self.value() == "no":
            return queryset.filter(held_reason="")
        return queryset


class VectorFilter(admin.SimpleListFilter):
    title = "vector for active embedder"
    parameter_name = "embedded"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Embedded"), ("no", "Not yet (backfill pending)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> QuerySet[Memory]:
        has = Exists(MemoryVector.objects.filter(memory=OuterRef("pk"), embedder=get_embedder().id))
        if self.value() == "yes":
            return queryset.filter(has)
        if self.value() == "no":
            return queryset.filter(~has)
        return queryset


class SourceFilter(admin.SimpleListFilter):
    title = "source"
    parameter_name = "source"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(s, s) for s in admin_queries.SOURCES]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> QuerySet[Memory]:
        return admin_queries.source_filter(queryset, self.value() or "")


INDEX_ROWS = (MemoryVector, Term, RecallFeedback)  # a memory's own rows, deleted with it
INDEX_ROWS_PLURAL = {str(m._meta.verbose_name_plural) for m in INDEX_ROWS}
INDEX_ROW_PREFIXES = tuple(f"{capfirst(m._meta.verbose_name)}: " for m in INDEX_ROWS)


def _without(items: list[Any]) -> list[Any]:
    """Django's nested list of what a delete takes with it, without the index rows (each line is
    "<Verbose name>: <object>", a nested list the objects that go with the line before it)."""
    kept = [
        _without(i) if isinstance(i, list) else i
        for i in items
        if isinstance(i, list) or not str(i).startswith(INDEX_ROW_PREFIXES)
    ]
    return [i for i in kept if i != []]


@admin.register(Memory)
class MemoryAdmin(ModelAdmin):
    form = MemoryForm
    list_display = ["short_content", "project_id", "category", "rating", "updated_at", "match"]
    list_filter = [ProjectFilter, "category", RatedFilter, HeldFilter, SourceFilter, VectorFilter]
    list_filter_submit = True
    search_fields = ["content"]
    readonly_fields = [
        "held",
        "uuid",
        "created_at",
        "written_by",
        "updated_at",
        "changed_by",
        "rating",
        "rating_comment",
        "expires_at",
        "links",
        "recalls",
        "change_history",
    ]
    actions = ["approve_selected", "keep_selected", "archive_selected", "delete_selected_via_service"]
    list_per_page = 50

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # replaced: deletes must write sync events
        return actions

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path("review/", wrap(review_view), name="memories_review"),
            path("retrievals/", wrap(retrievals_view), name="memories_retrievals"),
            path("stats/", wrap(stats_view), name="memories_stats"),
            path("usage/", wrap(usage_view), name="memories_usage"),
            path("settings/", wrap(settings_view), name="memories_settings"),
            path("conflicts/", wrap(conflicts_view), name="memories_conflicts"),
            path("stale/", wrap(stale_view), name="memories_stale"),
            path("graph/", wrap(graph_view), name="memories_graph"),
            path("graph.json", wrap(graph_data_view), name="memories_graph_data"),
            path("verdict/", wrap(recall_verdict_view), name="memories_recall_verdict"),
            *super().get_urls(),
        ]

    @admin.display(description="content")
    def short_content(self, obj: Memory) -> str:
        text = obj.content if len(obj.content) <= 160 else obj.content[:157] + "…"
        tags = ", ".join(obj.tags or [])
        out = format_html('{}<div class="y-muted">{}</div>', text, tags) if tags else text
        if obj.held_reason:
            out = format_html('<div class="y-held">held for review: {}</div>{}', obj.held_reason, out)
        return out

    @admin.display(description="created by")
    def written_by(self, obj: Memory) -> str:
        """A user of this machine or a teammate's name (memories.authors: the one reading every page uses);
        the user field alone showed "-" for a teammate's memory."""
        return authors.written_by(obj) or "the system (no person named)"

    @admin.display(description="updated by")
    def changed_by(self, obj: Memory) -> str:
        return username(obj.updated_by_id) or obj.updated_author or "the system (no person named)"

    @admin.display(description="held for review")
    def held(self, obj: Memory) -> str:
        if not obj.held_reason:
            return "no: assistants can retrieve it"
        return format_html(
            '<div class="y-held">{}. Assistants do not see it until it is approved (action "Approve selected").</div>',
            obj.held_reason,
        )

    @admin.display(description="links")
    def links(self, obj: Memory) -> str:
        if not obj.pk:
            return "—"
        rows = lifecycle.links_of(obj.pk)
        if not rows:
            return "none"
        return format_html_join(
            "",
            '<div>{} <a href="../../{}/change/">memory {}</a></div>',
            (
                (
                    row["kind"] if row["from_id"] == obj.pk else f"{row['kind']} (from)",
                    row["to_id"] if row["from_id"] == obj.pk else row["from_id"],
                    row["to_id"] if row["from_id"] == obj.pk else row["from_id"],
                )
                for row in rows
            ),
        )

    @admin.display(description="recall history")
    def recalls(self, obj: Memory) -> str:
        if not obj.pk:
            return "—"
        h = admin_queries.recall_history([obj.pk], per_memory=10)[obj.pk]
        lines = format_html_join(
            "",
            "<div>“{}” · #{} · {} · {}</div>",
            ((r["query"][:100], r["rank"], r["similarity"], r["at"].strftime("%Y-%m-%d %H:%M")) for r in h["recent"]),
        )
        return format_html("<div>sent {} · below floor {}</div>{}", h["sent"], h["considered"], lines)

    @admin.display(description="history")
    def change_history(self, obj: Memory) -> str:
        if not obj.pk:
            return "—"
        rows = lifecycle.history(obj.pk)
        if not rows:
            return "no recorded changes"
        return format_html(
            '<table class="y-table"><tr><th>When (UTC)</th><th>What</th><th>Who</th><th>Before → after</th></tr>'
            "{}</table>",
            format_html_join(
                "",
                "<tr><td class='y-nowrap'>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                (
                    (
                        r["at"][:19].replace("T", " "),
                        r["action"],
                        _who(r["source"], r["user"] or r["author"]),
                        _change_text(r),
                    )
                    for r in reversed(rows)
                ),
            ),
        )

    @admin.display(description="match")
    def match(self, obj: Memory) -> str:
        # The preview's rank, similarity and gate verdict ride on the row (get_queryset annotates
        # them): this admin is one instance serving every request, so it holds no search state.
        rank = getattr(obj, "search_rank", None)
        if rank is None:
            return ""
        # search_similarity and search_clears are annotated by get_queryset, unknown to the model type.
        sim = obj.search_similarity  # type: ignore[attr-defined]
        sim_text = "—" if sim is None else f"{sim:.2f}"
        return format_html(
            '<span class="y-nowrap">#{} · {} · {}</span>',
            rank,
            sim_text,
            "sent" if obj.search_clears else format_html("<em>{}</em>", "below floor"),  # type: ignore[attr-defined]
        )

    def _semantic(self, request: HttpRequest) -> list[HitOut] | None:
        """The preview search's hits, run once per request (project filter + search box) and kept
        on the request; None when not searching."""
        term, project = request.GET.get("q", "").strip(), _filtered_project(request)
        if not term or not project:
            return None
        # A per-request cache kept on the request object, which declares no such attribute.
        if not hasattr(request, "_yullu_preview"):
            from .search import queries  # here: the search stack (with the secret scanner) costs every command ~0.5 s

            request._yullu_preview = queries.preview(project, term, limit=50).results  # type: ignore[attr-defined]
        return request._yullu_preview  # type: ignore[attr-defined]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Memory]:
        qs = Memory.objects.all()
        hits = self._semantic(request)
        if hits is not None:  # annotate before ordering: the rank is the sort key

            def per_hit(value: Callable[[HitOut], Any], default: Any, field: Field[Any, Any]) -> Case:
                whens = [When(pk=h["id"], then=Value(value(h))) for h in hits]
                return Case(*whens, default=Value(default), output_field=field)

            qs = qs.annotate(
                search_rank=per_hit(lambda h: h["rank"], None, IntegerField()),
                search_similarity=per_hit(lambda h: h["similarity"], None, FloatField()),
                search_clears=per_hit(lambda h: h.get("clears_floor", False), False, BooleanField()),
            )
        return qs.order_by(*self.get_ordering(request))

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        changelist = super().get_changelist_instance(request)
        # The box's placeholder says what a search does here: words everywhere, meaning within one project.
        project = _filtered_project(request)
        changelist.search_help_text = (
            f"Search {project} by meaning (rank, similarity, sent / below floor)"
            if project
            else "Search words; pick a project under Filters to search by meaning"
        )
        return changelist

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[Memory], search_term: str) -> Any:
        hits = self._semantic(request)
        if hits is None:
            return super().get_search_results(request, queryset, search_term)
        return queryset.filter(pk__in=[h["id"] for h in hits]), False

    def get_ordering(self, request: HttpRequest) -> list[Any]:
        if self._semantic(request) is not None:
            return ["search_rank"]
        if request.GET.get(SourceFilter.parameter_name) in admin_queries.SOURCES:
            return [admin_queries.newest_first_unindexed("updated_at")]
        return ["-updated_at"]

    def save_model(self, request: HttpRequest, obj: Memory, form: MemoryForm, change: bool) -> None:
        data = form.cleaned_data
        try:
            if change:
                edit.update_memory(
                    obj.pk,
                    content=data["content"],
                    tags=data["tags"],
                    category=data.get("category") or "",
                    importance=data.get("importance"),
                    ttl_days=data.get("ttl_days"),
                    source="admin",
                    **({"anchors": data["anchors"]} if "anchors_text" in form.changed_data else {}),
                )
            else:
                scope = Scope(data["project_id"], known_root(data["project_id"]))
                created = create.store_memory(
                    scope,
                    data["content"],
                    data.get("category"),
                    data["tags"],
                    importance=data.get("importance"),
                    ttl_days=data.get("ttl_days"),
                    source="admin",
                    anchors=data["anchors"] or None,
                ).memory
                obj.pk, obj.id, obj.uuid = created.pk, created.pk, created.uuid
        except UserError as exc:
            messages.error(request, str(exc))

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[Any], dict[str, int], set[str], list[Any]]:
        """The delete page lists what a reviewer knows (the memory, its links and anchors), not the rows that
        index it: a one-line memory listed "Term: Term object (247)" seven times and "Memory vector:
        MemoryVector object (16)" (walk 9). They go with it all the same."""
        to_delete, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        return (
            _without(to_delete),
            {k: n for k, n in counts.items() if k not in INDEX_ROWS_PLURAL},
            perms_needed,
            protected,
        )

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        edit.delete_memory(obj.pk, source="admin")
        self._left_in_the_log(request, {obj.project_id: 1})

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        deleted: dict[str, int] = {}
        for pk, project_id in list(queryset.values_list("pk", "project_id")):
            edit.delete_memory(pk, source="admin")
            deleted[project_id] = deleted.get(project_id, 0) + 1
        self._left_in_the_log(request, deleted)

    def _left_in_the_log(self, request: HttpRequest, deleted: dict[str, int]) -> None:
        """A reviewer deleting a secret that slipped through must know its text is still in the team log."""
        for project_id, count in sorted(deleted.items()):
            whose = "The deleted memory's" if count == 1 else f"The {count} deleted memories'"
            if note := edit.left_in_the_log(project_id, whose):
                self.message_user(request, f"{note}.", messages.WARNING)

    @admin.action(description="Approve selected held memories (assistants will see them)")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        pks = list(queryset.exclude(held_reason="").values_list("pk", flat=True))
        for pk in pks:
            edit.approve_held(pk, source="admin")
        self.message_user(request, f"Approved {len(pks)} held memories.")

    @admin.action(description="Keep selected (rate 8)")
    def keep_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        for pk in list(queryset.values_list("pk", flat=True)):
            edit.rate_memory(pk, 8, source="admin")
        self.message_user(request, f"Kept {queryset.count()} memories.")

    @admin.action(description="Archive selected as rejected (rate 3)")
    def archive_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        pks = list(queryset.values_list("pk", flat=True))
        for pk in pks:
            edit.rate_memory(pk, 3, source="admin")
        self.message_user(request, f"Archived {len(pks)} memories to rejected memories.")

    @admin.action(description="Delete selected (synced)")
    def delete_selected_via_service(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        pks = list(queryset.values_list("pk", flat=True))
        self.delete_queryset(request, queryset)
        self.message_user(request, f"Deleted {len(pks)} memories.")


@admin.register(RejectedMemory)
class RejectedMemoryAdmin(ModelAdmin):
    list_display = ["content", "project_id", "rating", "rating_comment", "archived", "written", "rejected_at"]
    list_filter = ["project_id", "reason", "rating"]
    search_fields = ["content", "rating_comment"]
    actions = ["restore_selected"]

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def get_queryset(self, request: HttpRequest) -> QuerySet[RejectedMemory]:
        # Who archived it and through what, from its history's last row (kept after the memory is deleted):
        # the list said what was rejected and when, never by whom (walk 18).
        last = MemoryChange.objects.filter(memory_uuid=OuterRef("uuid"), action="deleted").order_by("-created_at")
        return (
            super()
            .get_queryset(request)
            .annotate(
                archived_by=Subquery(last.values("user__username")[:1]),
                archived_via=Subquery(last.values("source")[:1]),
            )
        )

    @admin.display(description="Archived by", ordering="reason")
    def archived(self, obj: RejectedMemory) -> str:
        """'Rejected by alice (admin)': a reviewer's rating and where it was given; 'Expired': the sweep."""
        if obj.reason == ArchiveReason.EXPIRED:
            return "Expired (its time to live ran out)"
        who, via = getattr(obj, "archived_by", None), getattr(obj, "archived_via", None)
        return f"Rejected{f' by {who}' if who else ''}{f' ({via})' if via else ''}"

    @admin.display(description="Written")
    def written(self, obj: RejectedMemory) -> str:
        """Where it came from, which a restore gives back: 'dream pass 3 (…) · 2026-06-01 09:12', 'sync · Dana ·
        …'. Empty for rows archived before these were kept (migration 0022)."""
        if obj.created_at is None:
            return "—"
        who = username(obj.created_by_id) or obj.created_author
        label = str((obj.origin or {}).get("label") or HISTORY_SOURCES.get(obj.source, obj.source))
        parts = [p for p in (label, who, obj.created_at.strftime("%Y-%m-%d %H:%M")) if p]
        return " · ".join(parts)

    @admin.action(description="Restore selected to the review queue")
    def restore_selected(self, request: HttpRequest, queryset: QuerySet[RejectedMemory]) -> None:
        restored = 0
        for pk in list(queryset.values_list("pk", flat=True)):
            try:
                edit.restore_rejected(pk, source="admin")
                restored += 1
            except UserError as exc:
                messages.error(request, str(exc))
        self.message_user(request, f"Restored {restored} memory(ies) to the review queue.")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# Every action memories.write and memories.lifecycle record (history.record's callers), and the channels.
CHANGE_ACTIONS = (
    "created", "updated", "rated", "unrated", "rejected", "restored", "approved", "deleted", "superseded",
    "supersedes", "linked", "conflict resolved", "repinned",
)  # fmt: skip
REVIEW_ACTIONS = ("rated", "unrated", "rejected", "restored", "approved", "conflict resolved", "repinned")
CHANNELS = ("admin", "mcp", "rest", "api", "cli", "import", "dream", "sync", "prune")


class ActionFilter(admin.SimpleListFilter):
    """What was done, from a fixed list: Django's own filter ran a DISTINCT over the whole history."""

    title = "what"
    parameter_name = "action"
    ACTIONS = (
        ("review", "ratings, rejects, restores, approvals (a reviewer's)"),
        *((a, a) for a in CHANGE_ACTIONS),
    )

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return self.ACTIONS

    def queryset(self, request: HttpRequest, queryset: QuerySet[MemoryChange]) -> QuerySet[MemoryChange]:
        if self.value() == "review":
            return queryset.filter(action__in=REVIEW_ACTIONS)
        return queryset.filter(action=self.value()) if self.value() else queryset


class WhenFilter(admin.SimpleListFilter):
    """Recent changes by age. Not Django's date_hierarchy: its DISTINCT over the days of every row took 0.74 s of
    a 1.0 s page at 1M history rows; an age is a range read on the time index."""

    title = "when"
    parameter_name = "within"
    SPANS = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}
    LABELS = {"1h": "the last hour", "24h": "the last 24 hours", "7d": "the last 7 days", "30d": "the last 30 days"}

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return list(self.LABELS.items())

    def queryset(self, request: HttpRequest, queryset: QuerySet[MemoryChange]) -> QuerySet[MemoryChange]:
        span = self.SPANS.get(self.value() or "")
        return queryset.filter(created_at__gte=timezone.now() - span) if span else queryset


class ChannelFilter(admin.SimpleListFilter):
    title = "through"
    parameter_name = "source"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return [(c, c) for c in CHANNELS]

    def queryset(self, request: HttpRequest, queryset: QuerySet[MemoryChange]) -> QuerySet[MemoryChange]:
        return queryset.filter(source=self.value()) if self.value() else queryset


@admin.register(MemoryChange)
class MemoryChangeAdmin(ModelAdmin):
    """Every recorded change to memories (their history rows, kept after a memory is deleted): who, when, through
    what, before and after. What a reviewer reads as the audit of the review itself; access (tokens, grants,
    logins) has its own trail (access.AuditEntry). Read-only; a project's rows to whoever may read it."""

    list_display = ["at", "action", "memory_link", "project_id", "who", "change"]
    list_filter = [ActionFilter, WhenFilter, ChannelFilter, ProjectFilter]
    list_filter_submit = True
    search_fields = ["=author", "=user__username"]  # (get_search_results reads the whole term as one name)
    search_help_text = "A person's user name or a teammate's name (Dana Reyes), exactly."
    list_per_page = 50
    show_full_result_count = False
    list_select_related = ["user"]
    list_before_template = "admin/yullu/changes_note.html"
    ordering = ["-created_at", "-id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryChange]:
        # The memory as it is now, by uuid: a row written before a delete lost its link (memory null), also when
        # the memory was restored since under the same uuid (one index probe per row of the page).
        now = Memory.objects.filter(uuid=OuterRef("memory_uuid")).values("pk")[:1]
        return super().get_queryset(request).annotate(current_id=Subquery(now))

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[MemoryChange], search_term: str
    ) -> tuple[QuerySet[MemoryChange], bool]:
        """One name, spaces and all: Django's search split "Sam Okafor" into two words that each had to match."""
        name = " ".join(search_term.split())
        if not name:
            return queryset, False
        return queryset.filter(Q(author__iexact=name) | Q(user__username__iexact=name)), False

    @admin.display(description="when (UTC)", ordering="created_at")
    def at(self, obj: MemoryChange) -> str:
        return obj.created_at.strftime("%Y-%m-%d %H:%M:%S")

    @admin.display(description="memory")
    def memory_link(self, obj: MemoryChange) -> str:
        snapshot = obj.after or obj.before or {}
        text = str(snapshot.get("content", "") if isinstance(snapshot, dict) else "")[:80]
        pk = getattr(obj, "current_id", None) or obj.memory_id
        if pk is None:
            return format_html('<span class="y-muted">deleted since</span> {}', text)
        url = reverse("admin:memories_memory_change", args=[pk])
        return format_html('<a href="{}">memory {}</a> {}', url, pk, text)

    @admin.display(description="who")
    def who(self, obj: MemoryChange) -> str:
        return _who(obj.source, obj.user.get_username() if obj.user else obj.author or None)

    @admin.display(description="before → after")
    def change(self, obj: MemoryChange) -> str:
        return _change_text({"before": obj.before, "after": obj.after})

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ProjectLocation)
class ProjectLocationAdmin(ModelAdmin):
    list_display = ["project_id", "git_root", "last_seen"]

    # Recorded by writes from a checkout (memories.scope, inside [server].allowed_roots): where the project's
    # team log is written and read. Nobody edits it here: a row naming another folder would receive the
    # project's events (its memories' text) there. Deleting one (a checkout gone for good) is a superuser's.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

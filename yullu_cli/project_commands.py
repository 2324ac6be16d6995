"""Project maintenance at a terminal: `yullu reconcile`, `anchors check`, `sync compact`, `dream`,
`prune`, `export` and `import`. Thin adapters over the apps' services; JSON on stdout."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .argtypes import a_path, folder
from .django_setup import as_the_owner, fail, setup_django

# `yullu reconcile`'s exit code while the log holds files it refuses: the good ones applied, yet a CI job or a
# script must see that some did not (exit 0 said nothing). Not 1 (it could not run) nor 2 (a usage error).
# Decided by the log, not by this machine's ledger: a second run that only lists the files again (recorded as
# bad, not re-read) exits the same, so a re-run CI job stays red until someone removes or fixes the file.
REFUSED_FILES = 3


def project_options(p: argparse.ArgumentParser, cwd_help: str = "a folder of the project (default: here)") -> None:
    """`--cwd` and `--project` (or `--project-id`), which name the project as MCP's and REST's cwd/project_id do.
    Both spellings, as on every command that takes a project (README): `--project` reached these only as
    argparse's abbreviation of `--project-id`, and their --help did not show it."""
    p.add_argument("--cwd", type=folder, default=os.getcwd(), help=cwd_help)
    p.add_argument(
        "--project", "--project-id", dest="project_id", metavar="PROJECT", default=None,
        help="project id (default: from --cwd)",
    )  # fmt: skip


def add_parsers(sub: Any) -> None:
    add_sync_parsers(sub)
    add_memory_file_parsers(sub)


def add_sync_parsers(sub: Any) -> None:
    """The team log and the code it cites: reconcile, anchors check, sync compact."""
    p = sub.add_parser(
        "reconcile",
        help="apply teammates' events from <repo>/.yullu/logs",
        description="Apply teammates' events from <repo>/.yullu/logs and publish local-only memories; prints "
        "the pass's counts as JSON. A file of the log it refuses (bad JSON, a broken schema, a symlink, "
        "conflict markers, another project's memory) does not stop the rest, which applies; each such file is "
        f"named on stderr with the reason, and the exit code is {REFUSED_FILES} (for CI and scripts) for as long "
        "as the file is in the log, also in a later run that only lists it again. Exit 1: the reconcile "
        "could not run; 2: a usage error.",
    )
    project_options(p)
    p.set_defaults(fn=cmd_reconcile)

    p = sub.add_parser("anchors", help="code anchors: memories that cite code, and whether that code changed")
    anchors_sub = p.add_subparsers(dest="anchors_command", required=True)
    c = anchors_sub.add_parser("check", help="check cited code against HEAD; exit 1 when memories are stale")
    project_options(c, "a folder inside the project's git checkout (default: here)")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.set_defaults(fn=cmd_anchors_check)

    p = sub.add_parser("sync", help="team event log maintenance")
    sync_sub = p.add_subparsers(dest="sync_command", required=True)
    c = sync_sub.add_parser("compact", help="fold the event log into one snapshot per memory (then you commit it)")
    project_options(c)
    c.add_argument("--dry-run", action="store_true", help="only count what would change")
    c.set_defaults(fn=cmd_sync_compact)


def add_memory_file_parsers(sub: Any) -> None:
    """Dream passes, expiry, and memories in and out of files."""
    p = sub.add_parser(
        "dream",
        help="run a dream pass now",
        description="Turn the project's recorded session turns into memories now, with the configured reasoner "
        "(an installed Claude Code or Codex CLI, an Anthropic or OpenAI-compatible API). Prints the pass's "
        "counts as JSON; exits 1 when there is no reasoner, when the folder is no git checkout and nothing was "
        "recorded for it, or when the pass failed (the turns are kept).",
    )
    project_options(p)
    p.set_defaults(fn=cmd_dream)

    p = sub.add_parser("prune", help="archive expired memories (ttl_days ran out) to rejected memories")
    p.add_argument("--dry-run", action="store_true", help="only list what would be archived")
    p.set_defaults(fn=cmd_prune)

    p = sub.add_parser("export", help="export memories")
    p.add_argument("format", choices=["agents-md", "json"], help="agents-md (Markdown) or json (JSON Lines)")
    p.add_argument("--project", "--project-id", default=None, help="only this project (json: default all projects)")
    p.add_argument("--out", default="-", help="file to write, or - for stdout (default: -)")
    p.add_argument("--vectors", action="store_true", help="json: include the embedding vectors")
    p.set_defaults(fn=cmd_export)

    p = sub.add_parser(
        "import",
        help="import memories: a `yullu export json` file, a Go Yul'lu database, an MCP memory.jsonl, or the "
        "assistants' own memory (a repository's CLAUDE.md / AGENTS.md / .cursor/rules / Copilot instructions, "
        "a Claude Code memory folder, or one such file)",
    )
    # Relative paths (`yullu import .`, `--cwd ..`) are read from this folder: the services take absolute ones.
    p.add_argument("path", type=a_path("file or folder"), help="the file or folder to import")
    p.add_argument("--project", "--project-id", default=None, help="put every memory in this project")
    p.add_argument(
        "--cwd",
        type=folder,
        default=os.getcwd(),
        help="project for formats without one (default: this folder)",
    )
    p.set_defaults(fn=cmd_import)


def cmd_reconcile(args: argparse.Namespace) -> None:
    setup_django()
    import json

    from sync.services import reconcile_folder
    from yullu_core.errors import UserError
    from yullu_core.text import escape_controls

    try:
        result = reconcile_folder(os.path.abspath(args.cwd), args.project_id)
    except UserError as exc:
        fail(str(exc))
    print(json.dumps(result, indent=2), flush=True)
    refused = result.get("parse_errors") or []
    for e in refused:
        print(f"yullu: refused {escape_controls(e['file'])}: {escape_controls(e['error'])}", file=sys.stderr)
    if refused:
        sys.exit(REFUSED_FILES)


def cmd_anchors_check(args: argparse.Namespace) -> None:
    """Check every code anchor of the project at --cwd against its HEAD; exit 1 when a memory is stale
    (for CI: a memory describes code that changed since it was written)."""
    setup_django()
    import json

    from memories.anchors.checks import check_project, describe
    from memories.scope import resolve
    from sync.services import checkout_of
    from yullu_core.errors import UserError

    try:
        cwd = os.path.abspath(args.cwd)
        scope = resolve(args.project_id, cwd)
        # Without a checkout nothing can be checked: "no stale memories" and exit 0 would pass a CI job
        # run in the wrong folder.
        result = check_project(scope.project_id, checkout_of(scope, cwd))
    except UserError as exc:
        fail(str(exc))
    print(json.dumps(result.as_dict(), indent=2) if args.json else describe(result))
    if result.stale:
        sys.exit(1)


def cmd_sync_compact(args: argparse.Namespace) -> None:
    setup_django()
    import json

    from memories.scope import resolve
    from sync.compact import compact
    from yullu_core.errors import UserError

    try:
        cwd = os.path.abspath(args.cwd)
        result = compact(resolve(args.project_id, cwd), dry_run=args.dry_run, cwd=cwd)
    except UserError as exc:
        fail(str(exc))
    print(json.dumps(result, indent=2))


def cmd_dream(args: argparse.Namespace) -> None:
    setup_django()
    import json

    from dreaming.services import NothingToDream, dream_in_folder
    from yullu_cli.memory_commands import served_reasoner_hint
    from yullu_core.errors import UserError

    def announce(project_id: str, reasoner: str) -> None:
        # A pass is one model call per session (a CLI reasoner takes 10-60 s each): walk 14 waited 40 s with
        # nothing on the screen.
        print(f"yullu: dreaming {project_id} with {reasoner} (one model call per recorded session; this can take "
              "a minute or more)…", file=sys.stderr, flush=True)  # fmt: skip

    try:
        with as_the_owner():  # what the pass stores names them, as a dream_now with their token does
            result = dream_in_folder(args.cwd, args.project_id, announce)
    except NothingToDream as exc:
        fail(str(exc))
    except UserError as exc:
        fail(str(exc) + served_reasoner_hint())
    print(json.dumps(result, indent=2))
    if result["errors"] and not result["sessions_processed"]:  # the pass failed: say why, exit 1
        fail(f"the dream pass failed: {result['errors'][0]}" + served_reasoner_hint())


def cmd_prune(args: argparse.Namespace) -> None:
    setup_django()
    import json

    from memories.lifecycle import prune_expired

    with as_the_owner():  # the history's "deleted" rows name who pruned (the hourly task: the system)
        print(json.dumps(prune_expired(dry_run=args.dry_run), indent=2))


def cmd_export(args: argparse.Namespace) -> None:
    setup_django()
    from memories.scope import project_known, validate_project_id
    from yullu_cli.memory_commands import export_agents_md_to, export_json_to

    if args.project:  # a control character is its own sentence (run_guarded says it), not "not found"
        validate_project_id(args.project)
    if args.project and not project_known(args.project):  # a misspelt id: one sentence, not an empty export
        without = "every project" if args.format == "json" else "the current folder's project"
        fail(f"project {args.project!r} not found (no memories, never seen); `yullu export {args.format}` "
             f"without --project exports {without}.")  # fmt: skip
    if args.format == "json":
        export_json_to(args.project, args.out, args.vectors)
        return
    export_agents_md_to(project_id=args.project, cwd=os.getcwd(), out=args.out)


def cmd_import(args: argparse.Namespace) -> None:
    setup_django()
    import json
    from pathlib import Path

    from memories.transfer.importer import import_path
    from yullu_core.errors import UserError

    try:
        with as_the_owner():  # the imported memories name them as their writer (no file carries a local user)
            result = import_path(Path(args.path), args.project, args.cwd, progress=sys.stderr)
    except UserError as exc:
        fail(str(exc))
    print(json.dumps(result.__dict__, indent=2))
    if result.review:
        print(f"yullu: {len(result.review)} facts read; the category guessed for each is under \"review\"; new "
              "memories are unrated and wait in the admin's review queue (/admin/memories/memory/review/).",
              file=sys.stderr)  # fmt: skip

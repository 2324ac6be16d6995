"""The `yullu` command. Keep imports lazy: hook commands must start fast (no Django, no torch)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from .django_setup import fail, setup_django


def run_guarded(fn: Callable[[], object]) -> None:
    """Run `fn`, turning configuration and startup errors into one sentence instead of a traceback."""
    from yullu_core.config import ConfigError
    from yullu_core.database import DatabaseUrlError
    from yullu_core.env import EnvError
    from yullu_core.errors import UserError
    from yullu_core.postgres import EmbeddedPostgresError

    try:
        fn()
    except (ConfigError, EnvError, DatabaseUrlError, EmbeddedPostgresError, UserError) as exc:
        fail(str(exc))
    except Exception as exc:
        from django.db import OperationalError

        from yullu_core.failures import translate

        if (said := translate(exc)) is not None:
            fail(str(said))
        if isinstance(exc, OSError):  # a path the command was given: missing, not a folder, not writable
            where = f"{exc.filename}: " if exc.filename else ""
            fail(f"{where}{exc.strerror or exc}.")
        if not isinstance(exc, OperationalError):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        fail(f"cannot reach the database ({first}); start it, or check DATABASE_URL.")


def cmd_serve(args: argparse.Namespace) -> None:
    from .supervisor import serve

    serve(port=args.port, workers=args.workers, role=args.role)


def cmd_token(args: argparse.Namespace) -> None:
    setup_django()
    from access.bootstrap import bootstrap, token_file
    from yullu_core.database import migration_lock

    with migration_lock():  # a server starting at the same moment bootstraps under this lock too
        bootstrap()
    print(f'# API token (stored in {token_file()}); send it as "Authorization: Bearer <token>"')
    print(token_file().read_text().strip())


def cmd_stdio(args: argparse.Namespace) -> None:
    setup_django()
    from yullu_site.mcp.server import run_stdio

    run_stdio()


def cmd_reconcile(args: argparse.Namespace) -> None:
    setup_django()
    import json

    from sync.services import reconcile_cli
    from yullu_core.errors import UserError

    try:
        result = reconcile_cli(os.path.abspath(args.cwd), args.project_id)
    except UserError as exc:
        fail(str(exc))
    print(json.dumps(result, indent=2))


def cmd_anchors_check(args: argparse.Namespace) -> None:
    """Check every code anchor of the project at --cwd against its HEAD; exit 1 when a memory is stale
    (for CI: a memory describes code that changed since it was written)."""
    setup_django()
    import json

    from memories.anchors.store import check_project, describe
    from memories.scope import resolve
    from yullu_core.errors import UserError

    try:
        scope = resolve(args.project_id, os.path.abspath(args.cwd))
        result = check_project(scope.project_id, scope.git_root)
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
        result = compact(resolve(args.project_id, os.path.abspath(args.cwd)), dry_run=args.dry_run)
    except UserError as exc:
        fail(str(exc))
    print(json.dumps(result, indent=2))


def cmd_dream(args: argparse.Namespace) -> None:
    setup_django()
    import json

    from dreaming.services import dream_cli

    result = dream_cli(args.cwd, args.project_id)
    print(json.dumps(result, indent=2))
    if result["errors"] and not result["sessions_processed"]:  # the pass failed: say why, exit 1
        fail(f"the dream pass failed: {result['errors'][0]}")


def cmd_prune(args: argparse.Namespace) -> None:
    setup_django()
    import json

    from memories.lifecycle import prune_expired

    print(json.dumps(prune_expired(dry_run=args.dry_run), indent=2))


def cmd_export(args: argparse.Namespace) -> None:
    setup_django()
    if args.format == "json":
        from memories.transfer import export_json_cli

        export_json_cli(args.project, args.out, args.vectors)
        return
    from memories.export import export_agents_md
    from memories.models import Memory, ProjectLocation

    known = (
        Memory.objects.filter(project_id=args.project).exists()
        or ProjectLocation.objects.filter(project_id=args.project).exists()
    )
    if args.project and not known:
        fail(f"project {args.project!r} not found (no memories, never seen); `yullu export agents-md` "
             "without --project exports the current folder's project.")  # fmt: skip
    export_agents_md(project_id=args.project, cwd=os.getcwd(), out=args.out)


def cmd_import(args: argparse.Namespace) -> None:
    setup_django()
    import json
    from pathlib import Path

    from memories.transfer import import_path
    from yullu_core.errors import UserError

    try:
        result = import_path(Path(args.path), args.project, args.cwd)
    except UserError as exc:
        fail(str(exc))
    print(json.dumps(result.__dict__, indent=2))
    if result.review:
        print(f"yullu: {len(result.review)} facts read; the category guessed for each is under \"review\"; new "
              "memories are unrated and wait in the admin's review queue (/admin/memories/memory/review/).",
              file=sys.stderr)  # fmt: skip


def cmd_inject(args: argparse.Namespace) -> None:
    from .hooks import inject

    raise SystemExit(inject())


def cmd_mcp_headers(args: argparse.Namespace) -> None:
    from .hooks import mcp_headers

    raise SystemExit(mcp_headers())


def cmd_record_turn(args: argparse.Namespace) -> None:
    from .hooks import record_turn

    raise SystemExit(record_turn())


def cmd_session_start(args: argparse.Namespace) -> None:
    from .hooks import session_start

    raise SystemExit(session_start())


def cmd_pre_compact(args: argparse.Namespace) -> None:
    from .hooks import pre_compact

    raise SystemExit(pre_compact())


def cmd_codex_notify(args: argparse.Namespace) -> None:
    from .hooks import codex_notify

    raise SystemExit(codex_notify(args.payload))


def cmd_install(args: argparse.Namespace) -> None:
    from .install import install

    if args.server:  # a team server: the hooks and MCP entries this install writes point there
        from urllib.parse import urlparse

        if urlparse(args.server).scheme not in ("http", "https") or not urlparse(args.server).netloc:
            fail("--server must be the server's base URL, e.g. https://yullu.example.com")
        os.environ["YULLU_SERVER"] = args.server.strip().rstrip("/")
    if args.token:  # kept where the hooks read it (mode 0600)
        from yullu_core.paths import write_private

        from .hooks import yullu_home

        write_private(yullu_home() / "token", args.token.strip() + "\n")

    install(args.targets, service=args.service, assume_yes=args.yes)


def cmd_uninstall(args: argparse.Namespace) -> None:
    from .install import uninstall

    uninstall(args.targets)


def _target(value: str) -> str:
    # argparse's `choices` rejects an empty nargs="*" list on Python 3.11, so check here.
    if value not in ("claude", "codex", "cursor"):
        raise argparse.ArgumentTypeError(f"unknown target {value!r}; choose claude, codex or cursor")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="yullu", description="Persistent memory for AI coding assistants.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at info level (commands other than "
                        "serve log warnings only unless $YULLU_LOG_LEVEL says otherwise)")  # fmt: skip
    parser.add_argument("--version", action="version", version=f"yullu {version()}")
    # Not required: a bare `yullu` starts the server, like the original program (see main()).
    sub = parser.add_subparsers(dest="command", metavar="COMMAND (default: serve)")

    p = sub.add_parser("serve", help="run the web server, a Celery worker and beat (and embedded Postgres)")
    p.add_argument("--port", type=int, default=None, help="port (default $YULLU_PORT or 47823)")
    p.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (more than 1: stateless MCP)")
    p.add_argument(
        "--role",
        choices=("all", "web", "worker", "beat"),
        default="all",
        help="run one part only, for several machines sharing DATABASE_URL and CELERY_BROKER_URL (default: all)",
    )
    p.set_defaults(fn=cmd_serve)

    p = sub.add_parser("token", help="print the API token (alone on the last line)")
    p.set_defaults(fn=cmd_token)

    p = sub.add_parser("inject", help="UserPromptSubmit hook: print relevant memories (reads hook JSON on stdin)")
    p.set_defaults(fn=cmd_inject)

    p = sub.add_parser("record-turn", help="Stop hook: send the last turn to the dream buffer")
    p.set_defaults(fn=cmd_record_turn)

    p = sub.add_parser("session-start", help="SessionStart hook: print the project primer (reads hook JSON)")
    p.set_defaults(fn=cmd_session_start)

    p = sub.add_parser("pre-compact", help="PreCompact hook: send the whole transcript to the dream buffer")
    p.set_defaults(fn=cmd_pre_compact)

    p = sub.add_parser("mcp-headers", help="the MCP Authorization header as JSON (the Claude Code plugin's helper)")
    p.set_defaults(fn=cmd_mcp_headers)

    p = sub.add_parser("codex-notify", help="Codex `notify` program: send the finished turn to the dream buffer")
    p.add_argument("payload", nargs="*", help="the JSON Codex passes as its last argument")
    p.set_defaults(fn=cmd_codex_notify)

    p = sub.add_parser("install", help="wire Yul'lu into Claude Code, Codex or Cursor")
    p.add_argument("targets", nargs="*", type=_target, help="claude, codex or cursor (default: auto-detect)")
    p.add_argument("--service", action="store_true", help="also install a systemd user unit / launchd agent")
    p.add_argument("--yes", action="store_true", help="answer yes to prompts")
    p.add_argument("--server", default="", help="a team server's base URL (default: this machine's server)")
    p.add_argument("--token", default="", help="your token on that server (`yullu tokens create` prints it)")
    p.set_defaults(fn=cmd_install)

    p = sub.add_parser("uninstall", help="remove what install added")
    p.add_argument("targets", nargs="*", type=_target, help="claude, codex or cursor (default: all)")
    p.set_defaults(fn=cmd_uninstall)

    p = sub.add_parser("stdio", help="serve the MCP tools over stdio")
    p.set_defaults(fn=cmd_stdio)

    p = sub.add_parser("reconcile", help="apply teammates' events from <repo>/.yullu/logs")
    p.add_argument("--cwd", default=os.getcwd())
    p.add_argument("--project-id", default=None)
    p.set_defaults(fn=cmd_reconcile)

    p = sub.add_parser("anchors", help="code anchors: memories that cite code (docs/contract.md §12)")
    anchors_sub = p.add_subparsers(dest="anchors_command", required=True)
    c = anchors_sub.add_parser("check", help="check cited code against HEAD; exit 1 when memories are stale")
    c.add_argument("--cwd", default=os.getcwd(), help="a folder inside the project's git checkout")
    c.add_argument("--project-id", default=None)
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.set_defaults(fn=cmd_anchors_check)

    p = sub.add_parser("sync", help="team event log maintenance")
    sync_sub = p.add_subparsers(dest="sync_command", required=True)
    c = sync_sub.add_parser("compact", help="fold the event log into one snapshot per memory (then commit it)")
    c.add_argument("--cwd", default=os.getcwd())
    c.add_argument("--project-id", default=None)
    c.add_argument("--dry-run", action="store_true", help="only count what would change")
    c.set_defaults(fn=cmd_sync_compact)

    p = sub.add_parser("dream", help="run a dream pass now")
    p.add_argument("--cwd", default=os.getcwd())
    p.add_argument("--project-id", default=None)
    p.set_defaults(fn=cmd_dream)

    p = sub.add_parser("prune", help="archive expired memories (ttl_days ran out) to rejected memories")
    p.add_argument("--dry-run", action="store_true", help="only list what would be archived")
    p.set_defaults(fn=cmd_prune)

    p = sub.add_parser("export", help="export memories")
    p.add_argument("format", choices=["agents-md", "json"], help="agents-md (Markdown) or json (JSON Lines)")
    p.add_argument("--project", default=None, help="only this project (json: default all projects)")
    p.add_argument("--out", default="-", help="file to write, or - for stdout")
    p.add_argument("--vectors", action="store_true", help="json: include the embedding vectors")
    p.set_defaults(fn=cmd_export)

    p = sub.add_parser(
        "import",
        help="import memories: a `yullu export json` file, a Go Yul'lu database, an MCP memory.jsonl, or the "
        "assistants' own memory (a repository's CLAUDE.md / AGENTS.md / .cursor/rules / Copilot instructions, "
        "a Claude Code memory folder, or one such file)",
    )
    p.add_argument("path")
    p.add_argument("--project", default=None, help="put every memory in this project")
    p.add_argument("--cwd", default=os.getcwd(), help="project for formats without one (default: this folder)")
    p.set_defaults(fn=cmd_import)

    from .memory_commands import add_parsers as add_memory_parsers
    from .memory_commands import run as run_memory_command

    add_memory_parsers(sub, run_memory_command)

    from .access_commands import add_parsers as add_access_parsers

    add_access_parsers(sub)

    from .bench_command import add_parser as add_bench_parser

    add_bench_parser(sub)
    return parser


HOOK_COMMANDS = ("inject", "record-turn", "session-start", "pre-compact", "codex-notify", "mcp-headers")


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("yullu")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args([*argv, "serve"])
    if args.verbose:
        from yullu_core.env import env_str

        if env_str("YULLU_LOG_LEVEL").lower() != "debug":
            os.environ["YULLU_LOG_LEVEL"] = "info"
    elif args.command != "serve":
        # A command's output is its answer: log lines (INFO from model loading, searches) only on request.
        os.environ.setdefault("YULLU_LOG_LEVEL", "warning")
    if args.command in HOOK_COMMANDS:
        args.fn(args)  # the hook path: stdlib only, always exits 0
    if args.command != "serve":
        from yullu_core.paths import run_in_callers_folder

        run_in_callers_folder()  # stdio and commands: a call naming no project means this folder
    try:
        run_guarded(lambda: args.fn(args))
    except BrokenPipeError:
        # `yullu export json --out - | head`: the reader left; stop quietly, like other Unix tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        raise SystemExit(141) from None


if __name__ == "__main__":
    main()

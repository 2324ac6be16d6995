"""The `yullu` command. Keep imports lazy: hook commands must start fast (no Django, no torch)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from . import assistant_commands, project_commands
from .argtypes import whole_number
from .django_setup import fail, setup_django


def run_guarded(fn: Callable[[], object]) -> None:
    """Run `fn`, turning configuration and startup errors into one sentence instead of a traceback."""
    from yullu_core.config import ConfigError
    from yullu_core.database import DatabaseUrlError, NewerSchemaError
    from yullu_core.env import EnvError
    from yullu_core.errors import UserError
    from yullu_core.postgres import EmbeddedPostgresError

    try:
        fn()
    except (ConfigError, EnvError, DatabaseUrlError, NewerSchemaError, EmbeddedPostgresError, UserError) as exc:
        fail(str(exc))
    except Exception as exc:
        from django.db import OperationalError

        from yullu_core.failures import NotAnswering, first_line, translate

        # A database that does not answer is told as one that cannot be reached: "start it, or check
        # DATABASE_URL" helps at a terminal, where "try again shortly" (the server's clients) does not.
        if (said := translate(exc)) is not None and not isinstance(said, NotAnswering):
            fail(str(said))
        if isinstance(exc, BrokenPipeError):
            raise  # the reader left (`| head`): main stops quietly, this is no error to explain
        if isinstance(exc, OSError):  # a path the command was given: missing, not a folder, not writable
            where = f"{exc.filename}: " if exc.filename else ""
            fail(f"{where}{exc.strerror or exc}.")
        import psycopg

        # psycopg's own too: the start's connection to the embedded server is made before Django's (walk 15: a
        # frozen server's ConnectionTimeout was a traceback)
        if not isinstance(exc, OperationalError | psycopg.OperationalError):
            raise
        fail(unreachable(first_line(exc) or type(exc).__name__, silent=isinstance(said, NotAnswering)))


def unreachable(said: str, silent: bool = False) -> str:
    """The sentence for a database lost mid-command, or (`silent`) one that takes the connection and says nothing.
    The embedded one is no DATABASE_URL to check, and a running `yullu serve` starts it again by itself (walk 15:
    a kill -9 during `yullu dream` said "start it, or check DATABASE_URL")."""
    from django.conf import settings

    if getattr(settings, "DATABASE_KIND", "") == "embedded" and silent:
        return (
            f"the embedded PostgreSQL runs but does not answer ({said}): stopped (SIGSTOP) or the machine overloaded; "
            "run this command again once it answers."
        )
    if getattr(settings, "DATABASE_KIND", "") == "embedded":
        return (
            f"lost the embedded PostgreSQL ({said}); a running `yullu serve` starts it again within seconds: "
            "run this command again (`yullu doctor` says whether the database answers)."
        )
    return f"cannot reach the database ({said}); start it, or check DATABASE_URL."


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="yullu", description="Persistent memory for AI coding assistants.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at info level (commands other than "
                        "serve log warnings only unless $YULLU_LOG_LEVEL says otherwise)")  # fmt: skip
    parser.add_argument("--version", action="version", version=f"yullu {version()}")
    # Not required: a bare `yullu` starts the server, like the original program (see main()).
    sub = parser.add_subparsers(dest="command", metavar="COMMAND (default: serve)")

    p = sub.add_parser("serve", help="run the web server, a Celery worker and beat (and embedded Postgres)")
    p.add_argument("--port", type=whole_number(1, 65535), default=None, help="port (default $YULLU_PORT or 47823)")
    p.add_argument("--workers", type=whole_number(1, 256), default=1,
                   help="uvicorn worker processes (MCP sessions routed to the worker that opened them)")  # fmt: skip
    p.add_argument(
        "--role",
        choices=("all", "web", "worker", "beat"),
        default="all",
        help="run one part only, for several machines sharing DATABASE_URL and CELERY_BROKER_URL (default: all)",
    )
    p.set_defaults(fn=cmd_serve)

    p = sub.add_parser("token", help="print the API token (alone on the last line)")
    p.set_defaults(fn=cmd_token)

    assistant_commands.add_parsers(sub)

    p = sub.add_parser("stdio", help="serve the MCP tools over stdio")
    p.set_defaults(fn=cmd_stdio)

    project_commands.add_parsers(sub)

    from .memory_commands import add_parsers as add_memory_parsers
    from .memory_commands import run as run_memory_command

    add_memory_parsers(sub, run_memory_command)

    from .access_commands import add_parsers as add_access_parsers

    add_access_parsers(sub)

    from .model_commands import add_parsers as add_model_parsers

    add_model_parsers(sub)

    from .bench_command import add_parser as add_bench_parser

    add_bench_parser(sub)
    name_the_commands(parser)
    return parser


def name_the_commands(parser: argparse.ArgumentParser) -> None:
    """Name each required group of commands by its choices: argparse named it by its internal `dest`
    (`yullu anchors` said "the following arguments are required: anchors_command", `yullu memories` "op"; walk 9)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            if action.required and action.metavar is None:
                action.metavar = "{" + ",".join(action.choices) + "}"
            said = {pseudo.dest: pseudo.help for pseudo in action._choices_actions}
            for name, child in action.choices.items():
                # `yullu token --help` showed a usage line and -h only: what the command does was in the list
                # one level up. Its line there, as a sentence, unless it has a description of its own.
                if child.description is None and (line := said.get(name)):
                    child.description = line[0].upper() + line[1:] + ("" if line.endswith(".") else ".")
                name_the_commands(child)


GLOBAL_OPTIONS = ("-v", "--verbose")


def with_default_command(argv: list[str]) -> list[str]:
    """A bare `yullu` is `yullu serve`, its options included: `yullu --port 47900` was "invalid choice:
    '47900'" (walk 9)."""
    i = 0
    while i < len(argv) and argv[i] in GLOBAL_OPTIONS:
        i += 1
    if i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-h", "--help", "--version"):
        return [*argv[:i], "serve", *argv[i:]]
    return argv


def innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command `args` chose (`yullu memories list` → its own), for its usage line."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if chosen is not None:
                return innermost(chosen, args)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Arguments a command does not take are refused with that command's usage: argparse printed the top
    level's (`yullu token extra` showed `usage: yullu [-h] [-v] [--version] COMMAND …`; walk 9)."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        innermost(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    if getattr(args, "user", None) is True and getattr(args, "project", None):  # `memories add --user` (a flag)
        # walk 22: the --project was taken without a word, and the memory went to every project all the same
        innermost(parser, args).error("argument --user: a personal memory is for every project; leave out --project")
    return args


HOOK_COMMANDS = ("inject", "record-turn", "session-start", "pre-compact", "codex-notify", "mcp-headers")


def version() -> str:
    from yullu_core.version import installed

    return installed()


def refuse_empty_project(args: argparse.Namespace) -> None:
    """`--project ""` (or `--project-id ""`) is a blank project id, refused like `--project "   "`: read as
    "not given", it fell back to the current folder's project and acted there."""
    from yullu_core.gitorigin import normalise_project_id

    for name in ("project", "project_id"):
        value = getattr(args, name, None)
        if isinstance(value, str) and not normalise_project_id(value):
            fail("project_id must not be empty.")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parse(parser, with_default_command(argv))
    if args.command is None:
        args = parse(parser, [*argv, "serve"])
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
    refuse_empty_project(args)
    try:
        run_guarded(lambda: args.fn(args))
    except BrokenPipeError:
        # `yullu export json --out - | head`: the reader left; stop quietly, like other Unix tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        raise SystemExit(141) from None


if __name__ == "__main__":
    main()

"""`yullu install|uninstall` and the hook commands (`inject`, `record-turn`, `session-start`,
`pre-compact`, `mcp-headers`, `codex-notify`): wiring Yul'lu into an assistant, and what the
assistant's hooks run. Importing this module costs nothing: the hooks must start fast."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .django_setup import fail


def add_parsers(sub: Any) -> None:
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
    # Uninstall never asks; --yes is taken so a script written against `install --yes` runs both.
    p.add_argument("--yes", action="store_true", help="accepted for scripts; uninstall asks nothing")
    p.set_defaults(fn=cmd_uninstall)


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
        server = _server_url(args.server)
        if args.token:
            _refuse_a_local_servers_home(args.token.strip())
        os.environ["YULLU_SERVER"] = server
        _check_team_token(server, args.token)
    if args.token:  # kept where the hooks read it (mode 0600)
        from yullu_core.paths import write_private

        from .hooks import yullu_home

        home = yullu_home()  # a laptop that never ran `yullu serve` has no home folder yet
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_private(home / "token", args.token.strip() + "\n")

    install(args.targets, service=args.service, assume_yes=args.yes)


def _refuse_a_local_servers_home(given: str) -> None:
    """The team token goes to YULLU_HOME/token, where the hooks read it. In the home of this machine's own
    server (the first `yullu serve` wrote its admin password there) that file holds the local owner's token:
    install replaced it, and the local MCP entry and hooks lost their server until `yullu install` ran again
    (walk 9; the README asks for a YULLU_HOME of its own on such a laptop)."""
    from .hooks import token, yullu_home

    home = yullu_home()
    if (home / "admin-password").exists() and token() not in ("", given):
        fail(
            f"{home} belongs to this machine's own Yul'lu server, whose token would be replaced by the team "
            f"server's; give the team server a home of its own (YULLU_HOME=$HOME/.local/share/yullu-team yullu "
            f"install --server … --token …); nothing was installed."
        )


def _server_url(given: str) -> str:
    """`--server` as the base URL the hooks and MCP entries use, or `fail`. (A port that is not a number or
    a broken IPv6 host raised ValueError from inside urllib when the token was checked: a traceback.)"""
    from urllib.parse import urlparse

    url = given.strip().rstrip("/")
    try:
        parts = urlparse(url)
        # (reading `.port` raises ValueError for one that is not a number or is out of range)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 0) >= 0
    except ValueError:
        ok = False
    if not ok:
        fail("--server must be the server's base URL, e.g. https://yullu.example.com")
    return url


def _check_team_token(server: str, given: str | None) -> None:
    """Ask the team server whether it takes the token before anything is written: a refused one
    stops the install with the server's reason; a server that cannot be reached is a warning."""
    from http.client import HTTPException

    from .hooks import token
    from .team_server import token_problem

    try:
        problem = token_problem(server, given.strip() if given else token())
    except (OSError, HTTPException) as exc:  # (HTTPException: a program that answers, but not in HTTP)
        print(
            f"warning: could not reach {server} to check the token ({getattr(exc, 'reason', exc)}); installing anyway."
        )
        return
    if problem:
        fail(f"{problem}; nothing was installed.")


def cmd_uninstall(args: argparse.Namespace) -> None:
    from .install import uninstall

    uninstall(args.targets)


def _target(value: str) -> str:
    # argparse's `choices` rejects an empty nargs="*" list on Python 3.11, so check here.
    if value not in ("claude", "codex", "cursor"):
        raise argparse.ArgumentTypeError(f"unknown target {value!r}; choose claude, codex or cursor")
    return value

"""`yullu users add`, `yullu tokens create|list|revoke`, `yullu grant`, `yullu revoke-grant`
(docs/contract.md §11): thin adapters over access.services, for whoever runs the server. The CLI talks to the
database directly, so it acts as the system (every change is still audited, as by `system`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .argtypes import a_project, a_token_name, an_id, days
from .django_setup import setup_django

TOKEN_DAYS = 3650  # access.services.MAX_TOKEN_DAYS, not imported: building the parser loads no Django

ROLES = ("read", "write", "admin")


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("users", help="people who use a team server")
    ops = p.add_subparsers(dest="op", required=True)
    q = ops.add_parser("add", help="add a user (--admin: a superuser; --staff: a reviewer in the admin)")
    q.add_argument("name", help="letters, digits and @ . + - _")
    q.add_argument("--admin", action="store_true", help="a superuser, who may do everything")
    q.add_argument(
        "--staff",
        action="store_true",
        help="may log in to the admin to review the projects their grants open (prints a password, shown once)",
    )
    q.set_defaults(fn=cmd_users_add)
    q = ops.add_parser("staff", help="let a user log in to the admin as a reviewer; prints a new password (shown once)")
    q.add_argument("name", help="a user name (`yullu users add NAME` first)")
    q.set_defaults(fn=cmd_users_staff)

    p = sub.add_parser("tokens", help="API tokens of users (stored hashed; shown once)")
    ops = p.add_subparsers(dest="op", required=True)
    q = ops.add_parser("create", help="create a token; prints it alone on the last line")
    q.add_argument("--user", required=True, help="whose token it is (`yullu users add NAME` first)")
    q.add_argument(
        "--name",
        type=a_token_name,
        default="default",
        help="a label, e.g. the laptop it is for (100 characters at most)",
    )
    q.add_argument("--read-only", action="store_true", help="may retrieve and list, never write")
    q.add_argument(
        "--expires-days",
        type=days(TOKEN_DAYS),
        default=None,
        help="expire after this many days (up to 3650; default: never)",
    )
    q.set_defaults(fn=cmd_tokens_create)
    q = ops.add_parser("list", help="tokens (never their values): id, user, name, created, last used, expiry")
    q.add_argument("--user", default=None, help="only this user's tokens")
    q.add_argument("--json", action="store_true", help="the tokens as JSON (for scripts)")
    q.set_defaults(fn=cmd_tokens_list)
    q = ops.add_parser("revoke", help="delete a token by id (`yullu tokens list` shows ids)")
    q.add_argument("id", type=an_id, help="the token's id (the first column of `yullu tokens list`)")
    q.set_defaults(fn=cmd_tokens_revoke)

    p = sub.add_parser("grant", help="give USER a role on PROJECT: read, write or admin")
    p.add_argument("user", help="a user name (`yullu users add NAME`)")
    p.add_argument("project", type=a_project, help="a project id (github.com/acme/app) or its clone URL")
    p.add_argument("role", choices=ROLES, help="read; write (also store, change, dream); admin (also review, grants)")
    p.add_argument(
        "--create",
        action="store_true",
        help="make PROJECT when no project has that id yet (without it an unknown id, often a typo, is refused, "
        "exit 1, naming the closest known ids)",
    )
    p.set_defaults(fn=cmd_grant)
    p = sub.add_parser("revoke-grant", help="take USER's role on PROJECT away")
    p.add_argument("user", help="a user name")
    p.add_argument("project", type=a_project, help="a project id (github.com/acme/app) or its clone URL")
    p.set_defaults(fn=cmd_revoke_grant)


def cmd_users_add(args: argparse.Namespace) -> None:
    setup_django()
    from access import services

    user = services.add_user(args.name, admin=args.admin, staff=args.staff)
    name = user.get_username()
    kind = "superuser" if args.admin else "staff reviewer" if args.staff else "user"
    # Walk 23: the token alone left Ben refused by the project he came for; a superuser needs no grant.
    role = "" if args.admin else f", and a role on each project they work on: yullu grant {name} PROJECT write"
    print(f"added {kind} {name}; give them a token: yullu tokens create --user {name}{role}")
    if args.admin or args.staff:
        _print_login(user)


def cmd_users_staff(args: argparse.Namespace) -> None:
    setup_django()
    from access import services

    user = services.make_staff(args.name)
    kind = "a superuser" if user.is_superuser else "a staff reviewer"
    print(f"{user.get_username()} is {kind}; their grants decide which projects the admin shows them")
    _print_login(user)


def _print_login(user: Any) -> None:
    from access import services

    password = services.admin_password(user)
    name = user.get_username()
    print(f"admin login: {name} / {password} (shown once; they change it in the admin: Change password)")


def cmd_tokens_create(args: argparse.Namespace) -> None:
    setup_django()
    from access import services

    issued = services.create_token(
        services.user_named(args.user), args.name, read_only=args.read_only, expires_days=args.expires_days
    )
    t = issued.token
    flags = ", read-only" if t.read_only else ""
    expiry = f", expires {t.expires_at:%Y-%m-%d %H:%M} UTC" if t.expires_at else ""
    print(f"# token {t.pk} for {args.user} ({t.name}{flags}{expiry}); shown once, stored only hashed")
    print(issued.raw)


def cmd_tokens_list(args: argparse.Namespace) -> None:
    setup_django()
    from access import services

    rows = services.list_tokens(args.user)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for r in rows:
        used = (r["last_used_at"] or "never")[:16]
        expires = f" expires {r['expires_at'][:16]}" if r["expires_at"] else ""
        ro = " read-only" if r["read_only"] else ""
        print(f"{r['id']:>5}  {r['user']:<20} {r['name']:<20} created {r['created_at'][:16]}  used {used}{expires}{ro}")
    if not rows:
        print("no tokens")


def cmd_tokens_revoke(args: argparse.Namespace) -> None:
    setup_django()
    from access import services

    row = services.revoke_token(args.id)
    if row.get("already_revoked"):
        print(f"token {row['id']} ({row['user']} / {row['name']}) was already revoked on {row['revoked_at'][:16]}")
        return
    print(f"revoked token {row['id']} ({row['user']} / {row['name']})")
    _renew_the_token_file()


def _renew_the_token_file() -> None:
    """The owner's token file held the token just revoked: issue its successor now, as the next `yullu serve` or
    `yullu token` would. Walk 18 revoked it: until a restart the hooks sent a refused token, and `yullu install
    codex` copied the revoked token into ~/.codex/config.toml again ("already installed; nothing changed")."""
    from access.bootstrap import ensure_token, token_file
    from yullu_core.database import migration_lock

    if not token_file().exists():
        return
    with migration_lock():  # a server starting now bootstraps under this lock too
        if not ensure_token():
            return
    print(
        f"{token_file()} held that token: it now holds a new one (the hooks and the Claude Code plugin read it). "
        "Codex and Cursor keep a copy: run `yullu install codex` / `yullu install cursor` again."
    )


def cmd_grant(args: argparse.Namespace) -> None:
    setup_django()
    from access import services

    g = services.grant(args.user, args.project, args.role, create=args.create)
    print(f"{g['user']} now has {g['role']} on {g['project_id']}{_typed_as(args.project, g['project_id'])}")


def cmd_revoke_grant(args: argparse.Namespace) -> None:
    setup_django()
    from access import services

    g = services.revoke_grant(args.user, args.project)
    print(f"{args.user} no longer has a role on {g['project_id']}{_typed_as(args.project, g['project_id'])}")


def _typed_as(given: str, project_id: str) -> str:
    """Name the clone URL a project id was read from, so the id the grant is on is no surprise."""
    return f" (the project id of {given.strip()})" if given.strip() != project_id else ""

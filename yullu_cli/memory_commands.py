"""`yullu memories list|search|show|add|rm`, `yullu export` and `yullu doctor`: memory operations and a health
check for people at a terminal. Human output by default, `--json` for scripts. Thin adapters over
the same services as MCP and REST."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .argtypes import MAX_ID, an_id, folder, ttl_days, whole_number

if TYPE_CHECKING:
    from yullu_site.monitoring.health import Part

WIDTH = 100


def add_parsers(sub: Any, run: Callable[[argparse.Namespace], None]) -> None:
    p = sub.add_parser("memories", help="list, search, show, add or remove memories")
    ops = p.add_subparsers(dest="op", required=True)

    def scoped(name: str, help_text: str, *, by_id: bool = False) -> argparse.ArgumentParser:
        q = ops.add_parser(name, help=help_text)
        if by_id:  # an id names the memory; a project given too must be its (as MCP's and REST's cwd/project_id)
            q.add_argument("--project", "--project-id", default=None, help="only if the memory is this project's")
            q.add_argument("--cwd", type=folder, default=None, help="only if the memory is this folder's project's")
        else:
            q.add_argument("--project", "--project-id", default=None, help="project id (default: from --cwd)")
            q.add_argument("--cwd", type=folder, default=os.getcwd(), help="a folder of the project (default: here)")
        q.add_argument("--json", action="store_true", help="machine-readable output")
        q.set_defaults(fn=run)
        return q

    q = scoped("list", "the project's current memories, most recently updated first")
    q.add_argument(
        "--limit", type=whole_number(1, MAX_ID), default=20, help="at most this many (default 20, up to 200)"
    )
    q.add_argument(
        "--offset", type=whole_number(0, MAX_ID), default=0, help="skip this many of the newest (the next page)"
    )
    q = scoped("search", "search the project's (and your personal) memories")
    # Words typed without quotes are the query too (walk 22: "unrecognized arguments: do we deploy").
    q.add_argument("query", nargs="+", help="what you want to know, in plain words (quotes optional)")
    q.add_argument("--limit", type=whole_number(1, MAX_ID), default=10, help="at most this many (default 10)")
    q = scoped("show", "one memory with every field", by_id=True)
    q.add_argument("id", type=an_id, help="the memory's id (#N in list and search)")
    q = scoped("add", "store a memory (duplicates are not stored twice)")
    q.add_argument("content", help="the fact; - reads it from standard input")
    q.add_argument("--category", default=None, help="process, decision, gotcha, domain or style")
    q.add_argument("--tags", default="", help="comma-separated")
    q.add_argument("--importance", default=None, help="low, normal or high")
    # The service's rule and sentence (memories/write/validation.py), as a usage error: exit 2 like --limit 0.
    q.add_argument("--ttl-days", type=ttl_days, default=None, help="expire after this many days (1-3650)")
    q.add_argument("--user", action="store_true", help="a personal memory for every project (never shared)")
    q = scoped("rm", "delete a memory by id", by_id=True)
    q.add_argument("id", type=an_id, help="the memory's id (#N in list and search)")

    checks = "config, database, broker, disk, embedder, reasoner, team log, server, hooks and this folder"
    p = sub.add_parser("doctor", help=f"check {checks}; exit 1 when one fails")
    p.add_argument("--json", action="store_true", help="the checks as JSON (for scripts)")
    p.set_defaults(fn=run)


# --- memories ---------------------------------------------------------------------------


def export_json_to(project_id: str | None, out: str, vectors: bool) -> None:
    """`yullu export json`: to standard output (`-`) or a file."""
    from memories.transfer.export import export_json
    from yullu_core.outfile import write_file

    if out == "-":
        export_json(project_id, sys.stdout, vectors=vectors)
        return
    # Personal memories are in it: readable by the user only; a FIFO, symlink or device there is refused.
    n = write_file(out, lambda fh: export_json(project_id, fh, vectors=vectors), 0o600)
    print(f"exported {n} memories to {out}", file=sys.stderr)


def export_agents_md_to(project_id: str | None, cwd: str, out: str) -> None:
    """`yullu export agents-md`: the project (--project, else the folder's) to standard output or a file."""
    from memories.scope import resolve
    from memories.transfer.export import render_agents_md
    from yullu_core.outfile import write_file
    from yullu_core.text import escape_controls

    scope = resolve(project_id, None if project_id else cwd)
    text = escape_controls(render_agents_md(scope.project_id))  # a teammate's escapes never reach a terminal
    if out == "-":
        sys.stdout.write(text)
    else:
        write_file(out, lambda fh: fh.write(text), 0o644)  # a file to commit; never through a symlink or FIFO
        print(f"wrote {out} ({text.count(chr(10) + '- ')} memories)", file=sys.stderr)


def _short(content: Any) -> str:
    text = " ".join(str(content).split())
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


def _line(m: Mapping[str, Any], score: float | None = None) -> str:
    sim = f" {score:.2f}" if score is not None else ""
    return f"#{m['id']}{sim} [{m.get('category') or 'note'}] {_stale_note(m)}{_short(m['content'])}"


def _stale_note(m: Mapping[str, Any]) -> str:
    """The hooks' and build_context's words for a stale memory (docs/contract.md §12). Walk 18: `yullu memories
    search` and `list` showed a memory whose cited code had changed like any other; only `show` said so."""
    if not m.get("stale"):
        return ""
    gone = [a for a in m.get("anchors") or [] if a.get("status") in ("changed", "missing")]
    paths = ", ".join(dict.fromkeys(a.get("current_path") or a["path"] for a in gone))
    return f"(cited code changed since this was written: {paths}) "


def _anchors_text(anchors: list[dict[str, Any]]) -> str:
    """`app/billing/clock.py::Clock.now (changed), app/x.py:4-9 (ok)`: where each cited code is and its status."""
    parts = []
    for a in anchors:
        where = a.get("current_path") or a["path"]
        where += f"::{a['symbol']}" if a.get("symbol") else ""
        lines = a.get("current_lines") or a.get("lines")
        where += f":{lines[0]}-{lines[1]}" if lines and not a.get("symbol") else ""
        parts.append(f"{where} ({a.get('status') or 'not checked'})")
    return ", ".join(parts) or "none"


def memories(args: argparse.Namespace) -> int:
    from memories.anchors.checks import annotate
    from memories.scope import project_known, resolve, user_scope
    from memories.search import stats
    from memories.wire import memory_to_wire
    from memories.write import create, edit, validation
    from yullu_core.errors import UserError

    out: Any
    if args.op in ("show", "rm"):
        # `--project`/`--cwd` were taken and ignored: `rm 7 --project acme/app` deleted project b's memory 7.
        named = resolve(args.project, args.cwd, remember=False).project_id if args.project or args.cwd else None
        memory = edit.get_memory_in(args.id, named)
        if args.op == "rm":
            edit.delete_memory(memory.pk, source="cli")
            out, human = {"id": memory.pk, "uuid": str(memory.uuid), "deleted": True}, f"deleted #{memory.pk}"
            if note := edit.left_in_the_log(memory.project_id, f"#{memory.pk}'s"):
                print(f"yullu: {note}.", file=sys.stderr)
        else:
            out = dict(memory_to_wire(memory))
            annotate(memory.project_id, [out])  # the code it cites, checked against HEAD (docs/contract.md §12)
            width = max(map(len, out))  # a fixed 14 left `held_for_review` (15) one column out of line
            human = "\n".join(f"{k:>{width}}: {_anchors_text(v) if k == 'anchors' else v}" for k, v in out.items())
        return _print(args, out, human)
    scope = user_scope() if getattr(args, "user", False) else resolve(args.project, args.cwd)
    if args.op == "list":
        if args.project and not getattr(args, "user", False) and not project_known(scope.project_id):
            # a misspelt id listed "0 shown" and exit 0, as if the project had no memories
            raise UserError(
                f"project {args.project!r} not found (no memories, never seen); `yullu memories list` without "
                "--project lists the current folder's project."
            )
        most = stats.LIST_LIMIT.hi  # as GET /api/memories' page
        rows = stats.list_memories(scope.project_id, min(args.limit, most), args.offset)
        annotate(scope.project_id, rows)  # `stale` and `anchors`, as search results and `show` carry them
        if args.limit > len(rows) == most:
            _say_more(scope.project_id, most, args.offset)
        out = {"project_id": scope.project_id, "offset": args.offset, "memories": rows}
        after = f" after the newest {args.offset:,}" if args.offset else ""
        cut = rows and len(rows) == min(args.limit, most)  # a shorter page reached the end: nothing left out
        shown = f"{len(rows)}{_of_total(scope.project_id, len(rows) + args.offset) if cut else ''} shown{after}"
        human = "\n".join([f"{scope.project_id}: {shown}", *(_line(m) for m in rows)])
    elif args.op == "search":
        from memories.search.merged import Recall  # only here: the search stack (and its secret scanner) is ~0.5 s

        found = Recall.judged(" ".join(args.query), max(1, min(args.limit, 50))).run(scope.project_id, log=False)
        out = {"project_id": scope.project_id, "results": found.results}
        lines = [_line(h, h.get("similarity")) for h in found.results]
        human = "\n".join([f"{scope.project_id}: {len(lines)} found", *lines])
    else:
        tags = validation.tags_from_text(args.tags)
        stored = create.store_memory(
            scope,
            sys.stdin.read() if args.content == "-" else args.content,
            args.category,
            tags,
            source="cli",
            importance=args.importance,
            ttl_days=args.ttl_days,
        )
        out = stored.as_dict()
        verb = "stored" if stored.created else f"already there as #{stored.duplicate_of}; not stored again:"
        similar = [f"  #{x['id']} {x['similarity']:.2f} {_short(x['content'])}" for x in out.get("similar", [])]
        related = ["similar memories (update or supersede one of them if this replaces it):", *similar]
        # a personal memory's scope id (`~user:1`) means nothing to its owner (walk 22)
        where = "your personal memories (every project, never shared)" if args.user else scope.project_id
        human = "\n".join([f"{verb} #{stored.memory.pk} in {where}", *(related if similar else [])])
    return _print(args, out, human)


def _of_total(project_id: str, seen: int) -> str:
    """` of 14` when the project holds more memories than the list reached: `--limit 3` said "3 shown" and
    nothing of the other eleven (walk 20). Counted as the list reads them (current ones only)."""
    from memories.search import stats

    return f" of {total:,}" if (total := stats.count_current(project_id)) > seen else ""


def _say_more(project_id: str, most: int, offset: int = 0) -> None:
    """One line on stderr when a list stops at its cap (`most`) and the project has more: `--limit 5000`
    quietly showed 200 (walk 11), and the 201st could not be listed at all."""
    from memories.tallies import memory_counts

    total = memory_counts(project_id).memories
    if total > offset + most:
        which = f"the newest {most}" if not offset else f"{offset + 1:,}-{offset + most:,}"
        print(f"yullu: showing {which} of {total:,} memories (a list shows at most {most}); "
              f"`--offset {offset + most}` shows the next, `yullu export json --project {project_id}` writes "
              "them all.", file=sys.stderr)  # fmt: skip


def _print(args: argparse.Namespace, data: Any, human: str) -> int:
    from yullu_core.text import escape_controls

    # JSON escapes every control and bidi character itself (ensure_ascii); text is escaped here.
    print(json.dumps(data, indent=2, default=str) if args.json else escape_controls(human))
    return 0


# --- doctor -----------------------------------------------------------------------------


def _check(name: str, fn: Callable[[], tuple[bool, str, str]]) -> dict[str, Any]:
    """A check of this terminal's own setup (config, server, hooks): a failure fails doctor."""
    try:
        ok, detail, fix = fn()
    except Exception as exc:  # a check that blows up is a failed check, said in one line
        ok, detail, fix = False, f"{type(exc).__name__}: {str(exc)[:200]}", "see the message above"
    return {"check": name, "ok": ok, "status": "ok" if ok else "fail", "detail": detail, "fix": "" if ok else fix}


def _warning(name: str, fn: Callable[[], tuple[bool, str, str]]) -> dict[str, Any]:
    """A check whose failure is a warning (exit 0): it depends on where doctor is run from."""
    return {**(found := _check(name, fn)), "status": "ok" if found["ok"] else "warn"}


def _shown(part: Part) -> dict[str, Any]:
    """A part of the health model (yullu_site/monitoring/health.py) as a doctor line: an optional part's
    problems are "warn" and leave the exit code 0."""
    status = "ok" if part.ok else "fail" if part.required else "warn"
    detail = part.detail if part.ok else " ".join(part.problems)
    return {"check": part.name, "ok": part.ok, "status": status, "detail": detail, "fix": "" if part.ok else part.fix}


def _system_checks() -> Iterator[dict[str, Any]]:
    from yullu_site.monitoring import health

    for part in health.judge_each(health.DOCTOR, {"embedder": lambda: health.embedder(probe=True)}):
        yield _served_reasoner(_shown(part)) if part.name == "reasoner" else _shown(part)


def _config() -> tuple[bool, str, str]:
    from yullu_core.config import ConfigError, config_path, load

    try:
        load()
    except ConfigError as exc:  # its sentence says what to do: printed once, without a class name
        return False, str(exc), str(exc)
    return True, str(config_path()), ""


def _project_files() -> list[Any]:
    """This folder's project layers that exist: `<repo>/.yullu/config.toml`, the user's per-project file."""
    from pathlib import Path

    from yullu_core.config import ConfigError, load, project_user_file, repo_file
    from yullu_core.gitorigin import find_git_root, project_id_of

    root = find_git_root(Path.cwd())
    try:
        files = [repo_file(root, load()["sync"]["dir"])] if root is not None else []
    except ConfigError:  # a `.yullu` leading out of the repository: the check says so
        return [root]
    return [f for f in [*files, project_user_file(project_id_of(Path.cwd()))] if f.is_file()]


def _project_config() -> tuple[bool, str, str]:
    """This folder's project layers, as recall and dreaming read them. Walk 18: a wrong value committed in
    `.yullu/config.toml` was not in doctor while this project's recalls silently used the global settings
    and beat's scheduled dreaming stopped (for every project, dreaming.services.due_projects)."""
    from pathlib import Path

    from yullu_core.config import ConfigError, load, load_for_project
    from yullu_core.gitorigin import find_git_root, project_id_of

    here = Path.cwd()
    try:
        load_for_project(project_id_of(here), find_git_root(here), load())
    except ConfigError as exc:
        return False, str(exc), "fix that file: until then this project uses the global settings and is not dreamed"
    return True, ", ".join(str(f) for f in _project_files()), ""


def _server() -> tuple[bool, str, str]:
    import urllib.error
    import urllib.request

    from yullu_core.env import env_str

    from .hooks import server_url, yullu_home
    from .supervised import ended_because

    url = server_url() + "/api/status"
    try:
        with urllib.request.urlopen(url, timeout=3) as response:  # noqa: S310 (loopback only)
            body = response.read()
    except urllib.error.HTTPError as exc:
        body = exc.read()  # a site that is not ready answers 503 with its status
    except OSError as exc:
        if env_str("YULLU_SERVER"):  # a team server is its admin's to start
            return False, f"{url}: {exc}", "check the URL and your network, or ask the server's admin"
        if ended := ended_because(yullu_home() / "run"):
            return False, f"{url}: {exc}; {ended}", STOPPED_FIX
        return False, f"{url}: {exc}", "start it with `yullu serve` (or `yullu install --service`)"
    status = _status_of(body)
    if status is None:
        return False, f"{url}: another program answers on this port, not Yul'lu", NOT_OURS_FIX
    if status["ready"]:
        return _team_token(url)
    # (the disk too: a write that found it full leaves the site not ready for a minute, and doctor named no reason)
    down = [part for part in ("database", "broker", "embedder", "disk") if not _part_ok(status.get(part))]
    return False, f"{url} answers but is not ready" + (f" ({', '.join(down)})" if down else ""), "wait, or see its log"


def _roles_ended() -> str | None:
    """A worker or beat supervisor (`yullu serve --role worker|beat`) that stopped by itself leaves the site
    answering, ready, with no task run: what it ended with, kept in run/, or None (a team server's: its admin's)."""
    from yullu_core.env import env_str

    from .hooks import yullu_home
    from .supervised import ended_because

    return None if env_str("YULLU_SERVER") else ended_because(yullu_home() / "run", roles_only=True)


def _team_token(url: str) -> tuple[bool, str, str]:
    """A ready server still refuses a revoked, expired or mistyped token: every MCP call and hook then
    fails (the hooks silently), so doctor asks it with the token the hooks send. This machine's own server
    too: its token file deleted and written again by hand (or by another home's `yullu token`) while it
    served, the hooks were refused and doctor said ok (chaos drill, round 23). No token file: the hooks
    line says so."""
    from yullu_core.env import env_str

    from .hooks import damaged_token_file, token, yullu_home
    from .team_server import token_problem

    team, own = env_str("YULLU_SERVER").rstrip("/"), url.removesuffix("/api/status")
    if damaged := damaged_token_file():  # chaos round 25: an empty token file was "ok server … ready"
        return False, damaged, _token_file_fix()
    sent = token()
    if not sent or not (problem := token_problem(team or own, sent)):
        return True, url + " ready", ""
    if team:
        return False, problem, f"then run `yullu install --server {team} --token NEW`"
    return False, f"{own} refuses the token in {yullu_home() / 'token'}", _token_file_fix()


STOPPED_FIX = "fix what that says (its log above it has the detail), then start it again with `yullu serve`"
NOT_OURS_FIX = "stop that program, or run Yul'lu on another port: `yullu serve --port N`, YULLU_PORT=N or [server].port"


def _status_of(body: bytes) -> dict[str, Any] | None:
    """/api/status's answer, or None when what answered is not a Yul'lu site (a page, other JSON)."""
    try:
        status = json.loads(body)
    except ValueError:
        return None
    return status if isinstance(status, dict) and isinstance(status.get("ready"), bool) else None


def _part_ok(part: object) -> bool:
    return not isinstance(part, dict) or bool(part.get("ok", True))


def _hooks() -> tuple[bool, str, str]:
    import shutil
    from pathlib import Path

    from .assistants.claude import HOOKS, enabled_plugin
    from .hooks import yullu_home
    from .install import stale_hooks

    found: list[str] = []
    missing: list[str] = []
    plugin = enabled_plugin(Path.home())
    settings_path = Path.home() / ".claude" / "settings.json"
    if settings_path.exists():
        text = settings_path.read_text(errors="replace")
        for verb in HOOKS.values():
            if f" {verb}" in text and "yullu" in text:
                found.append(f"claude {verb}")
            elif not plugin:
                missing.append(f"claude {verb}")
    if plugin:
        if found:  # README: "Do not use both for Claude Code"
            detail = f"Claude Code runs each hook twice: plugin {plugin} and `yullu install`'s ({', '.join(found)})"
            return False, detail, f"keep one: `yullu uninstall claude` or `claude plugin uninstall {plugin}`"
        found.append(f"claude plugin {plugin}")
    off_path = bool(plugin) and shutil.which("yullu") is None
    if off_path:
        missing.append("`yullu` on PATH (the plugin's hooks and MCP header run it)")
    codex = Path.home() / ".codex" / "config.toml"
    if codex.exists():
        text = codex.read_text(errors="replace")
        (found if "codex-notify" in text else missing).append("codex notify")
        (found if "[mcp_servers.yullu]" in text else missing).append("codex mcp")
    cursor = Path.home() / ".cursor" / "mcp.json"
    if cursor.exists() and '"yullu"' in cursor.read_text(errors="replace"):
        found.append("cursor mcp")  # walk 18: a Cursor-only install was "no assistant configuration found"
    if not found and not missing:
        return False, "no assistant configuration found", "run `yullu install` (claude, codex or cursor)"
    no_token = not (yullu_home() / "token").exists()
    if no_token:
        missing.append("API token file")
    detail = "installed: " + (", ".join(found) or "nothing") + (f"; missing: {', '.join(missing)}" if missing else "")
    stale = stale_hooks(Path.home())
    if stale:
        # `|| true` keeps a prompt from being blocked, so such a hook fails silently: say it here.
        detail += "".join(f"; {', '.join(hooks)} run {gone}, which no longer exists" for gone, hooks in stale.items())
        return False, detail, "run `yullu install` again (the checkout, its venv or the hook entry moved)"
    if no_token:
        return False, detail, _token_file_fix()
    if copies := _stale_token_copies(Path.home()):
        hold = "holds" if len(copies) == 1 else "hold"
        detail += f"; {' and '.join(copies)} {hold} another token than {yullu_home() / 'token'}"
        names = " / ".join(f"`yullu install {c.split('/')[-2].lstrip('.')}`" for c in copies)
        return False, detail, f"run {names} again (a token revoked or rotated since it was copied is refused)"
    if off_path:
        return False, detail, "put `yullu` on PATH (the `export PATH=` line `yullu serve` prints, or pipx install)"
    return not missing, detail, "run `yullu install` (or install the Claude Code plugin, README)"


def _stale_token_copies(home: Any) -> list[str]:
    """Codex's and Cursor's MCP entries carry a copy of the token (they cannot run `yullu mcp-headers`); the
    files whose copy is not the token file's, when this machine's server is theirs (not a team server's).
    Walk 18: the token revoked, `yullu doctor` said "ok hooks" while every Codex MCP call was refused."""
    import re

    from yullu_core.env import env_str

    from .hooks import token

    current = token()
    if not current or env_str("YULLU_SERVER"):
        return []
    stale = []
    for path in (home / ".codex" / "config.toml", home / ".cursor" / "mcp.json"):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        sent = re.findall(r"Bearer ([A-Za-z0-9_\-]+)", text)
        if sent and current not in sent:
            stale.append(str(path))
    return stale


def _token_file_fix() -> str:
    """How to get the token file back. It said "run `yullu serve` once, then `yullu install` again" (walk 11:
    the token file deleted while the server ran, so `yullu serve` stopped at its busy port): `yullu token`
    writes it again and the hooks read it at every prompt; a team server's client gets it from install."""
    from pathlib import Path

    from .hooks import yullu_home
    from .team_server import client_of

    if server := client_of(Path.home(), yullu_home()):
        return f"install again with your token: `yullu install --server {server} --token yl_…` (its admin makes one)"
    return "run `yullu token` (it writes the token file again; the hooks read it at every prompt)"


def _served_reasoner(line: dict[str, Any]) -> dict[str, Any]:
    """The reasoner the running server uses (what dreaming gets), else the one this shell would
    choose; a server started with another PATH (a service) may find no `claude` this shell finds."""
    from dreaming.reasoners import reasoner_status

    here = reasoner_status()["name"]
    served = _served_status().get("reasoner")
    if isinstance(served, dict) and served.get("name") != here:
        detail = f"the running server uses {served.get('name') or 'none'}, this shell would use {here or 'none'}"
        fix = "restart `yullu serve` from a shell that finds it, or run `yullu install --service` again (it keeps PATH)"
        return {**line, "ok": False, "status": "warn", "detail": detail, "fix": fix}
    return _logged_in(line)


def served_reasoner_hint() -> str:
    """`yullu dream` runs the pass in this shell, with the reasoner this shell finds. When the running
    server dreams with another (a key or a PATH only it has), say where the pass would work."""
    from dreaming.reasoners import reasoner_status

    served = _served_status().get("reasoner")
    if not isinstance(served, dict) or not served.get("available") or served.get("name") == reasoner_status()["name"]:
        return ""
    return (
        f" The running server dreams with {served.get('name')}: run the pass there (the admin's Dreaming page, "
        "Dream now; or POST /api/dream)."
    )


def _logged_in(line: dict[str, Any]) -> dict[str, Any]:
    """A Claude Code or Codex CLI on PATH that nobody logged into is found, yet every dream pass fails
    with "Not logged in" (seen on the walk: doctor said ok, the dashboard later showed the failures)."""
    from dreaming.reasoners import logged_out_reasoner, unanswered_reasoner

    if line["status"] != "ok" or (said := logged_out_reasoner() or unanswered_reasoner()) is None:
        return line
    detail, fix = said
    return {**line, "ok": False, "status": "warn", "detail": detail, "fix": fix}


def _served_status() -> dict[str, Any]:
    """The running server's /api/status, or {} when none answers. A server still starting answers
    503 with the same report (not ready yet): it is read too, its reasoner is already known."""
    import urllib.error
    import urllib.request

    from .hooks import server_url

    try:
        with urllib.request.urlopen(server_url() + "/api/status", timeout=3) as response:  # noqa: S310 (loopback)
            data = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            data = json.loads(exc.read())
        except (OSError, ValueError):
            return {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def doctor(args: argparse.Namespace) -> int:
    from pathlib import Path

    from yullu_core.env import env_is_set, env_str
    from yullu_core.postgres import EmbeddedPostgresError

    from .team_server import pinned_server

    if not env_is_set("YULLU_SERVER") and (pinned := pinned_server(Path.home())):
        os.environ["YULLU_SERVER"] = pinned  # check what the installed hooks talk to, as install does
    results: list[dict[str, Any]] = []

    def done(result: dict[str, Any]) -> None:
        # Each line as soon as its check is done: printed all at the end, the first came after ~5 s
        # (Django's set-up ~3 s, the embedding model's load ~1.3 s, docs/benchmarks.md).
        results.append(result)
        if not args.json:
            _print_check(result)

    done(_check("config", _config))
    if results[0]["ok"] and _project_files():
        done(_warning("project", _project_config))
    if results[0]["ok"] and not env_str("YULLU_SERVER"):
        from .django_setup import setup_django

        if not args.json and sys.stderr.isatty():
            print("      (loading the site and the embedding model: a few seconds)", file=sys.stderr, flush=True)
        try:
            setup_django()  # like every database command: migrate first, stop a PostgreSQL started only for this
        except EmbeddedPostgresError as exc:
            # Chaos round 25: a cluster that cannot start (another major version's folder) ended doctor here with
            # its sentence, the other checks unrun, and `--json` printed no JSON. Its sentence says the fix.
            done({"check": "database", "ok": False, "status": "fail", "detail": str(exc), "fix": str(exc)})
        else:
            for result in _system_checks():
                done(result)
    # A client-only install (hooks on a team server) keeps nothing here: doctor asks that server and
    # starts no local storage (it created and migrated an embedded PostgreSQL the laptop never used).
    if results[0]["ok"]:
        done(_check("server", _server))
        if results[-1]["ok"] and (ended := _roles_ended()):  # down: the server line says it
            done({"check": "roles", "ok": False, "status": "warn", "detail": ended, "fix": STOPPED_FIX})
        done(_check("hooks", _hooks))
        from .served_folder import served_folder, unapplied_log

        done(_warning("folder", served_folder))
        if not env_str("YULLU_SERVER"):  # a team server applies its own checkout's log
            done(_warning("checkout", unapplied_log))
    failed = any(r["status"] == "fail" for r in results)
    if args.json:
        print(json.dumps({"ok": not failed, "checks": results}, indent=2))
    return 1 if failed else 0


def _print_check(r: dict[str, Any]) -> None:
    print(f"{r['status'].upper() if not r['ok'] else 'ok':<4}  {r['check']:<9} {r['detail']}", flush=True)
    if not r["ok"] and r["fix"] and r["fix"] != r["detail"]:  # a warning that says its own fix: once
        print(f"      {'':<9} fix: {r['fix']}", flush=True)


def run(args: argparse.Namespace) -> None:
    from yullu_core.errors import UserError

    try:
        if args.command == "doctor":
            code = doctor(args)
        else:
            from .django_setup import as_the_owner, setup_django

            setup_django()
            with as_the_owner():  # the owner at their terminal, named as their token's stores name them
                code = memories(args)
    except UserError as exc:
        print(f"yullu: {exc}", file=sys.stderr)
        code = 1
    raise SystemExit(code)

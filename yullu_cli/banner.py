"""The lines `yullu serve` prints when it starts: where the admin, MCP, token and data are, which
reasoner dreams, and what needs fixing (hooks that run a file that is gone, `yullu` not on PATH)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from yullu_core.env import env_str

if TYPE_CHECKING:
    from access.bootstrap import BootstrapResult
    from yullu_core.postgres import Cluster


def reasoner_line() -> str:
    """The banner's part of the health model (yullu_site/monitoring/health.py): which reasoner background
    dreaming uses (detected once at start), or a visible warning: none, or a CLI nobody is logged into."""
    from dreaming.reasoners import logged_out_reasoner, unanswered_reasoner
    from yullu_site.monitoring.health import BANNER, gather

    (reasoner,) = gather(BANNER).parts
    if not reasoner.ok:
        return f"  WARNING:    {' '.join(reasoner.problems)}"
    # found on the walks: "dreaming: cli:claude" (nobody logged in), "openai:…" (nothing at its base_url),
    # every pass failing
    if (said := logged_out_reasoner() or unanswered_reasoner()) is not None:
        return f"  WARNING:    {said[0]}: {said[1]}."
    return f"  dreaming:   {reasoner.detail}"


def team_line() -> str | None:
    """On a team server, one line saying so: every caller needs a token of their own, made by whoever runs
    it. The banner of `yullu serve --role web` with DATABASE_URL read exactly like a laptop's."""
    from memories.scope import team_server_reason

    if (why := team_server_reason()) is None:
        return None
    return (f"  team mode:  {why}: every request needs a person's API token; create them with `yullu users add "
            "NAME` and `yullu tokens create --user NAME` (or the admin's API tokens page)")  # fmt: skip


def path_hint(bin_dir: Path, path: str) -> str | None:
    """How to put `yullu` on PATH, when the one beside this Python is not what the shell finds."""
    found = shutil.which("yullu", path=path)
    if not (bin_dir / "yullu").exists() or (found and Path(found).resolve() == (bin_dir / "yullu").resolve()):
        return None
    return f'  CLI:        `yullu` is not on your PATH; add it with:  export PATH="{bin_dir}:$PATH"'


def stale_hook_lines() -> list[str]:
    """A banner warning per file that installed hooks run and that is gone (they fail silently)."""
    from .install import stale_hooks

    try:
        stale = stale_hooks(Path.home())
    except Exception:  # a hand-mangled settings file must not keep the server from starting
        return []
    return [
        f"  WARNING:    {', '.join(hooks)} run {gone}, which no longer exists: run `yullu install` again"
        for gone, hooks in stale.items()
    ]


def admin_password_hint(pw_file: Path) -> str:
    """Where the admin password is. The file is missing when the admin was created with another
    $YULLU_HOME (a shared DATABASE_URL, or as root a cluster kept under /var/lib/yullu for a home
    that was deleted and made again): say how to set one instead of naming a file that is not there."""
    if pw_file.exists():
        return f"password in {pw_file}"
    # Not manage.py: it is in a checkout only, and an installed wheel (pip, pipx, uv) has none.
    change = f"{sys.executable} -m django changepassword admin --settings=yullu_site.settings"
    return f"password set elsewhere; set a new one with `{change}`"


def upgrade_line(migrated: list[str]) -> str | None:
    """After an upgrade, say that the schema changed and how (a new database is no news: the
    first-run lines say so)."""
    from .django_setup import upgrade_summary

    summary = upgrade_summary(migrated)
    return f"  upgraded:   brought the database up to date{summary}." if summary else None


WILDCARDS = ("0.0.0.0", "::", "[::]", "")


def site_base(host: str, port: int) -> tuple[str, str | None]:
    """The base URL the banner names, and a warning when the Host check refuses it. A wildcard bind
    (`[server].host = "0.0.0.0"`, a team server) is named by a host the check accepts: the banner said
    http://0.0.0.0:PORT/admin/, which answers 421 (found on walk 8)."""
    from django.conf import settings
    from django.http.request import validate_host

    allowed = [h for h in settings.ALLOWED_HOSTS if h != "testserver"]
    if host in WILDCARDS:
        host = next((h for h in allowed if not h.startswith(".") and "*" not in h), "127.0.0.1")
    name = f"[{host}]" if ":" in host and not host.startswith("[") else host
    if validate_host(name.lower(), allowed):
        return f"http://{name}:{port}", None
    return f"http://{name}:{port}", (
        f"  WARNING:    {name} is not in [server].allowed_hosts, so every request to it is refused (421): add it"
    )


def database_line(data_dir: Path, cluster: Cluster | None) -> str | None:
    """Where the memories are when it is not under `data:`: as root the embedded cluster lives in
    /var/lib/yullu/clusters/… (PostgreSQL refuses root; README "Where data lives"), and a backup or a clean-up
    of the data folder alone missed it (walk 9)."""
    if cluster is None or cluster.pgdata.is_relative_to(data_dir):
        return None
    return f"  database:   {cluster.pgdata}  (embedded PostgreSQL, run as {cluster.run_as or 'you'})"


def print_banner(
    host: str, port: int, result: BootstrapResult, migrated: list[str], data_dir: Path, cluster: Cluster | None = None
) -> None:
    base, refused = site_base(host, port)
    pw_file = result.admin_password_file
    lines = [
        "",
        f"Yul'lu is starting on {base}",
        *filter(None, [team_line()]),
        f"  admin:      {base}/admin/  (user 'admin', {admin_password_hint(pw_file)})",
        f"  MCP:        {base}/mcp",
        f"  API token:  {result.token_file}  (or run `yullu token`)",
        f"  status:     {base}/api/status",
        f"  data:       {data_dir}",
    ]
    if where := database_line(data_dir, cluster):
        lines.append(where)
    if result.admin_created:
        lines.append(f"  first run:  admin password is {pw_file.read_text().strip()}")
    if upgraded := upgrade_line(migrated):
        lines.append(upgraded)
    if refused:
        lines.append(refused)
    lines.append(reasoner_line())
    lines += stale_hook_lines()
    if hint := path_hint(Path(sys.executable).parent, env_str("PATH")):
        lines.append(hint)
    lines.append("Press Ctrl-C to stop.")
    print("\n".join(lines), flush=True)

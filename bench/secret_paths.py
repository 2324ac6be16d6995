"""A held-out secret set through the write paths other than REST: MCP `store_memory`, `yullu memories add`, a
teammate's raw event files applied by `yullu reconcile`, and the dreaming pass's operations (`apply_operations`).

Run (with `yullu serve` up in the same YULLU_HOME; the dreaming path runs in this process on that home's database):
    .venv/bin/python -m bench.secret_paths --url http://127.0.0.1:48040 --module bench.secret_forms_21 \
        [--every 1] [--paths mcp,cli,reconcile,dream] [--show]

Each path gets every `--every`-th secret text (SECRET_TEXTS) and keeper (KEEP_TEXTS) of the module. A secret that
is stored is a miss, a keeper that is refused is a miss. What the run stores through MCP, the CLI and the dreaming
path is deleted again; reconcile's memories stay in their own throwaway project (a fresh repository each run).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.mcp_client import mcp_session
from yullu_core import paths
from yullu_core.timestamps import format_ts

CLI = 'import sys; from yullu_cli.main import main; sys.argv[0] = "yullu"; main()'
Sample = list[tuple[str, str, bool]]  # (name, text, is a secret)
Outcome = dict[str, bool]  # name -> stored


def _mcp(url: str, token: str, sample: Sample, project: str, api: httpx.Client) -> Outcome:
    async def run() -> Outcome:
        out: Outcome = {}
        async with mcp_session(f"{url}/mcp", token) as session:
            for name, text, _ in sample:
                result = await session.call_tool("store_memory", {"content": text, "project_id": project})
                out[name] = not result.is_error
                if not result.is_error and result.structured_content:
                    api.delete(f"/api/memories/{result.structured_content['id']}", timeout=60)
        return out

    return asyncio.run(run())


def _cli(sample: Sample, project: str, api: httpx.Client) -> Outcome:
    out: Outcome = {}
    for name, text, _ in sample:
        done = subprocess.run(
            [sys.executable, "-c", CLI, "memories", "add", "--project", project, "--json", "-"],
            input=text,
            capture_output=True,
            text=True,
            check=False,
        )
        out[name] = done.returncode == 0
        if done.returncode == 0:
            api.delete(f"/api/memories/{json.loads(done.stdout)['id']}", timeout=60)
    return out


def _reconcile(sample: Sample) -> Outcome:
    """One raw create event per text in a fresh repository's log (as a teammate's tool could write it, past our
    own writer's checks), then one `yullu reconcile`; a file it names on stderr was refused."""
    repo = Path(tempfile.mkdtemp(prefix="secret-paths-", dir=os.environ.get("TMPDIR", "/tmp")))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    logs = repo / ".yullu" / "logs"
    logs.mkdir(parents=True)
    files: dict[str, str] = {}
    ns = time.time_ns()
    for i, (name, text, _) in enumerate(sample):
        event_id = uuid.uuid4()
        event = {"id": str(event_id), "type": "create", "memory_id": str(uuid.uuid4()), "ts": format_ts(ns + i)}
        event |= {"content": text, "category": "gotcha", "author": "teammate"}
        file = f"{format_ts(ns + i).replace(':', '').replace('-', '')}-{event_id.hex[:8]}.json"
        (logs / file).write_text(json.dumps(event, indent=2) + "\n")
        files[name] = file
    done = subprocess.run(
        [sys.executable, "-c", CLI, "reconcile", "--cwd", str(repo)], capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 3):  # 3: some files refused; anything else: the pass did not run
        raise SystemExit(f"reconcile failed ({done.returncode}): {done.stderr[-2000:]}")
    out = {name: file not in done.stderr for name, file in files.items()}
    counts = {k: v for k, v in json.loads(done.stdout).items() if isinstance(v, int)}
    print(f"reconcile's counts: {counts} (texts not refused: {sum(out.values())})")
    return out


def _dream(sample: Sample, project: str) -> Outcome:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yullu_site.settings")
    import django

    django.setup()
    logging.getLogger("dreaming.operations").setLevel(logging.WARNING)
    from dreaming.operations import apply_operations
    from memories.models import Memory
    from memories.scope import resolve

    scope = resolve(project_id=project, remember=False)
    out: Outcome = {}
    for name, text, _ in sample:
        record: list[tuple[dict[str, object], str, str]] = []
        apply_operations(scope, [{"op": "create", "content": text, "category": "gotcha"}], record=record)
        out[name] = record[0][1] == "created"
    Memory.objects.filter(project_id=project).delete()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:47823")
    parser.add_argument("--module", default="bench.secret_forms_21")
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--paths", default="mcp,cli,reconcile,dream")
    parser.add_argument("--project", default="bench/secret-paths")
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    module = importlib.import_module(args.module)
    secrets = [(n, t, True) for n, t in module.SECRET_TEXTS[:: args.every]]
    sample: Sample = secrets + [(n, t, False) for n, t in module.KEEP_TEXTS[:: args.every]]
    token = (paths.yullu_home() / "token").read_text().strip()
    with httpx.Client(base_url=args.url, headers={"Authorization": f"Bearer {token}"}) as api:
        runs: dict[str, Callable[[], Outcome]] = {
            "mcp": lambda: _mcp(args.url, token, sample, args.project, api),
            "cli": lambda: _cli(sample, args.project, api),
            "reconcile": lambda: _reconcile(sample),
            "dream": lambda: _dream(sample, args.project),
        }
        for path in args.paths.split(","):
            out = runs[path]()
            stored = [n for n, _, secret in sample if secret and out[n]]
            refused = [n for n, _, secret in sample if not secret and not out[n]]
            print(
                f"{path:9s} secrets stored {len(stored)} of {len(secrets)}, keepers refused "
                f"{len(refused)} of {len(sample) - len(secrets)}"
            )
            if args.show:
                for n in stored + refused:
                    print(f"   {n}")


if __name__ == "__main__":
    main()

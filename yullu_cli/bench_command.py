"""`yullu bench …`: the benchmarks live in the repository's top-level `bench/` package, not in the
installed package, so this command finds them in the checkout it was installed from and says so in
one sentence when there is none (a wheel install)."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from .django_setup import fail, setup_django

# yullu_cli/ sits in the checkout's root in an editable install; in a wheel it sits in site-packages.
CHECKOUT = Path(__file__).resolve().parents[1]

# verb → module of bench/ whose main(args) runs it
MODULES = {
    "locomo": "locomo",
    "codebase": "codebase",
    "latency": "latency",
    "feedback": "feedback_replay",
    "reconcile": "reconcile",
    "scale": "scale",
    "load": "load",
}


def find_bench() -> None:
    """Make the checkout's `bench` package importable, or stop with one sentence. The editable install
    maps only the packages the wheel ships, so the checkout's root joins the path here (the modules
    are then imported by name: the benchmarks sit above every layer, and nothing installed may import
    them)."""
    in_checkout = (CHECKOUT / "bench" / "__init__.py").is_file() and (CHECKOUT / "pyproject.toml").is_file()
    if in_checkout and sys.path[:1] != [str(CHECKOUT)]:
        sys.path.insert(0, str(CHECKOUT))  # before the caller's folder, which may hold a `bench` of its own
    if importlib.util.find_spec("bench") is None:
        fail("benchmarks run from a checkout of the repository (`.venv/bin/yullu bench …` there); "
             "they are not part of the installed package.")  # fmt: skip


def bench_module(name: str) -> ModuleType:
    """`bench.<name>` (after find_bench(); its modules use the models, so after Django's setup too)."""
    return importlib.import_module(f"bench.{name}")


def cmd_bench(args: argparse.Namespace) -> None:
    find_bench()  # first: without a checkout nothing starts
    if args.bench == "load":
        _require_server(args)  # before anything starts: a load test needs a running server
    setup_django()
    if args.bench == "load":
        from django.conf import settings

        args.url = args.url or f"http://127.0.0.1:{settings.YULLU['server']['port']}/mcp"
    bench_module(MODULES[args.bench]).main(args)


def _require_server(args: argparse.Namespace) -> None:
    """Stop with one sentence, having started nothing, when no server answers at the target URL."""
    import urllib.error
    import urllib.request

    from .hooks import server_url, token

    args.url = args.url or f"{server_url()}/mcp"
    status = args.url.removesuffix("/mcp") + "/api/status"
    try:
        urllib.request.urlopen(status, timeout=5).close()  # noqa: S310 (a URL the user gave or ours)
    except urllib.error.HTTPError:
        pass  # it answers (503 while warming up is fine)
    except (OSError, ValueError):
        fail(f"no Yul'lu server answers at {status}; start one with `make run` (or pass --url).")
    if not token():
        fail("no API token in this YULLU_HOME yet; start the server once with `make run`.")


def add_parser(sub: Any) -> None:
    """The `bench` verbs (parsed even without a checkout, so `--help` lists them everywhere)."""
    p = sub.add_parser("bench", help="run a benchmark (from a checkout of the repository)")
    bench = p.add_subparsers(dest="bench", required=True)
    b = bench.add_parser("locomo", help="LoCoMo retrieval benchmark")
    b.add_argument("--data", required=True, help="the LoCoMo JSON file (locomo10.json)")
    b.add_argument("--out", default=None, help="write the JSON report here")
    b.add_argument("--modes", default="hybrid,dense,keyword", help="search modes to score, comma-separated")
    b.add_argument("--limit-conversations", type=int, default=0, help="only the first N conversations (0: all)")
    b.add_argument("--without-sessions", action="store_true", help="do not tag turns with their session")
    b = bench.add_parser("codebase", help="short questions about a codebase, and prompts it has no memory for")
    b.add_argument("--data", default=None, help="a set in the format of bench/data/codebase_dev.json")
    b.add_argument("--limit", type=int, default=5, help="memories a question asks for (the tool's default)")
    b.add_argument("--min-similarity", type=float, default=None, help="override the calibrated gate")
    b.add_argument("--out", default=None, help="write the JSON report here")
    b = bench.add_parser("latency", help="search latency at 1k/10k/100k memories")
    b.add_argument("--sizes", default="1000,10000,100000", help="corpus sizes, comma-separated (memories)")
    b.add_argument("--queries", type=int, default=200, help="searches per size")
    b.add_argument("--dated", action="store_true", help="every query names the current year (date-window search)")
    b.add_argument("--out", default=None, help="write the JSON report here")
    b = bench.add_parser("feedback", help="replay rate_recall verdicts on the codebase set and measure ranking")
    b.add_argument("--grid", default="", help="extra weight:tau pairs to try, e.g. 0.3:0.3,0.6:0.4")
    b.add_argument("--out", default=None, help="write the JSON report here")
    b = bench.add_parser("reconcile", help="full, no-op and incremental reconcile of a large log (vectors reused)")
    b.add_argument("--base", type=int, default=50000, help="event files already in the log")
    b.add_argument("--events", type=int, action="append", help="new files on top (repeatable; default 1000)")
    b.add_argument("--out", default=None, help="write the JSON report here")
    _add_scale(bench)
    _add_load(bench)
    p.set_defaults(fn=cmd_bench)


def _add_scale(bench: Any) -> None:
    b = bench.add_parser("scale", help="how each cost grows from 10k to 1M memories (use a throwaway YULLU_HOME)")
    b.add_argument("--sizes", default="10000,100000,1000000", help="corpus sizes, ascending (memories)")
    b.add_argument("--logs", default="1000,10000,100000", help="team-log sizes to reconcile (event files)")
    b.add_argument("--imports", type=int, default=2000, help="memories per import run (0: skip)")
    b.add_argument(
        "--import-kinds",
        default="embedding,vectors,repository",
        help="which imports to time: embedding (the model embeds each row), vectors (the export's), "
        "repository (with vectors into a git checkout's project, writing its event files)",
    )
    b.add_argument("--queries", type=int, default=200, help="searches per size")
    b.add_argument("--out", default=None, help="write the JSON report here")
    b.add_argument("--chart", default=None, help="write the growth chart (PNG) here")


def _add_load(bench: Any) -> None:
    b = bench.add_parser("load", help="concurrent MCP clients against a running server")
    b.add_argument("--url", default=None, help="MCP endpoint (default: this home's server)")
    b.add_argument("--clients", default="1,10,20,50", help="client counts, one level each")
    b.add_argument("--duration", type=float, default=30.0, help="seconds per level")
    b.add_argument("--mix", default="retrieve=70,store=30", help="retrieve/store/other shares")
    b.add_argument("--seed", type=int, default=200, help="memories stored (unmeasured) before the first level")
    b.add_argument("--inject", type=int, default=0, help="time the `yullu inject` hook this many times per level")
    b.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="open loop: offer this many operations per second in all, Poisson arrivals (default: closed loop)",
    )
    b.add_argument("--schedule-seed", type=int, default=1, help="seed of the paced arrival schedule and tool choice")
    b.add_argument("--max-requests", type=int, default=20000, help="stop a level after this many operations")
    b.add_argument("--project", default=None, help="reuse this project (e.g. a prefilled one)")
    b.add_argument("--prefill", type=int, default=0, help="synthetic memories to add to a new project first")
    b.add_argument("--out", default=None, help="write the JSON report here")

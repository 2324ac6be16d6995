"""Send a held-out secret set through a running site's REST write path, as a judge would.

Run (with `yullu serve` up in the same YULLU_HOME):
    .venv/bin/python -m bench.secret_live --url http://127.0.0.1:47823 [--seeds 1] [--show]
        [--forms bench.secret_forms_9:HELD_OUT_9 --keep bench.secret_forms_9:HELD_OUT_9_KEEP]

Each credential form is filled with `--seeds` random values (seeded, as bench/secret_forms.py's
texts() does) and POSTed to /api/memories; a 201 means it was stored (a miss), a 400 naming a secret
means it was refused. Keepers must come back 201. Stored memories are deleted again at the end, so
the run leaves the project as it found it.
"""

from __future__ import annotations

import argparse
import importlib
import random
from typing import cast

import httpx

from bench.secret_forms_9 import Form
from yullu_core import paths


def _load(spec: str) -> list[Form]:
    module, _, name = spec.partition(":")
    return cast(list[Form], getattr(importlib.import_module(module), name))


def _post(api: httpx.Client, text: str, project: str) -> tuple[bool, str]:
    """(stored, the answer's first line); a stored memory is deleted straight away."""
    r = api.post("/api/memories", json={"content": text, "project_id": project}, timeout=60)
    if r.status_code == 201:
        api.delete(f"/api/memories/{r.json()['id']}", timeout=60)
        return True, "201"
    return False, f"{r.status_code} {r.text[:160]}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:47823")
    parser.add_argument("--forms", default="bench.secret_forms_9:HELD_OUT_9")
    parser.add_argument("--keep", default="bench.secret_forms_9:HELD_OUT_9_KEEP")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--project", default="bench/secret-live")
    parser.add_argument("--show", action="store_true", help="print each stored secret and refused keeper")
    args = parser.parse_args()
    token = (paths.yullu_home() / "token").read_text().strip()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=args.url, headers=headers) as api:
        for label, spec, want_stored in (("secret forms", args.forms, False), ("keepers", args.keep, True)):
            wrong = total = 0
            for seed in range(args.seeds):
                for name, build in _load(spec):
                    text = build(random.Random(f"{seed}:{name}"))
                    stored, answer = _post(api, text, args.project)
                    total += 1
                    if stored != want_stored:
                        wrong += 1
                        if args.show:
                            print(f"  {'STORED' if stored else 'REFUSED'} [{name}] {text!r} -> {answer}")
            verb = "stored" if not want_stored else "refused"
            print(f"{label} ({spec}): {verb} {wrong} of {total}")


if __name__ == "__main__":
    main()

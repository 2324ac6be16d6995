"""Developer tool: dump every query's candidates (cosine, keyword score, coverage, times) for the
codebase dev set and LoCoMo dev, once, so gate and fusion variants can be scored offline.

Run: DJANGO_SETTINGS_MODULE=yullu_site.settings python -m bench.tune_gate dump OUT.pkl \
     ../shared/bench/locomo_dev.json
(the LoCoMo path defaults to ../shared/bench/locomo_dev.json seen from the repository root).
Not part of the product path.
"""

from __future__ import annotations

import json
import pickle
import sys
import uuid
from pathlib import Path
from typing import Any

import django

django.setup()

from bench import codebase  # noqa: E402
from bench.locomo import ingest, questions  # noqa: E402
from memories.embedding.embedders import get_embedder  # noqa: E402
from memories.models import Memory, MemoryEvent  # noqa: E402
from memories.search import queries  # noqa: E402

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo_dev.json"


def _cands(project: str, text: str, vec: Any, embedder_id: str) -> list[dict[str, Any]]:
    return [vars(c).copy() for c in queries.rank(project, text, vec, embedder_id, [], "hybrid")]


def dump(out: str, locomo_path: str | None = None) -> None:
    embedder = get_embedder()
    prefix = f"tune-{uuid.uuid4().hex[:8]}"
    data: dict[str, Any] = {"embedder": embedder.id, "codebase": [], "locomo": []}
    try:
        dev = codebase.load()
        project, ids = codebase.ingest(prefix, dev)
        for kind, text, answers, split in codebase.prompts(dev):
            vec = embedder.embed([text], kind="query")[0]
            data["codebase"].append(
                {
                    "kind": kind,
                    "q": text,
                    "a": answers,
                    "split": split,
                    "ids": ids,
                    "cands": _cands(project, text, vec, embedder.id),
                }
            )
        convs = json.loads(Path(locomo_path or LOCOMO).read_text())
        per = []
        for conv in convs:
            project, ids, _, _ = ingest(prefix, conv)
            qs = questions(conv, set(ids.values()))
            vecs = embedder.embed([q["question"] for q in qs], kind="query")
            per.append((project, ids, qs, vecs))
            print(conv["sample_id"], len(qs), flush=True)
        for i, (project, ids, qs, vecs) in enumerate(per):
            nproject, nids, _, _ = per[(i + 1) % len(per)]
            for q, v in zip(qs, vecs, strict=True):
                data["locomo"].append(
                    {
                        "q": q["question"],
                        "gold": q["gold"],
                        "category": q["category"],
                        "conv": i,
                        "cands": _cands(project, q["question"], v, embedder.id),
                        "off": _cands(nproject, q["question"], v, embedder.id),
                    }
                )
            data.setdefault("ids", {})[i] = ids
    finally:
        Memory.objects.filter(project_id__startswith=prefix + "/").delete()
        MemoryEvent.objects.filter(project_id__startswith=prefix + "/").delete()
    Path(out).write_bytes(pickle.dumps(data))
    print(f"wrote {out}")


if __name__ == "__main__":
    dump(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)

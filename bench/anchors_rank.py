"""How much a stale memory should lose in ranking (memories.anchors.checks.W_STALE; docs/benchmarks.md).

A small set built for this: 20 facts about a codebase, each in an outdated version (its cited code
changed: stale) and a current one, 20 unrelated memories, and a question per fact. For each
question the fused scores of the search (memories.search.queries._ranked, no demotion) are read once;
then for each weight w:
- pairs: both versions stored; the current one must rank above the stale one;
- alone: only the stale version stored (nobody wrote the new fact yet); it should stay the
  first hit, since a stale memory is still the best lead there is (demoted, not hidden).

    YULLU_HOME=/tmp/somewhere python -m bench.anchors_rank

Uses the configured embedder and the database of YULLU_HOME / DATABASE_URL; the scratch project
is deleted at the end.
"""

from __future__ import annotations

import json
from typing import Any

from yullu_cli.django_setup import setup_django

# (question, outdated fact (stale), current fact)
FACTS = [
    ("How do we deploy?", "Deploys run `make release` from a laptop.", "Deploys run from CI on a tag: push vX.Y.Z."),
    ("Where are sessions stored?", "Sessions live in Redis under session:<id>.", "Sessions are signed cookies now."),
    ("How long do webhook retries last?", "Billing webhooks retry for 24 hours.", "Billing webhooks retry 72 hours."),
    ("What is the API rate limit?", "The API allows 100 requests a minute.", "The API allows 600 requests a minute."),
    ("How are passwords hashed?", "Passwords are hashed with bcrypt cost 10.", "Passwords are hashed with argon2id."),
    ("Which port does the dev server use?", "The dev server listens on 8000.", "The dev server listens on 5173."),
    ("How do I run the tests?", "Run the tests with `python setup.py test`.", "Run the tests with `make test`."),
    ("What does Clock.now return?", "Clock.now returns a naive local datetime.", "Clock.now returns UTC."),
    ("How are feature flags read?", "Feature flags come from settings.py.", "Feature flags come from LaunchDarkly."),
    ("How is the cache invalidated?", "The cache is flushed on every deploy.", "Cache keys carry the build id."),
    ("Which queue runs emails?", "Emails go through the default Celery queue.", "Emails go through the mail queue."),
    ("How are migrations applied?", "Migrations run by hand after deploy.", "Migrations run in the release job."),
    ("What logs format do we use?", "Logs are plain text lines.", "Logs are JSON lines with a request id."),
    ("How is search indexed?", "Search reindexes nightly.", "Search indexes on every write."),
    ("Who can see invoices?", "Any staff user can see invoices.", "Only billing admins can see invoices."),
    ("How do uploads get stored?", "Uploads are written to local disk.", "Uploads go to S3 with presigned URLs."),
    ("What timezone are reports in?", "Reports use the server's timezone.", "Reports use the account's timezone."),
    ("How is the config loaded?", "Config is read from config.ini.", "Config is read from config.toml."),
    ("How do we pin dependencies?", "Dependencies are pinned in setup.py.", "Dependencies are pinned in uv.lock."),
    ("What checks run on a pull request?", "Pull requests run flake8 only.", "Pull requests run ruff, mypy, tests."),
]
OTHERS = [
    "The admin theme is django-unfold.",
    "Prices are stored in cents as integers.",
    "The mobile app talks to /api/v2 only.",
    "Images are resized by a worker, not in the request.",
    "Search results are capped at 50 per page.",
    "The staging database is refreshed weekly from production.",
    "Translations live in locale/ as .po files.",
    "Every model has created_at and updated_at.",
    "The CLI is built with argparse, not click.",
    "Feature branches are deleted after merge.",
    "The product name is always written with a capital Y.",
    "Background jobs must be idempotent.",
    "We use UUIDs in public URLs, integers inside.",
    "Error pages are static HTML served by nginx.",
    "Metrics are scraped by Prometheus every 15 seconds.",
    "The design system lives in ui/components.",
    "Emails are rendered with MJML templates.",
    "Customer data never leaves the EU region.",
    "PDF invoices are generated with WeasyPrint.",
    "On-call rotates weekly on Mondays.",
]
WEIGHTS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5)


def main() -> None:
    setup_django()
    print(json.dumps(measure(), indent=2))


def _scores(project: str, question: str, limit: int = 5) -> dict[int, tuple[float, bool]]:
    """Memory id → (fused score without demotion, whether it passes the gate), for one question."""
    from memories.anchors import checks
    from memories.search import queries

    saved, checks.W_STALE = checks.W_STALE, 0.0
    try:
        found = queries._ranked(project, question, limit, None, None, "hybrid", None)
    finally:
        checks.W_STALE = saved
    if found is None:
        return {}
    return {c.memory_id: (c.score, found.relevant(c)) for c in found.ordered}


def _first(scores: dict[int, tuple[float, bool]], stale: set[int], w: float) -> int | None:
    shown = [(s - (w if mid in stale else 0.0), mid) for mid, (s, ok) in scores.items() if ok]
    return max(shown)[1] if shown else None


def measure() -> dict[str, Any]:
    from memories.models import Memory, MemoryAnchor
    from memories.scope import Scope
    from memories.write import create, validation

    project = "bench/anchors-rank"
    Memory.objects.filter(project_id=project).delete()
    scope = Scope(project, None)
    try:
        others = create.store_memories(scope, [validation.NewMemory(t) for t in OTHERS])
        stale = [create.store_memory(scope, old).memory for _, old, _ in FACTS]
        for m in stale:  # stale: as if a check had found its cited code changed
            MemoryAnchor.objects.create(memory=m, project_id=project, path="app/x.py", status="changed")
        alone = [_scores(project, q) for q, _, _ in FACTS]
        fresh = [create.store_memory(scope, new).memory for _, _, new in FACTS]
        pairs = [_scores(project, q) for q, _, _ in FACTS]
        stale_ids = {m.pk for m in stale}
        out: dict[str, Any] = {"facts": len(FACTS), "unrelated": len(others), "by_weight": []}
        for w in WEIGHTS:
            fresh_first = sum(_first(s, stale_ids, w) == f.pk for s, f in zip(pairs, fresh, strict=True))
            stale_kept = sum(_first(s, stale_ids, w) == m.pk for s, m in zip(alone, stale, strict=True))
            out["by_weight"].append(
                {"w_stale": w, "pairs_current_first": fresh_first, "alone_stale_still_first": stale_kept}
            )
        return out
    finally:
        Memory.objects.filter(project_id=project).delete()


if __name__ == "__main__":
    main()

"""How similar are restatements of one fact vs. distinct facts on the same topic (local embedder)?

Run: DJANGO_SETTINGS_MODULE=yullu_site.settings .venv/bin/python -m bench.near_duplicates
Used to pick dreaming's near-duplicate threshold (dreaming.services.DUPLICATE_SIMILARITY).
"""

from __future__ import annotations

import django

django.setup()

import numpy as np  # noqa: E402

from memories.embedders import get_embedder  # noqa: E402

SAME = [
    ("Run make test before pushing; CI runs the same target.", "Always run make test before you push, CI uses it too."),
    (
        "We use pnpm, never npm, to install JavaScript dependencies.",
        "Install JS dependencies with pnpm rather than npm.",
    ),
    (
        "Migrations must stay backwards compatible for one release.",
        "Database migrations have to remain backward-compatible for a release.",
    ),
    (
        "The API token lives in $YULLU_HOME/token with mode 0600.",
        "The API token is stored in $YULLU_HOME/token (0600).",
    ),
    ("Celery tasks take ids, never model instances.", "Pass ids to Celery tasks, not model instances."),
    ("Deploys to production happen on Tuesdays only.", "Production deploys only go out on Tuesdays."),
]
DIFFERENT = [
    (
        "Run make test before pushing; CI runs the same target.",
        "Run make lint before pushing; CI fails on lint errors.",
    ),
    (
        "We use pnpm, never npm, to install JavaScript dependencies.",
        "We use uv, never pip, to install Python packages.",
    ),
    ("Migrations must stay backwards compatible for one release.", "Migrations run automatically on deploy."),
    (
        "The API token lives in $YULLU_HOME/token with mode 0600.",
        "The admin password lives in $YULLU_HOME/admin-password.",
    ),
    ("Celery tasks take ids, never model instances.", "Celery tasks must be idempotent."),
    ("Deploys to production happen on Tuesdays only.", "Deploys to staging happen on every merge to main."),
]


def cosines(pairs: list[tuple[str, str]]) -> list[float]:
    embedder = get_embedder()
    a = embedder.embed([p[0] for p in pairs])
    b = embedder.embed([p[1] for p in pairs])
    return [round(float(np.dot(x, y)), 3) for x, y in zip(a, b, strict=True)]


if __name__ == "__main__":
    same, different = cosines(SAME), cosines(DIFFERENT)
    print("restatements of one fact:", same, "min", min(same))
    print("distinct facts, same topic:", different, "max", max(different))

"""The admin's Memory changes page at scale: seconds per page load over N history rows.

Run: `YULLU_HOME=… .venv/bin/python -m bench.admin_changes --rows 1000000`

Inserts N history rows (memories_memorychange: four actions, 50 projects, one a second back from now) under
throwaway projects `bench/changes-*`, loads the page as a throwaway superuser through Django's test client
(the whole request: middleware, the changelist's count and page queries, the template), best and median of 5
per URL, and removes the rows and the user.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid
from typing import Any

import django

URLS = ("", "?action=review", "?project_id=bench/changes-7", "?within=24h", "?p=200")


def main(args: argparse.Namespace) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from memories.models import MemoryChange

    name = f"bench-{uuid.uuid4().hex[:8]}"
    user = get_user_model().objects.create_superuser(name, password=uuid.uuid4().hex)
    try:
        with connection.cursor() as cur:
            cur.execute(
                "INSERT INTO memories_memorychange (memory_uuid, project_id, action, source, before, after, "
                "created_at, author) SELECT gen_random_uuid(), 'bench/changes-' || (g %% 50), "
                "(ARRAY['created','updated','rated','deleted'])[1 + g %% 4], 'mcp', NULL, "
                "jsonb_build_object('content', 'fact ' || g), now() - (g || ' seconds')::interval, '' "
                "FROM generate_series(1, %s) g",
                [args.rows],
            )
            cur.execute("ANALYZE memories_memorychange")
        client = Client()
        client.force_login(user)
        out: dict[str, Any] = {"rows": args.rows}
        for query in URLS:
            url = "/admin/memories/memorychange/" + query
            assert client.get(url).status_code == 200
            times = []
            for _ in range(5):
                started = time.perf_counter()
                client.get(url)
                times.append(time.perf_counter() - started)
            out[query or "(all)"] = {"best": round(min(times), 3), "median": round(statistics.median(times), 3)}
        return out
    finally:
        MemoryChange.objects.filter(project_id__startswith="bench/changes-").delete()
        user.delete()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yullu_site.settings")
    django.setup()
    print(json.dumps(main(parser.parse_args()), indent=2))

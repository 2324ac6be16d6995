"""Prometheus metrics (`GET /metrics`, bearer token like /api): the scrape and the request middleware.

The instruments themselves live in yullu_core/metrics.py (every layer observes them). Figures that
the database already knows (memories per project, dream passes, queue depth) are read from it at
scrape time, so they are right whichever process answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from yullu_core.env import env_is_set
from yullu_core.metrics import HTTP_REQUESTS, HTTP_SECONDS, MULTIPROC_ENV


class DatabaseCollector:
    """What the database knows, read at scrape time."""

    def collect(self) -> Iterator[Metric]:
        from django.db.models import Count, Q

        from access.policy import only_visible
        from dreaming.models import DreamPass
        from memories.models import Memory

        # Only the projects the scraping token may read: a label is a project's name.
        per_project = GaugeMetricFamily("yullu_memories", "Memories per project", labels=["project_id"])
        for row in only_visible(Memory.objects.all()).values("project_id").annotate(n=Count("id")).order_by():
            per_project.add_metric([row["project_id"]], row["n"])
        yield per_project
        passes = CounterMetricFamily("yullu_dream_passes", "Dream passes by trigger", labels=["trigger"])
        failed = CounterMetricFamily("yullu_dream_pass_errors", "Dream passes that failed or reported errors",
                                     labels=["trigger"])  # fmt: skip
        rows = DreamPass.objects.values("trigger").annotate(
            n=Count("id"), bad=Count("id", filter=Q(phase="failed") | ~Q(errors=[]))
        )
        for by_trigger in rows.order_by():
            passes.add_metric([by_trigger["trigger"]], by_trigger["n"])
            failed.add_metric([by_trigger["trigger"]], by_trigger["bad"])
        yield passes
        yield failed
        depth = _queue_depth()
        if depth is not None:
            yield GaugeMetricFamily("yullu_queue_depth", "Tasks waiting in the default broker", value=depth)


def _queue_depth() -> int | None:
    from django.conf import settings

    if not settings.CELERY_BROKER_URL.startswith("yullupg://"):
        return None  # Redis: watch it with its own exporter
    from yullu_site.broker import queue_depth

    return queue_depth()


class _ThisProcess:
    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def render() -> tuple[bytes, str]:
    registry = CollectorRegistry()
    if env_is_set(MULTIPROC_ENV):
        MultiProcessCollector(registry)
    else:
        registry.register(_ThisProcess())
    registry.register(DatabaseCollector())
    return generate_latest(registry), CONTENT_TYPE_LATEST


def request_metrics(get_response: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Middleware: count and time every Django request by its URL pattern (never the raw path, so
    ids in URLs do not grow the label set)."""

    def middleware(request: Any) -> Any:
        started = time.perf_counter()
        response = get_response(request)
        match = getattr(request, "resolver_match", None)
        route = "/" + match.route if match is not None and match.route else "unmatched"
        HTTP_REQUESTS.labels(route=route, method=request.method, status=str(response.status_code)).inc()
        HTTP_SECONDS.labels(route=route).observe(time.perf_counter() - started)
        return response

    return middleware

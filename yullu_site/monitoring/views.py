from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from yullu_core.json_body import error_response, json_response

from .health import status


@csrf_exempt  # it changes nothing; another method is answered in JSON like the rest of /api
def status_view(request: HttpRequest) -> HttpResponse:
    """Public readiness probe (no auth): 200 when ready, 503 otherwise. Any other method than GET was
    Django's HTML page (a POST: the CSRF failure page, 403; found on walk 8)."""
    if request.method not in ("GET", "HEAD"):
        return error_response(f"{request.method} is not allowed here; use GET.", 405, {"Allow": "GET, HEAD"})
    body = status()
    response = json_response(body, 200 if body["ready"] else 503)
    # "Not ready yet" is an answer, not a server error: polling during start-up (make run, load
    # balancers) must not print an ERROR line per probe.
    response._has_been_logged = True  # type: ignore[attr-defined]  # Django's private flag (django.utils.log)
    return response


class MetricsView(APIView):
    """Prometheus text format; the same bearer token as /api (see yullu_site/monitoring/metrics.py)."""

    @extend_schema(exclude=True)
    def get(self, request: Request) -> HttpResponse:
        from .metrics import render

        body, content_type = render()
        return HttpResponse(body, content_type=content_type)

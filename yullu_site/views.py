from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from .status import status


@require_GET
def status_view(request: HttpRequest) -> JsonResponse:
    """Public readiness probe (no auth): 200 when ready, 503 otherwise."""
    body = status()
    return JsonResponse(body, status=200 if body["ready"] else 503)

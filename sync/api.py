from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.rest import ScopeIn
from memories.scope import NO_PROJECT, resolve
from yullu_core.errors import UserError
from yullu_core.rest import documented, shape, valid

from .services import ReconcileResult, reconcile_scope


class ReconcileView(APIView):
    @documented(shape(ReconcileResult), request=ScopeIn, summary="Reconcile a project's event log now")
    def post(self, request: Request) -> Response:
        data = valid(ScopeIn, request.data)
        if not data.get("project_id") and not data.get("cwd"):
            raise UserError(NO_PROJECT)  # the sentence every other route and MCP tool gives
        return Response(reconcile_scope(resolve(data.get("project_id"), data.get("cwd"))))

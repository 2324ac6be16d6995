"""REST for managing access (docs/contract.md §11: "the same … for admins over REST"): users and tokens for
superusers, a project's grants for its admins. Thin adapters over access.services, which check.
Left out of the OpenAPI schema (it documents the memory API assistants use); README documents them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from yullu_core.rest import valid

from . import services
from .models import Role

UNDOCUMENTED = extend_schema_view(**{m: extend_schema(exclude=True) for m in ("get", "post", "delete")})


class UserIn(serializers.Serializer):
    name = serializers.CharField(max_length=150)
    admin = serializers.BooleanField(required=False, default=False)


class TokenIn(serializers.Serializer):
    user = serializers.CharField(max_length=150)
    name = serializers.CharField(max_length=100, required=False, default="default")
    # DRF pops declared fields off the class, so this does not clash with Field.read_only at run time.
    read_only = serializers.BooleanField(required=False, default=False)  # type: ignore[assignment]
    expires_days = serializers.FloatField(required=False, allow_null=True, min_value=0.01, max_value=3650)


class GrantIn(serializers.Serializer):
    user = serializers.CharField(max_length=150)
    # Not trimmed: a newline or tab in it is access.services.project_key's sentence, not dropped unseen.
    project_id = serializers.CharField(max_length=500, trim_whitespace=False)
    role = serializers.ChoiceField(choices=Role.values)
    # An unknown project_id is refused (often a typo) unless true. The body's key shadows Serializer.create,
    # which an input serializer that is never saved does not use.
    create = serializers.BooleanField(default=False)  # type: ignore[assignment]


class RevokeIn(serializers.Serializer):
    user = serializers.CharField(max_length=150)
    project_id = serializers.CharField(max_length=500, trim_whitespace=False)


@extend_schema_view(
    get=extend_schema(exclude=True), post=extend_schema(exclude=True), delete=extend_schema(exclude=True)
)
class UsersView(APIView):
    def post(self, request: Request) -> Response:
        data = valid(UserIn, request.data)
        user = services.add_user(data["name"], admin=data["admin"])
        return Response({"name": user.get_username(), "admin": user.is_superuser}, status=201)


@extend_schema_view(
    get=extend_schema(exclude=True), post=extend_schema(exclude=True), delete=extend_schema(exclude=True)
)
class TokensView(APIView):
    def get(self, request: Request) -> Response:
        return Response({"tokens": services.list_tokens(request.query_params.get("user") or None)})

    def post(self, request: Request) -> Response:
        data = valid(TokenIn, request.data)
        issued = services.create_token(
            services.user_named(data["user"]), data["name"], read_only=data["read_only"],
            expires_days=data.get("expires_days"),
        )  # fmt: skip
        return Response({**services.token_row(issued.token), "token": issued.raw}, status=201)


@extend_schema_view(
    get=extend_schema(exclude=True), post=extend_schema(exclude=True), delete=extend_schema(exclude=True)
)
class TokenDetail(APIView):
    def delete(self, request: Request, pk: int) -> Response:
        return Response(services.revoke_token(pk))


@extend_schema_view(
    get=extend_schema(exclude=True), post=extend_schema(exclude=True), delete=extend_schema(exclude=True)
)
class GrantsView(APIView):
    def get(self, request: Request) -> Response:
        return Response({"grants": services.list_grants(request.query_params.get("project_id") or None)})

    def post(self, request: Request) -> Response:
        data = valid(GrantIn, request.data)
        return Response(
            services.grant(data["user"], data["project_id"], data["role"], create=data["create"]), status=201
        )


@extend_schema_view(
    get=extend_schema(exclude=True), post=extend_schema(exclude=True), delete=extend_schema(exclude=True)
)
class RevokeGrantView(APIView):
    def post(self, request: Request) -> Response:
        data = valid(RevokeIn, request.data)
        return Response(services.revoke_grant(data["user"], data["project_id"]))

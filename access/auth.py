"""Bearer-token authentication shared by DRF (/api) and the MCP endpoint (/mcp)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone
from rest_framework import authentication, exceptions

from access.actor import actor_for_user, set_acting
from yullu_core.api_errors import TOKEN_HELP

from . import ratelimit
from .models import ApiToken, hash_token

STAMP_EVERY_S = 60  # a token's last_used_at is written at most this often (here and access.token_check)


def token_for(raw: str) -> ApiToken | None:
    """The token, if usable (access.models: unexpired, of an active user). Updates last_used_at at most
    once a minute."""
    if not raw:
        return None
    token = ApiToken.objects.usable().select_related("user").filter(key_hash=hash_token(raw)).first()
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > STAMP_EVERY_S:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def user_for_token(raw: str) -> AbstractBaseUser | None:
    """The active user owning this (unexpired) token, or None."""
    token = token_for(raw)
    return token.user if token else None


def bearer_from_header(value: str) -> str:
    scheme, _, raw = value.partition(" ")
    return raw.strip() if scheme.lower() == "bearer" else ""


class BearerTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Any) -> tuple[AbstractBaseUser, str] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        raw = bearer_from_header(header)
        token = token_for(raw)
        if token is not None:
            # The services' access checks and attribution read the acting user (access.actor); the
            # request's middleware (access.middleware) puts the previous one back when it ends.
            set_acting(actor_for_user(token.user, read_only=token.read_only))
            return token.user, raw  # a valid token is never throttled by others' failures (access.ratelimit)
        if ratelimit.refuse(request.META.get("REMOTE_ADDR", "")) == 429:
            raise exceptions.Throttled(detail=ratelimit.THROTTLED)
        raise exceptions.AuthenticationFailed(TOKEN_HELP)

    def authenticate_header(self, request: Any) -> str:
        return 'Bearer realm="yullu"'

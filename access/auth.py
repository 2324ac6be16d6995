"""Bearer-token authentication shared by DRF (/api) and the MCP endpoint (/mcp)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError, connection
from django.utils import timezone
from rest_framework import authentication, exceptions

from access.actor import actor_for_user, set_acting
from yullu_core.api_errors import TOKEN_EXPIRED, TOKEN_HELP, TOKEN_REVOKED

from . import ratelimit
from .models import ApiToken, AuditEntry, hash_token

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


def refusal(raw: str) -> str:
    """The 401's sentence for a token that does not authenticate: that it expired, or was revoked (the audit
    trail keeps a revoked token's hash: access.services.revoke_token), else TOKEN_HELP. Asked only on the
    refused path, of the hash of what was sent; the token itself is never repeated. REST (below) and the
    front gate, which answers /mcp and /api bodies (yullu_site.front.gate), both say this."""
    if not raw:
        return TOKEN_HELP
    key_hash = hash_token(raw)
    for _ in range(2):
        try:
            return _reason(key_hash)
        except DatabaseError:  # the reason is a courtesy: the refusal stands without it
            # The front gate asks from a thread outside Django's request cycle, whose connection PostgreSQL may
            # have dropped (a restart): asked once more on a new connection, the owner still learns why.
            connection.close()
    return TOKEN_HELP


def _reason(key_hash: str) -> str:
    expired = ApiToken.objects.filter(key_hash=key_hash, expires_at__lte=timezone.now()).first()
    if expired is not None and expired.expires_at is not None:
        return TOKEN_EXPIRED.format(when=_when(expired.expires_at))
    revoked = AuditEntry.objects.filter(action="token.revoke", detail__token_sha256=key_hash).first()
    return TOKEN_REVOKED.format(when=_when(revoked.at)) if revoked is not None else TOKEN_HELP


def _when(at: datetime) -> str:
    return f"{at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


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
        raise exceptions.AuthenticationFailed(refusal(raw))

    def authenticate_header(self, request: Any) -> str:
        return 'Bearer realm="yullu"'

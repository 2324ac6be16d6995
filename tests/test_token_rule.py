"""One token rule, two runners: REST's ORM check (access.auth.token_for) and the MCP endpoint's
raw-SQL fast path (access.token_check.TokenChecker) give the same answer for every case.
Both come from access.models.ApiTokenQuerySet.usable; this table is what keeps them together."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from access.actor import Actor, actor_for_user
from access.auth import token_for
from access.models import ApiToken
from access.token_check import TokenChecker

pytestmark = pytest.mark.django_db(transaction=True)  # the fast path asks on its own connection


def _cases(owner: Any, stranger: Any, django_user_model: Any) -> list[tuple[str, str, Actor | None]]:
    """(case, raw token, who it authenticates as)."""
    owner_actor, stranger_actor = actor_for_user(owner), actor_for_user(stranger)
    _, valid = ApiToken.issue(owner)
    _, read_only = ApiToken.issue(owner, "ro", read_only=True)
    _, future = ApiToken.issue(owner, "future", expires_at=timezone.now() + timedelta(days=1))
    _, expired = ApiToken.issue(owner, "expired", expires_at=timezone.now() - timedelta(seconds=1))
    revoked_row, revoked = ApiToken.issue(owner, "revoked")
    revoked_row.delete()
    _, strangers = ApiToken.issue(stranger)
    gone = django_user_model.objects.create_user("gone", password="gone-pass-123")
    _, inactive = ApiToken.issue(gone)
    gone.is_active = False
    gone.save(update_fields=["is_active"])
    return [
        ("valid", valid, owner_actor),
        ("read-only", read_only, Actor(owner.pk, "owner", True, read_only=True)),
        ("expires tomorrow", future, owner_actor),
        ("expired", expired, None),
        ("revoked", revoked, None),
        ("wrong prefix", "zz_" + valid.removeprefix("yl_"), None),
        ("another user's", strangers, stranger_actor),
        ("inactive user's", inactive, None),
        ("a token with a character more", valid + "x", None),
        ("empty", "", None),
    ]


def _orm(raw: str) -> Actor | None:
    token = token_for(raw)
    return None if token is None else actor_for_user(token.user, read_only=token.read_only)


async def _fast(raws: list[str]) -> list[Actor | None]:
    checker = TokenChecker()
    try:
        return [await checker.actor(raw) for raw in raws]
    finally:
        await checker.close()


def test_rest_and_the_mcp_fast_path_answer_every_token_case_alike(
    owner: Any, stranger: Any, django_user_model: Any
) -> None:
    cases = _cases(owner, stranger, django_user_model)
    fast = asyncio.run(_fast([raw for _, raw, _ in cases]))
    table = [(case, expected, _orm(raw), answer) for (case, raw, expected), answer in zip(cases, fast, strict=True)]
    assert [(case, orm, answer) for case, _, orm, answer in table] == [
        (case, expected, expected) for case, expected, _, _ in table
    ]

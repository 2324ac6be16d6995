"""Names of people for attribution on the wire (created_by / updated_by, sync events' author)."""

from __future__ import annotations

import functools

from django.contrib.auth import get_user_model


@functools.lru_cache(maxsize=4096)
def _name(user_id: int) -> str | None:
    # Cached per process: a memory list of 200 rows names a handful of people; a renamed user shows
    # the new name after a restart (ids are never reused).
    return get_user_model().objects.filter(pk=user_id).values_list("username", flat=True).first()


def username(user_id: int | None) -> str | None:
    return None if user_id is None else _name(user_id)

"""Who is acting: set by each entry point (REST auth, the MCP token check, the admin), read by
the access policy and by attribution. Outside a request (the CLI, Celery tasks, beat) the actor
is the system, which may do everything; a web request starts as NOBODY until its token or login
says otherwise, so a path that forgets to authenticate sees nothing rather than everything."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Actor:
    user_id: int | None  # None: the system (or nobody)
    username: str
    is_superuser: bool
    read_only: bool = False  # a read-only token: every write is refused

    @property
    def is_system(self) -> bool:
        return self.user_id is None and self.is_superuser


ACTOR_KEY = "yullu.actor"  # the ASGI scope key where the MCP endpoint's token check leaves the Actor

SYSTEM = Actor(None, "system", is_superuser=True)
NOBODY = Actor(None, "", is_superuser=False)

_acting: ContextVar[Actor] = ContextVar("yullu_actor", default=SYSTEM)


def acting() -> Actor:
    return _acting.get()


@contextmanager
def acting_as(actor: Actor) -> Iterator[Actor]:
    token = _acting.set(actor)
    try:
        yield actor
    finally:
        _acting.reset(token)


def set_acting(actor: Actor) -> None:
    """For an entry point that cannot wrap the call (DRF's authenticate); the request's
    middleware (access.middleware) restores the previous actor when the request ends."""
    _acting.set(actor)


def actor_for_user(user: object, *, read_only: bool = False) -> Actor:
    return Actor(
        getattr(user, "pk", None),
        str(getattr(user, "username", "")),
        bool(getattr(user, "is_superuser", False)),
        read_only,
    )

"""Every web request starts acting as nobody (sees nothing) until its token (access.auth) or its
admin login says who it is; the actor is put back when the request ends."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from .actor import NOBODY, acting_as, actor_for_user


def acting_user(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        # A session login (the admin); token requests set their actor in authentication.
        actor = actor_for_user(user) if user is not None and user.is_authenticated else NOBODY
        with acting_as(actor):
            return get_response(request)

    return middleware

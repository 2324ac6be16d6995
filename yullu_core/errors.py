"""Errors a user can cause. Their text is one sentence saying what is wrong and what to do."""


class UserError(Exception):
    status = 400


class NotFound(UserError):
    status = 404


class Conflict(UserError):
    status = 409


class Unavailable(UserError):
    """A dependency (embedder, reasoner, database) cannot be reached."""

    status = 503

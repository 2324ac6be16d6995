"""Managing people, tokens and grants: the CLI (`yullu users|tokens|grant|revoke-grant`), the admin
and the REST endpoints for admins all call these. Each change to a token or grant is audited."""

from __future__ import annotations

import difflib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group, Permission
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from yullu_core.errors import NotFound, UserError
from yullu_core.gitorigin import canonical_origin, normalise_project_id
from yullu_core.text import label_problem, refuse_id_control

from .audit import record
from .models import ApiToken, AuditEntry, Grant, Project, Role
from .policy import ADMIN, is_personal, only_visible, require, require_install_wide, role_on

MAX_TOKEN_DAYS = 3650
MAX_TOKEN_NAME = 100  # ApiToken.name's column


def user_named(name: str) -> Any:
    try:
        return get_user_model().objects.get(username=name)
    except get_user_model().DoesNotExist:
        raise NotFound(f"no user named {name!r}; add one with `yullu users add {name}`.") from None


# The group `yullu users add --staff` puts a person in: the memories and dreaming apps' model permissions open
# the review pages (Django's rule); the person's grants decide which projects those pages show.
REVIEWERS = "reviewers"
REVIEW_APPS = ("memories", "dreaming")


def add_user(name: str, *, admin: bool = False, staff: bool = False) -> Any:
    """A person. `admin`: a superuser (may do everything, also in the admin); `staff`: a reviewer who may log
    in to the admin (the reviewers group). Either needs a password for the admin: `admin_password`."""
    require_install_wide("managing users")
    name = name.strip()
    if not name or len(name) > 150:
        raise UserError("a user name must be 1 to 150 characters.")
    User = get_user_model()
    try:  # the rule the admin's user forms apply (Django's username validator), so both accept the same names
        User.username_validator(name)
    except ValidationError:
        raise UserError(f"{name!r} is not a user name: use letters, digits and @ . + - _ only.") from None
    if User.objects.filter(username=name).exists():
        raise UserError(f"a user named {name!r} already exists.")
    with transaction.atomic():
        user = User.objects.create_user(name, is_staff=admin or staff, is_superuser=admin)
        user.set_unusable_password()  # people log in to the admin once a password is set (admin_password)
        user.save(update_fields=["password"])
        if staff and not admin:
            user.groups.add(reviewers_group())
        record("user.add", name, {"admin": admin, "staff": staff})
    return user


def reviewers_group() -> Group:
    """The reviewers group, with every permission of the review apps (created, or completed, on use)."""
    group, _ = Group.objects.get_or_create(name=REVIEWERS)
    group.permissions.add(*Permission.objects.filter(content_type__app_label__in=REVIEW_APPS))
    return group


def make_staff(name: str) -> Any:
    """An existing user becomes a reviewer who may log in to the admin (a superuser stays one)."""
    require_install_wide("managing users")
    user = user_named(name.strip())
    if not user.is_superuser:
        with transaction.atomic():
            user.is_staff = True
            user.save(update_fields=["is_staff"])
            user.groups.add(reviewers_group())
            record("user.staff", user.get_username())
    return user


def admin_password(user: Any) -> str:
    """A new password for the admin's login form, returned to be shown once (only its hash is stored):
    `yullu users add` made people no one could log in as, and nothing said how to give them one (walk 12)."""
    require_install_wide("managing users")
    password = secrets.token_urlsafe(12)
    user.set_password(password)
    user.save(update_fields=["password"])
    record("user.password", user.get_username())
    return password


@dataclass(frozen=True)
class Issued:
    token: ApiToken
    raw: str  # shown once


def create_token(
    user: AbstractBaseUser | Any, name: str = "default", *, read_only: bool = False, expires_days: float | None = None
) -> Issued:
    require_install_wide("managing tokens")
    if problem := label_problem(name or "", "a token's name", MAX_TOKEN_NAME):
        raise UserError(problem)
    name = (name or "default").strip() or "default"
    expires_at: datetime | None = None
    if expires_days is not None:
        if not 0 < expires_days <= MAX_TOKEN_DAYS:
            raise UserError(
                f"expires-days must be more than 0 and at most {MAX_TOKEN_DAYS} days, not {expires_days:.15g}."
            )
        expires_at = timezone.now() + timedelta(days=expires_days)
    token, raw = ApiToken.issue(user, name, read_only=read_only, expires_at=expires_at)
    record("token.create", f"{user.get_username()} / {name}", {"id": token.pk, "read_only": read_only})
    return Issued(token, raw)


def token_row(t: ApiToken) -> dict[str, Any]:
    return {
        "id": t.pk,
        "user": t.user.get_username(),
        "name": t.name,
        "read_only": t.read_only,
        "created_at": t.created_at.isoformat(),
        "last_used_at": t.last_used_at.isoformat() if t.last_used_at else None,
        "expires_at": t.expires_at.isoformat() if t.expires_at else None,
    }


def list_tokens(username: str | None = None) -> list[dict[str, Any]]:
    require_install_wide("managing tokens")
    qs = ApiToken.objects.select_related("user").order_by("user__username", "id")
    if username:
        qs = qs.filter(user=user_named(username))
    return [token_row(t) for t in qs]


def revoke_token(token_id: Any) -> dict[str, Any]:
    require_install_wide("managing tokens")
    try:
        token = ApiToken.objects.select_related("user").get(pk=int(token_id))
    except (ValueError, TypeError, ApiToken.DoesNotExist):
        if (gone := _revoked_before(token_id)) is not None:
            return gone  # revoking is idempotent: the second time says so instead of "not found"
        raise NotFound(f"token {token_id} not found; `yullu tokens list` shows the ids.") from None
    row = token_row(token)
    token.delete()
    # The hash (as stored, never the token) lets a request still sending it be told "revoked" (access.auth.refusal).
    record("token.revoke", f"{row['user']} / {row['name']}", {"id": row["id"], "token_sha256": token.key_hash})
    return row


def _revoked_before(token_id: Any) -> dict[str, Any] | None:
    """A revoked token's row is deleted; the audit trail remembers it, so a second revoke is "already"."""
    try:
        pk = int(token_id)
    except (ValueError, TypeError):
        return None
    entry = AuditEntry.objects.filter(action="token.revoke", detail__id=pk).order_by("-at", "-id").first()
    if entry is None:
        return None
    user, _, name = entry.target.partition(" / ")
    return {"id": pk, "user": user, "name": name, "already_revoked": True, "revoked_at": entry.at.isoformat()}


def _role(role: str) -> str:
    if role not in Role.values:
        raise UserError(f"role must be one of {', '.join(Role.values)}.")
    return role


CLONE_URL = re.compile(r"[a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:")  # https://…, ssh://…, git@host:…


def project_key(given: str) -> str:
    """The id its checkouts give a project (docs/contract.md §2), however a person typed it: a clone URL
    (https://github.com/acme/app.git, git@github.com:acme/app.git) is the project github.com/acme/app.
    `yullu grant ana https://…/app.git write` gave ana a role on a project no checkout ever names (walk 10)."""
    refuse_id_control(given)
    key = normalise_project_id(given)
    return canonical_origin(key) if CLONE_URL.match(key) or _local_clone_url(key) else key


def _local_clone_url(key: str) -> bool:
    """A bare repository's path (/srv/git/app.git): its checkouts' origin, which they name without .git
    (walk 12: `yullu grant alice /tmp/origin.git write` opened a project no checkout names). A bare name
    ending in .git (no slash) may be a folder's own project id, so it is left alone."""
    return "/" in key and key.rstrip("/").endswith(".git")


# What an unknown project's refusal tells a caller who meant a new one: the CLI, REST and the admin each say it.
TO_CREATE = '`yullu grant … --create`, "create": true over REST, or Add project in the admin'


def known_project(project_id: str, *, to_create: str = "") -> None:
    """Refuse a project with no record that the caller can see (a mistyped id), in one sentence naming the
    closest ids they may manage (difflib): `yullu grant ana acme/ap write` made a project acme/ap, no checkout's.
    A project hidden from the caller is refused in the same words as one that does not exist (no existence
    leak). A personal scope is left to the caller's checks (its owner learns why it takes no grant)."""
    if is_personal(project_id):
        return
    if role_on(project_id) is not None and Project.objects.filter(project_id=project_id).exists():
        return
    ids = only_visible(Project.objects.all(), "project_id", role=ADMIN).values_list("project_id", flat=True)
    # 0.8: ids share their host and owner ("github.com/acme/"), which alone made every sibling look close at 0.6.
    closest = difflib.get_close_matches(project_id, [i for i in ids if not is_personal(i)], n=3, cutoff=0.8)
    near = f" (closest: {', '.join(repr(c) for c in closest)})" if closest else ""
    create = f"; to make a new project, create it: {to_create}" if to_create else ""
    raise NotFound(f"no project {project_id!r} is known here{near}{create}.")


def grant(username: str, project_id: str, role: str, *, create: bool = False) -> dict[str, Any]:
    """Give (or change) a user's role on a project. An unknown project is refused (known_project) unless
    `create`: then its record is made."""
    project_id = project_key(project_id)
    if not project_id:
        raise UserError("project must not be empty.")
    if not create:
        known_project(project_id, to_create=TO_CREATE)  # before require(), which records a superuser's project
    require(project_id, ADMIN)  # a project's admins manage its grants
    _no_personal_grant(project_id)
    role, user = _role(role), user_named(username)
    with transaction.atomic():
        project, _ = Project.objects.get_or_create(project_id=project_id)
        try:
            Grant.objects.update_or_create(project=project, user=user, defaults={"role": role})
        except IntegrityError:
            raise UserError("that grant changed at the same time; try again.") from None
    record("grant.set", f"{username} → {project_id}", {"role": role})
    return {"user": username, "project_id": project_id, "role": role}


def _no_personal_grant(project_id: str) -> None:
    """After the role check, so only the scope's owner learns why (others get "not found")."""
    if is_personal(project_id):
        raise UserError(
            f"{project_id!r} holds personal memories, which are their owner's only: no one can be given a role on it."
        )


def grant_group(group: Any, project_id: str, role: str) -> None:
    project_id = project_key(project_id)
    require(project_id, ADMIN)
    _no_personal_grant(project_id)
    project, _ = Project.objects.get_or_create(project_id=project_id)
    Grant.objects.update_or_create(project=project, group=group, defaults={"role": _role(role)})
    record("grant.set", f"group {group.name} → {project_id}", {"role": role})


def revoke_grant(username: str, project_id: str) -> dict[str, Any]:
    project_id = project_key(project_id)
    known_project(project_id)  # a mistyped id: the closest ids, and no project recorded by require()
    require(project_id, ADMIN)
    user = user_named(username)
    deleted, _ = Grant.objects.filter(user=user, project__project_id=project_id).delete()
    if not deleted:
        raise NotFound(f"{username} has no grant on {project_id!r}.")
    record("grant.revoke", f"{username} → {project_id}")
    return {"user": username, "project_id": project_id, "revoked": True}


def list_grants(project_id: str | None = None) -> list[dict[str, Any]]:
    """Grants of one project, or of every project on which the caller is an admin."""
    qs = Grant.objects.select_related("project", "user", "group").order_by("project__project_id", "id")
    if project_id:
        project_id = project_key(project_id)  # a clone URL names its project, as on grant
        known_project(project_id)
        require(project_id, ADMIN)
        qs = qs.filter(project__project_id=project_id)
    else:
        qs = only_visible(qs, "project__project_id", role=ADMIN)
    return [
        {
            "project_id": g.project.project_id,
            "user": g.user.get_username() if g.user else None,
            "group": g.group.name if g.group else None,
            "role": g.role,
        }
        for g in qs
    ]

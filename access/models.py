"""Projects, API tokens, grants and the audit trail (docs/contract.md §11)."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models.functions import Now
from django.utils import timezone

TOKEN_PREFIX = "yl_"


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def new_raw_token() -> str:
    """Shown once, at creation; only its hash is stored."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class Role(models.TextChoices):
    READ = "read", "read"
    WRITE = "write", "write"
    ADMIN = "admin", "admin"


# A role includes every role before it (write = read + …, admin = write + …).
ROLE_RANK = {Role.READ: 1, Role.WRITE: 2, Role.ADMIN: 3}


class Project(models.Model):
    """A project: its `project_id` string stays the key everywhere (events, URLs, tools, the other
    apps' `project_id` columns); this row is what grants point at."""

    project_id = models.CharField(max_length=500, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["project_id"]

    def __str__(self) -> str:
        return self.project_id


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def usable(self) -> ApiTokenQuerySet:
        """THE token rule: a token authenticates while it is unexpired and its user is active.
        REST (access.auth.token_for) filters with it and the MCP fast path
        (access.token_check) is compiled from it; tests/test_token_rule.py asks both."""
        return self.filter(user__is_active=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=Now())
        )


class ApiToken(models.Model):
    """A bearer token for /api and /mcp. Only its SHA-256 is stored; the token is shown once.
    Moved here from yullu_site (same table: existing tokens keep working)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, default="default")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    read_only = models.BooleanField(default=False, db_default=False)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        db_table = "yullu_site_apitoken"
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.user} / {self.name}"

    @classmethod
    def issue(cls, user: models.Model, name: str = "default", **fields: object) -> tuple[ApiToken, str]:
        raw = new_raw_token()
        return cls.objects.create(user=user, name=name, key_hash=hash_token(raw), **fields), raw


class Grant(models.Model):
    """A role on one project for one user or one group (exactly one of the two)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="grants")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="project_grants"
    )
    group = models.ForeignKey(Group, on_delete=models.CASCADE, null=True, blank=True, related_name="project_grants")
    role = models.CharField(max_length=10, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(user__isnull=False, group__isnull=True)
                | models.Q(user__isnull=True, group__isnull=False),
                name="grant_user_xor_group",
            ),
            models.UniqueConstraint(fields=["project", "user"], name="one_grant_per_user"),
            models.UniqueConstraint(fields=["project", "group"], name="one_grant_per_group"),
        ]

    def __str__(self) -> str:
        return f"{self.user or self.group} → {self.project}: {self.role}"


class AuditEntry(models.Model):
    """Who did what to access itself: tokens created/revoked, grants changed, admin logins."""

    at = models.DateTimeField(default=timezone.now)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True, default="")  # kept when the user is deleted
    action = models.CharField(max_length=40)
    target = models.CharField(max_length=600, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        verbose_name = "audit entry"
        verbose_name_plural = "audit trail"
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["-at"], name="audit_time")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_name} {self.action} {self.target}"

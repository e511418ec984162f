"""Settings shared by every run. Everything an operator may change comes from the environment
(docs/configuration.md). Debug and the secret key are set by development.py or production.py, which
config/settings/__init__.py picks from DJANGO_DEBUG."""

from __future__ import annotations

import json
import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.settings.env import env_bool, env_int

BASE_DIR = Path(__file__).resolve().parent.parent.parent
# Runtime files (SQLite database, local secret key, filesystem broker, collected static): var/ unless MEMORA_VAR_DIR.
VAR_DIR = Path(os.environ.get("MEMORA_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def local_secret_key(var_dir: Path) -> str:
    """A random key kept under var/ for development runs (created on first use, readable by its owner only)."""
    path = var_dir / "secret_key"
    if not path.exists():
        # Written whole under a private name, then linked into place: processes starting together
        # (web and worker) all read the one key that won, never a half-written file.
        draft = var_dir / f".secret_key.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(50))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip()


# Host names this site answers to, comma-separated; loopback by default.
ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",") if h.strip()
]
# Other origins (scheme://host[:port]) allowed to post forms and open WebSockets, comma-separated.
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

# --- Transport and browser safety (docs/security.md) ---
# One switch for a deployment behind an HTTPS proxy: secure cookies, HSTS, the SSL redirect, and trust of
# the proxy's X-Forwarded-Proto (the proxy must set it, overwriting whatever the client sent).
MEMORA_HTTPS = env_bool("MEMORA_HTTPS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = MEMORA_HTTPS
SECURE_SSL_REDIRECT = MEMORA_HTTPS
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if MEMORA_HTTPS else None
SECURE_HSTS_SECONDS = env_int("MEMORA_HSTS_SECONDS", 31_536_000) if MEMORA_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = MEMORA_HTTPS
# Preloading is a commitment the operator makes by submitting the domain to the browsers' list.
SECURE_HSTS_PRELOAD = env_bool("MEMORA_HSTS_PRELOAD", False)
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Lax"
# Pages load scripts and styles from this site only (no inline scripts; htmx's own indicator styles are
# switched off in base.html). Style attributes stay allowed: the memory budget bar sets its width.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "axes",
    "csp",
    "channels",
    "django_htmx",
    "ninja",
    "core",  # no models: its deploy checks (core/checks.py)
    "accounts",
    "chat",
    "usage",
    "memory",
    "imports",
    "connect",
]

# Django's middleware with its hooks run on the event loop under ASGI (core/middleware.py); `check --deploy`
# counts core's security, session, CSRF and clickjacking classes as Django's own (core/checks.py).
MIDDLEWARE = [
    "core.middleware.SecurityMiddleware",
    "core.middleware.ApiErrorMiddleware",  # Django's own failures under /api/ in the API's error shape
    "core.middleware.StaticFilesMiddleware",  # WhiteNoise, without a thread hop for every other request
    "core.middleware.SessionMiddleware",
    "core.middleware.LocaleMiddleware",  # Accept-Language, else LANGUAGE_CODE
    "core.middleware.CommonMiddleware",
    "core.middleware.CsrfViewMiddleware",
    "core.middleware.AuthenticationMiddleware",
    "accounts.middleware.UserLanguageMiddleware",  # a signed-in user's own language setting wins
    "core.middleware.MessageMiddleware",
    "core.middleware.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "core.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "chat.context_processors.model_info",
                "core.i18n.javascript_catalogue",
            ],
        },
    },
]

# SQLite under the project unless DATABASE_URL says otherwise (PostgreSQL in production and CI).
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'memora.sqlite3'}",
        conn_max_age=0,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL + a busy timeout let the web server and the Celery worker share the file: readers never
    # wait, writers (short IMMEDIATE transactions) queue for up to `timeout` seconds.
    # Connections are kept (per thread): opening one runs its pragmas and registers Django's functions,
    # and a turn makes several trips before its first token. A thread that ends takes its connection
    # with it.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        # secure_delete: a deleted row's text is overwritten, not left in the file's free pages (SPEC §8).
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA secure_delete=ON;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = None
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool("DATABASE_POOL", False):
    # A connection pool per process (psycopg_pool), opt-in with DATABASE_POOL=1. Under ASGI every request
    # and every sync_to_async hop may run in a different thread, so persistent per-thread connections
    # (CONN_MAX_AGE) would pile up instead of being reused; a pooled connection goes back to the pool when
    # Django closes it. Opt-in because a thread that never closes its connection keeps it from the pool:
    # size it above the threads a process runs (the test suite's many threads exhaust a small pool).
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env_int("DATABASE_POOL_MIN_SIZE", 2),
        "max_size": env_int("DATABASE_POOL_MAX_SIZE", 20),
        "timeout": 10,  # seconds to wait for a free connection before the request fails
    }
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # refuses sign-ins while an account or address is locked out
    "django.contrib.auth.backends.ModelBackend",
]
# Login throttling (django-axes): after AXES_FAILURE_LIMIT wrong passwords for one username from one
# address, that username is refused from that address (its owner still signs in from another, and
# everyone else from that one). Once LOGIN_ADDRESS_ACCOUNTS usernames have failed from one address,
# AXES_FAILURE_LIMIT failures from it for any usernames refuse the whole address; for the cool-off time
# (accounts.throttle.axes_lockout_parameters).
# The address is REMOTE_ADDR: behind a proxy, list it in MEMORA_TRUSTED_PROXIES (below).
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15))
LOGIN_ADDRESS_ACCOUNTS = env_int("LOGIN_ADDRESS_ACCOUNTS", 3)
AXES_LOCKOUT_PARAMETERS = "accounts.throttle.axes_lockout_parameters"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "accounts.views.locked_out"
AXES_VERBOSE = False
AXES_CLIENT_IP_CALLABLE = "accounts.throttle.axes_client_ip"
AXES_DISABLE_ACCESS_LOG = True  # failures are what throttling needs; successful sign-ins are not logged
# Every password check outside sign-in (deleting the account, changing the password, a token created with
# the password) shares one counter per account and address: past the limit in the window, 429.
PASSWORD_CHECK_FAILURE_LIMIT = env_int("PASSWORD_CHECK_FAILURE_LIMIT", 10)
PASSWORD_CHECK_WINDOW = env_int("PASSWORD_CHECK_WINDOW", 900)
# Bearer tokens: after this many failed authentications from one address in API_AUTH_FAILURE_WINDOW
# seconds, further attempts answer 429 until the window ends.
API_AUTH_FAILURE_LIMIT = env_int("API_AUTH_FAILURE_LIMIT", 20)
API_AUTH_FAILURE_WINDOW = env_int("API_AUTH_FAILURE_WINDOW", 300)
# "open": anyone may create an account at /accounts/signup/; "closed": only the admin and
# `create_api_token --create-user` make accounts. Open sign-up creates at most this many accounts per
# client address an hour (429 past it).
ACCOUNTS_SIGNUP = os.environ.get("ACCOUNTS_SIGNUP", "open").strip().lower() or "open"
if ACCOUNTS_SIGNUP not in ("open", "closed"):
    raise ImproperlyConfigured(f"ACCOUNTS_SIGNUP must be 'open' or 'closed', not {ACCOUNTS_SIGNUP!r}.")
ACCOUNTS_SIGNUPS_PER_HOUR = env_int("ACCOUNTS_SIGNUPS_PER_HOUR", 10)
# The reverse proxies whose X-Forwarded-For and X-Forwarded-Proto the web server believes: addresses or
# networks, comma-separated ("127.0.0.1", "10.0.0.0/8"; "*" trusts every peer). Empty (the default):
# no one, and the client's address is the connection's. scripts/serve.py passes it to uvicorn as
# --forwarded-allow-ips; every throttle counts by the address it yields.
MEMORA_TRUSTED_PROXIES = os.environ.get("MEMORA_TRUSTED_PROXIES", "").strip()
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "chat:index"
LOGOUT_REDIRECT_URL = "login"

# The interface speaks English and Simplified Chinese (SPEC §8, "Languages"): the user's own setting
# (User.language) wins, else the browser's Accept-Language, else LANGUAGE_CODE. The compiled catalogues
# (locale/*/LC_MESSAGES/*.mo) are committed, so a fresh machine needs no gettext tools (docs/chat.md, "Languages").
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: Celery broker and channel layer when REDIS_URL is set, embedded defaults otherwise ---
REDIS_URL = os.environ.get("REDIS_URL", "").strip()
if REDIS_URL:
    # A consumer waits for its messages with a blocking pop of up to 5 s; redis-py's default socket timeout
    # is also 5 s, and when it fires first the consumer dies and its WebSocket with it. Give it room.
    # Each open WebSocket holds one pooled connection while it waits, and redis-py's asyncio pool stops at
    # 100 by default (MaxConnectionsError: the 101st page of a process never gets its messages).
    _redis_host = {"address": REDIS_URL, "socket_timeout": 30, "max_connections": 5000}
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # Messages queued per page before channels_redis drops new ones (100 by default): a page that
            # falls behind under load must still get the end of a reply, not lose it.
            "CONFIG": {"hosts": [_redis_host], "capacity": 1000},
        }
    }
    CELERY_BROKER_URL = REDIS_URL
    # kombu's Redis transport, reconnecting instead of stopping the worker when Redis goes away (core/broker.py).
    CELERY_BROKER_TRANSPORT = "core.broker:RedisTransport"
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {"visibility_timeout": 3600}
    # Rate-limit counters shared by every process (see accounts/throttle.py), through one connection
    # pool per process rather than one per request (core/cache.py).
    # Short timeouts: the counters fail open when Redis is away (accounts/throttle.py), and an unreachable
    # host must cost a request a second, not the operating system's minutes-long connect timeout.
    CACHES = {
        "default": {
            "BACKEND": "core.cache.SharedRedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 1.0, "socket_timeout": 1.0},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    # kombu's filesystem transport: a real broker between processes that needs no server; written
    # atomically and skipping unreadable files (core/broker.py).
    BROKER_DIR = VAR_DIR / "broker"
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT = "core.broker:FilesystemTransport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        "polling_interval": 0.1,
    }
    for _folder in ("queue", "processed", "control"):
        (BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Keep trying to reach the broker through an outage of any length (every few seconds), never give up.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None

# --- Usage, prices and quotas (usage) ---
# Prices per million tokens, JSON: {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}, in PRICE_CURRENCY; a price
# in the admin (Usage → Model prices) wins. A model without a price shows tokens only.
try:
    MODEL_PRICES = json.loads(os.environ.get("MODEL_PRICES", "").strip() or "{}")
except ValueError as exc:
    raise ImproperlyConfigured(f"MODEL_PRICES is not valid JSON: {exc}") from exc
if not isinstance(MODEL_PRICES, dict):
    raise ImproperlyConfigured("MODEL_PRICES must be a JSON object: model -> {input, output}.")
PRICE_CURRENCY = os.environ.get("PRICE_CURRENCY", "").strip() or "USD"
# Tokens a user may use per calendar month (UTC), every kind together; unset or 0: unlimited. Per user in the admin.
USER_MONTHLY_TOKENS = env_int("USER_MONTHLY_TOKENS", 0)

# --- Model provider, chat turn and context budget (the chat app's settings, in a module of their own) ---
from config.settings.chat import *  # noqa: E402, F403

# --- Memory (the memory app's settings, in a module of their own) ---
from config.settings.memory import *  # noqa: E402, F403

# --- Imports (the imports app: chats from ChatGPT and Claude exports) ---
# The largest upload, and the most the conversations file inside a ZIP may expand to (bytes; 1 GiB).
IMPORT_MAX_BYTES = env_int("IMPORT_MAX_BYTES", 1024 * 1024 * 1024)
# Where an uploaded export waits for the worker (removed when its import is done or removed).
IMPORT_DIR = Path(os.environ.get("IMPORT_DIR", VAR_DIR / "imports"))

# Page size of the JSON API's paginated lists.
NINJA_PAGINATION_PER_PAGE = 100

# Everything to the console at LOG_LEVEL (INFO), chatty libraries at WARNING.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # The openai package talks through httpx2, which logs every request at INFO.
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
        "axes": {"level": "WARNING"},
    },
}

"""Settings for every environment, read from the process environment.

Each value has an embedded default so that `make run` needs no server at all: SQLite under `var/`, a filesystem
Celery broker, a local-memory cache and an outbox folder for mail. Production points the same variables at
PostgreSQL, Redis and an SMTP relay or provider (README, "Production").
"""

import ipaddress
import secrets
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parents[2]
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)


def _dev_secret_key() -> str:
    # Generated once and kept so that sessions and signed links survive restarts of a development install.
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


DEBUG = env.bool("DEBUG", default=False)
# SECRET_KEY signs the links in every email sent (unsubscribe, tracking) and, unless FIELD_ENCRYPTION_KEY is set,
# encrypts the DKIM keys: every process of an installation must share it, and losing it breaks both. A development
# install invents one under var/; anything else must be given one.
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it to a long random value shared by every web process and worker "
            "(python -c 'import secrets; print(secrets.token_urlsafe(50))'), or set DEBUG=true for development."
        )
    SECRET_KEY = _dev_secret_key()
# Rotation: put the old key here and a new one in SECRET_KEY; links and keys made under the old one keep working.
SECRET_KEY_FALLBACKS = env.list("SECRET_KEY_FALLBACKS", default=[])
# Optional: a separate secret for DKIM private keys at rest, so that rotating SECRET_KEY never touches them.
FIELD_ENCRYPTION_KEY = env.str("FIELD_ENCRYPTION_KEY", default="")
FIELD_ENCRYPTION_KEY_FALLBACKS = env.list("FIELD_ENCRYPTION_KEY_FALLBACKS", default=[])
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
ENVIRONMENT = env.str("ENVIRONMENT", default="development" if DEBUG else "production")
PUBLIC_URL = env.str("PUBLIC_URL", default="http://localhost:8000").rstrip("/")
API_URL = env.str("API_URL", default=PUBLIC_URL).rstrip("/")
# Number of reverse proxies in front of the service whose X-Forwarded-For entries are trusted.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "corsheaders",
    "axes",
    "accounts",
    "contacts",
    "messaging",
    "campaigns",
    "segments",
    "workflows",
    "domains",
    "accounts.billing",
    # Last: the service's own commands and tasks, which compose the apps above (purge, doctor, the retention run).
    "config",
]

MIDDLEWARE = [
    # First: it times everything below it (GET /metrics, config/metrics.py).
    "config.metrics.MetricsMiddleware",
    "core.http.middleware.RequestIdMiddleware",
    "core.http.sanity.NulCharacterMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "core.http.exceptions.MethodNotAllowedEnvelopeMiddleware",
    "config.operators.OperatorHostMiddleware",
    # Last: it turns a locked-out admin login into its lockout answer.
    "axes.middleware.AxesMiddleware",
]

# Cross-origin calls: only /v1/track, the endpoint of the public key, which is published in web pages by design and
# called from them (any origin, no cookies). Every other endpoint takes the secret key, which never belongs in a
# browser, or a session cookie: browsers keep refusing cross-origin reads of those.
CORS_URLS_REGEX = r"^/v1/track$"
CORS_ALLOW_ALL_ORIGINS = True
CORS_ALLOW_CREDENTIALS = False
CORS_ALLOW_METHODS = ["POST", "OPTIONS"]
CORS_ALLOW_HEADERS = ["authorization", "content-type", "idempotency-key", "x-request-id"]
CORS_EXPOSE_HEADERS = ["X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Overrides of other apps' templates (the admin's), which an app's own templates folder cannot hold:
        # Django's admin comes before every app of ours; and the core's (the skeleton of the pages people see),
        # the core being no installed app.
        "DIRS": [BASE_DIR / "config" / "templates", BASE_DIR / "core" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]


# Database ---------------------------------------------------------------------------------------------------
def _database(url: str) -> dict:
    """A database of DATABASES from its URL, with the connection options every PostgreSQL connection of Herald has."""
    database = env.db_url_config(url)
    if database["ENGINE"] == "django.db.backends.sqlite3":
        # The web server, the worker and beat write to one file: WAL lets readers run beside a writer, IMMEDIATE
        # takes the write lock up front so concurrent transactions queue instead of failing with "database is
        # locked".
        database["OPTIONS"] = {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        }
        return database
    database.setdefault("CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60))
    # A health check costs a round trip at the start of every request; off by default, since a broken
    # persistent connection is discarded after its first error anyway.
    database["CONN_HEALTH_CHECKS"] = env.bool("DATABASE_CONN_HEALTH_CHECKS", default=False)
    # Server-side parameters, with prepared statements only where the code asks for them (`core.db`). The ORM's
    # statements go unnamed, and PostgreSQL plans an unnamed statement for its values every time (under `auto`; a
    # forced generic plan would apply to them too, and made searches at a million contacts 20-50 times slower).
    # The few fixed per-request statements are prepared, and after five runs PostgreSQL keeps their generic plan.
    # Turn off behind a connection pooler in transaction mode (PgBouncer < 1.21), which cannot keep prepared
    # statements.
    if database["ENGINE"] == "django.db.backends.postgresql" and env.bool("DATABASE_SERVER_SIDE_BINDING", default=True):
        options = database.setdefault("OPTIONS", {})
        # psycopg prepares a statement after this many runs unless told; never, in practice.
        options.update(server_side_binding=True, prepare_threshold=2**31 - 1)
        options["options"] = f"{options.get('options', '')} -c plan_cache_mode=auto".strip()
    return database


DATABASES = {"default": _database(env.str("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'herald.sqlite3'}"))}
# Optional: a streaming replica of the primary for the heavy reads that may be a few seconds old (core.replica,
# docs/scaling.md "Read replica"); everything else reads and writes the primary.
DATABASE_REPLICA_URL = env.str("DATABASE_REPLICA_URL", default="")
# Seconds a replica that could not be reached is left alone, its reads going to the primary meanwhile.
DATABASE_REPLICA_RETRY_SECONDS = env.float("DATABASE_REPLICA_RETRY_SECONDS", default=5.0)
if DATABASE_REPLICA_URL:
    DATABASES["replica"] = _database(DATABASE_REPLICA_URL)
    # A kept connection to a replica that has gone away is found at the first read of a request, which then goes to
    # the primary, rather than failing that read; and a replica host that does not answer costs seconds, not minutes.
    DATABASES["replica"]["CONN_HEALTH_CHECKS"] = True
    if DATABASES["replica"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["replica"].setdefault("OPTIONS", {}).setdefault("connect_timeout", 3)
# Only with a replica: a router costs every query half a microsecond to decide where it runs.
DATABASE_ROUTERS = ["core.replica.ReplicaRouter"] if DATABASE_REPLICA_URL else []
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"

# Cache: the rate limit and other counters shared between processes live here ------------------------------
CACHES = {"default": env.cache_url("CACHE_URL", default="locmemcache://herald")}

# Mail --------------------------------------------------------------------------------------------------------
EMAIL_URL = env.str("EMAIL_URL", default=f"filemail://{VAR_DIR / 'outbox'}")
if "://" in EMAIL_URL:
    vars().update(environ.Env.email_url_config(EMAIL_URL))
    if EMAIL_URL.startswith("filemail://"):
        # django-environ drops the leading slash of filemail:///an/absolute/folder.
        EMAIL_FILE_PATH = EMAIL_URL.removeprefix("filemail://")
        # One .eml file per message, and a log line naming it (Django's file backend appends to .log files).
        EMAIL_BACKEND = "messaging.sending.outbox.EmailBackend"
else:
    # A dotted path selects any Django email backend, e.g. anymail.backends.postmark.EmailBackend.
    EMAIL_BACKEND = EMAIL_URL
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=30)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="herald@localhost")
ANYMAIL = env.dict("ANYMAIL", default={})

# DNS: every lookup of the service goes through domains.dns, which honours these nameservers ---------------
DNS_NAMESERVERS = env.list("DNS_NAMESERVERS", default=[])
DNS_TIMEOUT_SECONDS = env.float("DNS_TIMEOUT_SECONDS", default=3.0)

# Seconds a key -> project lookup is kept in the shared cache; only a cache every process shares can forget a
# rotated key everywhere at once, so the default is on for Redis and off for local memory.
API_KEY_CACHE_SECONDS = env.int(
    "API_KEY_CACHE_SECONDS", default=300 if CACHES["default"]["BACKEND"].endswith("RedisCache") else 0
)
# The same for a dashboard session's access to a project (accounts.tenancy.sessioncache): Redis only, for the same reason.
SESSION_ACCESS_CACHE_SECONDS = env.int(
    "SESSION_ACCESS_CACHE_SECONDS", default=300 if CACHES["default"]["BACKEND"].endswith("RedisCache") else 0
)

# API behaviour ------------------------------------------------------------------------------------------------
API_RATE_LIMIT_PER_MINUTE = env.int("API_RATE_LIMIT_PER_MINUTE", default=1000)
# Public-key calls (`/v1/track` from web pages) per client address per minute, within the project's public budget;
# 0 (the default) counts only the project. Behind a proxy, set TRUSTED_PROXY_COUNT so the address is the visitor's.
PUBLIC_KEY_RATE_LIMIT_PER_ADDRESS_PER_MINUTE = env.int("PUBLIC_KEY_RATE_LIMIT_PER_ADDRESS_PER_MINUTE", default=0)
IDEMPOTENCY_KEY_TTL_HOURS = env.int("IDEMPOTENCY_KEY_TTL_HOURS", default=24)
# A key whose request has not answered (still running, or its process killed) is free again after this many seconds
# from its claim; until then a reuse is 409. Longer than any request may run (gunicorn's timeout, 30 s).
IDEMPOTENCY_LEASE_SECONDS = env.int("IDEMPOTENCY_LEASE_SECONDS", default=60)
DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 6 * 1024 * 1024
SIGNUPS_DISABLED = env.bool("SIGNUPS_DISABLED", default=False)

# Accounts (docs/accounts.md) -----------------------------------------------------------------------------------
# The sender of the service's own mail: address verification, password resets, invitations.
SYSTEM_EMAIL_FROM = env.str("SYSTEM_EMAIL_FROM", default=DEFAULT_FROM_EMAIL)
# Sign-in with GitHub or Google (docs/accounts.md): a provider is offered (`/auth/oauth-config`, `/config`) once its
# client id and secret are both set. Its endpoints are settings so that a test (or GitHub Enterprise) can name others.
GITHUB_CLIENT_ID = env.str("GITHUB_CLIENT_ID", default="")
GITHUB_CLIENT_SECRET = env.str("GITHUB_CLIENT_SECRET", default="")
GITHUB_AUTHORIZE_URL = env.str("GITHUB_AUTHORIZE_URL", default="https://github.com/login/oauth/authorize")
GITHUB_TOKEN_URL = env.str("GITHUB_TOKEN_URL", default="https://github.com/login/oauth/access_token")
GITHUB_EMAILS_URL = env.str("GITHUB_EMAILS_URL", default="https://api.github.com/user/emails")
GOOGLE_CLIENT_ID = env.str("GOOGLE_CLIENT_ID", default="")
GOOGLE_CLIENT_SECRET = env.str("GOOGLE_CLIENT_SECRET", default="")
GOOGLE_AUTHORIZE_URL = env.str("GOOGLE_AUTHORIZE_URL", default="https://accounts.google.com/o/oauth2/v2/auth")
GOOGLE_TOKEN_URL = env.str("GOOGLE_TOKEN_URL", default="https://oauth2.googleapis.com/token")
GOOGLE_USERINFO_URL = env.str("GOOGLE_USERINFO_URL", default="https://openidconnect.googleapis.com/v1/userinfo")
# Seconds to wait for a provider's answer during a sign-in.
OAUTH_TIMEOUT_SECONDS = env.float("OAUTH_TIMEOUT_SECONDS", default=10.0)
# The dashboard's address: a sign-in through a provider ends there (errors at DASHBOARD_URL/auth/login?error=...), and
# the account emails link to its /verify-email, /reset-password and /signup (pages the service also serves itself).
DASHBOARD_URL = env.str("DASHBOARD_URL", default=PUBLIC_URL).rstrip("/")
# Seconds a password-reset link, an address-verification link and an invitation stay valid.
PASSWORD_RESET_TIMEOUT = env.int("PASSWORD_RESET_TIMEOUT", default=3600)
EMAIL_VERIFICATION_TIMEOUT = env.int("EMAIL_VERIFICATION_TIMEOUT", default=3 * 24 * 3600)
INVITATION_TIMEOUT = env.int("INVITATION_TIMEOUT", default=7 * 24 * 3600)
# Account emails people can ask for (verification, password reset, invitation), per recipient address: seconds
# between two of the same kind (0: none), and how many of all kinds in 24 hours; invitations per project in 24 hours.
ACCOUNT_EMAIL_COOLDOWN_SECONDS = env.int("ACCOUNT_EMAIL_COOLDOWN_SECONDS", default=60)
ACCOUNT_EMAIL_DAILY_LIMIT = env.int("ACCOUNT_EMAIL_DAILY_LIMIT", default=20)
INVITATION_DAILY_LIMIT_PER_PROJECT = env.int("INVITATION_DAILY_LIMIT_PER_PROJECT", default=100)
# Failed logins per address (lower-cased) before that address is locked out, and the window they count in.
LOGIN_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=10)
LOGIN_FAILURE_WINDOW_SECONDS = env.int("LOGIN_FAILURE_WINDOW_SECONDS", default=15 * 60)
# Browser sessions live in the database, which every process shares, so a logout or a password reset ends a
# session everywhere at once; with a shared cache (Redis) the cached_db engine reads them from the cache first.
# A local-memory cache is per process and could keep a revoked session alive in another process: db only then.
SESSION_ENGINE = env.str(
    "SESSION_ENGINE",
    default="django.contrib.sessions.backends.cached_db"
    if CACHES["default"]["BACKEND"].endswith("RedisCache")
    else "django.contrib.sessions.backends.db",
)
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=14 * 24 * 3600)

REST_FRAMEWORK = {
    # A project endpoint takes the secret key or a dashboard session (`/v1/*` views take keys only).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.http.authentication.SecretKeyAuthentication",
        "accounts.http.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.http.permissions.HasProject"],
    "DEFAULT_PARSER_CLASSES": ["core.http.parsers.JsonObjectParser"],
    "DEFAULT_RENDERER_CLASSES": ["core.http.renderers.JsonRenderer"],
    "DEFAULT_THROTTLE_CLASSES": [],
    "EXCEPTION_HANDLER": "core.http.exceptions.exception_handler",
    "DEFAULT_METADATA_CLASS": "core.http.metadata.ApiMetadata",
    "DEFAULT_SCHEMA_CLASS": "core.http.schema.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Herald API",
    "DESCRIPTION": (
        "Email delivery and audience service. Public API under /v1, dashboard endpoints without a prefix. "
        "Authenticate with `Authorization: Bearer <key>`: the public key (pk_) for POST /v1/track only, "
        "the secret key (sk_) for everything else. A dashboard uses the session cookie of POST /auth/login instead "
        "of the secret key (not on /v1/*), with the project in X-Project-Id and, on unsafe methods, the csrftoken "
        "cookie's value in X-CSRFToken."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI served from this host: the docs work on machines without internet access.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Names for enums whose field name (`type`) other enums share.
    "ENUM_NAME_OVERRIDES": {
        "SegmentTypeEnum": "segments.models.SegmentType",
        "ContactFieldTypeEnum": "contacts.selectors.FIELD_TYPES",
        # The templates' (and campaigns') email type keeps the name it was first published with.
        "TypeEnum": "messaging.models.EmailType",
        # A filter's operators, shared by segment conditions and workflow CONDITION steps.
        "FilterValueOperatorEnum": "segments.conditions.schema.VALUE_OPERATORS",
        "FilterAgeOperatorEnum": "segments.conditions.spec.WITH_UNIT",
        "FilterPresenceOperatorEnum": "segments.conditions.spec.NO_VALUE",
    },
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            # POST /webhooks/incoming/stripe (accounts.billing), which takes no key.
            "stripeSignature": {
                "type": "apiKey",
                "in": "header",
                "name": "Stripe-Signature",
                "description": "Stripe's signature of the body with STRIPE_WEBHOOK_SECRET",
            },
        },
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "core.http.schema.add_error_components",
        # After the error components, which it refers to: the provider webhooks, which are not DRF views.
        "messaging.feedback.api.schema.add_webhook_operations",
    ],
}

# Celery ---------------------------------------------------------------------------------------------------------
# The filesystem transport ignores the host, but kombu warns on every connection without one.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://localhost/")


def filesystem_broker_options(folder: Path) -> dict:
    """Kombu's filesystem transport, all of its files under `folder`."""
    (folder / "processed").mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "processed_folder": str(folder / "processed"),
        "control_folder": str(folder / "control"),
        "store_processed": False,
    }


# On Redis, a message taken but not acknowledged this many seconds later is handed to another worker (acks_late: a
# task is acknowledged when it ends), so every task's hard time limit is shorter (config/tests/test_queues.py).
BROKER_VISIBILITY_TIMEOUT = 3600
if CELERY_BROKER_URL.startswith("filesystem://"):
    # No broker process in development: web, worker and beat exchange messages through files under var/.
    CELERY_BROKER_TRANSPORT_OPTIONS = filesystem_broker_options(
        Path(env.str("CELERY_BROKER_FOLDER", default=str(VAR_DIR / "broker")))
    )
    # Without an event loop the worker's timer is a thread that sleeps this long between checks, and a stopping
    # worker waits for it to wake (Celery's default: a second). Its polls are short too (core/filesystem_broker.py).
    CELERY_WORKER_TIMER_PRECISION = 0.1
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": BROKER_VISIBILITY_TIMEOUT}
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 4
CELERY_TASK_IGNORE_RESULT = True
# Celery's Django support closes every database connection before and after each task unless this is set, and it
# then closes them only every this many tasks: each delivery task opened a new PostgreSQL session (a backend
# process started, its caches warmed, the statements prepared again), a fifth of the CPU of delivering its emails.
# Set out of reach, so that the workers follow Django's own rule instead (config/celery.py): a connection lives
# CONN_MAX_AGE seconds and is dropped after an error.
CELERY_DB_REUSE_MAX = 1_000_000_000
# django-celery-beat's database schedule, run by the one beat of several that holds the lease (config/beat.py,
# docs/operations.md "Beat"). A leader killed without a word is replaced within BEAT_LEASE_SECONDS +
# BEAT_LEASE_RETRY_SECONDS; one stopped (SIGTERM) within BEAT_LEASE_RETRY_SECONDS. The retry interval is also how
# often the leader renews, so it must be well below the lease.
CELERY_BEAT_SCHEDULER = "config.beat:LeasedDatabaseScheduler"
BEAT_LEASE_SECONDS = env.float("BEAT_LEASE_SECONDS", default=30)
BEAT_LEASE_RETRY_SECONDS = env.float("BEAT_LEASE_RETRY_SECONDS", default=5)
if not 0 < BEAT_LEASE_RETRY_SECONDS <= BEAT_LEASE_SECONDS / 2:
    raise ImproperlyConfigured("BEAT_LEASE_RETRY_SECONDS must be above 0 and at most half of BEAT_LEASE_SECONDS")
CELERY_TIMEZONE = "UTC"

# Security --------------------------------------------------------------------------------------------------------
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if TRUSTED_PROXY_COUNT else None
CSRF_FAILURE_VIEW = "config.urls.csrf_failure"
# Behind a TLS-terminating proxy (TRUSTED_PROXY_COUNT) with an https PUBLIC_URL, plain-http requests are redirected
# to https and browsers are told to use https only (HSTS); each can be set explicitly.
_BEHIND_HTTPS = bool(TRUSTED_PROXY_COUNT) and PUBLIC_URL.startswith("https://") and not DEBUG
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=_BEHIND_HTTPS)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=365 * 24 * 3600 if _BEHIND_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=_BEHIND_HTTPS)
# Joining the browsers' preload list is a commitment for the whole registrable domain: an operator opts in.
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
# A load balancer's health probe may come over plain http from inside the network.
SECURE_REDIRECT_EXEMPT = [r"^health$"]
# Operators' pages (/admin/) answer only to clients in these networks (CIDR, comma-separated; the client's address as
# TRUSTED_PROXY_COUNT reads it) and only on this host, when set (e.g. an internal name); elsewhere they are 404.
ADMIN_NETWORKS = env.list("ADMIN_NETWORKS", default=[])
for _network in ADMIN_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"ADMIN_NETWORKS: {_network!r} is not a network (e.g. 10.0.0.0/8)") from None
ADMIN_HOST = env.str("ADMIN_HOST", default="").lower()
# GET /metrics (Prometheus) answers a scraper sending this as a Bearer token; unset, the route does not exist (404).
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")

# Admin logins: a user name is locked out from an address after this many failures, for this many minutes
# (django-axes; the API's keys are not passwords and are rate-limited per project instead).
AUTHENTICATION_BACKENDS = [
    "accounts.identity.backends.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("ADMIN_LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.int("ADMIN_LOGIN_LOCKOUT_MINUTES", default=15) / 60
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# The admin form names its field `username` (axes would look for the user model's `email`).
AXES_USERNAME_FORM_FIELD = "username"
AXES_CLIENT_IP_CALLABLE = "config.operators.login_client_address"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# Uploaded images (POST /uploads/image, docs/billing.md): files under MEDIA_ROOT served by the service itself at
# PUBLIC_URL + MEDIA_URL, or an S3 bucket (django-storages) when AWS_STORAGE_BUCKET_NAME is set.
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(VAR_DIR / "media")))
MEDIA_URL = "/media/"
AWS_STORAGE_BUCKET_NAME = env.str("AWS_STORAGE_BUCKET_NAME", default="")
AWS_S3_REGION_NAME = env.str("AWS_S3_REGION_NAME", default="") or None
AWS_S3_ENDPOINT_URL = env.str("AWS_S3_ENDPOINT_URL", default="") or None
AWS_S3_CUSTOM_DOMAIN = env.str("AWS_S3_CUSTOM_DOMAIN", default="") or None
AWS_ACCESS_KEY_ID = env.str("AWS_ACCESS_KEY_ID", default="") or None
AWS_SECRET_ACCESS_KEY = env.str("AWS_SECRET_ACCESS_KEY", default="") or None
AWS_LOCATION = env.str("AWS_LOCATION", default="uploads")
# Images are public by design (they are embedded in emails): plain URLs, never signed ones that expire.
AWS_QUERYSTRING_AUTH = False
AWS_S3_FILE_OVERWRITE = False
AWS_DEFAULT_ACL = env.str("AWS_DEFAULT_ACL", default="") or None
UPLOAD_IMAGE_MAX_BYTES = env.int("UPLOAD_IMAGE_MAX_BYTES", default=5 * 1024 * 1024)
UPLOAD_IMAGE_MAX_SIDE = env.int("UPLOAD_IMAGE_MAX_SIDE", default=8000)
# Judged from the header, before any decoding: a decoded image costs about 4 bytes a pixel, whatever its file size.
UPLOAD_IMAGE_MAX_PIXELS = env.int("UPLOAD_IMAGE_MAX_PIXELS", default=40_000_000)
# What one project's uploaded images may occupy in the storage in all (past it: 413).
UPLOAD_STORAGE_QUOTA_BYTES = env.int("UPLOAD_STORAGE_QUOTA_BYTES", default=500 * 1024 * 1024)
STORAGES = {
    "default": (
        {"BACKEND": "storages.backends.s3.S3Storage"}
        if AWS_STORAGE_BUCKET_NAME
        else {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    ),
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# Logging: every line carries the request id (or the id of the request that queued a task) and, once the request
# is authenticated, its project's id. LOG_FORMAT=json writes one JSON object per line (config/logs.py) for a log
# collector; `plain` is for people reading a terminal.
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOG_FORMAT = env.str("LOG_FORMAT", default="plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, not {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "core.http.middleware.RequestIdLogFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s [%(request_id)s %(project_id)s] %(name)s: %(message)s"},
        "json": {"()": "config.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "django.request": {"level": "ERROR"},
    },
}

from config.queues import TASK_ROUTES  # noqa: E402
from config.schedule import BEAT_SCHEDULE  # noqa: E402

CELERY_BEAT_SCHEDULE = BEAT_SCHEDULE
# Each kind of work to its own queue, for workers started with `-Q` (config/queues.py, docs/operations.md "Queues").
CELERY_TASK_ROUTES = TASK_ROUTES

# Domains ----------------------------------------------------------------------------------------------------
# DNS answers are cached in the cache above: positive answers up to their TTL (capped here), negative answers
# (NXDOMAIN, no record) and failures (timeout, SERVFAIL) for shorter times so that a fix is seen soon.
DNS_CACHE_SECONDS = env.int("DNS_CACHE_SECONDS", default=300)
DNS_NEGATIVE_CACHE_SECONDS = env.int("DNS_NEGATIVE_CACHE_SECONDS", default=60)
DNS_FAILURE_CACHE_SECONDS = env.int("DNS_FAILURE_CACHE_SECONDS", default=10)
# Each process also keeps answers this long in memory, in front of the shared cache (0 turns that off).
DNS_LOCAL_CACHE_SECONDS = env.int("DNS_LOCAL_CACHE_SECONDS", default=5)
# Sender domain records. The DKIM selector is this prefix plus a random suffix per domain. SPF asks the owner to
# authorise the mail servers the service sends through: `include:` hosts and/or ip4/ip6 addresses; neither set
# means no SPF record is suggested. The return-path (bounce) CNAME is suggested only when a host is configured.
DOMAINS_DKIM_SELECTOR_PREFIX = env.str("DOMAINS_DKIM_SELECTOR_PREFIX", default="herald")
DOMAINS_SPF_INCLUDES = env.list("DOMAINS_SPF_INCLUDES", default=[])
DOMAINS_SPF_IP_ADDRESSES = env.list("DOMAINS_SPF_IP_ADDRESSES", default=[])
DOMAINS_DMARC_RECOMMENDATION = env.str("DOMAINS_DMARC_RECOMMENDATION", default="v=DMARC1; p=none")
DOMAINS_RETURN_PATH_HOST = env.str("DOMAINS_RETURN_PATH_HOST", default="").rstrip(".").lower()
DOMAINS_RETURN_PATH_SUBDOMAIN = env.str("DOMAINS_RETURN_PATH_SUBDOMAIN", default="bounces")
# Background checks (config/schedule.py runs them every 5 minutes): pending domains are re-checked on each run,
# verified ones once per interval; at most this many domains are queued per run.
DOMAINS_CHECK_BATCH_SIZE = env.int("DOMAINS_CHECK_BATCH_SIZE", default=200)
DOMAINS_VERIFIED_RECHECK_MINUTES = env.int("DOMAINS_VERIFIED_RECHECK_MINUTES", default=60)
# A verified domain whose DKIM record is absent on this many checks in a row goes back to pending (docs/domains.md).
DOMAINS_DKIM_MISSES_BEFORE_PENDING = env.int("DOMAINS_DKIM_MISSES_BEFORE_PENDING", default=3)
# How long a process trusts that a sender host is on a verified domain (domains.authorized); 0 asks every time.
DOMAINS_SENDER_MEMORY_SECONDS = env.int("DOMAINS_SENDER_MEMORY_SECONDS", default=10)

# The SMTP edge (docs/smtp.md): `manage.py smtp_server`. A listener whose address is empty is off. STARTTLS is offered
# on both when the certificate and key are set; without TLS, AUTH is refused unless plaintext AUTH is allowed (only
# on loopback: `make run`).
SMTP_SUBMISSION_LISTEN = env.str("SMTP_SUBMISSION_LISTEN", default="")
SMTP_INBOUND_LISTEN = env.str("SMTP_INBOUND_LISTEN", default="")
SMTP_HOSTNAME = env.str("SMTP_HOSTNAME", default="") or "localhost"
SMTP_TLS_CERT_FILE = env.str("SMTP_TLS_CERT_FILE", default="")
SMTP_TLS_KEY_FILE = env.str("SMTP_TLS_KEY_FILE", default="")
SMTP_MAX_MESSAGE_BYTES = env.int("SMTP_MAX_MESSAGE_BYTES", default=10 * 1024 * 1024)
SMTP_MAX_RECIPIENTS = env.int("SMTP_MAX_RECIPIENTS", default=50)
SMTP_ALLOW_PLAINTEXT_AUTH = env.bool("SMTP_ALLOW_PLAINTEXT_AUTH", default=False)
# Messages the inbound listener takes from one client address per minute; past it MAIL FROM is answered 450 (0: off).
SMTP_INBOUND_RATE_LIMIT_PER_MINUTE = env.int("SMTP_INBOUND_RATE_LIMIT_PER_MINUTE", default=120)
# The host that a domain's optional inbound MX record names (domains' records); empty: no such record is suggested.
INBOUND_MX_HOST = env.str("INBOUND_MX_HOST", default="").rstrip(".").lower()

# Jobs: a worker renews its lease with every step (an import batch); a job whose lease is this old lost its worker
# and is taken over. A PENDING job this old lost its message. A job is failed after this many takeovers.
JOB_LEASE_SECONDS = env.int("JOB_LEASE_SECONDS", default=120)
JOB_PUBLISH_GRACE_SECONDS = env.int("JOB_PUBLISH_GRACE_SECONDS", default=120)
JOB_MAX_ATTEMPTS = env.int("JOB_MAX_ATTEMPTS", default=3)

# Contacts
CONTACT_IMPORT_MAX_BYTES = env.int("CONTACT_IMPORT_MAX_BYTES", default=5 * 1024 * 1024)
CONTACT_IMPORT_BATCH_SIZE = env.int("CONTACT_IMPORT_BATCH_SIZE", default=1000)

# Campaigns: contacts rendered and inserted per step of a campaign's fan-out (one transaction, one checkpoint).
CAMPAIGN_BATCH_SIZE = env.int("CAMPAIGN_BATCH_SIZE", default=1000)

# Messaging
SEND_ATTACHMENTS_MAX_BYTES = env.int("SEND_ATTACHMENTS_MAX_BYTES", default=10 * 1024 * 1024)
SEND_MESSAGE_MAX_BYTES = env.int("SEND_MESSAGE_MAX_BYTES", default=40 * 1024 * 1024)
# Delivery: transient failures retry with exponential backoff and jitter up to this many attempts.
DELIVERY_MAX_ATTEMPTS = env.int("DELIVERY_MAX_ATTEMPTS", default=6)
DELIVERY_RETRY_BASE_SECONDS = env.float("DELIVERY_RETRY_BASE_SECONDS", default=30.0)
# A worker's claim on the rows it sends is a lease of this many seconds, renewed every sixth of it while it sends; rows
# whose lease expired belong to a dead worker and the sweeper (every minute) queues them again. Longer than one
# message can take (a few EMAIL_TIMEOUTs); short enough that a dead worker's mail goes within 5 minutes (docs/messaging.md).
DELIVERY_LEASE_SECONDS = env.float("DELIVERY_LEASE_SECONDS", default=120)
# Emails per delivery task: each task pays a claim, a query for its projects and domains, the events' insert and
# their listeners once, so larger tasks cost less per email (100 rather than 50: 5-8 % of a worker's CPU); a task
# of 100 takes a worker process a fraction of a second, which is how long transactional mail may wait behind one.
DELIVERY_BATCH_SIZE = env.int("DELIVERY_BATCH_SIZE", default=100)
# A QUEUED email whose delivery task has not come this many seconds after it was queued (or retried) lost its task
# (the broker or Redis was down, a process was killed holding its id): the sweeper publishes it again. A duplicate
# task finds the row claimed and does nothing.
DELIVERY_PUBLISH_GRACE_SECONDS = env.int("DELIVERY_PUBLISH_GRACE_SECONDS", default=120)
# Each process hands committed emails to delivery in one Redis command per this many seconds (messaging.sending.dispatch).
DELIVERY_HANDOVER_SECONDS = env.float("DELIVERY_HANDOVER_SECONDS", default=0.01)
# Messages per second each project may hand to the transport (0 = no limit); excess waits, it is not rejected.
SEND_RATE_PER_PROJECT_PER_SECOND = env.float("SEND_RATE_PER_PROJECT_PER_SECOND", default=0)
# A mailbox for `List-Unsubscribe: <mailto:...>` besides the https link; empty = https only.
UNSUBSCRIBE_MAILBOX = env.str("UNSUBSCRIBE_MAILBOX", default="")
# Whether projects may change their open and click tracking mode (GET /config `trackingToggleEnabled`); an operator
# who must keep tracking as set for every project turns it off.
TRACKING_TOGGLE_ENABLED = env.bool("TRACKING_TOGGLE_ENABLED", default=True)
# Opens and clicks wait in Redis this long after the first of a burst, then a worker writes them in one batch.
TRACKING_HITS_DRAIN_SECONDS = env.float("TRACKING_HITS_DRAIN_SECONDS", default=1.0)
# Requests per minute one client address may make to the open/click URLs, and apart to the hosted pages (0 = no
# limit). Over it, hits still get their pixel or redirect but are not recorded; pages answer 429.
TRACKING_RATE_LIMIT_PER_MINUTE = env.int("TRACKING_RATE_LIMIT_PER_MINUTE", default=600)

# Segments
# How often tracked segments are recomputed and counts refreshed (the beat entry runs every 5 minutes and takes
# the segments whose last run is older than this), and how many per run.
SEGMENT_REFRESH_MINUTES = env.int("SEGMENT_REFRESH_MINUTES", default=5)
SEGMENT_REFRESH_BATCH = env.int("SEGMENT_REFRESH_BATCH", default=500)
# A contact's tracked segments are re-evaluated at most once per this many seconds after its events.
SEGMENT_REEVALUATE_DEBOUNCE_SECONDS = env.int("SEGMENT_REEVALUATE_DEBOUNCE_SECONDS", default=5)

# Retention (docs/operations.md "Retention"): applied hourly by the `apply-retention` beat task and at once by
# `manage.py purge`, in batches of RETENTION_BATCH_SIZE rows (one short statement each), at most
# RETENTION_MAX_BATCHES batches per rule per hourly run (a backlog drains over successive runs).
# Rendered bodies of finished emails are emptied after this many days (the rows, their counts and events stay).
EMAIL_BODY_RETENTION_DAYS = env.int("EMAIL_BODY_RETENTION_DAYS", default=90)
# Finished jobs (imports, bulk changes), with their uploads, are deleted this many days after they finished.
JOB_RETENTION_DAYS = env.int("JOB_RETENTION_DAYS", default=30)
# Events and finished email rows older than this many days are deleted; 0 (the default) keeps them for ever.
EVENT_RETENTION_DAYS = env.int("EVENT_RETENTION_DAYS", default=0)
EMAIL_RETENTION_DAYS = env.int("EMAIL_RETENTION_DAYS", default=0)
RETENTION_BATCH_SIZE = env.int("RETENTION_BATCH_SIZE", default=1000)
RETENTION_MAX_BATCHES = env.int("RETENTION_MAX_BATCHES", default=50)

# Feedback: provider webhooks (docs/feedback.md), suppression and the reputation guard
# Basic-auth credentials ("user:password", comma-separated to rotate) for the provider webhooks; Postmark, Brevo
# and SparkPost need them, SES and Resend may add them to their signatures. A provider without credentials refuses
# every request.
ANYMAIL.setdefault("WEBHOOK_SECRET", env.list("WEBHOOK_SECRET", default=[]))
ANYMAIL.setdefault("MAILGUN_WEBHOOK_SIGNING_KEY", env.str("MAILGUN_WEBHOOK_SIGNING_KEY", default="") or None)
# SES via SNS: only these topics are accepted (and subscriptions to them confirmed).
FEEDBACK_SES_TOPIC_ARNS = env.list("FEEDBACK_SES_TOPIC_ARNS", default=[])
FEEDBACK_RESEND_SIGNING_SECRET = env.str("FEEDBACK_RESEND_SIGNING_SECRET", default="")
# The generic webhook's shared secret; signed timestamps older or newer than the tolerance are refused.
FEEDBACK_GENERIC_SECRET = env.str("FEEDBACK_GENERIC_SECRET", default="")
FEEDBACK_SIGNATURE_TOLERANCE = env.int("FEEDBACK_SIGNATURE_TOLERANCE", default=300)
# Receipts make redelivered notifications no-ops; providers stop redelivering within days.
FEEDBACK_RECEIPT_RETENTION_DAYS = env.int("FEEDBACK_RECEIPT_RETENTION_DAYS", default=7)
# A project past the critical bounce or complaint thresholds is disabled unless this is off (then only logged).
REPUTATION_AUTO_DISABLE = env.bool("REPUTATION_AUTO_DISABLE", default=True)

# Workflows: the WEBHOOK step's calls (docs/workflows.md "Webhooks", docs/security.md "Outbound webhooks").
# The SSRF guard refuses loopback, private, link-local, metadata and every other non-public address; these networks
# (comma-separated CIDRs) are exempt, for receivers on the deployment's own network and for tests. Empty: none.
WEBHOOK_ALLOWED_NETWORKS = env.list("WEBHOOK_ALLOWED_NETWORKS", default=[])
# One call's deadline, from its start: name lookups, connects, TLS, the request and the answer of every hop together.
# A call ends within this plus 0.5 s; running out is a timeout, tried again.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)
# The engine (docs/workflows.md "The engine"). A step claimed by a worker is that worker's for this many seconds; past
# it, the worker is taken for dead and the periodic sweep runs the step again. Longer than any step takes; never less
# than three times the longest webhook call (3 x (WEBHOOK_TIMEOUT_SECONDS + 0.5); a lower value is raised to that),
# since a task runs its batch's steps one after another and renews the lease before a step once a third has passed.
WORKFLOW_STEP_LEASE_SECONDS = env.float("WORKFLOW_STEP_LEASE_SECONDS", default=300)
# An execution handed to the broker whose task has not come this many seconds later lost it (broker down, process
# killed): the sweep publishes it again. A duplicate task finds nothing to claim.
WORKFLOW_PUBLISH_GRACE_SECONDS = env.float("WORKFLOW_PUBLISH_GRACE_SECONDS", default=60)
# A DELAY or timeout ending within this many seconds also gets a broker task due at that moment (promptness); later
# ones are left to the periodic sweep alone (every 15 s), so the broker never holds long countdowns.
WORKFLOW_ETA_MAX_SECONDS = env.int("WORKFLOW_ETA_MAX_SECONDS", default=900)
# Executions per engine task, and how many due ones one sweep takes at most.
WORKFLOW_TASK_BATCH = env.int("WORKFLOW_TASK_BATCH", default=50)
WORKFLOW_SWEEP_LIMIT = env.int("WORKFLOW_SWEEP_LIMIT", default=20000)
# Workflows that start each other (docs/workflows.md "Chains of causes"): in one chain of causes (an event, what
# the executions it started made happen, and so on) a workflow runs at most this many times; an event whose chain
# already ran it that often starts it no more. And a contact starts at most this many executions of one workflow by
# events in any 24 hours. A refused start is an activity item and a log line. 0 turns either off.
WORKFLOW_MAX_CHAIN_DEPTH = env.int("WORKFLOW_MAX_CHAIN_DEPTH", default=3)
WORKFLOW_DAILY_EXECUTIONS_PER_CONTACT = env.int("WORKFLOW_DAILY_EXECUTIONS_PER_CONTACT", default=20)

# Billing (docs/billing.md) ----------------------------------------------------------------------------------------
# The payment provider: checkout, billing portal and invoices are on when both the secret key and the price of the
# subscription are set; its webhook (/webhooks/incoming/stripe) needs the signing secret.
STRIPE_SECRET_KEY = env.str("STRIPE_SECRET_KEY", default="")
STRIPE_PRICE_ID = env.str("STRIPE_PRICE_ID", default="")
STRIPE_WEBHOOK_SECRET = env.str("STRIPE_WEBHOOK_SECRET", default="")
STRIPE_WEBHOOK_TOLERANCE = env.int("STRIPE_WEBHOOK_TOLERANCE", default=300)
STRIPE_API_BASE = env.str("STRIPE_API_BASE", default="https://api.stripe.com").rstrip("/")
STRIPE_MAX_NETWORK_RETRIES = env.int("STRIPE_MAX_NETWORK_RETRIES", default=2)
# Where checkout and the portal send the user back (default PUBLIC_URL).
BILLING_RETURN_URL = env.str("BILLING_RETURN_URL", default="")
# The free tier: emails per category per calendar month for a project without an active subscription (on top of
# its own caps; the lower one applies). Empty: no free-tier cap.
FREE_TIER_MONTHLY_EMAILS = env.int("FREE_TIER_MONTHLY_EMAILS", default=None)
# How long a process trusts that a project has no cap in a category (and skips reading its usage on each send): a
# cap set on such a project applies in every process within this many seconds (0: read on every send).
BILLING_UNCAPPED_CACHE_SECONDS = env.int("BILLING_UNCAPPED_CACHE_SECONDS", default=5)

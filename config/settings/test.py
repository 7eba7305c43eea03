"""Test settings: the base settings with fast password hashing and eager Celery.

The database, cache and broker still come from the environment, so CI runs the same suite on SQLite with local
memory and again on PostgreSQL with Redis. Integration tests start real workers and servers and pass them the
test database by name (tests/conftest fixtures).
"""

import os

# Production settings refuse to start without a secret; the suite and the processes it starts share this one.
os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-0123456789-abcdefghij")

from .base import *  # noqa: F403
from .base import CELERY_BROKER_URL, DATABASES, VAR_DIR, env, filesystem_broker_options

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=True)
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
# Each request hands over its own emails after its commit, in its own thread: eager tasks then run where the test
# can see them (messaging/sending/tests/test_dispatch.py covers the batching thread).
DELIVERY_HANDOVER_SECONDS = 0
LOG_LEVEL = "WARNING"
LOGGING["root"]["level"] = "WARNING"  # noqa: F405

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file rather than memory so that a worker or server started by an integration test sees the same data;
    # named per process so that two suites on one machine do not share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}

if "replica" in DATABASES:
    # The suite's replica is its test database itself: pytest-django creates no second one.
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}

if CELERY_BROKER_URL.startswith("filesystem://"):
    # Integration tests start real workers; a folder of this run's own keeps a running `make run` worker away.
    CELERY_BROKER_TRANSPORT_OPTIONS = filesystem_broker_options(VAR_DIR / f"test-broker-{os.getpid()}")

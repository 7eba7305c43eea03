"""Shared test personas: `project` and `other_project`, each with an owner and both keys, and API clients.

Admin pages are tested with pytest-django's `admin_client` (a test client logged in as a superuser)."""

import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import pytest
import redis
from django.core.cache import caches
from django.db import connection, connections, transaction
from rest_framework.test import APIClient

from accounts.identity.users import user_get_or_create
from accounts.models import Project
from accounts.tenancy.keys import KeyPair
from accounts.tenancy.services import project_create

# The real-browser fixtures (`browser`, `any_browser`), for the tests marked `browser` in any app.
pytest_plugins = ["config.tests.browser"]

PASSWORD = "correct horse battery"


@dataclass
class ProjectPersona:
    project: Project
    keys: KeyPair
    owner_email: str = ""

    @property
    def id(self):
        return self.project.id


def make_persona(name: str, email: str, *, verified_domains: tuple[str, ...] = ()) -> ProjectPersona:
    from domains.services import domain_mark_verified_by_operator

    owner, _ = user_get_or_create(email=email, password=PASSWORD)
    project, keys = project_create(name=name, owner=owner)
    for domain in verified_domains:
        domain_mark_verified_by_operator(project=project, name=domain)
    return ProjectPersona(project=project, keys=keys, owner_email=email)


def client_with(key: str | None) -> APIClient:
    client = APIClient()
    if key:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def browser_client() -> APIClient:
    """A client that is refused as a browser is without the CSRF token, sending JSON bodies."""
    client = APIClient(enforce_csrf_checks=True)
    client.default_format = "json"
    return client


def session_client(email: str, project_id=None, *, password: str = PASSWORD) -> APIClient:
    """A browser's client: logged in through POST /auth/login, CSRF enforced as in a browser, sending the csrftoken
    cookie's value in X-CSRFToken and, with a project, its id in X-Project-Id."""
    client = browser_client()
    response = client.post("/auth/login", {"email": email, "password": password}, format="json")
    assert response.status_code == 200, response.content
    headers = {"HTTP_X_CSRFTOKEN": client.cookies["csrftoken"].value}
    if project_id is not None:
        headers["HTTP_X_PROJECT_ID"] = str(project_id)
    client.credentials(**headers)
    return client


def persona_client(persona: ProjectPersona, credential: str) -> APIClient:
    """The persona's project client with its secret key (`key`) or its owner's browser session (`session`)."""
    if credential == "key":
        return client_with(persona.keys.secret_key)
    return session_client(persona.owner_email, persona.id)


def concurrently(call, items, *, threads: int = 8) -> list:
    """`call(item)` for every item, from `threads` threads at once (concurrent writers, in transactional tests); each
    thread closes the database connections it opened, which would otherwise hold the test database open."""

    def run(item):
        try:
            return call(item)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(run, items))


def behind_a_lock(hold, call):
    """What `call` returned, run in a second thread (its own database connection) that had to wait for the row
    locks `hold` took and changed, in a transaction of this connection committed once the other waits (PostgreSQL)."""
    from config.tests.processes import wait_until

    outcome = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:  # re-raised in the test's thread
            outcome.append(exc)
        finally:
            connections.close_all()

    waiting = threading.Thread(target=run)
    with transaction.atomic():
        hold()
        waiting.start()
        with connection.cursor() as cursor:

            def blocked() -> bool:
                cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
                return cursor.fetchone()[0] > 0

            wait_until(blocked, timeout=10, what="the other connection waiting for the row lock", interval=0.01)
    waiting.join()
    if isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0]


def json_server(answer) -> ThreadingHTTPServer:
    """A stand-in for an HTTP API beyond the machine, served on loopback from a thread (`server_address` names its
    port; shut it down after). `answer(method, path, params, headers)` gives the status, the JSON body (None for an
    empty one) and extra headers; `params` are the form body's fields, or the query's when there is no body."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else url.query
            params = dict(parse_qsl(body, keep_blank_values=True))
            status, payload, headers = answer(self.command, url.path, params, self.headers)
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


# The Redis of the tests that need one (they skip without it), whatever the cache of the run.
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/6")


@pytest.fixture
def redis_cache(settings):
    """Redis as the cache, as in production (rate limit, key cache, tracking and delivery queues); skipped without
    Redis."""
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        pytest.skip(f"needs Redis at {REDIS_URL}")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
    cache = caches["default"]
    cache.clear()
    yield cache
    cache.clear()


@pytest.fixture(autouse=True)
def _clear_cache():
    # Rate-limit windows and DNS answers must not leak from one test into the next (the cache may be Redis).
    caches["default"].clear()
    yield


@pytest.fixture
def smtp_sink(settings):
    """Mail from the service goes to a real SMTP server on loopback for the duration of the test."""
    from messaging.sending.tests.smtp import start_sink

    sink, controller = start_sink()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = sink.host, sink.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    yield sink
    controller.stop()


@pytest.fixture
def soft_time_limit():
    """`strike(after=0, when=None)`: Celery's soft time limit reaches this test's thread `after` seconds from now, or
    from the moment `when()` is true (watched from a thread of its own), as a worker's pool makes it reach a task: a
    signal whose handler, billiard's own, raises SoftTimeLimitExceeded wherever the code stands (the pool sends
    SIGUSR1 from outside; here a timer sends SIGALRM)."""
    from billiard.pool import soft_timeout_sighandler

    from config.tests.processes import wait_until

    previous = signal.signal(signal.SIGALRM, soft_timeout_sighandler)
    done, watchers = threading.Event(), []

    def strike(after: float = 0.0, when=None) -> None:
        def arm() -> None:
            if when is not None:
                wait_until(lambda: done.is_set() or when(), timeout=30, what="the moment of the limit", interval=0.01)
            if not done.is_set():
                signal.setitimer(signal.ITIMER_REAL, max(after, 0.001))

        if when is None:
            arm()
        else:
            watchers.append(threading.Thread(target=arm, daemon=True))
            watchers[-1].start()

    yield strike
    done.set()
    for watcher in watchers:
        watcher.join()
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def real_broker():
    """Tasks go to the configured broker for real workers (`config.tests.processes.celery_worker`), not run eagerly.
    Its queues are emptied before and after: a task an earlier test left there would reach this test's worker."""
    from config.celery import app
    from config.queues import QUEUES

    url = app.conf.broker_url  # the run's broker: a test may point the app at one of its own meanwhile

    def purge() -> None:
        with app.connection_for_write(url) as connection:
            for queue in QUEUES:
                connection.default_channel.queue_purge(queue)

    purge()
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = True
    purge()


@pytest.fixture
def project(db) -> ProjectPersona:
    return make_persona("Alice's shop", "alice@example.test", verified_domains=("alice.test",))


@pytest.fixture
def other_project(db) -> ProjectPersona:
    return make_persona("Bob's shop", "bob@example.test", verified_domains=("bob.test",))


@pytest.fixture
def secret_client(project) -> APIClient:
    return client_with(project.keys.secret_key)


@pytest.fixture
def public_client(project) -> APIClient:
    return client_with(project.keys.public_key)


@pytest.fixture(params=["key", "session"])
def other_client(request, other_project) -> APIClient:
    """The other project's client, used by the isolation tests: each runs twice, with the other project's secret key
    and with its owner's browser session (cookie, X-Project-Id and CSRF token), since both must see the same
    project and nothing of ours."""
    return persona_client(other_project, request.param)


@pytest.fixture
def anon_client() -> APIClient:
    return APIClient()


def pytest_sessionfinish(session, exitstatus):
    """Remove this run's filesystem-broker folder (config/settings/test.py names one per process)."""
    import shutil

    from django.conf import settings

    folder = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}).get("data_folder_in")
    if folder and "test-broker-" in folder:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def one_rate_window():
    """For tests that count requests against a per-minute limit: they start early enough in a fixed window
    (`core.ratelimit`) to end in it, even on a slow machine."""
    if time.time() % 60 > 45:
        time.sleep(60.5 - time.time() % 60)


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run `call()` and then what it queued for after its commit, as a real commit would (with eager Celery: the
    mail tasks, a campaign's fan-out and deliveries)."""

    def run(call):
        with django_capture_on_commit_callbacks(execute=True):
            return call()

    return run

"""Calling the application gunicorn serves (`config.wsgi.application`, with its fast paths in front of Django) the
way a WSGI server does, for tests of what Django's test client would not reach.

Django's WSGI handler reads the middleware settings once, when it is built; here it is built again after a test
changed settings (`SECURE_HSTS_SECONDS`, `MIDDLEWARE`...), as Django's test client does for each new client."""

import io
import json
from contextlib import contextmanager
from dataclasses import dataclass

from django.core import signals
from django.db import close_old_connections
from django.utils.datastructures import CaseInsensitiveMapping


@dataclass
class WsgiAnswer:
    status: int
    headers: CaseInsensitiveMapping
    body: bytes

    # Whether Django answered (False: a fast path in front of it did).
    by_django: bool = False

    @property
    def status_code(self) -> int:  # as Django's test responses, so one test can check either
        return self.status

    def json(self):
        return json.loads(self.body)


@contextmanager
def keeping_the_test_connection():
    """As Django's test client does: a finished request must not close the test's database connection."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


_settings_changed = False


def _note_settings_changed(**kwargs):
    global _settings_changed
    _settings_changed = True


signals.setting_changed.connect(_note_settings_changed)


def wsgi_call(
    method: str,
    path: str,
    *,
    body: bytes = b"",
    headers: dict | None = None,
    secure: bool = False,
    query: str = "",
    remote_addr: str = "127.0.0.1",
    application=None,
) -> WsgiAnswer:
    """One request to `application` (the one gunicorn serves unless given)."""
    from config.wsgi import application as served
    from config.wsgi import django_application

    application = application or served

    global _settings_changed
    if _settings_changed:
        django_application.load_middleware()
        _settings_changed = False
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "8000",
        "HTTP_HOST": "localhost",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": remote_addr,
        "wsgi.url_scheme": "https" if secure else "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": io.StringIO(),
    }
    if body:
        environ["CONTENT_LENGTH"] = str(len(body))
    for name, value in (headers or {}).items():
        key = name.upper().replace("-", "_")
        environ[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = value
    answer = {"by_django": False}

    def start_response(status, response_headers, exc_info=None):
        answer["status"], answer["headers"] = int(status.split()[0]), dict(response_headers)

    def started(sender, **kwargs):
        answer["by_django"] |= sender is not None  # Django's handler sends its class; the fast paths send None

    signals.request_started.connect(started)
    try:
        with keeping_the_test_connection():
            content = b"".join(application(environ, start_response))
    finally:
        signals.request_started.disconnect(started)
    return WsgiAnswer(answer["status"], CaseInsensitiveMapping(answer["headers"]), content, answer["by_django"])


# Headers whose value is the request's own: the request id, and the rate-limit counters (compared for what they mean).
_OWN_VALUES = {"x-request-id", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"}


def assert_answered_alike(first, second) -> None:
    """Two successful answers of one endpoint, the second one requested right after the first, carry the same headers
    with the same values (one answered in front of Django, one by the view, in either order): the same names, the
    same values but for the request id, and rate-limit headers that count the second request after the first."""
    first_headers = {name.lower(): value for name, value in first.headers.items()}
    second_headers = {name.lower(): value for name, value in second.headers.items()}
    assert set(first_headers) == set(second_headers)
    assert {n: v for n, v in first_headers.items() if n not in _OWN_VALUES} == {
        n: v for n, v in second_headers.items() if n not in _OWN_VALUES
    }
    if "ratelimit-limit" in first_headers:
        limit = int(first_headers["ratelimit-limit"])
        assert int(second_headers["ratelimit-limit"]) == limit
        first_reset, second_reset = int(first_headers["ratelimit-reset"]), int(second_headers["ratelimit-reset"])
        assert 0 < first_reset <= 60 and 0 < second_reset <= 60
        same_window = second_reset <= first_reset
        remaining = int(first_headers["ratelimit-remaining"]) - 1 if same_window else limit - 1
        assert int(second_headers["ratelimit-remaining"]) == remaining

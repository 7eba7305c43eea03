"""Calling the application gunicorn serves (`config.wsgi.application`, with its fast paths in front of Django) the
way a WSGI server does, for tests of what Django's test client would not reach."""

import io
import json
from contextlib import contextmanager
from dataclasses import dataclass

from django.core import signals
from django.db import close_old_connections


@dataclass
class WsgiAnswer:
    status: int
    headers: dict
    body: bytes

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


def wsgi_call(
    method: str, path: str, *, body: bytes = b"", headers: dict | None = None, remote_addr: str = "127.0.0.1"
) -> WsgiAnswer:
    from config.wsgi import application

    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "8000",
        "HTTP_HOST": "localhost",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": remote_addr,
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": io.StringIO(),
    }
    if body:
        environ["CONTENT_LENGTH"] = str(len(body))
    for name, value in (headers or {}).items():
        key = name.upper().replace("-", "_")
        environ[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = value
    answer = {}

    def start_response(status, response_headers, exc_info=None):
        answer["status"], answer["headers"] = int(status.split()[0]), dict(response_headers)

    with keeping_the_test_connection():
        content = b"".join(application(environ, start_response))
    return WsgiAnswer(answer["status"], answer["headers"], content)

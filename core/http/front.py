"""What Django's middleware decides for a request answered in front of it (`accounts.http.fastroute`,
`messaging.engagement.wsgi`): whether Django must answer it itself (a `Host` that `ALLOWED_HOSTS` refuses, a
redirect of `SECURE_SSL_REDIRECT` or `PREPEND_WWW`, a disallowed user agent), and otherwise the headers its
middleware gives the answer (HSTS, the security headers, any header a middleware adds). Found by running a canned
answer through Django's configured middleware once per path, host and scheme, rather than listed here, so answers
in front of Django follow the same settings as Django's own.

The canned answer goes through the middleware with a request of the same method, path, host and scheme and no other
header; a middleware that treats requests differently by another header (as GZipMiddleware by `Accept-Encoding`)
is seen only if it also changes the answer by its size, which the probe tries. Such a middleware is to be checked
here when it is added.
"""

import io
from dataclasses import dataclass

from django.conf import settings
from django.core import signals
from django.core.exceptions import DisallowedHost
from django.core.handlers.base import BaseHandler
from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpResponse

# Headers whose value is the request's own, set for each answer.
_PER_REQUEST = frozenset(["content-length", "x-request-id"])
Headers = tuple[tuple[str, str], ...]


class _MiddlewareProbe(BaseHandler):
    """Django's configured middleware around a given answer in place of URL resolution and the view."""

    def __init__(self):
        self.load_middleware()

    def _get_response(self, request):
        return request.front_answer


_probe: _MiddlewareProbe | None = None
# (method, path, own headers, secure, host) -> the headers of the answer, or None when Django's middleware answers
# itself.
_headers: dict[tuple, list[tuple[str, str]] | None] = {}
# The environ's values Django reads for a request's host and scheme (`HttpRequest.get_host`, `is_secure`; the
# forwarded ones only with USE_X_FORWARDED_*, and the header of SECURE_PROXY_SSL_HEADER) -> (secure, host), or None
# for a host ALLOWED_HOSTS refuses. Django's answer for the same values is the same, and finding it costs more than
# the rest of the route's own work.
_sites: dict[tuple, tuple[bool, str] | None] = {}
_MEMORY = 64  # entries of each; a full one starts again (the hosts of one service are few)


@dataclass(frozen=True)
class _Settings:
    """The settings read for every request, read once (a read of `django.conf.settings` costs microseconds)."""

    proxy_ssl_header: str | None
    refuses_user_agents: bool


_settings: _Settings | None = None


def _read_settings() -> _Settings:
    global _settings
    if _settings is None:
        proxy = settings.SECURE_PROXY_SSL_HEADER
        _settings = _Settings(proxy[0] if proxy else None, bool(settings.DISALLOWED_USER_AGENTS))
    return _settings


def _forget_middleware(**kwargs) -> None:
    """Settings changed (tests): Django's middleware reads them when it is built."""
    global _probe, _settings
    _probe = _settings = None
    _headers.clear()
    _sites.clear()


signals.setting_changed.connect(_forget_middleware)


def _middleware_headers(method: str, path: str, own: Headers, secure: bool, host: str) -> list[tuple[str, str]] | None:
    """The headers of an answer with the headers `own` as Django's middleware leaves it, for `method` requests of
    `path` to `host` over https or not: a canned answer run through the middleware twice with two bodies, a short
    and a long one (a middleware may act only on a body above some size, as GZipMiddleware from 200 bytes).

    None when the middleware does not let such an answer through as it is: it answers itself (a redirect of
    `SECURE_SSL_REDIRECT` or `PREPEND_WWW`, an error), changes the status or the body (compression), sets a cookie,
    or adds a header that depends on the body (an ETag). Such requests go to Django."""
    global _probe
    if _probe is None:
        _probe = _MiddlewareProbe()
    found = []
    for content in (b"{}", b'{"probe":"' + b"x" * 1000 + b'"}'):
        request = WSGIRequest(
            {
                "REQUEST_METHOD": method,
                "PATH_INFO": path,
                "SCRIPT_NAME": "",
                "QUERY_STRING": "",
                "HTTP_HOST": host,
                "SERVER_NAME": "localhost",  # Django takes the host from HTTP_HOST
                "SERVER_PORT": "443" if secure else "80",
                "SERVER_PROTOCOL": "HTTP/1.1",
                "REMOTE_ADDR": "127.0.0.1",
                "CONTENT_TYPE": "application/json",
                "CONTENT_LENGTH": "0",
                "wsgi.url_scheme": "https" if secure else "http",
                "wsgi.input": io.BytesIO(),
                "wsgi.errors": io.StringIO(),
            }
        )
        answer = HttpResponse(content, status=200)
        for name, value in own:
            answer[name] = value
        request.front_answer = answer
        response = _probe.get_response(request)
        if response is not answer or response.status_code != 200 or response.content != content or response.cookies:
            return None
        found.append([(name, value) for name, value in response.items() if name.lower() not in _PER_REQUEST])
    return found[0] if found[0] == found[1] else None


def _remember(memory: dict, key, value):
    if len(memory) >= _MEMORY:
        memory.clear()
    memory[key] = value
    return value


def _site(environ) -> tuple[bool, str] | None:
    """Whether Django sees the request as https, and its host; None for a host that ALLOWED_HOSTS refuses."""
    proxy = _read_settings().proxy_ssl_header
    get = environ.get
    key = (
        get("wsgi.url_scheme"),
        get(proxy) if proxy else None,
        get("HTTP_HOST"),
        get("SERVER_NAME"),
        get("SERVER_PORT"),
        get("HTTP_X_FORWARDED_HOST"),
        get("HTTP_X_FORWARDED_PORT"),
    )
    if key in _sites:
        return _sites[key]
    request = WSGIRequest({**environ, "wsgi.input": io.BytesIO()})
    try:
        site = (request.is_secure(), request.get_host())
    except DisallowedHost:
        site = None  # Django answers 400 with the envelope (and logs it as a security event)
    return _remember(_sites, key, site)


def middleware_headers(path: str, method: str, own: Headers, environ) -> list[tuple[str, str]] | None:
    """The headers Django would answer this request with when its answer has the headers `own`, or None when Django
    must answer it. `path` stands for every path that Django's settings treat alike (an exemption from the https
    redirect names a path's start)."""
    if _read_settings().refuses_user_agents:
        return None  # CommonMiddleware reads the User-Agent, which the probe does not send
    site = _site(environ)
    if site is None:
        return None
    key = (method, path, own, *site)
    if key in _headers:
        return _headers[key]
    return _remember(_headers, key, _middleware_headers(method, path, own, *site))

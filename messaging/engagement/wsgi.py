"""The open pixel and click redirect answered in front of Django.

They are the busiest URLs of the service (every open and click of every email) and need nothing of Django's
request handling: no session, user, CSRF or host-dependent URL. Answering them before the middleware stack costs
a fifth of the CPU of the Django views (measured in `docs/performance.md`). Anything that is not a valid token
(a bad signature, another method, an odd path) goes on to Django, whose views answer it as before, and so does what
Django's middleware answers itself (a `Host` outside `ALLOWED_HOSTS`, the https redirect); the answers carry the
headers the middleware gives the views' (HSTS, the security headers), found by `core.http.front`.
"""

import time

from core.http.front import middleware_headers
from core.metrics import REQUEST_DURATION
from messaging.engagement.api.views import NO_CACHE, PIXEL, tracking_hit_answer

_KINDS = {"/o/": "open", "/c/": "click"}
_PIXEL = (("Content-Type", "image/gif"), *NO_CACHE.items())
_REDIRECT = tuple(NO_CACHE.items())
# Labelled as Django's middleware labels the views' answers (config.metrics): by the URL map's route template.
_TIMERS = {
    "open": REQUEST_DURATION.labels(route="o/<str:token>", method="GET", status="200"),
    "click": REQUEST_DURATION.labels(route="c/<str:token>", method="GET", status="302"),
}


def with_tracking_routes(django_application):
    """Wrap Django's WSGI application so that valid tracking hits are answered without it."""

    def application(environ, start_response):
        path = environ.get("PATH_INFO", "")
        kind = _KINDS.get(path[:3])
        if kind is not None and environ.get("REQUEST_METHOD") == "GET" and "/" not in path[3:]:
            started = time.perf_counter()
            own = _PIXEL if kind == "open" else _REDIRECT
            headers = middleware_headers(path[:3], "GET", own, environ)
            target = tracking_hit_answer(kind, path[3:], environ) if headers is not None else None
            if target == "":
                start_response("200 OK", [*headers, ("Content-Length", str(len(PIXEL)))])
                _TIMERS[kind].observe(time.perf_counter() - started)
                return [PIXEL]
            if target is not None:
                start_response("302 Found", [*headers, ("Location", target), ("Content-Length", "0")])
                _TIMERS[kind].observe(time.perf_counter() - started)
                return [b""]
        return django_application(environ, start_response)

    return application

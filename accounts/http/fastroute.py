"""The public API's busiest calls (`POST /v1/track`, `POST /v1/send`) answered in front of Django when they succeed.

They are called for every page view and every message of every integrator. Behind Django's middleware stack and
DRF (request and response objects, content negotiation, a deep copy of the serializer's fields per request) a call
cost twice the work of the request itself. A route here is its view, taken apart once at start-up
(`FastRoute.of_view`): the view's input serializer, validated field by field with its own fields; the view's
handler (`HandlerView.handler`, the function the view calls too); its key kind and transaction; its renderer; the
headers its answer gets from DRF and from Django's configured middleware, found by running a canned answer of the
view through that middleware (`core.http.front`) rather than listed here. A view the route cannot take apart
that way (another validation hook, permission, parser or throttle) is refused with ImproperlyConfigured.

A route answers a request that succeeds, and one whose handler failed after it may have written (500 with the
envelope: the view would write it a second time). Anything else goes on to Django unchanged, with nothing written,
and the view answers it with the documented envelope; a request already counted by the rate limit is not counted
again there:
- no or a wrong key, a disabled project, a body that is not valid, an exceeded limit, any failure before the
  handler is called (the cache or the database unreachable);
- a service error (`core.errors.ServiceError`): a service raises it before it writes, or inside the transaction it
  rolls back;
- what Django's middleware answers itself: a `Host` that `ALLOWED_HOSTS` refuses (400), a request that
  `SECURE_SSL_REDIRECT` (or any other middleware) redirects or answers, a disallowed user agent;
- what the view reads beyond the body and the key: an `Idempotency-Key`, an `Accept` its content negotiation
  refuses, a query string (`?format=`, and the NUL check of the query), cookies (the session and CSRF middleware);
- a call from a web page (an `Origin` header): CORS headers are django-cors-headers' to give.
"""

import contextlib
import io
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.http import HttpRequest
from django.urls import resolve
from rest_framework.exceptions import NotAcceptable
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.serializers import Serializer

from accounts.http.authentication import ApiKeyAuthentication, bearer_token
from accounts.http.permissions import HasProject
from accounts.http.ratelimit import COUNTED_ENVIRON_KEY
from accounts.http.views import HandlerView
from accounts.tenancy.keys import PREFIXES, KeyKind
from accounts.tenancy.selectors import api_key_lookup
from core.errors import ServiceError
from core.http import lifecycle
from core.http.exceptions import unexpected_error_envelope
from core.http.front import middleware_headers
from core.http.middleware import request_id_for, reset_request_id, set_project_id, set_request_id
from core.http.parsers import JsonObjectParser
from core.http.sanity import body_fault, body_may_be_faulty
from core.http.validation import check_validated_field_by_field, validated_fields
from core.metrics import REQUEST_DURATION
from core.ratelimit import Window, project_scope, rate_limit_hit

logger = logging.getLogger(__name__)
_ACCEPT_MEMORY = 256  # distinct Accept values whose negotiation is remembered per route
_STATUS_LINES = {200: "200 OK", 500: "500 Internal Server Error"}


@dataclass(frozen=True)
class FastRoute:
    path: str
    view: HandlerView  # an instance, for its content negotiation
    key_kind: KeyKind
    # One bound instance: its fields are built once and validating a value keeps no state in them.
    serializer: Serializer
    # (project, validated values, the body as sent) -> the response data; the view's own handler.
    handle: Callable
    # Run `handle` in a transaction, as the view does unless it sets `atomic_writes = False`.
    atomic: bool
    renderer: BaseRenderer
    # The view's answer before Django's middleware: Content-Type and DRF's `Allow` (and `Vary: Accept`).
    view_headers: tuple[tuple[str, str], ...]
    # The request-duration histogram of each status the route answers, labelled as Django's middleware labels the
    # view's answers (config.metrics).
    timers: dict
    _accepts: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def at(cls, path: str) -> "FastRoute":
        """The route of the view that Django's URL map sends `path` to."""
        view_class = getattr(resolve(path).func, "cls", None)
        return cls.of_view(path, view_class)

    @classmethod
    def of_view(cls, path: str, view_class) -> "FastRoute":
        if not (isinstance(view_class, type) and issubclass(view_class, HandlerView)):
            raise ImproperlyConfigured(f"Fast route {path}: {view_class!r} is not a HandlerView")
        name = view_class.__qualname__
        view = view_class()
        authenticators = view.get_authenticators()
        if len(authenticators) != 1 or not isinstance(authenticators[0], ApiKeyAuthentication):
            raise ImproperlyConfigured(f"Fast route {path}: {name} must authenticate with one API key class")
        for kind, found, allowed in (
            ("permission", view.permission_classes, [HasProject]),
            ("parser", view.parser_classes, [JsonObjectParser]),
            ("throttle", view.throttle_classes, []),
        ):
            if list(found) != allowed:
                raise ImproperlyConfigured(f"Fast route {path}: {name} {kind} classes {found!r} would be skipped")
        if "POST" not in view.allowed_methods:
            raise ImproperlyConfigured(f"Fast route {path}: {name} does not answer POST")
        serializer = view.input_serializer()
        check_validated_field_by_field(serializer)
        renderer = view.get_renderers()[0]
        content_type = f"{renderer.media_type}; charset={renderer.charset}" if renderer.charset else renderer.media_type
        route = cls(
            path=path,
            view=view,
            key_kind=authenticators[0].required_kind,
            serializer=serializer,
            handle=view_class.handler,
            atomic=view.atomic_writes,
            renderer=renderer,
            view_headers=(("Content-Type", content_type), *view.default_response_headers.items()),
            timers={
                status: REQUEST_DURATION.labels(route=path.lstrip("/"), method="POST", status=str(status))
                for status in _STATUS_LINES
            },
        )
        if not route.accepts("*/*"):
            raise ImproperlyConfigured(f"Fast route {path}: {name} does not answer with {renderer.media_type}")
        return route

    def accepts(self, accept: str) -> bool:
        """Whether the view's content negotiation picks the route's renderer for this `Accept` (DRF answers 406
        otherwise, as the envelope's 400 here)."""
        known = self._accepts.get(accept)
        if known is None:
            request = HttpRequest()
            request.META["HTTP_ACCEPT"] = accept
            try:
                renderer, _ = self.view.get_content_negotiator().select_renderer(
                    Request(request), self.view.get_renderers()
                )
            except NotAcceptable:
                known = False
            else:
                known = type(renderer) is type(self.renderer)
            if len(self._accepts) >= _ACCEPT_MEMORY:
                self._accepts.clear()
            self._accepts[accept] = known
        return known


def _token(environ, kind: KeyKind) -> str | None:
    token = bearer_token(environ.get("HTTP_AUTHORIZATION", ""))
    return token if token is not None and token.startswith(PREFIXES[kind]) else None


def _body(environ) -> bytes | None:
    try:
        length = int(environ.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None
    if not 0 < length <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        return None
    return environ["wsgi.input"].read(length)


def _answer(route: FastRoute, environ, body: bytes) -> tuple[int, list, bytes] | None:
    """(status, rate-limit headers, body) of the answer, or None for Django to answer; an exception means nothing was
    written."""
    token = _token(environ, route.key_kind)
    if token is None or not environ.get("CONTENT_TYPE", "").startswith("application/json"):
        return None
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if body_may_be_faulty(body) and body_fault(payload) is not None:
        return None  # the view's parser names the field
    values = validated_fields(route.serializer, payload)
    if values is None:
        return None
    window = Window.now() if settings.API_RATE_LIMIT_PER_MINUTE > 0 else None
    match = api_key_lookup(token=token, window=window)
    counted = window is not None and window.count is not None
    if counted:  # handed on to the view if this request goes there
        environ[COUNTED_ENVIRON_KEY] = window.state()
    if match is None or match.kind is not route.key_kind or match.project.disabled:
        return None
    set_project_id(match.project.id)
    if not counted:
        environ[COUNTED_ENVIRON_KEY] = rate_limit_hit(project_scope(match.project.id, match.kind))
    limit = environ[COUNTED_ENVIRON_KEY]
    if limit is not None and limit.exceeded:
        return None
    rate_limit = list(limit.headers().items()) if limit is not None else []
    try:
        with transaction.atomic() if route.atomic else contextlib.nullcontext():
            data = route.handle(match.project, values, payload)
        return 200, rate_limit, route.renderer.render(data)
    except ServiceError:
        return None  # nothing was written: the view answers it with its envelope
    except Exception:
        # The handler may have written (in autocommit, or committed before the failure): the view must not run it
        # again. The view's answer to an unexpected error, as its exception handler gives it.
        logger.exception("Unhandled error in %s", type(route.view).__name__)
        return 500, rate_limit, route.renderer.render(unexpected_error_envelope())


def _plain(route: FastRoute, environ) -> bool:
    """Nothing in the request beyond its key and body that Django's middleware or the view would act on."""
    return (
        environ.get("REQUEST_METHOD") == "POST"
        and not environ.get("QUERY_STRING")
        and "HTTP_IDEMPOTENCY_KEY" not in environ
        and "HTTP_ORIGIN" not in environ
        and "HTTP_COOKIE" not in environ
        and ("HTTP_ACCEPT" not in environ or route.accepts(environ["HTTP_ACCEPT"]))
        # Public-key calls counted per client address too: the view does that second count.
        and not (route.key_kind is KeyKind.PUBLIC and settings.PUBLIC_KEY_RATE_LIMIT_PER_ADDRESS_PER_MINUTE > 0)
    )


def with_fast_routes(application, routes: list[FastRoute]):
    """Wrap a WSGI application so that successful calls of `routes` are answered without Django."""
    by_path = {route.path: route for route in routes}

    def fast_application(environ, start_response):
        route = by_path.get(environ.get("PATH_INFO"))
        if route is None or not _plain(route, environ):
            return application(environ, start_response)
        started = time.perf_counter()
        try:
            headers = middleware_headers(route.path, "POST", route.view_headers, environ)
        except Exception:  # Django meets the same fault and answers it (a misconfigured SECURE_PROXY_SSL_HEADER)
            logger.warning("Fast %s: no headers; handing the request to Django", route.path, exc_info=True)
            headers = None
        body = _body(environ) if headers is not None else None
        if body is None:
            return application(environ, start_response)
        request_id = request_id_for(environ.get("HTTP_X_REQUEST_ID", ""))
        token = set_request_id(request_id)
        lifecycle.request_started(environ)
        try:
            answer = _answer(route, environ, body)
        except Exception:
            # Raised before the handler was called: nothing was written, and the view answers as it would have.
            logger.warning("Fast %s failed; handing the request to the view", route.path, exc_info=True)
            answer = None
        finally:
            lifecycle.request_finished()
            reset_request_id(token)
        if answer is None:
            # Django reads the body again, and logs and answers under the same request id.
            environ["wsgi.input"] = io.BytesIO(body)
            environ["HTTP_X_REQUEST_ID"] = request_id
            return application(environ, start_response)
        status, rate_limit, content = answer
        start_response(
            _STATUS_LINES[status],
            [*headers, *rate_limit, ("Content-Length", str(len(content))), ("X-Request-Id", request_id)],
        )
        route.timers[status].observe(time.perf_counter() - started)
        return [content]

    return fast_application

"""The public API's busiest calls (`POST /v1/track`, `POST /v1/send`) answered in front of Django when they succeed.

They are called for every page view and every message of every integrator. Behind Django's middleware stack and
DRF (request and response objects, content negotiation, a deep copy of the serializer's fields per request) a call
cost twice the work of the request itself. A route here takes the view's steps with the view's functions: the key
lookup, the serializer's own fields, the rate limit, the same service in one transaction, the same response data.
It answers only a request that succeeds. Anything else (no or a wrong key, a disabled project, a body that is not
valid, a service error, an `Idempotency-Key`, an exceeded limit) goes on to Django unchanged, with nothing written,
and the view answers it with the documented envelope; a request already counted by the rate limit is not counted
again there. So does a call from a web page (an `Origin` header): CORS headers are django-cors-headers' to give.
"""

import contextlib
import io
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core import signals
from django.db import transaction
from rest_framework.serializers import Serializer

from accounts.keys import PREFIXES, KeyKind
from accounts.models import Project
from accounts.selectors import api_key_lookup
from config.api.authentication import bearer_token
from config.api.middleware import request_id_for, reset_request_id, set_request_id
from config.api.ratelimit import COUNTED_ENVIRON_KEY
from config.api.renderers import JsonRenderer
from config.api.sanity import body_fault, body_may_be_faulty
from config.api.validation import check_validated_field_by_field, validated_fields
from core.errors import ServiceError
from core.ratelimit import Window, project_scope, rate_limit_hit

logger = logging.getLogger(__name__)
_RENDERER = JsonRenderer()
# What Django's middleware adds to every API answer (SecurityMiddleware, XFrameOptionsMiddleware, DRF).
_HEADERS = [
    ("Content-Type", "application/json"),
    ("Allow", "POST, OPTIONS"),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
]


@dataclass(frozen=True)
class FastRoute:
    path: str
    key_kind: KeyKind
    # One bound instance: its fields are built once and validating a value keeps no state in them.
    serializer: Serializer
    # (project, validated values, the body as sent) -> the response data.
    handle: Callable[[Project, dict, dict], dict]
    # Run `handle` in a transaction (off for a service that is atomic on its own, as the view's `atomic_writes`).
    atomic: bool = True
    # Headers the view's answer has beyond the common ones (django-cors-headers varies /v1/track on the origin).
    headers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        # At start-up: a serializer with a hook that field-by-field validation skips would let the route accept
        # what the view refuses.
        check_validated_field_by_field(self.serializer)


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


def _answer(route: FastRoute, environ, body: bytes) -> tuple[list, bytes] | None:
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
    if not counted:
        environ[COUNTED_ENVIRON_KEY] = rate_limit_hit(project_scope(match.project.id))
    limit = environ[COUNTED_ENVIRON_KEY]
    if limit is not None and limit.exceeded:
        return None
    try:
        with transaction.atomic() if route.atomic else contextlib.nullcontext():
            data = route.handle(match.project, values, payload)
    except ServiceError:
        return None  # the view answers it with its envelope
    headers = _HEADERS + list(route.headers) + (list(limit.headers().items()) if limit is not None else [])
    return headers, _RENDERER.render(data)


def with_fast_routes(application, routes: list[FastRoute]):
    """Wrap a WSGI application so that successful calls of `routes` are answered without Django."""
    by_path = {route.path: route for route in routes}

    def fast_application(environ, start_response):
        route = by_path.get(environ.get("PATH_INFO"))
        if (
            route is None
            or environ.get("REQUEST_METHOD") != "POST"
            or "HTTP_IDEMPOTENCY_KEY" in environ
            or "HTTP_ORIGIN" in environ
        ):
            return application(environ, start_response)
        body = _body(environ)
        if body is None:
            return application(environ, start_response)
        request_id = request_id_for(environ.get("HTTP_X_REQUEST_ID", ""))
        token = set_request_id(request_id)
        signals.request_started.send(sender=None, environ=environ)
        try:
            answer = _answer(route, environ, body)
        except Exception:
            # The view answers the error as it would have (nothing was written: the handler is atomic).
            logger.warning("Fast %s failed; handing the request to the view", route.path, exc_info=True)
            answer = None
        finally:
            signals.request_finished.send(sender=None)
            reset_request_id(token)
        if answer is None:
            # Django reads the body again, and logs and answers under the same request id.
            environ["wsgi.input"] = io.BytesIO(body)
            environ["HTTP_X_REQUEST_ID"] = request_id
            return application(environ, start_response)
        headers, content = answer
        start_response("200 OK", [*headers, ("Content-Length", str(len(content))), ("X-Request-Id", request_id)])
        return [content]

    return fast_application

"""`POST /v1/track` answered in front of Django when it succeeds.

The public tracking endpoint is called on every page view of every integrator's site. Behind Django's middleware
stack and DRF (request and response objects, content negotiation, a deep copy of the serializer's fields per
request) it cost three times the work of the request itself. This path takes the same steps with the same
functions as `contacts.api.views.TrackView`: the key lookup, the serializer's own fields, the rate limit and
`contacts.services.event_track`. It answers only a request that succeeds. Anything else (no or a wrong key, a
disabled project, a body that is not valid, an `Idempotency-Key`, an exceeded limit) goes on to Django unchanged,
and the view answers it with the documented envelope. So does a call from a web page (an `Origin` header): the CORS
headers are django-cors-headers' to give, not a copy of its rules here.
"""

import io
import json
import logging

from django.conf import settings
from django.core import signals
from rest_framework.exceptions import ValidationError
from rest_framework.fields import SkipField

from accounts.keys import PREFIXES, KeyKind
from accounts.selectors import api_key_lookup
from config.api.authentication import bearer_token
from config.api.middleware import request_id_for, reset_request_id, set_request_id
from config.api.ratelimit import rate_limit_hit
from config.api.renderers import JsonRenderer
from config.api.validation import type_errors
from contacts.api.serializers import TrackInputSerializer
from contacts.api.views import track_response_data
from contacts.services import event_track

logger = logging.getLogger(__name__)
PATH = "/v1/track"
# One bound instance: its fields are built once and validating a value keeps no state in them.
_SERIALIZER = TrackInputSerializer()
_RENDERER = JsonRenderer()
# What Django's middleware would add to the same answer (SecurityMiddleware, XFrameOptionsMiddleware, DRF, and
# django-cors-headers, which varies every answer of this URL on the origin).
_HEADERS = [
    ("Content-Type", "application/json"),
    ("Vary", "origin"),
    ("Allow", "POST, OPTIONS"),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
]


def _public_key(environ) -> str | None:
    token = bearer_token(environ.get("HTTP_AUTHORIZATION", ""))
    return token if token is not None and token.startswith(PREFIXES[KeyKind.PUBLIC]) else None


def _body(environ) -> bytes | None:
    try:
        length = int(environ.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None
    if not 0 < length <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        return None
    return environ["wsgi.input"].read(length)


def _validated(payload) -> dict | None:
    """The serializer's validated data, as `config.api.validation.validate` gives it, or None when not valid."""
    if not isinstance(payload, dict) or type_errors(_SERIALIZER, payload, []):
        return None
    values = {}
    for name, field in _SERIALIZER.fields.items():
        try:
            values[name] = field.run_validation(field.get_value(payload))
        except SkipField:
            continue
        except ValidationError:
            return None
    return values


def _answer(environ, body: bytes) -> tuple[list, bytes] | None:
    token = _public_key(environ)
    if token is None or not environ.get("CONTENT_TYPE", "").startswith("application/json"):
        return None
    try:
        values = _validated(json.loads(body))
    except ValueError:
        return None
    if values is None:
        return None
    match = api_key_lookup(token=token)
    if match is None or match.kind is not KeyKind.PUBLIC or match.project.disabled:
        return None
    limit = rate_limit_hit(f"project:{match.project.id}")
    if limit is not None and limit.exceeded:
        return None
    result = event_track(
        project=match.project,
        email=values["email"],
        name=values["event"],
        subscribed=values.get("subscribed"),
        data=values.get("data"),
    )
    headers = _HEADERS + (list(limit.headers().items()) if limit is not None else [])
    return headers, _RENDERER.render(track_response_data(result))


def with_track_route(application):
    """Wrap a WSGI application so that a successful `POST /v1/track` is answered without Django."""

    def track_application(environ, start_response):
        if (
            environ.get("PATH_INFO") != PATH
            or environ.get("REQUEST_METHOD") != "POST"
            or "HTTP_IDEMPOTENCY_KEY" in environ
            or "HTTP_ORIGIN" in environ
        ):
            return application(environ, start_response)
        body = _body(environ)
        if body is None:
            return application(environ, start_response)
        # Django reads the body again when it answers instead.
        environ["wsgi.input"] = io.BytesIO(body)
        request_id = request_id_for(environ.get("HTTP_X_REQUEST_ID", ""))
        token = set_request_id(request_id)
        signals.request_started.send(sender=None, environ=environ)
        try:
            answer = _answer(environ, body)
        except Exception:
            # The view answers the error as it would have (nothing was written: event_track is atomic).
            logger.warning("Fast /v1/track failed; handing the request to the view", exc_info=True)
            answer = None
        finally:
            signals.request_finished.send(sender=None)
            reset_request_id(token)
        if answer is None:
            environ["wsgi.input"] = io.BytesIO(body)
            environ["HTTP_X_REQUEST_ID"] = request_id  # one id in the logs of both attempts and in the answer
            return application(environ, start_response)
        headers, content = answer
        start_response("200 OK", [*headers, ("Content-Length", str(len(content))), ("X-Request-Id", request_id)])
        return [content]

    return track_application

"""Request ids: one per request, echoed in `X-Request-Id`, in every error envelope and in every log line."""

import logging
import re
import uuid
from contextvars import ContextVar, Token

_request_id: ContextVar[str] = ContextVar("request_id", default="-")
# A caller may pass its own id (a proxy's, a client's trace id) as long as it is short and harmless in logs.
_ACCEPTED_ID = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")


def request_id_for(incoming: str) -> str:
    """The caller's id when it is acceptable, else a new one."""
    return incoming if _ACCEPTED_ID.match(incoming) else str(uuid.uuid4())


def current_request_id() -> str:
    return _request_id.get()


def set_request_id(value: str) -> Token:
    return _request_id.set(value)


def reset_request_id(token: Token) -> None:
    _request_id.reset(token)


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = request_id_for(request.META.get("HTTP_X_REQUEST_ID", ""))
        token = _request_id.set(request_id)
        request.request_id = request_id
        try:
            response = self.get_response(request)
        finally:
            _request_id.reset(token)
        response["X-Request-Id"] = request_id
        return response


class RequestIdLogFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get()
        return True

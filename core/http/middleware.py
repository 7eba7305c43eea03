"""Request ids: one per request, echoed in `X-Request-Id`, in every error envelope and in every log line; with the
project the request acts for once it is authenticated (`project_admit`), for the log lines too."""

import logging
import re
import uuid
from contextvars import ContextVar, Token

# (request id, project id) of the request or task being served; "-" where there is none (yet).
_log_context: ContextVar[tuple[str, str]] = ContextVar("log_context", default=("-", "-"))
# A caller may pass its own id (a proxy's, a client's trace id) as long as it is short and harmless in logs.
_ACCEPTED_ID = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")


def request_id_for(incoming: str) -> str:
    """The caller's id when it is acceptable, else a new one."""
    return incoming if _ACCEPTED_ID.match(incoming) else str(uuid.uuid4())


def current_request_id() -> str:
    return _log_context.get()[0]


def current_project_id() -> str:
    return _log_context.get()[1]


def set_request_id(value: str, project_id: str = "-") -> Token:
    """Serve a request (or a task) under this id from now on; `reset_request_id` with the token puts back what was
    there before, the project id set meanwhile included."""
    return _log_context.set((value, project_id))


def set_project_id(value) -> None:
    _log_context.set((_log_context.get()[0], str(value)))


def reset_request_id(token: Token) -> None:
    _log_context.reset(token)


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = request_id_for(request.META.get("HTTP_X_REQUEST_ID", ""))
        token = set_request_id(request_id)
        request.request_id = request_id
        try:
            response = self.get_response(request)
        finally:
            reset_request_id(token)
        response["X-Request-Id"] = request_id
        return response


class RequestIdLogFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id, record.project_id = _log_context.get()
        return True

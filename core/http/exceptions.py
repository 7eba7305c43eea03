"""The HTTP side of errors: the handler that renders every error as the API's envelope.

Services raise `core.errors.ServiceError` subclasses; DRF's and Django's own exceptions are translated here too, so
every error of every endpoint leaves the service as `{success: false, error: {...}, timestamp}`.
"""

import logging

from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response

from core.errors import BadRequest, ErrorCode, Forbidden, ServiceError, ValidationFailed
from core.http.middleware import current_request_id
from core.time import iso_now

logger = logging.getLogger(__name__)


class BareError(Exception):
    """The three bare `{error: <message>}` 400 answers (missing email, from, condition)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def envelope(
    *,
    status: int,
    code: str,
    message: str,
    errors: list | None = None,
    details: dict | None = None,
    suggestion: str | None = None,
) -> dict:
    error = {"code": str(code), "message": message, "statusCode": status, "requestId": current_request_id()}
    if errors:
        error["errors"] = errors
    if details:
        error["details"] = details
    if suggestion:
        error["suggestion"] = suggestion
    return {"success": False, "error": error, "timestamp": iso_now()}


UNEXPECTED_ERROR = "An unexpected error occurred"


def unexpected_error_envelope() -> dict:
    """The 500 answer's body: what failed is logged, not told."""
    return envelope(status=500, code=ErrorCode.INTERNAL_SERVER_ERROR, message=UNEXPECTED_ERROR)


def error_json_response(status: int, code: str, message: str) -> JsonResponse:
    """The envelope for errors raised outside DRF (unknown routes, Django's 500 handler)."""
    return JsonResponse(envelope(status=status, code=code, message=message), status=status)


def route_not_found_response(request) -> JsonResponse:
    return error_json_response(404, ErrorCode.RESOURCE_NOT_FOUND, f"Route {request.method} {request.path} not found")


class MethodNotAllowedEnvelopeMiddleware:
    """Django's function views answer a wrong method with an empty HTML 405 (`require_http_methods`); the API's
    answer is the error envelope, with the same `Allow` header."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code != 405 or response.get("Content-Type", "").startswith("application/json"):
            return response
        allowed = response.get("Allow", "")
        message = f'Method "{request.method}" not allowed' + (f" (allowed: {allowed})" if allowed else "")
        envelope = error_json_response(405, ErrorCode.METHOD_NOT_ALLOWED, message)
        if allowed:
            envelope["Allow"] = allowed
        return envelope


_DRF_STATUS_CODES = {
    drf.NotAuthenticated: (401, ErrorCode.MISSING_AUTH),
    drf.AuthenticationFailed: (401, ErrorCode.UNAUTHORIZED),
    drf.PermissionDenied: (403, ErrorCode.FORBIDDEN),
    drf.NotFound: (404, ErrorCode.RESOURCE_NOT_FOUND),
    drf.MethodNotAllowed: (405, ErrorCode.METHOD_NOT_ALLOWED),
    drf.ParseError: (400, ErrorCode.INVALID_REQUEST_BODY),
    drf.UnsupportedMediaType: (400, ErrorCode.INVALID_REQUEST_BODY),
    drf.NotAcceptable: (400, ErrorCode.BAD_REQUEST),
    drf.Throttled: (429, ErrorCode.RATE_LIMIT_EXCEEDED),
}


def _as_api_error(exc: Exception) -> ServiceError | None:
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, RequestDataTooBig):
        return ServiceError("Request body is too large", code=ErrorCode.PAYLOAD_TOO_LARGE, status=413)
    if isinstance(exc, Http404):
        return ServiceError("The requested resource was not found", code=ErrorCode.RESOURCE_NOT_FOUND, status=404)
    if isinstance(exc, PermissionDenied):
        return Forbidden("You do not have permission to perform this action")
    if isinstance(exc, SuspiciousOperation):
        return BadRequest(str(exc) or "Bad request")
    if isinstance(exc, drf.ValidationError):
        # Views validate through core.http.validation, which raises ValidationFailed with mapped codes; a raw
        # DRF ValidationError reaching here still gets the envelope.
        from core.http.validation import flatten_errors

        return ValidationFailed(flatten_errors(exc.detail))
    for drf_class, (status, code) in _DRF_STATUS_CODES.items():
        if isinstance(exc, drf_class):
            message = str(exc.detail) if hasattr(exc, "detail") else str(exc)
            if isinstance(exc, drf.NotAuthenticated):
                message = "Missing Authorization header. Use `Authorization: Bearer <API key>`"
            elif isinstance(exc, drf.ParseError):
                message = f"Request body is not valid JSON: {exc.detail}"
            return ServiceError(message, code=code, status=status)
    return None


def exception_handler(exc: Exception, context: dict) -> Response:
    if isinstance(exc, BareError):
        return Response({"error": exc.message}, status=400)
    view = context.get("view")
    if isinstance(exc, drf.MethodNotAllowed) and getattr(view, "request", None) is not None:
        error = _method_not_allowed(exc, view)
    else:
        error = _as_api_error(exc)
    if error is None:
        logger.exception("Unhandled error in %s", type(view).__name__ if view else "view", exc_info=exc)
        error = ServiceError(UNEXPECTED_ERROR, code=ErrorCode.INTERNAL_SERVER_ERROR, status=500)
    body = envelope(
        status=error.status,
        code=error.code,
        message=error.message,
        errors=error.errors,
        details=error.details,
        suggestion=error.suggestion,
    )
    response = Response(body, status=error.status, headers=error.headers or None)
    if isinstance(exc, drf.MethodNotAllowed) and context.get("view") is not None:
        response["Allow"] = ", ".join(context["view"].allowed_methods)
    return response


def _method_not_allowed(exc: drf.MethodNotAllowed, view) -> ServiceError:
    """What the route takes, and where the request may have meant to go (the view's `method_hints`)."""
    request = view.request
    allowed = [method for method in view.allowed_methods if method not in ("HEAD", "OPTIONS")]
    hint = getattr(view, "method_hints", {}).get(request.method)
    return ServiceError(
        f'Method "{request.method}" not allowed on {request.path}: it takes {", ".join(allowed)}',
        code=ErrorCode.METHOD_NOT_ALLOWED,
        status=405,
        suggestion=hint,
    )

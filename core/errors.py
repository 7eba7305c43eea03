"""The service's error vocabulary: every service, task and command raises these.

An error carries a code from one enum, the HTTP status a caller should see, and optional field errors (dotted
paths such as `to.2.email`), details and a suggestion. This package imports no app and no HTTP code: the API's
exception handler (`core.http.exceptions`) renders these as the error envelope.
"""

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    BAD_REQUEST = "BAD_REQUEST"
    INVALID_REQUEST_BODY = "INVALID_REQUEST_BODY"
    MISSING_AUTH = "MISSING_AUTH"
    UNAUTHORIZED = "UNAUTHORIZED"
    INVALID_API_KEY = "INVALID_API_KEY"
    INVALID_CREDENTIALS = "INVALID_CREDENTIALS"
    INVALID_TOKEN = "INVALID_TOKEN"
    SIGNUPS_DISABLED = "SIGNUPS_DISABLED"
    OAUTH_DENIED = "OAUTH_DENIED"
    OAUTH_STATE_INVALID = "OAUTH_STATE_INVALID"
    OAUTH_PROVIDER_ERROR = "OAUTH_PROVIDER_ERROR"
    OAUTH_EMAIL_UNVERIFIED = "OAUTH_EMAIL_UNVERIFIED"
    FORBIDDEN = "FORBIDDEN"
    PROJECT_DISABLED = "PROJECT_DISABLED"
    PROJECT_ACCESS_DENIED = "PROJECT_ACCESS_DENIED"
    CSRF_FAILED = "CSRF_FAILED"
    DOMAIN_NOT_VERIFIED = "DOMAIN_NOT_VERIFIED"
    RESOURCE_NOT_FOUND = "RESOURCE_NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    CONFLICT = "CONFLICT"
    CAMPAIGN_NOT_EDITABLE = "CAMPAIGN_NOT_EDITABLE"
    CAMPAIGN_ACTIVE = "CAMPAIGN_ACTIVE"
    WORKFLOW_ACTIVE = "WORKFLOW_ACTIVE"
    WORKFLOW_DISABLED = "WORKFLOW_DISABLED"
    IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    RATE_LIMIT_EXCEEDED = "RATE_LIMIT_EXCEEDED"
    BILLING_LIMIT_EXCEEDED = "BILLING_LIMIT_EXCEEDED"
    INTERNAL_SERVER_ERROR = "INTERNAL_SERVER_ERROR"
    FEATURE_DISABLED = "FEATURE_DISABLED"
    SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"


class ServiceError(Exception):
    """An error with a code, an HTTP status and optional field errors, details and a suggestion."""

    status = 400
    code: str = ErrorCode.BAD_REQUEST

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        errors: list[dict] | None = None,
        details: dict | None = None,
        suggestion: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.code = code or self.code
        self.status = status or self.status
        self.errors = errors
        self.details = details
        self.suggestion = suggestion
        self.headers = headers or {}


class BadRequest(ServiceError):
    status, code = 400, ErrorCode.BAD_REQUEST


class InvalidRequestBody(ServiceError):
    status, code = 400, ErrorCode.INVALID_REQUEST_BODY


class AuthError(ServiceError):
    status, code = 401, ErrorCode.UNAUTHORIZED


class Forbidden(ServiceError):
    status, code = 403, ErrorCode.FORBIDDEN


class Conflict(ServiceError):
    status, code = 409, ErrorCode.CONFLICT


class ValidationFailed(ServiceError):
    status, code = 422, ErrorCode.VALIDATION_ERROR

    def __init__(self, errors: list[dict], message: str | None = None):
        first = errors[0] if errors else {}
        summary = f"{first.get('field')}: {first.get('message')}" if first.get("field") else first.get("message")
        super().__init__(message or f"Validation failed: {summary}", errors=errors)

    @classmethod
    def field(cls, field: str, message: str, code: str = "custom", received: Any = None) -> "ValidationFailed":
        error = {"field": field, "message": message, "code": code}
        if received is not None:
            error["received"] = received
        return cls([error])


class NotFound(ServiceError):
    status = 404

    def __init__(self, kind: str, resource_id: Any):
        super().__init__(
            f'{kind} with ID "{resource_id}" was not found',
            code=f"{kind.upper().replace(' ', '_')}_NOT_FOUND",
            details={"resource": kind, "id": str(resource_id)},
        )


class RateLimited(ServiceError):
    status, code = 429, ErrorCode.RATE_LIMIT_EXCEEDED


class BillingLimitExceeded(ServiceError):
    status, code = 429, ErrorCode.BILLING_LIMIT_EXCEEDED


class PayloadTooLarge(ServiceError):
    status, code = 413, ErrorCode.PAYLOAD_TOO_LARGE


class FeatureDisabled(ServiceError):
    """A feature this installation has not configured (its settings are empty)."""

    status, code = 501, ErrorCode.FEATURE_DISABLED

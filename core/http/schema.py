"""OpenAPI: the error envelope as a shared component, and the error answers every operation can give, so that the
published schema says what the service does (a test checks responses against it)."""

from drf_spectacular import openapi
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

ERROR_ENVELOPE = {
    "type": "object",
    "required": ["success", "error", "timestamp"],
    "properties": {
        "success": {"type": "boolean", "enum": [False]},
        "error": {
            "type": "object",
            "required": ["code", "message", "statusCode", "requestId"],
            "properties": {
                "code": {"type": "string", "example": "VALIDATION_ERROR"},
                "message": {"type": "string"},
                "statusCode": {"type": "integer", "example": 422},
                "requestId": {"type": "string"},
                "errors": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["field", "message", "code"],
                        "properties": {
                            "field": {"type": "string", "example": "to.2.email"},
                            "message": {"type": "string"},
                            "code": {"type": "string", "example": "invalid_string"},
                            "received": {},
                        },
                    },
                },
                "details": {"type": "object", "additionalProperties": True},
                "suggestion": {"type": "string"},
            },
        },
        "timestamp": {"type": "string", "format": "date-time"},
    },
}
BARE_ERROR = {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}
ERROR_RESPONSE = OpenApiResponse(description="Error envelope")
# A free-form JSON object field (contact `data`), for `extend_schema_field`.
JSON_OBJECT = {"type": "object", "additionalProperties": True, "nullable": True}


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's, plus the body of a DELETE whose view names one with `extend_schema(request=...)`
    (`DELETE /segments/{id}/members` takes the addresses to remove); spectacular publishes bodies only for POST,
    PUT and PATCH."""

    def get_request_serializer(self):
        # Without a declared request, a DELETE has no body (and no serializer to guess).
        return None if self.method == "DELETE" else super().get_request_serializer()

    def _get_request_body(self, direction="request"):
        if self.method != "DELETE" or self.get_request_serializer() is None:
            return super()._get_request_body(direction)
        # Read as the POST of the same body: spectacular's method check is the only difference.
        self.method = "POST"
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"


def bare_or_envelope_400(description: str) -> OpenApiResponse:
    """A 400 that is the bare `{error}` the API gives for one missing field, or the envelope for a malformed body."""
    return OpenApiResponse(
        response={
            "oneOf": [{"$ref": "#/components/schemas/BareError"}, {"$ref": "#/components/schemas/ErrorEnvelope"}]
        },
        description=description,
    )


def count_parameter(name: str, description: str, *, maximum: int | None = None) -> OpenApiParameter:
    """An integer query parameter read by `core.http.pagination.int_param`: below 1 is 422; above `maximum` is
    422 too when given here, otherwise clamped (the description says to what)."""
    schema = {"type": "integer", "minimum": 1}
    if maximum is not None:
        schema["maximum"] = maximum
    return OpenApiParameter(name, schema, description=description)


IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7e]+$"},
    OpenApiParameter.HEADER,
    description="Printable ASCII, 1 to 255 characters; any reuse within its lifetime is 409 (docs/api.md)",
)


def add_error_components(result, generator, request, public):
    """Publish the envelope and reference it from every operation's error answers that have no own schema."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["ErrorEnvelope"] = ERROR_ENVELOPE
    schemas["BareError"] = BARE_ERROR
    error_ref = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}
    # The API's keys and sessions; a provider's signature (the payment webhook's) is refused otherwise.
    key_schemes = {
        name
        for name, scheme in result["components"].get("securitySchemes", {}).items()
        if scheme.get("scheme") == "bearer" or scheme.get("in") == "cookie"
    }
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            defaults = _error_defaults(operation, key_schemes)
            for status, description in defaults.items():
                responses.setdefault(status, {"description": description, "content": error_ref})
            for status, response in responses.items():
                if status.startswith(("4", "5")) and "content" not in response:
                    response["content"] = error_ref
    return result


def _error_defaults(operation: dict, key_schemes: set[str]) -> dict[str, str]:
    """The error statuses an operation can answer whatever its view declares, from what it takes."""
    parameters = operation.get("parameters", [])
    security = operation.get("security") or []
    keyed = any(name in key_schemes for requirement in security for name in requirement)
    # A body signed by a provider (the payment webhook's) is checked by its signature, not validated field by field.
    takes_body = "requestBody" in operation and (keyed or not any(security))
    # Any URL may carry a NUL character (`core.http.sanity`), so every operation can answer 400.
    defaults = {
        "400": "Malformed request: a NUL character in the URL, a body that is not a JSON object, a cursor or "
        "Idempotency-Key not valid"
    }
    if keyed:
        defaults["401"] = "Missing, unknown or wrong kind of API key"
        defaults["403"] = "The project is disabled (PROJECT_DISABLED), or the action is not allowed"
    if any(p["in"] == "path" for p in parameters):
        defaults["404"] = "Not found in this project"
    if any(p["name"] == "Idempotency-Key" for p in parameters):
        defaults["409"] = "The Idempotency-Key was used before (IDEMPOTENCY_KEY_REUSED)"
    if takes_body or any(p["in"] in ("query", "path") for p in parameters):
        defaults["422"] = "Validation failed (VALIDATION_ERROR), with the field of each error"
    defaults["429"] = "Rate limit exceeded"
    defaults["500"] = "Unexpected error"
    return defaults

"""OpenAPI: the two key schemes and the error envelope as shared components."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class _BearerKeyScheme(OpenApiAuthenticationExtension):
    priority = 1

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": self.description}


class SecretKeyScheme(_BearerKeyScheme):
    target_class = "config.api.authentication.SecretKeyAuthentication"
    name = "secretKey"
    description = "The project's secret key, `sk_…`. Required by every endpoint except POST /v1/track."


class PublicKeyScheme(_BearerKeyScheme):
    target_class = "config.api.authentication.PublicKeyAuthentication"
    name = "publicKey"
    description = "The project's public key, `pk_…`. Accepted only by POST /v1/track."


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


def add_error_components(result, generator, request, public):
    """Publish the envelope and reference it from every operation's error answers that have no own schema."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["ErrorEnvelope"] = ERROR_ENVELOPE
    schemas["BareError"] = BARE_ERROR
    error_ref = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            defaults = {"401": "Missing, unknown or wrong kind of API key", "429": "Rate limit exceeded"}
            if operation.get("security") == [{}] or not operation.get("security"):
                defaults = {"429": "Rate limit exceeded"}
            defaults["500"] = "Unexpected error"
            for status, description in defaults.items():
                responses.setdefault(status, {"description": description, "content": error_ref})
            for status, response in responses.items():
                if status.startswith(("4", "5")) and "content" not in response:
                    response["content"] = error_ref
    return result

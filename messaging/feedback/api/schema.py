"""OpenAPI: the provider webhooks, which are Django views (Anymail's), not DRF views, so drf-spectacular does not
see them; this postprocessing hook publishes them as they answer (docs/api/webhooks.md).

A provider's body is the provider's own format: published as a free-form body of the content type it sends. The
generic webhook's body is ours: published to the field, from the parser's rules (`messaging.feedback.generic`)."""

from messaging.feedback import generic
from messaging.feedback.api.webhooks import PROVIDER_VIEWS
from messaging.feedback.events import BOUNCED, HARD, SOFT

_BASIC = {"webhookBasicAuth": []}
SECURITY_SCHEMES = {
    "webhookBasicAuth": {
        "type": "http",
        "scheme": "basic",
        "description": "A `user:password` pair of WEBHOOK_SECRET, in the webhook URL "
        "(`https://user:password@mail.example.com/webhooks/postmark`)",
    },
    "svixId": {"type": "apiKey", "in": "header", "name": "svix-id", "description": "Svix: the message id"},
    "svixTimestamp": {"type": "apiKey", "in": "header", "name": "svix-timestamp", "description": "Unix seconds"},
    "svixSignature": {
        "type": "apiKey",
        "in": "header",
        "name": "svix-signature",
        "description": "Svix signature with FEEDBACK_RESEND_SIGNING_SECRET, within FEEDBACK_SIGNATURE_TOLERANCE",
    },
    "heraldTimestamp": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Herald-Timestamp",
        "description": "The time of signing in Unix seconds, within FEEDBACK_SIGNATURE_TOLERANCE (300 s)",
    },
    "heraldSignature": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Herald-Signature",
        "description": "`v1=` and the hex HMAC-SHA256, keyed with FEEDBACK_GENERIC_SECRET, of `<timestamp>.<raw body>`",
    },
}

_OBJECT = {"type": "object", "additionalProperties": True}
_JSON = {"application/json": {"schema": _OBJECT}}
# Per provider: who calls, what it sends, how it authenticates (security requirements, any one of which; the schemes of one are
# all needed), and the body it sends.
PROVIDERS = {
    "ses": (
        "Amazon SES",
        "Amazon SES through an SNS topic. The SNS message signature (in the body) and a topic on "
        "FEEDBACK_SES_TOPIC_ARNS authenticate; basic auth too when WEBHOOK_SECRET is set (401 with "
        "WWW-Authenticate until it is sent). A SubscriptionConfirmation is confirmed.",
        [_BASIC, {}],
        {
            "text/plain": {"schema": {"type": "string", "description": "The SNS message, a JSON object"}},
            "application/json": {"schema": _OBJECT},
        },
    ),
    "postmark": ("Postmark", "One event", [_BASIC], _JSON),
    "mailgun": (
        "Mailgun",
        "`signature` in the body, HMAC with MAILGUN_WEBHOOK_SIGNING_KEY; basic auth too when WEBHOOK_SECRET is set",
        [_BASIC, {}],
        _JSON,
    ),
    "brevo": ("Brevo", "One event", [_BASIC], _JSON),
    "sparkpost": ("SparkPost", "A batch of events", [_BASIC], {"application/json": {"schema": {"type": "array"}}}),
    "resend": (
        "Resend",
        "One event, Svix-signed with FEEDBACK_RESEND_SIGNING_SECRET, and/or basic auth",
        [{"svixId": [], "svixTimestamp": [], "svixSignature": []}, _BASIC],
        _JSON,
    ),
}

_OTHER_TYPES = sorted(generic.TYPES - {BOUNCED})
_STRINGS = {
    key: {"type": "string", "nullable": True, "maxLength": limit} for key, limit in generic.STRING_LIMITS.items()
}
GENERIC_EVENT = {
    "type": "object",
    "required": ["id", "type"],
    "properties": {
        **_STRINGS,
        "timestamp": {**_STRINGS["timestamp"], "description": "ISO 8601 with a time zone; default now"},
        "id": {
            "type": "string",
            "minLength": 1,
            "maxLength": generic.STRING_LIMITS["id"],
            "description": "Unique per event: an id seen before is a no-op (counted in `duplicates`)",
        },
        "type": {"type": "string", "enum": sorted(generic.TYPES)},
        "bounceType": {"description": "hard or soft: required for bounced"},
    },
    "allOf": [
        {
            "description": "messageId (the Message-ID or the relay's id) or emailId (the email's id)",
            "anyOf": [
                {"required": ["messageId"], "properties": {"messageId": {"type": "string", "minLength": 1}}},
                {"required": ["emailId"], "properties": {"emailId": {"type": "string", "minLength": 1}}},
            ],
        },
        {
            "anyOf": [
                {"properties": {"type": {"type": "string", "enum": _OTHER_TYPES}}},
                {
                    "required": ["bounceType"],
                    "properties": {
                        "type": {"type": "string", "enum": [BOUNCED]},
                        "bounceType": {"type": "string", "enum": [HARD, SOFT]},
                    },
                },
            ]
        },
    ],
}
GENERIC_RECEIVED = {
    "type": "object",
    "required": ["received", "duplicates"],
    "properties": {"received": {"type": "integer"}, "duplicates": {"type": "integer"}},
}


def _error(description: str) -> dict:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}},
    }


def _operation(name: str, summary: str, description: str, security: list, content: dict, ok: dict) -> dict:
    responses = {
        "200": ok,
        "400": _error("A body that cannot be read (INVALID_REQUEST_BODY), or a NUL character in the URL"),
        "403": _error("No credentials configured for it, or a missing, wrong or stale signature (FORBIDDEN)"),
        "500": _error("Unexpected error: nothing of the notification is kept, the provider's retry processes it"),
    }
    if name == "ses":
        responses["401"] = {
            "description": "WEBHOOK_SECRET is set and the request has no Authorization header",
            "headers": {"WWW-Authenticate": {"schema": {"type": "string"}}},
        }
    return {
        "operationId": f"webhooks_{name}_create",
        "summary": summary,
        "description": description,
        "tags": ["webhooks"],
        "security": security,
        "requestBody": {"required": True, "content": content},
        "responses": dict(sorted(responses.items())),
    }


def add_webhook_operations(result, generator, request, public):
    """Publish `POST /webhooks/<provider>` and `POST /webhooks/generic` with their security schemes."""
    result.setdefault("components", {}).setdefault("securitySchemes", {}).update(SECURITY_SCHEMES)
    schemas = result["components"].setdefault("schemas", {})
    schemas["GenericWebhookEvent"] = GENERIC_EVENT
    schemas["GenericWebhookReceived"] = GENERIC_RECEIVED
    paths = result.setdefault("paths", {})
    for name in PROVIDER_VIEWS:
        caller, description, security, content = PROVIDERS[name]
        paths[f"/webhooks/{name}"] = {
            "post": _operation(
                name,
                f"Delivery events from {caller}, in its own format",
                description,
                security,
                content,
                {"description": "Processed, ignored (an unknown message, an event that changes nothing) or a repeat"},
            )
        }
    paths["/webhooks/generic"] = {
        "post": _operation(
            "generic",
            "Delivery events from a mail server you run, signed with FEEDBACK_GENERIC_SECRET",
            "Events already recorded (by id) are counted as duplicates and change nothing",
            [{"heraldTimestamp": [], "heraldSignature": []}],
            {
                "application/json": {
                    "schema": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": generic.MAX_EVENTS,
                        "items": {"$ref": "#/components/schemas/GenericWebhookEvent"},
                    }
                }
            },
            {
                "description": "The events received, and how many of them were repeats",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/GenericWebhookReceived"}}},
            },
        )
    }
    result["paths"] = dict(sorted(paths.items()))
    return result

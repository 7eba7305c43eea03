from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.http.fields import IsoDateTimeField
from core.http.schema import JSON_OBJECT
from messaging.sending.parse import MAX_ATTACHMENTS, MAX_HEADER_VALUE
from messaging.vocabulary import body_size, no_line_breaks

_ADDRESS = [
    {"type": "string", "format": "email"},
    {
        "type": "object",
        "required": ["email"],
        "properties": {"name": {"type": "string"}, "email": {"type": "string", "format": "email"}},
    },
]


@extend_schema_field({"oneOf": [*_ADDRESS, {"type": "array", "minItems": 1, "items": {"oneOf": _ADDRESS}}]})
class RecipientsField(serializers.JSONField):
    """`to`: parsed by messaging.sending.parse; its shapes published for the schema."""


@extend_schema_field({"oneOf": _ADDRESS})
class SenderField(serializers.JSONField):
    """`from`: parsed by messaging.sending.parse; its shapes published for the schema."""


@extend_schema_field({"oneOf": [*_ADDRESS, {"type": "string", "maxLength": 0}], "nullable": True})
class ReplyField(serializers.JSONField):
    """`reply`: parsed by messaging.sending.parse (an empty string is no reply address)."""


@extend_schema_field(JSON_OBJECT)
class ObjectField(serializers.JSONField):
    """A JSON object checked by the service (`data`), published as such."""


@extend_schema_field(
    {
        "type": "object",
        "nullable": True,
        "additionalProperties": {"type": "string", "maxLength": MAX_HEADER_VALUE},
        "description": "Header name to value: names printable ASCII without spaces or colons (at most 100 "
        "characters), values one line; the headers the service writes itself are refused",
    }
)
class HeadersField(serializers.JSONField):
    """`headers`: checked by messaging.sending.parse.parse_headers."""


_ATTACHMENT = {
    "type": "object",
    "required": ["filename", "content"],
    "properties": {
        "filename": {"type": "string", "minLength": 1, "maxLength": 255},
        "content": {"type": "string", "format": "byte", "description": "The file, base64-encoded"},
        "contentType": {
            "type": "string",
            "nullable": True,
            "pattern": r"^[\w.+-]+/[\w.+-]+$",
            "description": "A MIME type; default application/octet-stream",
        },
        "contentId": {
            "type": "string",
            "nullable": True,
            "pattern": r"^[\w.@+-]{1,200}$",
            "description": "Required when `disposition` is inline: the HTML refers to it as cid:<contentId>",
        },
        "disposition": {
            "type": "string",
            "nullable": True,
            "enum": ["attachment", "inline", None],
            "description": "Default attachment",
        },
    },
}


@extend_schema_field({"type": "array", "nullable": True, "maxItems": MAX_ATTACHMENTS, "items": _ATTACHMENT})
class AttachmentsField(serializers.JSONField):
    """`attachments`: checked by messaging.sending.parse.parse_attachments."""


class SendInputSerializer(serializers.Serializer):
    """The typed fields of POST /v1/send; `to`, `from`, `headers` and `attachments` take several shapes and are
    parsed by messaging.sending.parse with exact field paths."""

    to = RecipientsField(required=False, help_text="An address, {name, email}, or an array of either")
    subject = serializers.CharField(
        max_length=998, required=False, allow_blank=False, trim_whitespace=False, validators=[no_line_breaks]
    )
    body = serializers.CharField(required=False, allow_blank=False, trim_whitespace=False, validators=[body_size])
    template = serializers.UUIDField(required=False, allow_null=True)
    name = serializers.CharField(
        max_length=255, required=False, allow_blank=True, validators=[no_line_breaks], help_text="Deprecated"
    )
    subscribed = serializers.BooleanField(required=False, allow_null=True)
    data = ObjectField(required=False, allow_null=True)
    headers = HeadersField(required=False, allow_null=True)
    reply = ReplyField(required=False, allow_null=True, help_text="An address or {name, email}: the Reply-To")
    attachments = AttachmentsField(required=False, allow_null=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["from"] = SenderField(required=False, help_text="An address or {name, email}")


class SendInputScheme(OpenApiSerializerExtension):
    """What messaging.sending.requests requires of a send, which the serializer leaves to it (for its exact error
    paths): `to` always; `subject`, `body` and `from` unless a template gives them."""

    target_class = SendInputSerializer

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        schema["required"] = ["to"]
        schema["anyOf"] = [
            {"required": ["template"], "properties": {"template": {"type": "string", "format": "uuid"}}},
            {"required": ["subject", "body", "from"]},
        ]
        return schema


class SentContactSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    email = serializers.CharField()


class SentEmailSerializer(serializers.Serializer):  # of a messaging.sending.services.Queued
    contact = SentContactSerializer()
    email = serializers.UUIDField(source="email.id")


class SendResultDataSerializer(serializers.Serializer):
    emails = SentEmailSerializer(many=True)
    timestamp = IsoDateTimeField()


class SendResultSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    data = SendResultDataSerializer()

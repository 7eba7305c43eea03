from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.http.fields import IsoDateTimeField
from core.http.schema import JSON_OBJECT
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


@extend_schema_field(JSON_OBJECT)
class ObjectField(serializers.JSONField):
    """A JSON object checked by the service (`data`), published as such."""


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
    headers = serializers.JSONField(required=False, allow_null=True)
    reply = serializers.JSONField(required=False, allow_null=True)
    attachments = serializers.JSONField(required=False, allow_null=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["from"] = SenderField(required=False, help_text="An address or {name, email}")


# Published as the free-form object it has always been documented as (the schema is unchanged).
@extend_schema_field(serializers.DictField)
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

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from core.time import iso
from messaging.models import EmailType, Template
from messaging.sending.mime import header_safe

# decisions.md: bodies at most 2 MB wherever content enters (subjects: 998 characters, one header line).
MAX_BODY_BYTES = 2 * 1024 * 1024


def body_size(value: str) -> str:
    """A body: at most 2 MB of UTF-8 (a body past it is refused before anything scans it)."""
    if len(value) > MAX_BODY_BYTES or (
        len(value) * 4 > MAX_BODY_BYTES and len(value.encode("utf-8", "surrogatepass")) > MAX_BODY_BYTES
    ):
        raise serializers.ValidationError(
            f"Must be at most 2 MB ({MAX_BODY_BYTES:,} bytes of UTF-8)", code="max_length"
        )
    return value


def no_line_breaks(value: str) -> str:
    """A value written into a header (a subject, a display name): one line, no NUL."""
    if not header_safe(value):
        raise serializers.ValidationError("Must not contain line breaks or NUL characters", code="invalid_string")
    return value


class TemplateInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=255, required=False, allow_blank=True)
    description = serializers.CharField(max_length=5000, required=False, allow_blank=True)
    subject = serializers.CharField(
        max_length=998, required=False, allow_blank=True, trim_whitespace=False, validators=[no_line_breaks]
    )
    body = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False, validators=[body_size])
    fromName = serializers.CharField(
        source="from_name", max_length=255, required=False, allow_blank=True, validators=[no_line_breaks]
    )
    replyTo = serializers.EmailField(source="reply_to", max_length=320, required=False, allow_blank=True)
    type = serializers.ChoiceField(choices=EmailType.choices, required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # `from` is a Python keyword, so it cannot be a class attribute.
        self.fields["from"] = serializers.EmailField(source="from_email", max_length=320, required=False)


def template_json(template: Template) -> dict:
    return {
        "id": str(template.id),
        "name": template.name,
        "description": template.description,
        "subject": template.subject,
        "body": template.body,
        "from": template.from_email,
        "fromName": template.from_name,
        "replyTo": template.reply_to,
        "type": template.type,
        "projectId": str(template.project_id),
        "createdAt": iso(template.created_at),
        "updatedAt": iso(template.updated_at),
    }


class TemplateOutputSerializer(serializers.Serializer):
    """Schema of a template as returned (the views build it with `template_json`)."""

    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField()
    subject = serializers.CharField()
    body = serializers.CharField()
    fromName = serializers.CharField()
    replyTo = serializers.CharField()
    type = serializers.ChoiceField(choices=EmailType.choices)
    projectId = serializers.UUIDField()
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["from"] = serializers.EmailField()


@extend_schema_serializer(many=False)  # the page envelope itself, not a list of them
class TemplatePageSerializer(serializers.Serializer):
    data = TemplateOutputSerializer(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    pageSize = serializers.IntegerField()
    totalPages = serializers.IntegerField()


class TemplateUsageSerializer(serializers.Serializer):
    campaigns = serializers.ListField(child=serializers.DictField())
    workflowSteps = serializers.ListField(child=serializers.DictField())
    emailsSent = serializers.IntegerField()


class IdSerializer(serializers.Serializer):
    id = serializers.UUIDField()

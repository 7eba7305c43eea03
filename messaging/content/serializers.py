"""Input and output serializers of the templates endpoints, with explicit camelCase names."""

from rest_framework import serializers

from core.http.fields import IsoDateTimeField
from core.http.pagination import NumberedPageSerializer
from core.http.serializers import OutputSerializer
from messaging.models import EmailType
from messaging.sending.mime import header_safe

# Bodies at most 2 MB wherever content enters (subjects: 998 characters, one header line).
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


class TemplateOutputSerializer(OutputSerializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField()
    subject = serializers.CharField()
    body = serializers.CharField()
    fromName = serializers.CharField(source="from_name")
    replyTo = serializers.CharField(source="reply_to")
    type = serializers.ChoiceField(choices=EmailType.choices)
    projectId = serializers.UUIDField(source="project_id")
    createdAt = IsoDateTimeField(source="created_at")
    updatedAt = IsoDateTimeField(source="updated_at")

    def get_fields(self):
        # `from` is a Python keyword, so it cannot be a class attribute; it goes after `body`, where the API has
        # always written it.
        fields = {}
        for name, field in super().get_fields().items():
            fields[name] = field
            if name == "body":
                fields["from"] = serializers.EmailField(source="from_email")
        return fields


class TemplatePageSerializer(NumberedPageSerializer):
    data = TemplateOutputSerializer(many=True, source="rows")


class CampaignUsageSerializer(OutputSerializer):
    id = serializers.CharField()
    name = serializers.CharField()
    status = serializers.CharField()


class WorkflowStepUsageSerializer(OutputSerializer):
    workflowId = serializers.CharField()
    workflowName = serializers.CharField()
    stepId = serializers.CharField()


class TemplateUsageSerializer(OutputSerializer):  # of a messaging.content.usage.TemplateUsage
    # The items are the usage finders' (core.usage), in the shapes their hook documents.
    campaigns = CampaignUsageSerializer(many=True)
    workflowSteps = WorkflowStepUsageSerializer(many=True, source="workflow_steps")
    emailsSent = serializers.IntegerField(source="emails_sent")


class IdSerializer(OutputSerializer):
    id = serializers.UUIDField()

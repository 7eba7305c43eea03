"""Input and output serializers of the templates endpoints, with explicit camelCase names."""

from rest_framework import serializers

from core.http.fields import IsoDateTimeField
from core.http.pagination import NumberedPageSerializer
from core.http.serializers import OutputSerializer
from messaging.models import EmailType
from messaging.vocabulary import body_size, no_line_breaks


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


class TemplateCreateInputSerializer(TemplateInputSerializer):
    """POST /templates: a template needs its sender (PATCH leaves it out like every other field)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["from"].required = True


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

"""Input and output serializers of the campaigns endpoints. A campaign's content is a template's: its fields, limits
and validators are the templates' serializers', extended with the audience and the campaign's state."""

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from campaigns.models import AudienceType, CampaignStatus
from core.http.fields import IsoDateTimeField, StrictCharField, StrictEmailField
from core.http.serializers import OutputSerializer
from messaging.content.serializers import TemplateInputSerializer, TemplateOutputSerializer
from messaging.vocabulary import body_size, no_line_breaks
from segments.conditions.schema import ConditionField


class CampaignInputSerializer(TemplateInputSerializer):
    """POST and PUT: name, subject, body and from are required (PUT replaces every field)."""

    name = StrictCharField(max_length=255)
    subject = serializers.CharField(max_length=998, trim_whitespace=False, validators=[no_line_breaks])
    body = serializers.CharField(trim_whitespace=False, validators=[body_size])
    audienceType = serializers.ChoiceField(source="audience_type", choices=AudienceType.choices, required=False)
    segmentId = serializers.UUIDField(source="segment_id", required=False, allow_null=True)
    # The tree is checked by segments.conditions (paths like audienceCondition.groups.0.filters.1.operator).
    audienceCondition = ConditionField(source="audience_condition", required=False, allow_null=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["from"].required = True


class CampaignSegmentSerializer(OutputSerializer):
    id = serializers.UUIDField()
    name = serializers.CharField()


class CampaignCountersSerializer(OutputSerializer):
    """The figures, on the campaign object and in its stats."""

    totalRecipients = serializers.IntegerField(source="total_recipients")
    sentCount = serializers.IntegerField(source="sent_count")
    deliveredCount = serializers.IntegerField(source="delivered_count")
    openedCount = serializers.IntegerField(source="opened_count")
    clickedCount = serializers.IntegerField(source="clicked_count")
    bouncedCount = serializers.IntegerField(source="bounced_count")
    complainedCount = serializers.IntegerField(source="complained_count")
    unsubscribedCount = serializers.IntegerField(source="unsubscribed_count")
    # The part of the audience the monthly cap kept the campaign from, and why ("" while there is none).
    notSentCount = serializers.IntegerField(source="not_sent_count")
    notSentReason = serializers.CharField(source="not_sent_reason")


class CampaignOutputSerializer(TemplateOutputSerializer, CampaignCountersSerializer):
    status = serializers.ChoiceField(choices=CampaignStatus.choices)
    audienceType = serializers.ChoiceField(source="audience_type", choices=AudienceType.choices)
    audienceCondition = ConditionField(source="audience_condition", allow_null=True)
    segmentId = serializers.UUIDField(source="segment_id", allow_null=True)
    segment = CampaignSegmentSerializer(allow_null=True)
    scheduledFor = IsoDateTimeField(source="scheduled_for", allow_null=True)
    sentAt = IsoDateTimeField(source="sent_at", allow_null=True)


class CampaignEnvelopeSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    data = CampaignOutputSerializer()
    message = serializers.CharField(required=False)


class CampaignMessageSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    message = serializers.CharField()


@extend_schema_serializer(many=False)  # the page envelope itself, not a list of them
class CampaignPageSerializer(OutputSerializer):  # of a core.pages.Page
    # Not a NumberedPageSerializer: the campaigns list writes its keys in its own order (docs/api/campaigns.md).
    data = CampaignOutputSerializer(many=True, source="rows")
    page = serializers.IntegerField()
    pageSize = serializers.IntegerField(source="page_size")
    total = serializers.IntegerField()
    totalPages = serializers.IntegerField(source="total_pages")


@extend_schema_field(
    {
        "anyOf": [
            {"type": "string", "format": "date-time"},
            {"type": "string", "format": "date", "description": "Its midnight UTC"},
            {"type": "number", "description": "Milliseconds since the epoch"},
        ],
        "nullable": True,
        "description": "When to send (UTC when the date-time names no offset); null or left out: now",
    }
)
class ScheduleField(serializers.JSONField):
    """Read by `campaigns.sending.parse_schedule` (400 when it is not a date), as a JavaScript date parser would."""


class CampaignSendInputSerializer(serializers.Serializer):
    scheduledFor = ScheduleField(required=False, allow_null=True)


class CampaignTestInputSerializer(serializers.Serializer):
    email = StrictEmailField(max_length=320)


class CampaignFiguresSerializer(CampaignCountersSerializer):
    openRate = serializers.FloatField(source="open_rate")
    clickRate = serializers.FloatField(source="click_rate")
    bounceRate = serializers.FloatField(source="bounce_rate")
    deliveryRate = serializers.FloatField(source="delivery_rate")

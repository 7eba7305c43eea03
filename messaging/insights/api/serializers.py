"""Output serializers of the activity and analytics endpoints, with explicit camelCase names: each writes the
records that `messaging.insights.activity` and `messaging.insights.analytics` return, and is their schema."""

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from core.http.fields import IsoDateTimeField, JsonObjectField
from core.http.pagination import CursorPageSerializer
from core.http.serializers import OutputSerializer
from messaging.insights.activity import ACTIVITY_TYPES


class ActivityItemSerializer(OutputSerializer):
    id = serializers.CharField()
    type = serializers.CharField(help_text=f"One of {', '.join(ACTIVITY_TYPES)}")
    timestamp = IsoDateTimeField()
    contactId = serializers.UUIDField(source="contact_id", allow_null=True)
    contactEmail = serializers.CharField(source="contact_email", allow_null=True)
    emailId = serializers.UUIDField(source="email_id", allow_null=True)
    metadata = JsonObjectField()


class ActivityPageSerializer(CursorPageSerializer):
    data = ActivityItemSerializer(many=True, source="rows")


class ActivityStatsSerializer(OutputSerializer):
    totalEvents = serializers.IntegerField(source="total_events")
    totalEmailsSent = serializers.IntegerField(source="total_emails_sent")
    totalEmailsOpened = serializers.IntegerField(source="total_emails_opened")
    totalEmailsClicked = serializers.IntegerField(source="total_emails_clicked")
    totalWorkflowsStarted = serializers.IntegerField(source="total_workflows_started")
    openRate = serializers.FloatField(source="open_rate")
    clickRate = serializers.FloatField(source="click_rate")


class RecentCountSerializer(OutputSerializer):
    count = serializers.IntegerField()
    minutes = serializers.IntegerField()


class ActivityTypesSerializer(OutputSerializer):
    types = serializers.ListField(child=serializers.CharField())


class UpcomingCampaignSerializer(OutputSerializer):
    type = serializers.ChoiceField(choices=["campaign"])
    id = serializers.UUIDField()
    name = serializers.CharField()
    scheduledFor = IsoDateTimeField()


class UpcomingWorkflowSerializer(OutputSerializer):
    type = serializers.ChoiceField(choices=["workflow"])
    id = serializers.UUIDField(help_text="The waiting execution's id")
    workflowId = serializers.UUIDField()
    contactId = serializers.UUIDField()
    resumeAt = IsoDateTimeField()


class UpcomingSerializer(serializers.Serializer):
    """The schema of `/activity/upcoming`; the items come ready from `activity_upcoming`, in this shape."""

    activities = serializers.ListField(
        child=PolymorphicProxySerializer(
            component_name="UpcomingItem",
            serializers={"campaign": UpcomingCampaignSerializer, "workflow": UpcomingWorkflowSerializer},
            resource_type_field_name="type",
        ),
        help_text="Scheduled campaigns and waiting workflow executions, soonest first",
    )


class TimeseriesPointSerializer(OutputSerializer):
    date = IsoDateTimeField()
    emails = serializers.IntegerField()
    delivered = serializers.IntegerField()
    opens = serializers.IntegerField()
    clicks = serializers.IntegerField()
    bounces = serializers.IntegerField()
    complaints = serializers.IntegerField()


class TopEventSerializer(OutputSerializer):
    name = serializers.CharField()
    count = serializers.IntegerField()
    trend = serializers.IntegerField()


class TopCampaignSerializer(OutputSerializer):
    id = serializers.UUIDField()
    name = serializers.CharField(allow_null=True)
    subject = serializers.CharField()
    sentCount = serializers.IntegerField(source="sent_count")
    openedCount = serializers.IntegerField(source="opened_count")
    clickedCount = serializers.IntegerField(source="clicked_count")
    openRate = serializers.FloatField(source="open_rate")
    clickRate = serializers.FloatField(source="click_rate")


class CampaignStatsSerializer(OutputSerializer):
    total = serializers.IntegerField()
    active = serializers.IntegerField()
    completed = serializers.IntegerField()
    averageOpenRate = serializers.FloatField(source="average_open_rate")
    averageClickRate = serializers.FloatField(source="average_click_rate")

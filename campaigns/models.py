import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Job, Project
from messaging.models import EmailType
from segments.models import Segment


class CampaignStatus(models.TextChoices):
    DRAFT = "DRAFT"
    SCHEDULED = "SCHEDULED"
    SENDING = "SENDING"
    SENT = "SENT"
    CANCELLED = "CANCELLED"


class AudienceType(models.TextChoices):
    ALL = "ALL"
    SEGMENT = "SEGMENT"
    FILTERED = "FILTERED"


# The states in which a campaign is still a plan: its content and audience may change, and its audience is live.
EDITABLE = (CampaignStatus.DRAFT, CampaignStatus.SCHEDULED)
# The states in which a campaign holds on to its segment (a segment used by one cannot be deleted).
USES_SEGMENT = (CampaignStatus.DRAFT, CampaignStatus.SCHEDULED, CampaignStatus.SENDING)
# Counters of the row, each the number of the campaign's emails with that first-time timestamp set (see stats).
COUNTERS = (
    "sent_count",
    "delivered_count",
    "opened_count",
    "clicked_count",
    "bounced_count",
    "complained_count",
    "unsubscribed_count",
)


class Campaign(models.Model):
    """One message to an audience of a project's contacts, sent now or at `scheduled_for`, with its figures."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="campaigns", db_index=False)
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    subject = models.CharField(max_length=998)
    body = models.TextField()
    from_email = models.CharField(max_length=320)
    from_name = models.CharField(max_length=255, blank=True)
    reply_to = models.CharField(max_length=320, blank=True)
    type = models.CharField(max_length=13, choices=EmailType.choices, default=EmailType.MARKETING)
    status = models.CharField(max_length=9, choices=CampaignStatus.choices, default=CampaignStatus.DRAFT)
    audience_type = models.CharField(max_length=8, choices=AudienceType.choices, default=AudienceType.ALL)
    # Validated by segments.conditions before it is saved; set only for FILTERED.
    audience_condition = models.JSONField(null=True, blank=True)
    # A segment in use by a DRAFT, SCHEDULED or SENDING campaign cannot be deleted (segments' delete blocker);
    # a sent campaign keeps its figures when its segment goes.
    segment = models.ForeignKey(Segment, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    scheduled_for = models.DateTimeField(null=True, blank=True)
    # When it was last scheduled (the time of its `campaign.scheduled` activity item).
    scheduled_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    # The fan-out (an `accounts.jobs` job): its checkpoint is the cursor over the audience.
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    total_recipients = models.PositiveIntegerField(default=0)
    sent_count = models.PositiveIntegerField(default=0)
    delivered_count = models.PositiveIntegerField(default=0)
    opened_count = models.PositiveIntegerField(default=0)
    clicked_count = models.PositiveIntegerField(default=0)
    bounced_count = models.PositiveIntegerField(default=0)
    complained_count = models.PositiveIntegerField(default=0)
    unsubscribed_count = models.PositiveIntegerField(default=0)
    # The part of the audience the campaign was not sent to, why, and when that was decided: a scheduled start
    # refused by the monthly cap (the whole audience), or a fan-out cut short at the cap (the rest of it). Cleared
    # when the campaign starts again.
    not_sent_count = models.PositiveIntegerField(default=0)
    not_sent_reason = models.CharField(max_length=255, blank=True)
    not_sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["project", "created_at"], name="campaign_project_created"),
            models.Index(fields=["project", "status", "created_at"], name="campaign_project_status"),
            # The scheduler's scan: only scheduled campaigns, soonest first.
            models.Index(
                fields=["scheduled_for"],
                name="campaign_scheduled_due",
                condition=models.Q(status="SCHEDULED"),
            ),
        ]

    def __str__(self) -> str:
        return self.name

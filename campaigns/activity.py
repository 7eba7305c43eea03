"""What campaigns add to messaging's insights (`messaging.insights.registry`): `campaign.scheduled`,
`campaign.sent` and `campaign.not_sent` items in the activity feed, scheduled campaigns in `/activity/upcoming`, and
names, subjects and statuses for the campaign analytics."""

import uuid
from datetime import datetime

from django.db.models import Case, Count, F, Q, QuerySet, When

from accounts.models import Project
from campaigns.models import Campaign, CampaignStatus
from campaigns.selectors import campaigns_with_recipients
from core.time import iso
from messaging.insights.registry import (
    ActivityFilters,
    ActivityItem,
    ActivitySource,
    CampaignDirectory,
    CampaignInfo,
    Upcoming,
)

SCHEDULED, SENT, NOT_SENT = "campaign.scheduled", "campaign.sent", "campaign.not_sent"
# One item per campaign: a SCHEDULED campaign at the moment it was scheduled, one that started sending at then.
_IN_FEED = {SCHEDULED: Q(status=CampaignStatus.SCHEDULED), SENT: Q(sent_at__isnull=False)}


# The columns an item shows.
_SHOWN = (
    "id",
    "name",
    "subject",
    "status",
    "scheduled_for",
    "sent_at",
    "total_recipients",
    "not_sent_count",
    "not_sent_reason",
    "not_sent_at",
    # What a scheduled campaign's audience is counted from (`campaigns_with_recipients`).
    "project_id",
    "type",
    "audience_type",
    "audience_condition",
    "segment_id",
)


def _queryset(project: Project, filters: ActivityFilters) -> QuerySet | None:
    wanted = [kind for kind in _IN_FEED if filters.types is None or kind in filters.types]
    if not wanted or filters.contact_id or filters.email_id:  # campaigns belong to no contact or email
        return None
    shown = Q()
    for kind in wanted:
        shown |= _IN_FEED[kind]
    campaigns = Campaign.objects.filter(shown, project=project).annotate(
        activity_at=Case(When(status=CampaignStatus.SCHEDULED, then=F("scheduled_at")), default=F("sent_at"))
    )
    if filters.start:
        campaigns = campaigns.filter(activity_at__gte=filters.start)
    if filters.end:
        campaigns = campaigns.filter(activity_at__lte=filters.end)
    return campaigns.only(*_SHOWN)


def _metadata(campaign: Campaign) -> dict:
    return {
        "campaignId": str(campaign.id),
        "name": campaign.name,
        "subject": campaign.subject,
        "status": campaign.status,
        "scheduledFor": iso(campaign.scheduled_for),
        "totalRecipients": campaign.total_recipients,
        "notSentCount": campaign.not_sent_count,
        "notSentReason": campaign.not_sent_reason,
    }


def _item(campaign: Campaign) -> ActivityItem:
    kind = SCHEDULED if campaign.status == CampaignStatus.SCHEDULED else SENT
    return ActivityItem(id=campaign.id, type=kind, timestamp=campaign.activity_at, metadata=_metadata(campaign))


def _present_types(project: Project) -> list[str]:
    campaigns = Campaign.objects.filter(project=project)
    return [kind for kind, shown in _IN_FEED.items() if campaigns.filter(shown).exists()]


SOURCE = ActivitySource(
    name="campaigns",
    types=(SCHEDULED, SENT),
    queryset=_queryset,
    timestamp_field="activity_at",
    item=_item,
    present_types=_present_types,
    # A scheduled campaign's audience is counted when it is shown, as the campaign itself shows it.
    prepare=campaigns_with_recipients,
)


def _not_sent_queryset(project: Project, filters: ActivityFilters) -> QuerySet | None:
    """The campaigns the monthly cap kept, in part or whole, from their audience: one item each, at the moment that
    was decided (a scheduled start refused, a fan-out cut short)."""
    if (filters.types is not None and NOT_SENT not in filters.types) or filters.contact_id or filters.email_id:
        return None
    campaigns = Campaign.objects.filter(project=project, not_sent_count__gt=0)
    if filters.start:
        campaigns = campaigns.filter(not_sent_at__gte=filters.start)
    if filters.end:
        campaigns = campaigns.filter(not_sent_at__lte=filters.end)
    return campaigns.only(*_SHOWN)


NOT_SENT_SOURCE = ActivitySource(
    name="campaigns.not_sent",
    types=(NOT_SENT,),
    queryset=_not_sent_queryset,
    timestamp_field="not_sent_at",
    item=lambda campaign: ActivityItem(
        id=campaign.id, type=NOT_SENT, timestamp=campaign.not_sent_at, metadata=_metadata(campaign)
    ),
    present_types=lambda project: (
        [NOT_SENT] if Campaign.objects.filter(project=project, not_sent_count__gt=0).exists() else []
    ),
)


def campaigns_upcoming(*, project: Project, until: datetime, limit: int) -> list[Upcoming]:
    """The project's scheduled campaigns due by `until`, soonest first."""
    due = Campaign.objects.filter(
        project=project, status=CampaignStatus.SCHEDULED, scheduled_for__lte=until
    ).values_list("id", "name", "scheduled_for")
    return [
        Upcoming(
            id=campaign_id,
            at=scheduled_for,
            item={"type": "campaign", "id": str(campaign_id), "name": name, "scheduledFor": iso(scheduled_for)},
        )
        for campaign_id, name, scheduled_for in due.order_by("scheduled_for", "id")[:limit]
    ]


class Directory(CampaignDirectory):
    def describe(self, *, project: Project, campaign_ids: list[uuid.UUID]) -> dict[uuid.UUID, CampaignInfo]:
        rows = Campaign.objects.filter(project=project, id__in=campaign_ids).values_list(
            "id", "name", "subject", "status"
        )
        return {row[0]: CampaignInfo(name=row[1], subject=row[2], status=row[3]) for row in rows}

    def counts(self, *, project: Project, since: datetime) -> dict[str, int]:
        """Over the campaigns created since `since`: all, those on their way (SCHEDULED, SENDING) and those SENT."""
        return Campaign.objects.filter(project=project, created_at__gte=since).aggregate(
            total=Count("id"),
            active=Count("id", filter=Q(status__in=[CampaignStatus.SCHEDULED, CampaignStatus.SENDING])),
            completed=Count("id", filter=Q(status=CampaignStatus.SENT)),
        )

"""Writes of campaigns: create, replace, delete and duplicate. Content is checked by messaging's one content check
(sender domain, Liquid syntax) and audiences by the segments app's one condition validator."""

from django.utils import timezone

from accounts.models import Project
from campaigns.models import EDITABLE, AudienceType, Campaign, CampaignStatus
from core.errors import Conflict, ErrorCode, ValidationFailed
from messaging.content.services import content_check
from messaging.models import EmailType
from segments.conditions import condition_validate
from segments.models import Segment

# What a PUT replaces, with the value a field takes when the body leaves it out.
EDITABLE_FIELDS = {
    "name": None,
    "description": "",
    "subject": None,
    "body": None,
    "from_email": None,
    "from_name": "",
    "reply_to": "",
    "type": EmailType.MARKETING,
    "audience_type": AudienceType.ALL,
    "segment_id": None,
    "audience_condition": None,
}


def _editable_values(*, project: Project, values: dict) -> dict:
    """The campaign's editable fields from validated input, checked: the content (403 for the sender's domain, 422
    for syntax) and the audience (a segment of this project for SEGMENT, a valid condition for FILTERED). Only the
    audience's own field is kept, so a campaign never holds a stale segment or condition."""
    values = {name: values.get(name, default) for name, default in EDITABLE_FIELDS.items()}
    content_check(project=project, values=values)
    return audience_values(project=project, values=values)


def audience_values(*, project: Project, values: dict) -> dict:
    """`values` with the audience checked (a segment of this project for SEGMENT, a valid condition for FILTERED)
    and the other audience types' fields cleared: what a campaign saves, and what the console counts before it
    does."""
    values = {"segment_id": None, "audience_condition": None, **values}
    audience = values.get("audience_type", AudienceType.ALL)
    if audience == AudienceType.SEGMENT:
        if values["segment_id"] is None:
            raise ValidationFailed.field("segmentId", "Required when audienceType is SEGMENT", "invalid_type")
        if not Segment.objects.filter(project=project, pk=values["segment_id"]).exists():
            raise ValidationFailed.field(
                "segmentId", f'Segment with ID "{values["segment_id"]}" was not found in this project'
            )
    else:
        values["segment_id"] = None
    if audience == AudienceType.FILTERED:
        condition_validate(values["audience_condition"], path="audienceCondition", project=project)
    else:
        values["audience_condition"] = None
    return values


def campaign_create(*, project: Project, **values) -> Campaign:
    """A new DRAFT campaign."""
    campaign = Campaign(project=project, **_editable_values(project=project, values=values))
    campaign.full_clean()
    campaign.save(force_insert=True)
    return campaign


def require_editable(campaign: Campaign) -> None:
    if campaign.status not in EDITABLE:
        raise Conflict(
            f"Campaign is {campaign.status}; only a DRAFT or SCHEDULED campaign can be changed",
            code=ErrorCode.CAMPAIGN_NOT_EDITABLE,
            details={"status": campaign.status},
        )


def campaign_replace(*, campaign: Campaign, **values) -> Campaign:
    """PUT: every editable field from `values` (left out: its default). Only in DRAFT or SCHEDULED (409); a
    SCHEDULED campaign stays scheduled at its time."""
    require_editable(campaign)
    for name, value in _editable_values(project=campaign.project, values=values).items():
        setattr(campaign, name, value)
    campaign.updated_at = timezone.now()
    campaign.full_clean()
    campaign.save()
    return campaign


def campaign_delete(*, campaign: Campaign) -> None:
    """Delete a campaign that is not on its way out (SCHEDULED or SENDING: 409). Its emails stay, for analytics."""
    if campaign.status in (CampaignStatus.SCHEDULED, CampaignStatus.SENDING):
        raise Conflict(
            f"Campaign is {campaign.status}; cancel it before deleting it",
            code=ErrorCode.CAMPAIGN_ACTIVE,
            details={"status": campaign.status},
        )
    campaign.delete()


def campaign_duplicate(*, campaign: Campaign) -> Campaign:
    """A DRAFT copy named `<name> (Copy)`: same content and audience, no schedule, counters at 0."""
    now = timezone.now()
    copy = Campaign(
        project_id=campaign.project_id,
        **{name: getattr(campaign, name) for name in EDITABLE_FIELDS},
        created_at=now,
        updated_at=now,
    )
    copy.name = f"{campaign.name} (Copy)"[:255]
    copy.save(force_insert=True)
    return copy


def project_campaigns_delete(project: Project) -> int:
    """A project reset's step (accounts.tenancy.registry)."""
    deleted, _ = Campaign.objects.filter(project=project).delete()
    return deleted

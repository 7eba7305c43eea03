import json
import uuid
from datetime import datetime

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from accounts.models import Project
from campaigns.models import EDITABLE, USES_SEGMENT, AudienceType, Campaign
from contacts.models import Contact
from core.time import iso
from messaging.content import rendering
from messaging.models import CREATED_MARGIN, Email, EmailType, Suppression
from segments.conditions import condition_q
from segments.conditions.spec import condition_fields, field_covers
from segments.selectors import segment_members


def campaign_emails(campaign: Campaign) -> QuerySet[Email]:
    """The campaign's emails, read in the months since it started sending: each was created after its `sent_at` (a
    campaign cancelled back to DRAFT has its emails removed before it is sent again), so on the table partitioned by
    month the older months are not read."""
    emails = Email.objects.filter(campaign_id=campaign.id)
    return emails if campaign.sent_at is None else emails.filter(created_at__gte=campaign.sent_at - CREATED_MARGIN)


CAMPAIGN_SORT = {"name": "name", "createdAt": "created_at", "updatedAt": "updated_at"}


def campaign_audience(*, campaign: Campaign, now: datetime | None = None) -> QuerySet[Contact]:
    """The contacts the campaign goes to, unordered: the project's contacts that are not suppressed and (unless the
    campaign is TRANSACTIONAL) subscribed and not snoozed, restricted by the audience type. A segment is evaluated
    now (a dynamic segment's condition, a static one's members) and a FILTERED condition through the same compiler."""
    now = now or timezone.now()
    if campaign.audience_type == AudienceType.SEGMENT:
        if campaign.segment is None:
            return Contact.objects.none()
        contacts = segment_members(segment=campaign.segment, now=now).order_by()
    else:
        contacts = Contact.objects.filter(project_id=campaign.project_id)
        if campaign.audience_type == AudienceType.FILTERED:
            contacts = contacts.filter(condition_q(campaign.audience_condition, now=now))
    suppressed = Suppression.objects.filter(project_id=OuterRef("project_id"), email=OuterRef("email"))
    contacts = contacts.filter(~Exists(suppressed))
    if campaign.type != EmailType.TRANSACTIONAL:
        contacts = contacts.filter(Q(snoozed_until=None) | Q(snoozed_until__lte=now), subscribed=True)
    return contacts


# A preview has no email: the hosted-page links go nowhere.
_PREVIEW_LINKS = dict.fromkeys(("unsubscribeUrl", "subscribeUrl", "manageUrl"), "#")


def campaign_preview_contact(*, project: Project, lookup: str) -> Contact | None:
    """The project's contact named by its email (any case) or its id, or None."""
    lookup = lookup.strip()
    try:
        by_id = Q(pk=uuid.UUID(lookup))
    except ValueError:
        by_id = Q()
    return Contact.objects.filter(Q(email=lookup.lower()) | by_id, project=project).first()


def campaign_render(*, campaign: Campaign, contact: Contact | None) -> rendering.RenderedContent:
    """The campaign's subject and body as `contact` gets them (without a contact: as one with no data), rendered as
    delivery renders a campaign's email: the contact's data as its variables, content that does not parse falling
    back to plain substitution, and a rendering limit refused (`ValidationFailed` at `subject` or `body`). Tracking
    and the unsubscribe footer are added per email at sending, and are not shown."""
    scope = rendering.template_scope(
        contact_id=str(contact.id) if contact else "",
        email=contact.email if contact else "recipient@example.com",
        subscribed=contact.subscribed if contact else True,
        data=contact.data if contact else {},
        links=_PREVIEW_LINKS,
    )
    return rendering.render_email(subject=campaign.subject, body=campaign.body, scope=scope, lenient=True)


def _audience_key(campaign: Campaign) -> tuple:
    condition = campaign.audience_condition if campaign.audience_type == AudienceType.FILTERED else None
    segment = campaign.segment_id if campaign.audience_type == AudienceType.SEGMENT else None
    return (
        campaign.audience_type,
        segment,
        json.dumps(condition, sort_keys=True),
        campaign.type == EmailType.TRANSACTIONAL,
    )


def campaigns_with_recipients(campaigns: list[Campaign]) -> list[Campaign]:
    """The campaigns with `total_recipients` live while they are plans (DRAFT, SCHEDULED); once sent it is the
    number of emails created, as stored. Campaigns with the same audience (a page of drafts to ALL) share one count,
    taken at the same moment."""
    now, counts = timezone.now(), {}
    for campaign in campaigns:
        if campaign.status in EDITABLE:
            key = _audience_key(campaign)
            if key not in counts:
                counts[key] = campaign_audience(campaign=campaign, now=now).count()
            campaign.total_recipients = counts[key]
    return campaigns


def campaign_with_recipients(campaign: Campaign) -> Campaign:
    return campaigns_with_recipients([campaign])[0]


def campaign_list(
    *, project: Project, status: str | None, search: str, sort: str, descending: bool
) -> QuerySet[Campaign]:
    campaigns = Campaign.objects.filter(project=project).select_related("segment")
    if status:
        campaigns = campaigns.filter(status=status)
    if search:
        campaigns = campaigns.filter(
            Q(name__icontains=search) | Q(subject__icontains=search) | Q(from_email__icontains=search)
        )
    prefix = "-" if descending else ""
    return campaigns.order_by(f"{prefix}{CAMPAIGN_SORT[sort]}", f"{prefix}id")


def campaigns_using_segment(project: Project, segment) -> list[dict]:
    """Usage finder of segments: the campaigns that still need the segment (a DRAFT, SCHEDULED or SENDING one)."""
    rows = Campaign.objects.filter(segment=segment, status__in=USES_SEGMENT).order_by("created_at", "id")
    return [
        {"id": str(pk), "name": name, "status": status} for pk, name, status in rows.values_list("id", "name", "status")
    ]


def campaigns_using_field(project: Project, field: str) -> list[dict]:
    """Field usage: the campaigns whose audience condition filters on `field` or below it (`data.plan.tier`)."""
    campaigns = Campaign.objects.filter(project=project).exclude(audience_condition=None).order_by("created_at", "id")
    return [
        {"id": str(c.id), "name": c.name}
        for c in campaigns
        if any(field_covers(used, field) for used in condition_fields(c.audience_condition))
    ]


def last_campaign_sent_at(project) -> str | None:
    """The setup state's `lastCampaignSentAt` (accounts.tenancy.registry)."""
    sent_at = (
        Campaign.objects.filter(project=project, sent_at__isnull=False)
        .order_by("-sent_at")
        .values_list("sent_at", flat=True)
        .first()
    )
    return iso(sent_at) if sent_at else None

"""A campaign's figures: counters on its row, kept from the events as they are recorded, always equal to a recount
from its email rows.

- `sent`, `delivered`, `opened`, `clicked`, `bounced`, `complained`: the campaign's emails whose first-time
  timestamp of that kind is set. The `email.*` events that set one are picked by the rule the rollup
  follows too (`messaging.insights.counting.counted_events`), and their payload names the campaign.
- `unsubscribed`: the campaign's emails through whose links the contact opted out (`contact.unsubscribed` events
  carrying the email's id), each email once.

`campaign_stats_recount` counts all of them again from the rows (the admin's "recount" action, and the tests'
proof that the increments are right).
"""

import logging
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass

from django.db import DatabaseError, transaction
from django.db.models import Count, F, Q

from campaigns.models import COUNTERS, Campaign
from campaigns.selectors import campaign_emails
from contacts.models import Event
from contacts.services import UNSUBSCRIBED_EVENT
from messaging.insights.counting import counted_events
from messaging.models import Email, created_q

logger = logging.getLogger(__name__)
# Rollup count -> campaign counter (a failure is not a campaign figure).
_COUNTER_OF = {name.removesuffix("_count"): name for name in COUNTERS}


def _email_id(event: Event) -> uuid.UUID:
    # An event just created holds the id as it was given (the link's token carries a string).
    return uuid.UUID(str(event.email_id))


def _first_unsubscribes(events) -> list[Event]:
    """The opt-outs through an email's link that are the first through that email."""
    found = [event for event in events if event.name == UNSUBSCRIBED_EVENT and event.email_id]
    if not found:
        return []
    earlier = set(
        Event.objects.filter(name=UNSUBSCRIBED_EVENT, email_id__in=[_email_id(event) for event in found])
        .exclude(pk__in=[event.pk for event in found])
        .values_list("email_id", flat=True)
    )
    first, seen = [], set()
    for event in found:
        email_id = _email_id(event)
        if email_id not in earlier and email_id not in seen:
            seen.add(email_id)
            first.append(event)
    return first


def campaign_increments(events) -> dict[str, Counter]:
    """Campaign id -> counter -> how much `events` add."""
    increments: dict[str, Counter] = defaultdict(Counter)
    for event, count in counted_events(events):
        campaign_id, counter = event.data.get("campaignId"), _COUNTER_OF.get(count)
        if campaign_id and counter:
            increments[campaign_id][counter] += 1
    unsubscribes = _first_unsubscribes(events)
    if unsubscribes:
        campaign_of = dict(
            Email.objects.filter(
                created_q(ids := [event.email_id for event in unsubscribes]), id__in=ids, campaign_id__isnull=False
            ).values_list("id", "campaign_id")
        )
        for event in unsubscribes:
            campaign_id = campaign_of.get(_email_id(event))
            if campaign_id:
                increments[str(campaign_id)]["unsubscribed_count"] += 1
    return increments


def on_events_recorded(sender, project, events, **kwargs) -> None:
    """Receiver of `contacts.signals.events_recorded` (after the events' commit). A failure must not fail the
    delivery, hit or webhook that recorded them: it is logged, and the admin's recount repairs the figures."""
    if not any(event.name.startswith("email.") or event.name == UNSUBSCRIBED_EVENT for event in events):
        return
    try:
        increments = campaign_increments(events)
        if not increments:  # transactional mail: no transaction to open
            return
        with transaction.atomic():
            for campaign_id in sorted(increments):  # one lock order, so concurrent batches never deadlock
                added = increments[campaign_id]
                Campaign.objects.filter(pk=campaign_id, project=project).update(
                    **{counter: F(counter) + n for counter, n in added.items()}
                )
    except DatabaseError:
        logger.exception("Could not add %d event(s) of project %s to its campaigns' figures", len(events), project.id)


def campaign_stats_recount(*, campaign: Campaign) -> dict[str, int]:
    """The counters as the email rows and the opt-out events give them now."""
    emails = campaign_emails(campaign)
    columns = {
        counter: f"{counter.removesuffix('_count')}_at" for counter in COUNTERS if counter != "unsubscribed_count"
    }
    counts = emails.aggregate(
        **{counter: Count("id", filter=Q(**{f"{column}__isnull": False})) for counter, column in columns.items()}
    )
    counts["unsubscribed_count"] = (
        Event.objects.filter(name=UNSUBSCRIBED_EVENT, email_id__in=emails.values("id"))
        .values("email_id")
        .distinct()
        .count()
    )
    return counts


def campaign_stats_rebuild(*, campaign: Campaign) -> Campaign:
    """Replace the counters by a recount (the admin's repair)."""
    with transaction.atomic():
        counts = campaign_stats_recount(campaign=campaign)
        Campaign.objects.filter(pk=campaign.pk).update(**counts)
    for counter, value in counts.items():
        setattr(campaign, counter, value)
    return campaign


@dataclass(frozen=True)
class CampaignStats:
    total_recipients: int
    sent_count: int
    delivered_count: int
    opened_count: int
    clicked_count: int
    bounced_count: int
    complained_count: int
    unsubscribed_count: int
    not_sent_count: int
    not_sent_reason: str
    open_rate: float
    click_rate: float
    bounce_rate: float
    delivery_rate: float


def _rate(part: int, sent: int) -> float:
    return round(part * 100 / sent, 2) if sent else 0.0


def campaign_stats(*, campaign: Campaign) -> CampaignStats:
    """`GET /campaigns/:id/stats`: the counters, what the monthly cap kept the campaign from, and rates in percent of
    the emails sent."""
    sent = campaign.sent_count
    return CampaignStats(
        total_recipients=campaign.total_recipients,
        **{counter: getattr(campaign, counter) for counter in COUNTERS},
        not_sent_count=campaign.not_sent_count,
        not_sent_reason=campaign.not_sent_reason,
        open_rate=_rate(campaign.opened_count, sent),
        click_rate=_rate(campaign.clicked_count, sent),
        bounce_rate=_rate(campaign.bounced_count, sent),
        delivery_rate=_rate(campaign.delivered_count, sent),
    )

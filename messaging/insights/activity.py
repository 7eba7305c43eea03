"""The activity feed and its figures: one newest-first list over every registered source (the events table is
the first), keyset-paginated across sources, plus the counts the dashboard shows beside it."""

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core import signing
from django.db.models import Q, Sum
from django.utils import timezone

from accounts.models import Project
from contacts.models import Event
from contacts.selectors import event_names
from contacts.services import SUBSCRIBED_EVENT, UNSUBSCRIBED_EVENT, event_name_is_reserved
from core.errors import BadRequest
from core.pages import CursorPage
from messaging.insights.registry import (
    ActivityFilters,
    ActivityItem,
    ActivitySource,
    activity_counter,
    activity_sources,
    upcoming_providers,
)
from messaging.models import EmailStatsHour

# The activity types of docs/api/activity.md, in the order `/activity/types` lists them.
ACTIVITY_TYPES = (
    "email.sent",
    "email.delivered",
    "email.opened",
    "email.clicked",
    "email.bounced",
    "email.complained",
    "email.failed",
    "email.received",
    "event.triggered",
    "contact.subscribed",
    "contact.unsubscribed",
    "campaign.scheduled",
    "campaign.sent",
    "campaign.not_sent",
    "workflow.started",
    "workflow.completed",
    "workflow.refused",
)
TRIGGERED = "event.triggered"

# System event name -> activity type. Other system events (segment entry/exit) are not activity.
EVENT_TYPES = {
    "email.sent": "email.sent",
    "email.delivery": "email.delivered",
    "email.open": "email.opened",
    "email.click": "email.clicked",
    "email.bounce": "email.bounced",
    "email.complaint": "email.complained",
    "email.failed": "email.failed",
    "email.received": "email.received",  # a message received for one of the project's domains (messaging.smtp)
    SUBSCRIBED_EVENT: SUBSCRIBED_EVENT,
    UNSUBSCRIBED_EVENT: UNSUBSCRIBED_EVENT,
}
EVENT_NAMES_OF_TYPE = {activity_type: name for name, activity_type in EVENT_TYPES.items()}

# The reserved names of `contacts.services.event_name_is_reserved` as SQL: a tracked event is anything else.
SEGMENT_EVENT = Q(name__startswith="segment.") & (Q(name__endswith=".entry") | Q(name__endswith=".exit"))
SYSTEM_EVENT = Q(name__startswith="email.") | Q(name__in=[SUBSCRIBED_EVENT, UNSUBSCRIBED_EVENT]) | SEGMENT_EVENT


def _event_types_q(types: frozenset[str] | None) -> Q | None:
    wanted = ACTIVITY_TYPES if types is None else types
    names = [EVENT_NAMES_OF_TYPE[t] for t in wanted if t in EVENT_NAMES_OF_TYPE]
    q = Q(name__in=names) if names else None
    if TRIGGERED in wanted:
        q = ~SYSTEM_EVENT if q is None else q | ~SYSTEM_EVENT
    return q


def _event_queryset(project: Project, filters: ActivityFilters):
    q = _event_types_q(filters.types)
    if q is None:
        return None
    queryset = Event.objects.filter(project=project).filter(q)
    if filters.contact_id:
        queryset = queryset.filter(contact_id=filters.contact_id)
    if filters.email_id:
        queryset = queryset.filter(email_id=filters.email_id)
    if filters.start:
        queryset = queryset.filter(created_at__gte=filters.start)
    if filters.end:
        queryset = queryset.filter(created_at__lte=filters.end)
    return queryset.select_related("contact").only(
        "id", "name", "data", "email_id", "created_at", "contact_id", "contact__email"
    )


def _event_item(event: Event) -> ActivityItem:
    activity_type = EVENT_TYPES.get(event.name, TRIGGERED)
    metadata = {"eventName": event.name, "eventData": event.data} if activity_type == TRIGGERED else event.data
    return ActivityItem(
        id=event.id,
        type=activity_type,
        timestamp=event.created_at,
        contact_id=event.contact_id,
        contact_email=event.contact.email,
        email_id=event.email_id,
        metadata=metadata,
    )


def _event_present_types(project: Project) -> list[str]:
    """From the project's distinct event names (a loose index scan, `contacts.selectors.event_names`): asking
    whether any tracked event exists would otherwise read every system event of a project that tracks none."""
    names = event_names(project=project)
    present = {EVENT_TYPES[name] for name in names if name in EVENT_TYPES}
    if not all(event_name_is_reserved(name) for name in names):
        present.add(TRIGGERED)
    return sorted(present)


SOURCE = ActivitySource(
    name="events",
    types=(*EVENT_NAMES_OF_TYPE, TRIGGERED),
    queryset=_event_queryset,
    timestamp_field="created_at",
    item=_event_item,
    present_types=_event_present_types,
)
activity_sources.register(SOURCE, key=SOURCE.name)


def feed_sources() -> list[ActivitySource]:
    """The sources of the API's activity: not the records only a contact's timeline lists."""
    return [source for source in activity_sources if source.feed]


def known_activity_types() -> set[str]:
    return set(ACTIVITY_TYPES).union(*(source.types for source in feed_sources()))


# Feed ------------------------------------------------------------------------------------------------------------

_cursor_signer = signing.Signer(salt="herald.activity.cursor")


def _cursor(item: ActivityItem) -> str:
    return _cursor_signer.sign_object([item.timestamp.isoformat(), str(item.id)])


def _cursor_read(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        timestamp, pk = _cursor_signer.unsign_object(cursor)
        return datetime.fromisoformat(timestamp), uuid.UUID(pk)
    except (signing.BadSignature, ValueError, TypeError):
        raise BadRequest("Invalid cursor", details={"parameter": "cursor"}) from None


Position = tuple[datetime, uuid.UUID | None]


def source_querysets(sources: list[ActivitySource], project: Project, filters: ActivityFilters) -> list[tuple]:
    """(source, queryset) for each source the filters leave something of."""
    pairs = ((source, source.queryset(project, filters)) for source in sources)
    return [(source, queryset) for source, queryset in pairs if queryset is not None]


def merged_items(querysets: list[tuple], *, limit: int, after: Position | None) -> tuple[list[ActivityItem], bool]:
    """The first `limit` items after `after` over the sources, newest first, and whether more follow.

    1. Each source returns its next `limit + 1` rows before the position (timestamp, id), or before the timestamp
       when the id is None, from its own index, so a page costs the same wherever it is.
    2. The rows are merged by (timestamp, id) descending and the first `limit` are kept. Ids are UUIDs, compared
       alike by Python and the databases.
    """
    items: list[ActivityItem] = []
    for source, queryset in querysets:
        field = source.timestamp_field
        page = queryset
        if after is not None:
            timestamp, pk = after
            before = Q(**{f"{field}__lt": timestamp})
            page = page.filter(before if pk is None else before | Q(**{field: timestamp, "pk__lt": pk}))
        rows = list(page.order_by(f"-{field}", "-pk")[: limit + 1])
        items += [source.item(row) for row in (source.prepare(rows) if source.prepare else rows)]
    items.sort(key=lambda item: (item.timestamp, item.id), reverse=True)
    return items[:limit], len(items) > limit


def activity_feed(*, project: Project, filters: ActivityFilters, limit: int, cursor: str | None) -> CursorPage:
    """A page of `ActivityItem`s over all the feed's sources, newest first (`merged_items`); the cursor is the last
    one's (timestamp, id), signed. `total` (first page only, as on every cursor page) is the sum of the sources'
    counts."""
    after = _cursor_read(cursor) if cursor else None
    querysets = source_querysets(feed_sources(), project, filters)
    items, has_more = merged_items(querysets, limit=limit, after=after)
    total = sum(queryset.count() for _, queryset in querysets) if after is None else 0
    return CursorPage(rows=items, cursor=_cursor(items[-1]) if has_more else None, has_more=has_more, total=total)


def activity_recent_count(*, project: Project, minutes: int) -> int:
    filters = ActivityFilters(start=timezone.now() - timedelta(minutes=minutes))
    return sum(queryset.count() for _, queryset in source_querysets(feed_sources(), project, filters))


def activity_types_present(*, project: Project) -> list[str]:
    present = set().union(*(source.present_types(project) for source in feed_sources()))
    return [t for t in ACTIVITY_TYPES if t in present] + sorted(present - set(ACTIVITY_TYPES))


def activity_upcoming(*, project: Project, limit: int, days_ahead: int) -> list[dict]:
    until = timezone.now() + timedelta(days=days_ahead)
    due = [entry for provider in upcoming_providers for entry in provider(project=project, until=until, limit=limit)]
    due.sort(key=lambda entry: (entry.at, entry.id))
    return [entry.item for entry in due[:limit]]


def percent(part: int, whole: int) -> float:
    """A rate in percent with one decimal; 0 when there is nothing to divide by."""
    return round(part * 100 / whole, 1) if whole else 0.0


@dataclass(frozen=True)
class ActivityStats:
    total_events: int
    total_emails_sent: int
    total_emails_opened: int
    total_emails_clicked: int
    total_workflows_started: int
    open_rate: float
    click_rate: float


def activity_stats(*, project: Project, days: int) -> ActivityStats:
    """Counts over the last `days` days: events from the events table, emails from the hourly rollup (from the
    start of the hour `days` days ago), workflow starts from the workflows app's counter."""
    since = timezone.now() - timedelta(days=days)
    emails = EmailStatsHour.objects.filter(
        project=project, hour__gte=since.replace(minute=0, second=0, microsecond=0)
    ).aggregate(sent=Sum("sent"), opened=Sum("opened"), clicked=Sum("clicked"))
    sent, opened, clicked = (emails[key] or 0 for key in ("sent", "opened", "clicked"))
    return ActivityStats(
        total_events=Event.objects.filter(project=project, created_at__gte=since).count(),
        total_emails_sent=sent,
        total_emails_opened=opened,
        total_emails_clicked=clicked,
        total_workflows_started=activity_counter("totalWorkflowsStarted", project=project, since=since),
        open_rate=percent(opened, sent),
        click_rate=percent(clicked, sent),
    )

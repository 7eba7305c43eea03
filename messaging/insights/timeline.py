"""A contact's timeline, as the console shows it: everything the activity feed says about the contact, plus the
records that are not activity of the API (its emails' rows, its segment entries and exits), one newest-first list
read a window of time at a time.

Each page reads one window of at most TIMELINE_WINDOW, ending where the previous page stopped: every source's
query is bounded by the window's two ends and by the page size, so a page costs the same few queries however long
the contact's history is, and a table partitioned by time is read in the partitions of the window only. A window
with more than a page of items continues from the page's last item; one with fewer ends the page at the window's
start, and the next page reads the window before it. The pages stop at the contact's creation.
"""

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core import signing
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Project
from contacts.models import Contact, Event
from core.errors import BadRequest
from messaging.insights.activity import SEGMENT_EVENT, Position, merged_items, source_querysets
from messaging.insights.registry import ActivityFilters, ActivityItem, ActivitySource, activity_sources
from messaging.models import Email

TIMELINE_WINDOW = timedelta(days=90)
TIMELINE_PAGE_SIZE = 50
# An email's row may be stamped a moment before its new contact's: a send reads the clock before it upserts.
_BEFORE_CREATION = timedelta(minutes=1)

EMAIL = "email"
SEGMENT_ENTRY, SEGMENT_EXIT = "segment.entry", "segment.exit"


# Sources ---------------------------------------------------------------------------------------------------------


def _in_range(rows: QuerySet, filters: ActivityFilters, moment: str) -> QuerySet:
    if filters.start:
        rows = rows.filter(**{f"{moment}__gte": filters.start})
    if filters.end:
        rows = rows.filter(**{f"{moment}__lte": filters.end})
    return rows


def _emails(project: Project, filters: ActivityFilters) -> QuerySet | None:
    """A contact's emails, at the moment each was accepted; none without a contact to ask about."""
    if not filters.contact_id or (filters.types is not None and EMAIL not in filters.types):
        return None
    emails = Email.objects.filter(project=project, contact_id=filters.contact_id)
    if filters.email_id:
        emails = emails.filter(pk=filters.email_id)
    fields = ("id", "contact_id", "to_email", "subject", "status", "source", "opens", "clicks", "created_at")
    return _in_range(emails, filters, "created_at").only(*fields)


def _email_item(email: Email) -> ActivityItem:
    return ActivityItem(
        id=email.id,
        type=EMAIL,
        timestamp=email.created_at,
        contact_id=email.contact_id,
        contact_email=email.to_email,
        email_id=email.id,
        metadata={
            "subject": email.subject,
            "status": email.status,
            "source": email.source,
            "opens": email.opens,
            "clicks": email.clicks,
        },
    )


def _segment_events(project: Project, filters: ActivityFilters) -> QuerySet | None:
    """A contact's `segment.<slug>.entry` and `.exit` events, which the feed leaves out."""
    wanted = {SEGMENT_ENTRY, SEGMENT_EXIT}
    if not filters.contact_id or filters.email_id or (filters.types is not None and not wanted & filters.types):
        return None
    events = Event.objects.filter(SEGMENT_EVENT, project=project, contact_id=filters.contact_id)
    if filters.types is not None and not wanted <= filters.types:
        suffix = ".entry" if SEGMENT_ENTRY in filters.types else ".exit"
        events = events.filter(name__endswith=suffix)
    return _in_range(events, filters, "created_at").only("id", "contact_id", "name", "data", "created_at")


def _segment_event_item(event: Event) -> ActivityItem:
    return ActivityItem(
        id=event.id,
        type=SEGMENT_ENTRY if event.name.endswith(".entry") else SEGMENT_EXIT,
        timestamp=event.created_at,
        contact_id=event.contact_id,
        metadata={"eventName": event.name, "eventData": event.data},
    )


SOURCES = [
    ActivitySource(
        name="emails",
        types=(EMAIL,),
        queryset=_emails,
        timestamp_field="created_at",
        item=_email_item,
        present_types=lambda project: [],
        feed=False,
    ),
    ActivitySource(
        name="events.segments",
        types=(SEGMENT_ENTRY, SEGMENT_EXIT),
        queryset=_segment_events,
        timestamp_field="created_at",
        item=_segment_event_item,
        present_types=lambda project: [],
        feed=False,
    ),
]
for _source in SOURCES:
    activity_sources.register(_source, key=_source.name)


# Pages -----------------------------------------------------------------------------------------------------------

_cursor_signer = signing.Signer(salt="herald.timeline.cursor")


def _cursor(position: Position) -> str:
    timestamp, pk = position
    return _cursor_signer.sign_object([timestamp.isoformat(), str(pk) if pk else None])


def _cursor_read(cursor: str) -> Position:
    try:
        timestamp, pk = _cursor_signer.unsign_object(cursor)
        return datetime.fromisoformat(timestamp), uuid.UUID(pk) if pk else None
    except (signing.BadSignature, ValueError, TypeError):
        raise BadRequest("Invalid cursor", details={"parameter": "cursor"}) from None


@dataclass(frozen=True)
class TimelinePage:
    """`items` newest first, from the window [`start`, `end`] (`end` excluded after the first page); `older` is
    the cursor of the next page, None once the window reaches the contact's creation."""

    items: list[ActivityItem]
    start: datetime
    end: datetime
    older: str | None


def contact_timeline(
    *, contact: Contact, cursor: str | None = None, limit: int = TIMELINE_PAGE_SIZE, now: datetime | None = None
) -> TimelinePage:
    """One page of the contact's timeline over every activity source (`merged_items`), its project's rows only.

    1. The page ends at the cursor's position (a timestamp and the id of the last item shown, or only a
       timestamp when the previous page ended with its window), or now on the first page.
    2. It reads the window of TIMELINE_WINDOW before that end: each source at most `limit + 1` rows.
    3. More than `limit` items: the next page continues after the last one shown. Otherwise the window is done and
       the next page starts before it, unless it reached the contact's creation.
    """
    end = now or timezone.now()
    after = None
    if cursor:
        after = _cursor_read(cursor)
        end = after[0]
    start = end - TIMELINE_WINDOW
    filters = ActivityFilters(contact_id=contact.id, start=start, end=None if after else end)
    querysets = source_querysets(list(activity_sources), contact.project, filters)
    items, more = merged_items(querysets, limit=limit, after=after)
    if more:
        older = _cursor((items[-1].timestamp, items[-1].id))
    elif start > contact.created_at - _BEFORE_CREATION:
        older = _cursor((start, None))
    else:
        older = None
    return TimelinePage(items=items, start=start, end=end, older=older)

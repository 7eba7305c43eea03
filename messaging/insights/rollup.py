"""The hourly email stats rollup (`EmailStatsHour`): incremented from the `email.*` events as they are recorded,
rebuilt from the email rows on demand. What counts is the same both ways: each email once per kind, in the UTC
hour of its first occurrence (the `<kind>_at` column of the email row, which the event's payload carries)."""

import logging
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from django.db import DatabaseError, connection, transaction
from django.db.models import Count
from django.db.models.functions import TruncHour
from django.utils.dateparse import parse_datetime

from contacts.models import Event
from messaging.insights.counting import EVENT_COUNTS, counted_events
from messaging.models import Email, EmailStatsHour

logger = logging.getLogger(__name__)

COUNTS = ("sent", "delivered", "opened", "clicked", "bounced", "complained", "failed")

# Email column each count is rebuilt from. A failure has no timestamp of its own: the row's last update is it.
EMAIL_COLUMNS = {
    "sent": "sent_at",
    "delivered": "delivered_at",
    "opened": "opened_at",
    "clicked": "clicked_at",
    "bounced": "bounced_at",
    "complained": "complained_at",
    "failed": "updated_at",
}


def hour_of(moment: datetime) -> datetime:
    """The start of the UTC hour holding `moment` (an offset such as +05:30 would otherwise cut hours elsewhere)."""
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def _occurred_at(event: Event, stamp_key: str | None) -> datetime:
    stamp = parse_datetime(event.data.get(stamp_key) or "") if stamp_key else None
    return stamp or event.created_at


def _increments(events) -> dict[tuple, dict[str, int]]:
    grouped: dict[tuple, dict[str, int]] = defaultdict(lambda: dict.fromkeys(COUNTS, 0))
    for event, column in counted_events(events):
        stamp_key = EVENT_COUNTS[event.name][1]
        grouped[(event.project_id, hour_of(_occurred_at(event, stamp_key)))][column] += 1
    return grouped


def _upsert_sql(rows: int) -> str:
    table = EmailStatsHour._meta.db_table
    columns = ", ".join(COUNTS)
    placeholders = ", ".join(["(" + ", ".join(["%s"] * (2 + len(COUNTS))) + ")"] * rows)
    updates = ", ".join(f"{c} = {table}.{c} + EXCLUDED.{c}" for c in COUNTS)
    return (
        f"INSERT INTO {table} (project_id, hour, {columns}) VALUES {placeholders} "  # noqa: S608 - names are ours
        f"ON CONFLICT (project_id, hour) DO UPDATE SET {updates}"
    )


def email_stats_add(*, events) -> int:
    """Add the counts of `events` (any events; the `email.*` ones count) to the rollup in one statement, grouped
    by project and hour (PostgreSQL and SQLite both have this UPSERT). Returns the number of rows touched."""
    grouped = _increments(events)
    if not grouped:
        return 0
    project_field, hour_field = EmailStatsHour._meta.get_field("project"), EmailStatsHour._meta.get_field("hour")
    params = []
    for (project_id, hour), counts in sorted(grouped.items()):  # one lock order, so concurrent batches never deadlock
        params += [
            project_field.get_db_prep_value(project_id, connection),
            hour_field.get_db_prep_value(hour, connection),
            *(counts[c] for c in COUNTS),
        ]
    with connection.cursor() as cursor:
        cursor.execute(_upsert_sql(len(grouped)), params)
    return len(grouped)


def on_events_recorded(sender, project, events, **kwargs) -> None:
    """Receiver of `contacts.signals.events_recorded`, which fires once the events are committed. A failure here
    must not fail the send or the tracking hit that recorded them: it is logged, and `rebuild_email_stats`
    repairs the hours concerned."""
    if not any(event.name in EVENT_COUNTS for event in events):  # /v1/track's events: no transaction to open
        return
    try:
        with transaction.atomic():
            email_stats_add(events=events)
    except DatabaseError:
        logger.exception("Could not add %d event(s) of project %s to the email stats", len(events), project.id)


def email_stats_rebuild(*, start: datetime, end: datetime, project_id=None) -> int:
    """Recount the hours from `start` to `end` (UTC, widened to whole hours) from the email rows and replace those
    rollup rows, in one transaction. Returns the number of rows written.

    1. One grouped count per kind over the email rows whose `<kind>_at` falls in the range.
    2. Delete the range's rollup rows (of the project, or of every project) and insert the new ones.
    """
    start = hour_of(start)
    end = end if end == hour_of(end) else hour_of(end) + timedelta(hours=1)
    emails = Email.objects.all()
    if project_id is not None:
        emails = emails.filter(project_id=project_id)
    counts: dict[tuple, dict[str, int]] = defaultdict(lambda: dict.fromkeys(COUNTS, 0))
    for count, column in EMAIL_COLUMNS.items():
        rows = emails.filter(**{f"{column}__gte": start, f"{column}__lt": end})
        if count == "failed":
            rows = rows.filter(status=Email.Status.FAILED)
        grouped = rows.annotate(bucket=TruncHour(column)).values("project_id", "bucket").annotate(n=Count("id"))
        for row in grouped.order_by():
            counts[(row["project_id"], row["bucket"])][count] += row["n"]
    with transaction.atomic():
        stale = EmailStatsHour.objects.filter(hour__gte=start, hour__lt=end)
        if project_id is not None:
            stale = stale.filter(project_id=project_id)
        stale.delete()
        EmailStatsHour.objects.bulk_create(
            [EmailStatsHour(project_id=p, hour=hour, **values) for (p, hour), values in counts.items()],
            batch_size=1000,
        )
    return len(counts)

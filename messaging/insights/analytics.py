"""The analytics endpoints' reads: the email time series (from the hourly rollup), the most frequent events with
their trend, and campaign figures aggregated over `Email.campaign_id` (named through the campaign directory)."""

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from django.db.models import Count, F, Max, Q, Sum
from django.db.models.functions import TruncDay
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from accounts.models import Project
from contacts.models import Event
from messaging.insights.activity import percent
from messaging.insights.registry import campaigns_counts, campaigns_describe
from messaging.insights.rollup import hour_of
from messaging.models import Email, EmailStatsHour

INTERVALS = {"day": timedelta(days=1), "hour": timedelta(hours=1)}
# Series field -> rollup column.
SERIES = {
    "emails": "sent",
    "delivered": "delivered",
    "opens": "opened",
    "clicks": "clicked",
    "bounces": "bounced",
    "complaints": "complained",
}


def parse_moment(raw: str, *, end_of_day: bool = False) -> datetime | None:
    """An ISO 8601 timestamp, or a date meaning its first instant (its last with `end_of_day`); naive values are
    UTC. None when `raw` is neither."""
    try:
        # Date first: parse_datetime would read a bare date as its midnight.
        day = parse_date(raw)
        value = datetime.combine(day, time.max if end_of_day else time.min) if day else parse_datetime(raw)
    except ValueError:
        return None
    if value is None:
        return None
    return value if timezone.is_aware(value) else value.replace(tzinfo=UTC)


def bucket_of(moment: datetime, interval: str) -> datetime:
    """The start of the UTC day or hour that holds `moment`."""
    moment = hour_of(moment)
    return moment.replace(hour=0) if interval == "day" else moment


@dataclass(frozen=True)
class SeriesPoint:
    """The counts of one UTC day or hour, from `date` on (the names of SERIES)."""

    date: datetime
    emails: int
    delivered: int
    opens: int
    clicks: int
    bounces: int
    complaints: int


def email_timeseries(*, project: Project, start: datetime, end: datetime, interval: str) -> list[SeriesPoint]:
    """One point per UTC day or hour whose interval meets [start, end], zero-filled; each point counts its whole
    interval. Reads at most 24 x 366 rollup rows, grouped by the database for days."""
    first, last = bucket_of(start, interval), bucket_of(end, interval)
    step = INTERVALS[interval]
    rows = (
        EmailStatsHour.objects.filter(project=project, hour__gte=first, hour__lt=last + step)
        .values(bucket=TruncDay("hour") if interval == "day" else F("hour"))
        .annotate(**{name: Sum(column) for name, column in SERIES.items()})
        .order_by()
    )
    found = {row.pop("bucket"): row for row in rows}
    points, moment = [], first
    while moment <= last:
        values = found.get(moment) or dict.fromkeys(SERIES, 0)
        points.append(SeriesPoint(date=moment, **{name: values[name] for name in SERIES}))
        moment += step
    return points


def _trend(current: int, previous: int) -> int:
    """Percent change against the previous period, rounded; a name new in this period is +100."""
    if previous:
        return round((current - previous) * 100 / previous)
    return 100 if current else 0


@dataclass(frozen=True)
class TopEvent:
    name: str
    count: int
    trend: int


def top_events(*, project: Project, limit: int, days: int) -> list[TopEvent]:
    """The most frequent event names (tracked and system) of the last `days` days, with the trend against the
    `days` days before. Two grouped counts over the (project, created_at) index."""
    now = timezone.now()
    since, before = now - timedelta(days=days), now - timedelta(days=2 * days)
    events = Event.objects.filter(project=project)
    current = list(
        events.filter(created_at__gte=since)
        .values("name")
        .annotate(count=Count("id"))
        .order_by("-count", "name")[:limit]
    )
    previous = dict(
        events.filter(created_at__gte=before, created_at__lt=since, name__in=[row["name"] for row in current])
        .values("name")
        .annotate(count=Count("id"))
        .values_list("name", "count")
        .order_by()
    )
    return [
        TopEvent(name=row["name"], count=row["count"], trend=_trend(row["count"], previous.get(row["name"], 0)))
        for row in current
    ]


def _campaign_rows(project: Project, days: int):
    """Per campaign, over its emails created in the last `days` days: sent, opened, clicked (each email once) and
    still waiting to be sent."""
    since = timezone.now() - timedelta(days=days)
    return (
        Email.objects.filter(project=project, created_at__gte=since, campaign_id__isnull=False)
        .values("campaign_id")
        .annotate(
            sent=Count("sent_at"),
            opened=Count("opened_at"),
            clicked=Count("clicked_at"),
            pending=Count("id", filter=Q(status__in=[Email.Status.QUEUED, Email.Status.SENDING])),
            subject=Max("subject"),
        )
    )


@dataclass(frozen=True)
class CampaignFigures:
    id: uuid.UUID
    name: str | None
    subject: str
    sent_count: int
    opened_count: int
    clicked_count: int
    open_rate: float
    click_rate: float


def top_campaigns(*, project: Project, limit: int, days: int) -> list[CampaignFigures]:
    rows = list(_campaign_rows(project, days).order_by("-opened", "-sent", "campaign_id")[:limit])
    known = campaigns_describe(project=project, campaign_ids=[row["campaign_id"] for row in rows])
    out = []
    for row in rows:
        info = known.get(row["campaign_id"])
        out.append(
            CampaignFigures(
                id=row["campaign_id"],
                name=info.name if info else None,
                subject=info.subject if info else row["subject"],
                sent_count=row["sent"],
                opened_count=row["opened"],
                clicked_count=row["clicked"],
                open_rate=percent(row["opened"], row["sent"]),
                click_rate=percent(row["clicked"], row["sent"]),
            )
        )
    return out


@dataclass(frozen=True)
class CampaignStats:
    total: int
    active: int
    completed: int
    average_open_rate: float
    average_click_rate: float


def campaign_stats(*, project: Project, days: int) -> CampaignStats:
    """`{total, active, completed}` from the campaigns app when it answers, else from the emails (a campaign is
    active while some of its emails wait to be sent); the average rates over all its emails' sends."""
    rows = list(_campaign_rows(project, days).order_by())
    sent, opened, clicked = (sum(row[key] for row in rows) for key in ("sent", "opened", "clicked"))
    counts = campaigns_counts(project=project, since=timezone.now() - timedelta(days=days))
    if counts is None:
        active = sum(1 for row in rows if row["pending"])
        counts = {"total": len(rows), "active": active, "completed": len(rows) - active}
    return CampaignStats(
        total=counts["total"],
        active=counts["active"],
        completed=counts["completed"],
        average_open_rate=percent(opened, sent),
        average_click_rate=percent(clicked, sent),
    )

"""The operators' dashboard in the admin (/admin/dashboard/): what waits, what flows, what is stuck.

Every figure is read from an indexed range or capped (`core.counts`), so the page costs the same few queries
however big the tables grow; the queues and the overdue work are the doctor's own measures (`config.doctor`).
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib import admin
from django.db.models import Count
from django.db.models.functions import TruncMinute
from django.template.response import TemplateResponse
from django.utils import timezone

from accounts.models import Project
from config.doctor import OVERDUE, QUEUES, overdue_work, queue_depths
from core.counts import COUNT_CAP, capped_count
from messaging.feedback.reputation import DISABLED_REASON
from messaging.models import Email

RECENT = timedelta(hours=1)
RATE_WINDOW_MINUTES = 15
DISABLED_SHOWN = 50
# The statuses of an email that has been handed to the mail server, whatever happened to it afterwards.
_DELIVERED = [
    Email.Status.SENT,
    Email.Status.DELIVERED,
    Email.Status.OPENED,
    Email.Status.CLICKED,
    Email.Status.BOUNCED,
    Email.Status.COMPLAINED,
]


@dataclass(frozen=True)
class Figures:
    now: datetime
    queues: dict[str, int | str]
    emails_by_status: dict[str, int]
    deliveries_per_minute: list[tuple[datetime, int]]
    disabled_projects: list[Project]
    disabled_count: int
    overdue: dict[str, int]


def emails_by_status_since(since: datetime) -> dict[str, int]:
    """Emails accepted since `since`, by status: one range of the (project, created_at) index per project.

    The project ids are read first and passed as a list: given a subquery instead, PostgreSQL walked the whole index
    with the time as a filter."""
    project_ids = list(Project.objects.values_list("id", flat=True))
    rows = (
        Email.objects.filter(project_id__in=project_ids, created_at__gte=since)
        .values_list("status")
        .annotate(count=Count("id"))
        .order_by()
    )
    return dict(rows)


def deliveries_per_minute(now: datetime, minutes: int = RATE_WINDOW_MINUTES) -> list[tuple[datetime, int]]:
    """Emails handed to the mail server in each of the last `minutes` minutes, oldest first (0 for a quiet one).

    An email is claimed shortly before it is sent, so the (status, claimed_at) index bounds the rows read: claimed
    at most a lease before the window opened."""
    start = (now - timedelta(minutes=minutes - 1)).replace(second=0, microsecond=0)
    lease = timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)
    counted = dict(
        Email.objects.filter(status__in=_DELIVERED, claimed_at__gte=start - lease, sent_at__gte=start)
        .annotate(minute=TruncMinute("sent_at"))
        .values_list("minute")
        .annotate(count=Count("id"))
        .order_by()
    )
    minutes_shown = [start + timedelta(minutes=step) for step in range(minutes)]
    return [(minute, counted.get(minute, 0)) for minute in minutes_shown]


def projects_disabled_by_reputation():
    return Project.objects.filter(disabled=True, disabled_reason=DISABLED_REASON)


def dashboard_figures(now: datetime | None = None) -> Figures:
    now = now or timezone.now()
    disabled = projects_disabled_by_reputation()
    return Figures(
        now=now,
        queues=queue_depths(),
        emails_by_status=emails_by_status_since(now - RECENT),
        deliveries_per_minute=deliveries_per_minute(now),
        disabled_projects=list(disabled.order_by("-disabled_at")[:DISABLED_SHOWN]),
        disabled_count=capped_count(disabled),
        overdue={kind: capped_count(rows) for kind, rows in overdue_work(now).items()},
    )


def dashboard_view(request):
    figures = dashboard_figures()
    context = {
        **admin.site.each_context(request),
        "title": "Operations dashboard",
        "figures": figures,
        "cap": COUNT_CAP,
        "queues": [(QUEUES[name], depth) for name, depth in figures.queues.items()],
        "statuses": [(status, figures.emails_by_status.get(status, 0)) for status in Email.Status.values],
        "overdue": [(OVERDUE[kind][1], count) for kind, count in figures.overdue.items()],
        "deliveries_total": sum(count for _, count in figures.deliveries_per_minute),
        "rate_minutes": RATE_WINDOW_MINUTES,
    }
    return TemplateResponse(request, "admin/dashboard.html", context)

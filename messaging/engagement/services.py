"""Writes behind the hosted pages and the tracking endpoints: snoozing, and recording opens and clicks.

Subscription changes themselves go through `contacts.services.contact_subscription_set`, so that every page action
records `contact.subscribed` / `contact.unsubscribed` like any other change.
"""

import calendar
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from accounts.models import Project
from contacts.models import Contact
from contacts.services import events_record_bulk
from core.time import iso
from messaging.models import Email, created_bounds
from messaging.vocabulary import email_event_data

# Snooze choices of the manage page: key -> (label, weeks, months).
SNOOZE_PERIODS = {
    "2w": ("2 weeks", 2, 0),
    "1m": ("1 month", 0, 1),
    "6m": ("6 months", 0, 6),
    "12m": ("12 months", 0, 12),
}


def _add_months(moment: datetime, months: int) -> datetime:
    month_index = moment.month - 1 + months
    year, month = moment.year + month_index // 12, month_index % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


def snooze_until(period: str, *, now: datetime | None = None) -> datetime:
    """The end of a snooze of `period` (a key of SNOOZE_PERIODS) started `now`; months are calendar months."""
    _, weeks, months = SNOOZE_PERIODS[period]
    now = now or timezone.now()
    return _add_months(now + timedelta(weeks=weeks), months)


def contact_snooze_set(*, contact: Contact, period: str | None) -> None:
    """Snooze the contact's marketing mail for `period`, or end the snooze with None. The contact stays subscribed:
    campaigns and marketing workflow emails skip it while `snoozed_until` is in the future."""
    contact.snoozed_until = snooze_until(period) if period else None
    contact.updated_at = timezone.now()
    contact.save(update_fields=["snoozed_until", "updated_at"])


# Opens and clicks --------------------------------------------------------------------------------------------------

# A hit only moves the status forward: it never hides a bounce, complaint or failure, nor touches a row that has not
# been marked sent yet (delivery marks SENDING rows only).
_OPEN_FROM = (Email.Status.SENT, Email.Status.DELIVERED)
_CLICK_FROM = (Email.Status.SENT, Email.Status.DELIVERED, Email.Status.OPENED)
_HIT_KINDS = {
    "open": ("opened", Email.Status.OPENED, _OPEN_FROM),
    "click": ("clicked", Email.Status.CLICKED, _CLICK_FROM),
}


# One statement per kind of hit for a whole batch: each email's counter goes up by its number of hits, its first-time
# timestamp is set by its earliest hit unless set before, and the updated rows come back with what the events need.
# The ORM cannot express UPDATE ... FROM (VALUES ...); PostgreSQL and SQLite (3.35+) both run this one. Each email is
# named with the created_at window of its id (`created_bounds`), so that on the table partitioned by month its row is
# looked up in the month or two it can lie in.
_HITS_SQL = (
    "WITH v (id, hits, first_at, last_at, created_from, created_to) AS (VALUES {rows}) "
    "UPDATE messaging_email SET {field}_at = COALESCE({field}_at, v.first_at), {count} = {count} + v.hits, "
    "status = CASE WHEN status IN (%s, %s, %s) THEN %s ELSE status END, updated_at = v.last_at "
    "FROM v WHERE messaging_email.id = v.id AND messaging_email.created_at BETWEEN v.created_from AND v.created_to "
    "RETURNING messaging_email.id, project_id, contact_id, {count}, {field}_at, message_id, subject, from_email, "
    "template_id, campaign_id, workflow_id, source"
)


@dataclass(frozen=True)
class Hit:
    """One load of an open pixel (`kind` "open") or follow of a tracked link ("click"), at the time it happened."""

    kind: str
    email_id: str
    at: datetime
    link: str = ""


def _prep(field_name: str, value):
    return Email._meta.get_field(field_name).get_db_prep_value(value, connection)


def _moment(value) -> datetime:
    """A timestamp read back by a raw query as an aware datetime (SQLite returns it naive, in UTC)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if timezone.is_aware(value) else timezone.make_aware(value, UTC)


def _count_hits(kind: str, hits: list[Hit]) -> dict[str, tuple[Email, bool]]:
    """Count the hits of one kind (first-time timestamp, counter, forward-only status); returns, per email id that
    still exists, the row with what the events need and whether these hits include its first one."""
    field, status, moves_from = _HIT_KINDS[kind]
    by_email: dict[str, list[Hit]] = defaultdict(list)
    for hit in hits:
        by_email[hit.email_id].append(hit)
    params = []
    for email_id, own in by_email.items():
        window = [_prep("created_at", moment) for moment in created_bounds([email_id])]
        params += [_prep("id", email_id), len(own), _prep("updated_at", own[0].at), _prep("updated_at", own[-1].at)]
        params += window
    params += [*(list(moves_from) + [moves_from[-1]] * 3)[:3], status]
    count = "opens" if kind == "open" else "clicks"
    rows = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(by_email))
    with connection.cursor() as cursor:
        cursor.execute(_HITS_SQL.format(field=field, count=count, rows=rows), params)
        returned = cursor.fetchall()
    counted = {}
    for row in returned:
        email_id, project_id, contact_id, total, first_at, message_id, subject, from_email, *rest = row
        template_id, campaign_id, workflow_id, source = rest
        uuid_of = Email._meta.pk.to_python
        email = Email(
            id=uuid_of(email_id),
            project_id=uuid_of(project_id),
            contact_id=uuid_of(contact_id) if contact_id else None,
            message_id=message_id,
            subject=subject,
            from_email=from_email,
            template_id=uuid_of(template_id) if template_id else None,
            campaign_id=uuid_of(campaign_id) if campaign_id else None,
            workflow_id=uuid_of(workflow_id) if workflow_id else None,
            source=source,
            **{count: total},
        )
        key = str(email.id)
        # Only the batch whose earliest hit wrote the timestamp holds the first hit, even when two batches race.
        counted[key] = (email, _moment(first_at) == by_email[key][0].at)
    return counted


def _hit_event(email: Email, hit: Hit, number: int, first: bool) -> tuple[str, dict]:
    if hit.kind == "open":
        return "email.open", email_event_data(email, openedAt=iso(hit.at), opens=number, isFirstOpen=first)
    return "email.click", email_event_data(
        email, link=hit.link, clickedAt=iso(hit.at), clicks=number, isFirstClick=first
    )


def engagement_hits_record(*, hits: list[Hit]) -> list[Email | None]:
    """Count hits and record their `email.open` / `email.click` events (one INSERT per project), in one transaction
    and in the order given; returns each hit's email, None where the email no longer exists."""
    emails: list[Email | None] = []
    events = defaultdict(list)
    # No savepoint: nothing to roll back to inside a request or a drain batch.
    with transaction.atomic(savepoint=False):
        counted = {}
        for kind in _HIT_KINDS:
            own = [hit for hit in hits if hit.kind == kind]
            counted[kind] = _count_hits(kind, own) if own else {}
        per_email = Counter((hit.kind, hit.email_id) for hit in hits)
        seen: Counter = Counter()
        for hit in hits:
            email, first = counted[hit.kind].get(hit.email_id, (None, False))
            emails.append(email)
            if email is None:
                continue
            total = getattr(email, "opens" if hit.kind == "open" else "clicks")
            position = seen[hit.kind, hit.email_id]
            seen[hit.kind, hit.email_id] += 1
            if email.contact_id is not None:
                number = total - per_email[hit.kind, hit.email_id] + position + 1
                events[email.project_id].append((email, *_hit_event(email, hit, number, first and position == 0)))
        for project_id, rows in events.items():
            project = Project(id=project_id)
            project._state.adding = False
            contacts = [Contact(id=email.contact_id, project_id=project_id) for email, _, _ in rows]
            for contact in contacts:
                contact._state.adding = False
            items = [(contact, name, data) for contact, (_, name, data) in zip(contacts, rows, strict=True)]
            events_record_bulk(project=project, items=items, email_ids=[email.id for email, _, _ in rows])
    return emails


def email_open_record(*, email_id) -> Email | None:
    """One load of the open pixel, counted now: `email.open` with the counter and whether it was the first."""
    return engagement_hits_record(hits=[Hit("open", str(email_id), timezone.now())])[0]


def email_click_record(*, email_id, link: str) -> Email | None:
    """One follow of a tracked link, counted now: `email.click` with the link."""
    return engagement_hits_record(hits=[Hit("click", str(email_id), timezone.now(), link)])[0]

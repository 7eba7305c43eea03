"""Writes behind the hosted pages and the tracking endpoints: snoozing, and recording opens and clicks.

Subscription changes themselves go through `contacts.services.contact_subscription_set`, so that every page action
records `contact.subscribed` / `contact.unsubscribed` like any other change.
"""

import calendar
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from accounts.models import Project
from config.api.timestamps import iso
from contacts.models import Contact
from contacts.services import events_record_bulk
from messaging.delivery import email_event_data
from messaging.models import Email

# Snooze choices of the manage page (decisions.md): key -> (label, weeks, months).
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
    campaigns and marketing workflow emails skip it while `snoozed_until` is in the future (decisions.md)."""
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


# One statement per hit: the ORM's compilation of this conditional UPDATE and the read-back cost 2 ms of CPU per hit,
# the statement itself a fraction of that. PostgreSQL and SQLite (3.35+) both return the updated row.
_HIT_SQL = {
    field: (
        f"UPDATE messaging_email SET {field}_at = COALESCE({field}_at, %s), {count} = {count} + 1, "  # noqa: S608
        "status = CASE WHEN status IN (%s, %s, %s) THEN %s ELSE status END, updated_at = %s "
        f"WHERE id = %s RETURNING project_id, contact_id, {count}, {field}_at = %s, message_id, subject, "
        "from_email, template_id, campaign_id, workflow_id, source"
    )
    for field, count in (("opened", "opens"), ("clicked", "clicks"))
}


def _hit(email_id, *, field: str, status: str, moves_from, at: datetime) -> Email | None:
    """Count one hit (first-time timestamp, counter, forward-only status) and return the row with what the event
    needs; None when the email no longer exists. Under concurrent hits the row lock makes each count its own."""
    when = Email._meta.get_field("updated_at").get_db_prep_value(at, connection)
    from_statuses = (list(moves_from) + [moves_from[-1]] * 3)[:3]
    params = [when, *from_statuses, status, when, Email._meta.pk.get_db_prep_value(email_id, connection), when]
    with connection.cursor() as cursor:
        cursor.execute(_HIT_SQL[field], params)
        row = cursor.fetchone()
    if row is None:
        return None
    project_id, contact_id, count, is_first, message_id, subject, from_email, template_id, campaign_id, *rest = row
    workflow_id, source = rest
    uuid_field = Email._meta.pk
    email = Email(
        id=uuid_field.to_python(email_id),
        project_id=uuid_field.to_python(project_id),
        contact_id=uuid_field.to_python(contact_id) if contact_id else None,
        message_id=message_id,
        subject=subject,
        from_email=from_email,
        template_id=uuid_field.to_python(template_id) if template_id else None,
        campaign_id=uuid_field.to_python(campaign_id) if campaign_id else None,
        workflow_id=uuid_field.to_python(workflow_id) if workflow_id else None,
        source=source,
    )
    setattr(email, "opens" if field == "opened" else "clicks", count)
    # Only the hit whose timestamp was written is the first one, even when two arrive together.
    email.is_first_hit = bool(is_first)
    return email


@dataclass(frozen=True)
class Hit:
    """One load of an open pixel (`kind` "open") or follow of a tracked link ("click"), at the time it happened."""

    kind: str
    email_id: str
    at: datetime
    link: str = ""


def _hit_event(email: Email, hit: Hit) -> tuple[str, dict]:
    if hit.kind == "open":
        return "email.open", email_event_data(
            email, openedAt=iso(hit.at), opens=email.opens, isFirstOpen=email.is_first_hit
        )
    return "email.click", email_event_data(
        email, link=hit.link, clickedAt=iso(hit.at), clicks=email.clicks, isFirstClick=email.is_first_hit
    )


def engagement_hits_record(*, hits: list[Hit]) -> list[Email | None]:
    """Count hits in their order and record their `email.open` / `email.click` events (one INSERT per project),
    in one transaction; returns each hit's email, None where the email no longer exists."""
    emails: list[Email | None] = []
    events = defaultdict(list)
    # No savepoint: nothing to roll back to inside a request or a drain batch.
    with transaction.atomic(savepoint=False):
        for hit in hits:
            field, status, moves_from = _HIT_KINDS[hit.kind]
            email = _hit(hit.email_id, field=field, status=status, moves_from=moves_from, at=hit.at)
            emails.append(email)
            if email is not None and email.contact_id is not None:
                events[email.project_id].append((email, *_hit_event(email, hit)))
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

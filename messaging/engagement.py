"""Writes behind the hosted pages and the tracking endpoints: snoozing, and recording opens and clicks.

Subscription changes themselves go through `contacts.services.contact_subscription_set`, so that every page action
records `contact.subscribed` / `contact.unsubscribed` like any other change.
"""

import calendar
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Case, F, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

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


def _hit(email_id, *, at_field: str, count_field: str, status: str, moves_from) -> Email | None:
    """Count one hit in a single UPDATE (first-time timestamp, counter, forward-only status), then read the row
    back with what the event needs. Returns None when the email no longer exists.

    The caller holds a transaction: the UPDATE locks the row until commit, so the counter read back is this hit's
    own, even with concurrent hits on the same email."""
    now = timezone.now()
    updated = Email.objects.filter(pk=email_id).update(
        **{
            at_field: Coalesce(F(at_field), Value(now)),
            count_field: F(count_field) + 1,
            "status": Case(When(status__in=moves_from, then=Value(status)), default=F("status")),
            "updated_at": now,
        }
    )
    if not updated:
        return None
    email = Email.objects.select_related("project", "contact").defer("html", "headers").filter(pk=email_id).first()
    if email is None:
        return None
    # Only the hit whose timestamp was written is the first one, even when two arrive together.
    email.is_first_hit = getattr(email, at_field) == now
    email.hit_at = now
    return email


def _record(email: Email, name: str, data: dict) -> None:
    if email.contact is None:
        return
    events_record_bulk(project=email.project, items=[(email.contact, name, data)], email_ids=[email.id])


def email_open_record(*, email_id) -> Email | None:
    """One load of the open pixel: count it and record `email.open`."""
    # No savepoint: nothing to roll back to inside a request, and a hit stays three statements.
    with transaction.atomic(savepoint=False):
        email = _hit(
            email_id, at_field="opened_at", count_field="opens", status=Email.Status.OPENED, moves_from=_OPEN_FROM
        )
        if email is not None:
            data = email_event_data(
                email, openedAt=iso(email.hit_at), opens=email.opens, isFirstOpen=email.is_first_hit
            )
            _record(email, "email.open", data)
    return email


def email_click_record(*, email_id, link: str) -> Email | None:
    """One follow of a tracked link: count it and record `email.click` with the link."""
    with transaction.atomic(savepoint=False):
        email = _hit(
            email_id,
            at_field="clicked_at",
            count_field="clicks",
            status=Email.Status.CLICKED,
            moves_from=_CLICK_FROM,
        )
        if email is not None:
            data = email_event_data(
                email, link=link, clickedAt=iso(email.hit_at), clicks=email.clicks, isFirstClick=email.is_first_hit
            )
            _record(email, "email.click", data)
    return email

"""What a provider notification does to the email it is about.

`feedback_record` runs inside the transaction of the whole notification (the webhook view opens it), so a failure
anywhere rolls every change back and the provider, seeing a 5xx, delivers the notification again:

1. Claim the receipt (provider, event id). The unique constraint makes a redelivered notification a no-op, even
   when two copies arrive at once.
2. Find the email: by the provider's message id, by our own Message-ID (which carries the email id), or by the
   email id the generic webhook names. An unknown message, or a recipient that is not the email's, is ignored.
3. Move the email (docs/feedback.md) and record its `email.*` event:
   - delivered: `deliveredAt` once; status DELIVERED only from SENT (never back from opened, bounced, ...);
   - hard bounce / complaint: BOUNCED / COMPLAINED with their timestamp, the contact unsubscribed, the address
     suppressed, and the project's reputation evaluated;
   - soft bounce: the event only;
   - opens and clicks: the tracking endpoints' own functions (`messaging.engagement.services`).
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from contacts.services import contact_subscription_set, events_record_bulk, normalize_email
from core.batches import purge
from core.ids import uuid_or_none
from core.time import iso
from messaging.engagement.services import email_click_record, email_open_record
from messaging.feedback.events import BOUNCED, CLICKED, COMPLAINED, DELIVERED, HARD, OPENED, FeedbackEvent
from messaging.feedback.reputation import project_reputation_guard
from messaging.feedback.suppression import suppression_add
from messaging.models import Email, Suppression, WebhookReceipt, created_q
from messaging.vocabulary import email_event_data

logger = logging.getLogger(__name__)

S = Email.Status
# Statuses a hard bounce or complaint may replace: anything the message reached after it was handed over.
_BOUNCE_FROM = (S.SENT, S.DELIVERED, S.OPENED, S.CLICKED)
_COMPLAINT_FROM = (S.SENT, S.DELIVERED, S.OPENED, S.CLICKED, S.BOUNCED)


def _receipt_claim(event: FeedbackEvent) -> WebhookReceipt | None:
    try:
        with transaction.atomic():
            return WebhookReceipt.objects.create(
                provider=event.provider,
                event_id=event.event_id[:255],
                event_type=event.event_type[:20],
                message_id=(event.message_id or event.email_id)[:255],
                recipient=event.recipient[:320],
            )
    except IntegrityError:
        return None


def email_for_feedback(*, event: FeedbackEvent) -> Email | None:
    emails = Email.objects.select_related("project", "contact__project")
    if event.email_id:
        email_id = uuid_or_none(event.email_id)
        return emails.filter(created_q([email_id]), pk=email_id).first() if email_id else None
    bare = event.message_id.strip().strip("<>")
    if not bare:
        return None
    # Providers differ on angle brackets around their ids; the condition matches the partial index.
    found = (
        emails.filter(provider_message_id__in={bare, f"<{bare}>"}).exclude(provider_message_id="").order_by().first()
    )
    if found is not None:
        return found
    # Our own Message-ID (SMTP relays and self-run MTAs report it) is <email id@sender domain>.
    email_id = uuid_or_none(bare.split("@", 1)[0])
    return emails.filter(created_q([email_id]), pk=email_id, message_id=f"<{bare}>").first() if email_id else None


def _record_event(email: Email, name: str, **extra) -> None:
    if email.contact is None:  # test sends have no contact and record no events
        return
    events_record_bulk(
        project=email.project, items=[(email.contact, name, email_event_data(email, **extra))], email_ids=[email.id]
    )


def _first_time(email: Email, field: str, when, **changes) -> bool:
    """Set `field` once (conditional UPDATE, so concurrent notifications agree on which one was first)."""
    updated = Email.objects.filter(pk=email.pk, created_at=email.created_at, **{f"{field}__isnull": True}).update(
        **{field: when}, updated_at=timezone.now(), **changes
    )
    return bool(updated)


def _status_from(allowed: tuple, status: str):
    return Case(When(status__in=allowed, then=Value(status)), default=F("status"))


def _delivered(email: Email, event: FeedbackEvent, when) -> str:
    if not _first_time(email, "delivered_at", when, status=_status_from((S.SENT,), S.DELIVERED)):
        return "already delivered"
    _record_event(email, "email.delivery", deliveredAt=iso(when))
    return "delivered"


def _opted_out(email: Email, reason: str, event: FeedbackEvent) -> None:
    """A hard bounce or complaint: the contact is unsubscribed and the address suppressed."""
    if email.contact is not None:
        contact_subscription_set(contact=email.contact, subscribed=False, source=reason.lower())
    suppression_add(project=email.project, email=email.to_email, reason=reason, source_email=email, detail=event.detail)
    project_reputation_guard(project=email.project)


def _bounced(email: Email, event: FeedbackEvent, when) -> str:
    if event.bounce_type != HARD:
        _record_event(email, "email.bounce", bounceType=event.bounce_type, bouncedAt=iso(when))
        return "soft bounce"
    status = _status_from(_BOUNCE_FROM, S.BOUNCED)
    if not _first_time(
        email, "bounced_at", when, status=status, last_error=f"Bounced: {event.detail or 'no reason given'}"[:2000]
    ):
        return "already bounced"
    _record_event(email, "email.bounce", bounceType=HARD, bouncedAt=iso(when))
    _opted_out(email, Suppression.Reason.BOUNCE, event)
    return "hard bounce"


def _complained(email: Email, event: FeedbackEvent, when) -> str:
    if not _first_time(email, "complained_at", when, status=_status_from(_COMPLAINT_FROM, S.COMPLAINED)):
        return "already complained"
    _record_event(email, "email.complaint", complainedAt=iso(when))
    _opted_out(email, Suppression.Reason.COMPLAINT, event)
    return "complaint"


def _opened(email: Email, event: FeedbackEvent, when) -> str:
    email_open_record(email_id=email.id)
    return "open"


def _clicked(email: Email, event: FeedbackEvent, when) -> str:
    email_click_record(email_id=email.id, link=event.link)
    return "click"


_ACTIONS = {DELIVERED: _delivered, BOUNCED: _bounced, COMPLAINED: _complained, OPENED: _opened, CLICKED: _clicked}


@transaction.atomic
def feedback_record(*, event: FeedbackEvent) -> WebhookReceipt | None:
    """Act on one notification; return its receipt, or None when it was seen before (nothing changes)."""
    receipt = _receipt_claim(event)
    if receipt is None:
        return None
    outcome, detail, email = WebhookReceipt.Outcome.IGNORED, "", None
    if event.kind is None:
        detail = f"{event.event_type} events are not acted on"
    elif (email := email_for_feedback(event=event)) is None:
        detail = "unknown message"
    elif event.recipient and normalize_email(event.recipient) != normalize_email(email.to_email):
        detail, email = "recipient is not the email's", None
    else:
        when = event.timestamp or timezone.now()
        outcome, detail = WebhookReceipt.Outcome.PROCESSED, _ACTIONS[event.kind](email, event, when)
    receipt.outcome, receipt.detail = outcome, detail
    receipt.email, receipt.project_id = email, email.project_id if email else None
    receipt.save(update_fields=["outcome", "detail", "email", "project"])
    return receipt


def receipts_purge(
    *, project_id=None, batch_size: int = 1000, max_batches: int | None = None, dry_run: bool = False
) -> int:
    """Receipts only need to outlive a provider's redeliveries (a few days at most): those older than
    FEEDBACK_RECEIPT_RETENTION_DAYS go, oldest first along the received_at index."""
    before = timezone.now() - timedelta(days=settings.FEEDBACK_RECEIPT_RETENTION_DAYS)
    old = WebhookReceipt.objects.filter(received_at__lt=before)
    if project_id is not None:
        old = old.filter(project_id=project_id)
    return purge(old, order_by=("received_at",), batch_size=batch_size, max_batches=max_batches, dry_run=dry_run)

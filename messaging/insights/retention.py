"""Retention of rendered bodies: after `EMAIL_BODY_RETENTION_DAYS` the HTML of a finished email is emptied; the row
(addresses, subject, statuses, timestamps, counters) and its events stay, so every count and the activity feed
are unchanged."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from messaging.models import Email

# Rows a worker may still send keep their body whatever their age.
_UNFINISHED = (Email.Status.QUEUED, Email.Status.SENDING)


def email_bodies_clear(*, batch_size: int, max_batches: int) -> int:
    """Empty the bodies of emails older than the retention period, oldest first, in batches of `batch_size`
    (each one short UPDATE, so no long lock), at most `max_batches` per call. Returns how many were cleared.
    The partial index on created_at of rows that still have a body makes each batch an index range read."""
    cutoff = timezone.now() - timedelta(days=settings.EMAIL_BODY_RETENTION_DAYS)
    cleared = 0
    for _ in range(max_batches):
        ids = list(
            Email.objects.filter(created_at__lt=cutoff)
            .exclude(html="")
            .exclude(status__in=_UNFINISHED)
            .order_by("created_at")
            .values_list("id", flat=True)[:batch_size]
        )
        if not ids:
            break
        # updated_at stays: it is a failed email's failure time, which the stats rollup is rebuilt from.
        cleared += Email.objects.filter(id__in=ids).update(html="")
        if len(ids) < batch_size:
            break
    return cleared

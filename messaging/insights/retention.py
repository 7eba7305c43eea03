"""Retention of what messaging stores (docs/operations.md "Retention"), applied by the service's retention run.

Rendered bodies: after `EMAIL_BODY_RETENTION_DAYS` the HTML of a finished email is emptied, and the text part its
sender wrote when it has one; the row (addresses, subject, statuses, timestamps, counters) and its events stay, so
every count and the activity feed are unchanged.
Email rows: after `EMAIL_RETENTION_DAYS` (off by default) finished emails are deleted outright, on PostgreSQL whole
months at a time where they can be (docs/scaling.md "Partitioned history"); the hourly stats keep their counts, but
campaign figures and the activity feed lose them.
"""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from accounts.tenancy.selectors import project_ids_in_scope
from core.batches import in_batches, purge_by_project
from core.partitions import partitions_drop_before
from messaging.models import BODY_KEPT, Email

# Rows a worker may still send keep their body whatever their age.
_UNFINISHED = (Email.Status.QUEUED, Email.Status.SENDING)


def email_bodies_clear(
    *, project_id=None, batch_size: int = 1000, max_batches: int | None = None, dry_run: bool = False
) -> int:
    """Empty the bodies of emails older than the retention period, oldest first, in batches of `batch_size`
    (each one short UPDATE, so no long lock), at most `max_batches`. Returns how many were (or, with `dry_run`,
    would be) cleared. The partial index on created_at of rows that still have a body makes each batch an index
    range read that never revisits cleared rows."""
    cutoff = timezone.now() - timedelta(days=settings.EMAIL_BODY_RETENTION_DAYS)
    kept = Email.objects.filter(BODY_KEPT, created_at__lt=cutoff).exclude(status__in=_UNFINISHED)
    if project_id is not None:
        kept = kept.filter(project_id=project_id)
    if dry_run:
        return kept.count()

    def clear(ids: list) -> int:
        # updated_at stays: it is a failed email's failure time, which the stats rollup is rebuilt from. The rule's
        # filter, repeated, keeps the update out of the months after the cutoff when the table is partitioned.
        return kept.filter(id__in=ids).update(html="", text=None)

    return in_batches(kept, clear, order_by=("created_at",), batch_size=batch_size, max_batches=max_batches)


def emails_purge_old(
    *, project_id=None, batch_size: int = 1000, max_batches: int | None = None, dry_run: bool = False
) -> int:
    """Delete finished emails created more than EMAIL_RETENTION_DAYS ago (0, the default, keeps them), project by
    project and oldest first along the (project, created_at) index. Suppressions and webhook receipts that name
    such an email keep their row without the link.

    On PostgreSQL, where emails are partitioned by month, a run for every project first drops the months wholly
    before the cutoff (their rows are counted as deleted), as `contacts.services.events_purge_old` does; a month
    that still holds an email to be sent is left to the batched deletion. The suppressions and receipts of a dropped
    month keep the id of an email that is gone, which reads as none (the admin shows no link)."""
    if settings.EMAIL_RETENTION_DAYS <= 0:
        return 0
    cutoff = timezone.now() - timedelta(days=settings.EMAIL_RETENTION_DAYS)
    dropped = 0
    if project_id is None and not dry_run:
        unfinished = ", ".join(f"'{status}'" for status in _UNFINISHED)
        dropped = partitions_drop_before(table=Email._meta.db_table, cutoff=cutoff, unless=f"status IN ({unfinished})")
    return dropped + purge_by_project(
        Email.objects.filter(created_at__lt=cutoff).exclude(status__in=_UNFINISHED),
        project_ids=project_ids_in_scope(project_id=project_id),
        order_by=("created_at",),
        batch_size=batch_size,
        max_batches=max_batches,
        dry_run=dry_run,
    )

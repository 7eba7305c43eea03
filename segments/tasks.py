"""Celery tasks of the segments app: each takes ids and calls one service or selector."""

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from segments.selectors import segments_due
from segments.services import segment_contact_reevaluate, segment_recompute

# The claim in segment_recompute makes a redelivered message harmless.
SEGMENT_TASK_OPTIONS = {"acks_late": True, "ignore_result": True}
# A compute is one transaction: cut short, it is rolled back, its claim released, and the periodic refresh takes the
# segment again. The hard limit stays under the claim's timeout (`services.CLAIM_TIMEOUT`): a compute has ended when
# its claim times out and another run may take the segment over.
COMPUTE_LIMITS = {"soft_time_limit": 600, "time_limit": 660}
# A periodic run only queues computes; a re-evaluation reads one contact against each tracked segment.
SHORT_LIMITS = {"soft_time_limit": 60, "time_limit": 90}


def refresh_interval() -> timedelta:
    return timedelta(minutes=settings.SEGMENT_REFRESH_MINUTES)


def refresh_batch() -> int:
    return settings.SEGMENT_REFRESH_BATCH


@shared_task(**SEGMENT_TASK_OPTIONS, **COMPUTE_LIMITS)
def segment_recompute_task(segment_id: str) -> None:
    segment_recompute(segment_id=segment_id)


@shared_task(**SEGMENT_TASK_OPTIONS, **SHORT_LIMITS)
def segments_refresh_due_task() -> int:
    """Periodic: queue a recompute of every segment not refreshed within the interval, stalest first, at most one
    batch per run (the next run takes the rest). Returns how many were queued."""
    due = segments_due(older_than=timezone.now() - refresh_interval(), limit=refresh_batch())
    for segment_id in due:
        segment_recompute_task.delay(str(segment_id))
    return len(due)


@shared_task(**SEGMENT_TASK_OPTIONS, **SHORT_LIMITS)
def segment_contact_reevaluate_task(contact_id: str) -> None:
    # Open the debounce window again first: a change arriving during this run queues a new run.
    cache.delete(f"segments:reevaluate:{contact_id}")
    segment_contact_reevaluate(contact_id=contact_id)

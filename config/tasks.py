from celery import shared_task
from django.conf import settings

from config.retention import partitions_ensure_all, retention_apply


# Every rule deletes in short batches, each committed: a run cut short by a time limit leaves the rest to the next
# hour's. Within the hourly interval, and never near the broker's visibility timeout.
@shared_task(soft_time_limit=1200, time_limit=1260, ignore_result=True)
def apply_retention_task() -> dict:
    return retention_apply(max_batches=settings.RETENTION_MAX_BATCHES)


# A few catalog statements per table; each partition made is its own short transaction. A run cut short leaves
# the rest to the next day's, months ahead of need.
@shared_task(soft_time_limit=120, time_limit=150, ignore_result=True)
def ensure_partitions_task() -> dict:
    return partitions_ensure_all()

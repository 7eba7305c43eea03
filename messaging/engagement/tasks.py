from celery import shared_task

from messaging.engagement.hits import tracking_hits_drain


# The name is that of the module this task lived in before messaging had rooms: a worker refuses a message queued
# under a name it does not know (one still on the broker across an upgrade), and config/schedule.py names it.
# Time limits: a batch not yet trimmed from the list when one strikes is written by the next drain; the hard limit
# stays under the drain's lock (`hits._LOCK_SECONDS`), so two drains never write one batch at once.
@shared_task(name="messaging.tasks.drain_tracking_hits_task", soft_time_limit=120, time_limit=150, ignore_result=True)
def drain_tracking_hits_task() -> int:
    return tracking_hits_drain()

from celery import shared_task

from messaging.engagement.hits import tracking_hits_drain


# The name is that of the module this task lived in before messaging had rooms: a worker refuses a message queued
# under a name it does not know (one still on the broker across an upgrade), and config/schedule.py names it.
@shared_task(name="messaging.tasks.drain_tracking_hits_task", ignore_result=True)
def drain_tracking_hits_task() -> int:
    return tracking_hits_drain()

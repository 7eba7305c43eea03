from celery import shared_task

from accounts.jobs.services import jobs_requeue_stalled


# Named as when accounts had no rooms: a worker refuses a message queued under a name it does not know (one still
# on the broker across an upgrade), and config/schedule.py names them.
@shared_task(
    name="accounts.tasks.requeue_stalled_jobs_task",
    acks_late=True,
    ignore_result=True,
    soft_time_limit=60,
    time_limit=90,
)
def requeue_stalled_jobs_task() -> int:
    return jobs_requeue_stalled()

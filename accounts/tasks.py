from celery import shared_task

from accounts.jobs import jobs_requeue_stalled


@shared_task(acks_late=True, ignore_result=True)
def requeue_stalled_jobs_task() -> int:
    return jobs_requeue_stalled()

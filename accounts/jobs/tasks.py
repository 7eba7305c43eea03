from celery import shared_task

from accounts.jobs.services import jobs_requeue_stalled


@shared_task(acks_late=True, ignore_result=True)
def requeue_stalled_jobs_task() -> int:
    return jobs_requeue_stalled()

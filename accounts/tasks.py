from celery import shared_task

from accounts.jobs import jobs_requeue_stalled
from accounts.services import idempotency_purge_expired


@shared_task(acks_late=True)
def purge_expired_idempotency_keys() -> int:
    return idempotency_purge_expired()


@shared_task(acks_late=True, ignore_result=True)
def requeue_stalled_jobs_task() -> int:
    return jobs_requeue_stalled()

from celery import shared_task

from accounts.services import idempotency_purge_expired


@shared_task(acks_late=True)
def purge_expired_idempotency_keys() -> int:
    return idempotency_purge_expired()

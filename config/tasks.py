from celery import shared_task
from django.conf import settings

from config.retention import retention_apply


@shared_task(ignore_result=True)
def apply_retention_task() -> dict:
    return retention_apply(max_batches=settings.RETENTION_MAX_BATCHES)

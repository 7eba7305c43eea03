"""Celery tasks of the contacts app: each takes a job id and calls one service."""

from celery import shared_task

from contacts.bulk import contacts_bulk_run
from contacts.imports import contact_import_run

# Jobs are claimed by job_run (PENDING -> PROCESSING), so a redelivered message does no work twice. At the soft time
# limit a job goes back to PENDING at its last checkpoint (a batch) and is published again: a long import runs as
# several tasks of ten minutes at most.
CONTACT_JOB_TASK_OPTIONS = {"acks_late": True, "ignore_result": True, "soft_time_limit": 600, "time_limit": 660}


@shared_task(**CONTACT_JOB_TASK_OPTIONS)
def contact_import_task(job_id: str) -> None:
    contact_import_run(job_id=job_id)


@shared_task(**CONTACT_JOB_TASK_OPTIONS)
def contacts_bulk_task(job_id: str) -> None:
    contacts_bulk_run(job_id=job_id)

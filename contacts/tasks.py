"""Celery tasks of the contacts app: each takes a job id and calls one service."""

from celery import shared_task

from contacts.bulk import contacts_bulk_run
from contacts.imports import contact_import_run

# Jobs are claimed by job_run (PENDING -> PROCESSING), so a redelivered message does no work twice.
CONTACT_JOB_TASK_OPTIONS = {"acks_late": True, "ignore_result": True}


@shared_task(**CONTACT_JOB_TASK_OPTIONS)
def contact_import_task(job_id: str) -> None:
    contact_import_run(job_id=job_id)


@shared_task(**CONTACT_JOB_TASK_OPTIONS)
def contacts_bulk_task(job_id: str) -> None:
    contacts_bulk_run(job_id=job_id)

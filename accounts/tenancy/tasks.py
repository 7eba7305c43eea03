from celery import shared_task

from accounts.tenancy.services import project_reset_run


@shared_task(acks_late=True, ignore_result=True)
def project_reset_task(job_id: str) -> None:
    project_reset_run(job_id=job_id)

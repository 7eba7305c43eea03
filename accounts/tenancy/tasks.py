from celery import shared_task

from accounts.tenancy.services import project_reset_run


# Named as when accounts had no rooms: a worker refuses a message queued under a name it does not know (one still
# on the broker across an upgrade).
@shared_task(name="accounts.tasks.project_reset_task", acks_late=True, ignore_result=True)
def project_reset_task(job_id: str) -> None:
    project_reset_run(job_id=job_id)

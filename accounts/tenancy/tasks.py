from celery import shared_task

from accounts.tenancy.services import project_reset_run


# Named as when accounts had no rooms: a worker refuses a message queued under a name it does not know (one still
# on the broker across an upgrade). A job (`job_run`): at the soft limit it goes back to PENDING at its last finished
# step and is published again. Each step deletes one kind of a project's rows in one transaction, which may be
# millions of events: a long limit, so that a step always fits in one.
@shared_task(
    name="accounts.tasks.project_reset_task", acks_late=True, ignore_result=True, soft_time_limit=1800, time_limit=1860
)
def project_reset_task(job_id: str) -> None:
    project_reset_run(job_id=job_id)

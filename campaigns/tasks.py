"""Celery tasks of the campaigns app: each calls one service."""

from celery import shared_task

from campaigns.sending import campaign_fan_out, campaigns_finish_sending, campaigns_start_due

# The fan-out is a job claimed by `job_run`, so a redelivered message does no work twice; acks_late leaves the
# message of a killed worker on the broker for another. At the soft time limit the job goes back to PENDING at its
# last checkpoint (a batch) and is published again: a large campaign fans out in tasks of ten minutes at most.
FAN_OUT_TASK_OPTIONS = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "ignore_result": True,
    "soft_time_limit": 600,
    "time_limit": 660,
}


@shared_task(**FAN_OUT_TASK_OPTIONS)
def campaign_fan_out_task(job_id: str) -> None:
    campaign_fan_out(job_id=job_id)


# Periodic; a run cut short leaves the rest to the next minute's (each campaign is claimed under its row lock).
@shared_task(soft_time_limit=60, time_limit=90, ignore_result=True)
def campaigns_start_due_task() -> int:
    return campaigns_start_due()


@shared_task(soft_time_limit=60, time_limit=90, ignore_result=True)
def campaigns_finish_sending_task() -> int:
    return campaigns_finish_sending()

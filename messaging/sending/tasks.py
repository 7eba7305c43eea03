from celery import shared_task

from messaging.sending.delivery import emails_deliver, emails_sweep
from messaging.sending.dispatch import delivery_retries_publish, emails_dispatch, overdue_tasks_publish

# acks_late + reject_on_worker_lost: a worker killed mid-batch leaves its message on the broker for another
# worker; the claim makes the redelivery harmless for rows that were already sent.
DELIVERY_TASK_OPTIONS = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}

# The names are those of the module these tasks lived in before messaging had rooms: a worker refuses a message
# queued under a name it does not know (one still on the broker across an upgrade), and config/schedule.py names them.
# Time limits (soft, hard): what each needs and what is left when the soft one strikes (docs/operations.md "Queues").


# A batch takes a fraction of a second; only a slow relay (EMAIL_TIMEOUT per exchange) makes it long. At the soft
# limit the rows not yet sent go back to the queue at once and are published again (`delivery.emails_deliver`); the
# minute to the hard limit leaves time to close the relay's connection.
@shared_task(name="messaging.tasks.deliver_emails_task", soft_time_limit=120, time_limit=180, **DELIVERY_TASK_OPTIONS)
def deliver_emails_task(email_ids: list[str]) -> int:
    report = emails_deliver(email_ids=email_ids)
    delivery_retries_publish(report.retry)
    return len(report.sent)


# Ids taken from a handover list but not yet published when a limit strikes are those of QUEUED rows: the sweeper
# publishes them.
@shared_task(name="messaging.tasks.dispatch_emails_task", soft_time_limit=60, time_limit=90, ignore_result=True)
def dispatch_emails_task() -> int:
    return emails_dispatch()


# Rows a sweep cut short moved back to QUEUED without publishing them are published by the next one.
@shared_task(name="messaging.tasks.sweep_emails_task", soft_time_limit=60, time_limit=90, ignore_result=True)
def sweep_emails_task() -> int:
    emails_dispatch()
    overdue = emails_sweep()
    overdue_tasks_publish(overdue)
    return len(overdue)

from celery import shared_task

from messaging.sending.delivery import emails_deliver, emails_sweep
from messaging.sending.dispatch import delivery_retries_publish, emails_dispatch, overdue_tasks_publish

# acks_late + reject_on_worker_lost: a worker killed mid-batch leaves its message on the broker for another
# worker; the claim makes the redelivery harmless for rows that were already sent.
DELIVERY_TASK_OPTIONS = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}

# The names are those of the module these tasks lived in before messaging had rooms: a worker refuses a message
# queued under a name it does not know (one still on the broker across an upgrade), and config/schedule.py names them.


@shared_task(name="messaging.tasks.deliver_emails_task", **DELIVERY_TASK_OPTIONS)
def deliver_emails_task(email_ids: list[str]) -> int:
    report = emails_deliver(email_ids=email_ids)
    delivery_retries_publish(report.retry)
    return len(report.sent)


@shared_task(name="messaging.tasks.dispatch_emails_task", ignore_result=True)
def dispatch_emails_task() -> int:
    return emails_dispatch()


@shared_task(name="messaging.tasks.sweep_emails_task", ignore_result=True)
def sweep_emails_task() -> int:
    emails_dispatch()
    overdue = emails_sweep()
    overdue_tasks_publish(overdue)
    return len(overdue)

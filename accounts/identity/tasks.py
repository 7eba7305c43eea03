from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from accounts.identity.mail import account_email_send
from accounts.identity.sessions import session_purge_expired

# The tasks are named as when accounts had no rooms: a worker refuses a message queued under a name it does not know
# (one still on the broker across an upgrade), and config/schedule.py names them.


# A relay that refuses for a while, or answers too slowly for the time limits (one message with EMAIL_TIMEOUT per
# exchange), is tried again; the token is made anew on each try (they all stay valid).
@shared_task(
    name="accounts.tasks.send_account_email_task",
    acks_late=True,
    ignore_result=True,
    autoretry_for=(OSError, SoftTimeLimitExceeded),
    retry_backoff=True,
    max_retries=5,
    soft_time_limit=90,
    time_limit=120,
)
def send_account_email_task(kind: str, object_id: str) -> bool:
    return account_email_send(kind=kind, object_id=object_id)


# One DELETE of the expired sessions; cut short, it is rolled back and the next run deletes them.
@shared_task(
    name="accounts.tasks.purge_expired_sessions_task",
    acks_late=True,
    ignore_result=True,
    soft_time_limit=300,
    time_limit=330,
)
def purge_expired_sessions_task() -> None:
    session_purge_expired()

"""Every periodic task of the service, in one place. django-celery-beat copies these into its database
schedule at start-up, where operators can pause or retime them in the admin."""

from datetime import timedelta

BEAT_SCHEDULE = {
    # Expired keys are already free (claims ignore them); this keeps the table small.
    "purge-expired-idempotency-keys": {
        "task": "accounts.tasks.purge_expired_idempotency_keys",
        "schedule": timedelta(hours=1),
        "options": {"expires": 30 * 60},
    },
}

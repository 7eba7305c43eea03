"""A worker keeps its PostgreSQL session from one task to the next (CONN_MAX_AGE), where Celery's Django support
would open a new one for every task."""

import pytest
from django.db import connection

from config.tests.processes import celery_worker, wait_until
from messaging.models import Email

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
BODY = {"from": "hi@alice.test", "subject": "Hello", "body": "<p>Hi</p>"}


def _other_sessions() -> set[tuple[int, object]]:
    """(process id, start) of the other sessions on this database: the worker's."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE datname = current_database() AND pid <> "
            "pg_backend_pid()"
        )
        return set(cursor.fetchall())


def test_a_worker_keeps_its_database_session_across_tasks(secret_client, smtp_sink, real_broker):
    if connection.vendor != "postgresql":
        pytest.skip("counts PostgreSQL sessions")
    with celery_worker(concurrency=1, EMAIL_URL=f"smtp://{smtp_sink.host}:{smtp_sink.port}"):
        sessions = []
        for n in range(3):
            response = secret_client.post("/v1/send", {**BODY, "to": f"s{n}@example.test"}, format="json")
            assert response.status_code == 200
            wait_until(
                lambda n=n: Email.objects.filter(status="SENT").count() == n + 1, timeout=60, what=f"email {n} sent"
            )
            sessions.append(_other_sessions())
    assert len(smtp_sink.received) == 3
    assert sessions[0], "the worker's session is open between tasks"
    assert sessions[0] == sessions[1] == sessions[2], "one session for every task, not a new one each"

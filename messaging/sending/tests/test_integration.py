"""The send pipeline through a real Celery worker and a real SMTP server, including a worker killed mid-batch."""

import asyncio
import os
import signal
import time

import pytest
from django.test import override_settings

from config.tests.processes import celery_worker, children, wait_until
from messaging.models import Email
from messaging.sending.delivery import emails_sweep
from messaging.sending.tasks import deliver_emails_task
from messaging.sending.tests.smtp import start_sink

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def sink():
    sink, controller = start_sink()
    yield sink
    controller.stop()


def _send(client, recipients):
    response = client.post(
        "/v1/send",
        {"to": recipients, "from": "hi@alice.test", "subject": "Hello {{ email }}", "body": "<p>Hi {{ email }}</p>"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    return [entry["email"] for entry in response.json()["data"]["emails"]]


def test_a_worker_delivers_what_the_api_accepted(secret_client, real_broker, sink):
    recipients = [f"r{i}@example.test" for i in range(5)]
    with celery_worker(EMAIL_URL=f"smtp://{sink.host}:{sink.port}"):
        _send(secret_client, recipients)
        wait_until(lambda: len(sink.received) >= 5, timeout=60, what="five messages at the SMTP server")
        wait_until(lambda: Email.objects.filter(status="SENT").count() == 5, timeout=30, what="rows marked SENT")
    assert sorted(r.rcpt_tos[0] for r in sink.received) == recipients
    assert all(r.message["Subject"] == f"Hello {r.rcpt_tos[0]}" for r in sink.received)


def test_killing_the_worker_mid_batch_neither_loses_nor_repeats_a_message(secret_client, real_broker, sink):
    original_rcpt = sink.handle_RCPT

    async def slow_rcpt(*args, **kwargs):  # the worker is always mid-conversation, never between 250 and its UPDATE
        await asyncio.sleep(0.4)
        return await original_rcpt(*args, **kwargs)

    sink.handle_RCPT = slow_rcpt
    recipients = [f"k{i}@example.test" for i in range(8)]
    env = {"EMAIL_URL": f"smtp://{sink.host}:{sink.port}"}
    with celery_worker(concurrency=1, **env) as worker:
        ids = _send(secret_client, recipients)
        wait_until(lambda: len(sink.received) >= 2, timeout=60, what="the batch to be under way")
        for pid in [*children(worker.pid), worker.pid]:  # the pool processes too: no warm shutdown
            os.kill(pid, signal.SIGKILL)
        worker.wait()
    delivered_before = len(sink.received)
    assert delivered_before < 8
    time.sleep(1.1)
    with override_settings(DELIVERY_LEASE_SECONDS=1):
        stranded = emails_sweep()
    assert stranded
    for email_id in stranded:
        deliver_emails_task.delay([str(email_id)])
    with celery_worker(**env):
        wait_until(
            lambda: Email.objects.filter(id__in=ids, status="SENT").count() == 8,
            timeout=60,
            what="every email sent after recovery",
        )
    assert sorted(r.rcpt_tos[0] for r in sink.received) == recipients

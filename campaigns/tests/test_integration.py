"""Campaigns through real Celery workers and a real SMTP server on loopback: a fan-out whose worker is killed
(SIGKILL) still gives every recipient exactly one message, and a transactional email sent while a campaign is
being delivered overtakes the campaign's queue."""

import signal
from collections import Counter
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from accounts.jobs.services import jobs_requeue_stalled
from accounts.models import Job
from campaigns.models import Campaign
from campaigns.tests.conftest import campaign_body
from config.celery import app
from config.tests.processes import celery_worker, wait_until
from contacts.models import Contact
from messaging.models import Email
from messaging.sending.delivery import emails_sweep
from messaging.sending.dispatch import delivery_tasks_publish

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
CONTACTS = 2000


@pytest.fixture
def contacts(project):
    Contact.objects.bulk_create(
        [Contact(project=project.project, email=f"r{index:05d}@example.test") for index in range(CONTACTS)],
        batch_size=1000,
    )
    return {f"r{index:05d}@example.test" for index in range(CONTACTS)}


def _start(secret_client) -> str:
    campaign = secret_client.post("/campaigns", campaign_body(), format="json").json()["data"]
    response = secret_client.post(f"/campaigns/{campaign['id']}/send", {}, format="json")
    assert response.status_code == 200, response.json()
    return campaign["id"]


@contextmanager
def _purged_afterwards():
    """The campaign's delivery tasks left on the broker are dropped, not handed to the next test's worker."""
    try:
        yield
    finally:
        app.control.purge()


def _publish_stranded() -> None:
    """The delivery sweeper a few minutes on: rows whose task a dead worker had taken are published again."""
    stranded = emails_sweep(now=timezone.now() + timedelta(minutes=5))
    delivery_tasks_publish([str(email_id) for email_id in stranded])


def test_killing_the_fan_out_worker_neither_skips_nor_repeats_a_recipient(
    secret_client, project, contacts, real_broker, smtp_sink, settings
):
    settings.JOB_LEASE_SECONDS = 2
    sink_url = f"smtp://{smtp_sink.host}:{smtp_sink.port}"
    env = {"JOB_LEASE_SECONDS": "2", "CAMPAIGN_BATCH_SIZE": "50", "EMAIL_URL": sink_url}
    campaign_id = _start(secret_client)
    job_id = Campaign.objects.get(pk=campaign_id).job_id
    with celery_worker(pool="solo", **env) as worker:
        wait_until(
            lambda: Job.objects.get(pk=job_id).checkpoint.get("queued", 0) >= 400,
            timeout=60,
            what="the first batches of the fan-out",
            interval=0.02,
        )
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    assert Job.objects.get(pk=job_id).status == Job.Status.PROCESSING
    assert 400 <= Email.objects.filter(campaign_id=campaign_id).count() < CONTACTS
    # The jobs sweeper finds the lease expired and publishes the fan-out again; a new worker resumes it.
    wait_until(lambda: jobs_requeue_stalled() == 1, timeout=10, what="the lease to expire")
    with celery_worker(pool="solo", **env):
        wait_until(lambda: Job.objects.get(pk=job_id).status == "COMPLETED", timeout=120, what="the fan-out")
    # The delivery tasks the killed worker had taken are gone with it; a few minutes on, the sweeper publishes
    # their rows again (with no worker running, no row is SENDING under a live lease).
    _publish_stranded()
    with celery_worker(pool="solo", **env):
        wait_until(
            lambda: not Email.objects.filter(campaign_id=campaign_id, status__in=["QUEUED", "SENDING"]).exists(),
            timeout=180,
            what="every email delivered",
            interval=0.5,
        )
    received = Counter(r.rcpt_tos[0] for r in smtp_sink.received)
    assert set(received) == contacts
    assert set(received.values()) == {1}
    assert Email.objects.filter(campaign_id=campaign_id).count() == CONTACTS
    assert Campaign.objects.get(pk=campaign_id).total_recipients == CONTACTS


def test_transactional_mail_overtakes_a_campaign_being_delivered(
    secret_client, project, contacts, real_broker, smtp_sink
):
    if not settings.CELERY_BROKER_URL.startswith("redis"):
        pytest.skip("task priorities need the Redis broker")
    env = {"EMAIL_URL": f"smtp://{smtp_sink.host}:{smtp_sink.port}"}
    campaign_id = _start(secret_client)
    with _purged_afterwards(), celery_worker(concurrency=1, **env):
        wait_until(lambda: len(smtp_sink.received) >= 200, timeout=120, what="the campaign under way")
        before = len(smtp_sink.received)
        response = secret_client.post(
            "/v1/send",
            {"to": "reset@example.test", "from": "security@alice.test", "subject": "Reset", "body": "<p>Reset</p>"},
            format="json",
        )
        assert response.status_code == 200
        wait_until(
            lambda: any(r.rcpt_tos == ["reset@example.test"] for r in smtp_sink.received),
            timeout=60,
            what="the password reset",
        )
        order = [r.rcpt_tos[0] for r in smtp_sink.received]
    overtaken = order.index("reset@example.test") - before
    # In arrival order it would come after every campaign message still waiting (about 1,800); it comes after what
    # the worker had already taken (the running task, the prefetched ones) and what the test's request took.
    assert overtaken <= 10 * settings.DELIVERY_BATCH_SIZE, overtaken
    assert Email.objects.filter(campaign_id=campaign_id).count() == CONTACTS
    assert Email.objects.filter(campaign_id=campaign_id, status="QUEUED").exists()  # still far from done

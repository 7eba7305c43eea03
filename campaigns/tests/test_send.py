"""Sending through the API: now or scheduled, the fan-out of one email per recipient (delivered to a real SMTP
server on loopback), resuming a fan-out without doubling or skipping anyone, and the end of a campaign."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import Job
from campaigns.models import Campaign, CampaignStatus
from campaigns.sending import (
    campaign_fan_out,
    campaign_fan_out_resume,
    campaign_finish,
    campaigns_finish_sending,
    campaigns_start_due,
)
from campaigns.tests.conftest import PRO
from campaigns.tests.test_caps import _started
from conftest import behind_a_lock, concurrently
from contacts.models import Contact
from core.errors import Conflict
from domains import authorized
from domains.models import Domain
from messaging.models import Email
from messaging.sending.services import CAMPAIGN, Address, Recipient, SendContent, emails_queue

AUDIENCE = ["ann@example.test", "ben@example.test", "fay@example.test"]


def recipients(sink) -> list[str]:
    return sorted(r.rcpt_tos[0] for r in sink.received)


def test_send_now_delivers_one_message_per_recipient(send, create_campaign, audience, smtp_sink, secret_client):
    campaign = create_campaign(fromName="Alice News")
    response = send(campaign["id"])
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["success"] is True and body["message"] == "Campaign is being sent"
    assert body["data"]["status"] == "SENDING" and body["data"]["sentAt"] is not None

    assert recipients(smtp_sink) == AUDIENCE
    ann = next(r for r in smtp_sink.received if r.rcpt_tos == ["ann@example.test"])
    assert ann.message["Subject"] == "Hello Ann" and "Alice News" in ann.message["From"]
    assert "Hi Ann" in ann.html and "Unsubscribe" in ann.html  # marketing: the footer
    assert ann.message["List-Unsubscribe"]
    emails = Email.objects.filter(campaign_id=campaign["id"])
    assert emails.count() == 3 and set(emails.values_list("source", flat=True)) == {"campaign"}
    data = secret_client.get(f"/campaigns/{campaign['id']}").json()["data"]
    assert data["status"] == "SENDING" and data["totalRecipients"] == 3
    # The minute's check finds every email terminal.
    assert campaigns_finish_sending() == 1
    assert secret_client.get(f"/campaigns/{campaign['id']}").json()["data"]["status"] == "SENT"


def test_scheduled_campaign_starts_once_when_due(send, committed, create_campaign, audience, smtp_sink, secret_client):
    campaign = create_campaign()
    when = (timezone.now() + timedelta(hours=2)).replace(microsecond=0)
    response = send(campaign["id"], {"scheduledFor": when.isoformat()})
    assert response.status_code == 200, response.json()
    iso = when.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert response.json()["message"] == f"Campaign scheduled for {iso}"
    assert response.json()["data"]["status"] == "SCHEDULED" and response.json()["data"]["scheduledFor"] == iso
    assert committed(campaigns_start_due) == 0  # not yet
    assert not smtp_sink.received

    Campaign.objects.filter(pk=campaign["id"]).update(scheduled_for=timezone.now() - timedelta(seconds=1))
    assert committed(campaigns_start_due) == 1
    assert committed(campaigns_start_due) == 0  # a second run finds nothing left to start
    assert recipients(smtp_sink) == AUDIENCE
    assert campaigns_finish_sending() == 1


@pytest.mark.parametrize(
    "value",
    ["2026-13-01", "tomorrow", "", True, {"at": 1}, [], "2026-02-30T10:00:00Z"],
)
def test_unparseable_schedule_is_400(send, create_campaign, audience, value):
    campaign = create_campaign()
    response = send(campaign["id"], {"scheduledFor": value})
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["code"] == "BAD_REQUEST"
    assert Campaign.objects.get(pk=campaign["id"]).status == CampaignStatus.DRAFT


@pytest.mark.parametrize(
    "value",
    ["2020-01-01", "2020-01-01T10:00:00+02:00", 1_600_000_000_000],
)
def test_past_schedule_is_422(send, create_campaign, audience, value):
    campaign = create_campaign()
    response = send(campaign["id"], {"scheduledFor": value})
    assert response.status_code == 422, response.json()
    assert response.json()["error"]["errors"][0]["field"] == "scheduledFor"
    assert Campaign.objects.get(pk=campaign["id"]).status == CampaignStatus.DRAFT


def test_accepted_schedule_forms(send, create_campaign, audience):
    campaign = create_campaign()
    later = timezone.now().replace(microsecond=0) + timedelta(days=2)
    for value, expected in (
        ("2099-01-01", "2099-01-01T00:00:00.000Z"),
        ("2099-01-01T09:30:00", "2099-01-01T09:30:00.000Z"),
        ("2099-01-01T09:30:00-02:00", "2099-01-01T11:30:00.000Z"),
        (int(later.timestamp() * 1000), later.strftime("%Y-%m-%dT%H:%M:%S.000Z")),
    ):
        response = send(campaign["id"], {"scheduledFor": value})
        assert response.status_code == 200, response.json()
        assert response.json()["data"]["scheduledFor"] == expected


def test_send_without_recipients_is_422(send, create_campaign, audience):
    campaign = create_campaign(audienceType="FILTERED", audienceCondition={**PRO, "groups": [
        {"filters": [{"field": "data.plan", "operator": "equals", "value": "enterprise"}]}
    ]})  # fmt: skip
    response = send(campaign["id"])
    assert response.status_code == 422
    error = response.json()["error"]["errors"][0]
    assert error == {"field": "audienceType", "message": "Campaign has no recipients", "code": "custom"}
    assert Campaign.objects.get(pk=campaign["id"]).status == CampaignStatus.DRAFT


@pytest.mark.parametrize("status", [CampaignStatus.SENDING, CampaignStatus.SENT, CampaignStatus.CANCELLED])
def test_send_only_from_draft_or_scheduled(send, create_campaign, audience, status):
    campaign = create_campaign()
    Campaign.objects.filter(pk=campaign["id"]).update(status=status)
    response = send(campaign["id"])
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "CAMPAIGN_NOT_EDITABLE"
    assert not Email.objects.exists() and not Job.objects.exists()


def test_send_needs_the_sender_domain_still_verified(send, project, create_campaign, audience):
    campaign = create_campaign()
    Domain.objects.filter(project=project.project).update(status=Domain.Status.PENDING)
    authorized.forget_project(project.id)  # what a domain check that un-verifies it does
    response = send(campaign["id"])
    assert response.status_code == 403 and response.json()["error"]["code"] == "DOMAIN_NOT_VERIFIED"
    assert Campaign.objects.get(pk=campaign["id"]).status == CampaignStatus.DRAFT


def test_another_projects_campaign_cannot_be_sent(send, create_campaign, audience, other_client):
    campaign = create_campaign()
    response = send(campaign["id"], client=other_client)
    assert response.status_code == 404 and response.json()["error"]["code"] == "CAMPAIGN_NOT_FOUND"
    assert Campaign.objects.get(pk=campaign["id"]).status == CampaignStatus.DRAFT


@pytest.fixture
def many(project):
    """25 subscribers of the project."""
    Contact.objects.bulk_create(
        Contact(project=project.project, email=f"c{index:02d}@example.test", data={"n": index}) for index in range(25)
    )
    return [f"c{index:02d}@example.test" for index in range(25)]


def test_fan_out_resumes_after_a_lost_worker_without_doubles_or_gaps(
    send, committed, create_campaign, many, smtp_sink, settings
):
    """A worker that died after committing two batches (its lease expired) and a redelivered message: the next run
    resumes at the checkpoint, and a batch done again queues nothing twice."""
    settings.CAMPAIGN_BATCH_SIZE = 4
    campaign = create_campaign()
    # Held back: the fan-out job exists but its message never ran.
    response = send(campaign["id"])
    assert response.status_code == 200
    job = Job.objects.get(pk=Campaign.objects.get(pk=campaign["id"]).job_id)
    assert job.status == Job.Status.COMPLETED  # eager: it ran
    sent_once = recipients(smtp_sink)
    assert sent_once == many

    # Replay: the job taken over from a dead worker with a checkpoint two batches in, and run again.
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.PROCESSING,
        heartbeat_at=timezone.now() - timedelta(hours=1),
        checkpoint={"after": many[7], "queued": 8},
        finished_at=None,
    )
    Campaign.objects.filter(pk=campaign["id"]).update(status=CampaignStatus.SENDING)
    committed(lambda: campaign_fan_out(job_id=job.pk))
    assert recipients(smtp_sink) == many  # nobody twice
    assert Email.objects.filter(campaign_id=campaign["id"]).count() == 25
    assert Job.objects.get(pk=job.pk).result == {"queued": 25}


@pytest.mark.django_db(transaction=True)
def test_one_batch_queued_twice_at_once_makes_one_email_per_contact(project):
    """Two runs of a campaign's batch at the same moment (a lease taken over from a slow but living worker): no
    unique index holds (campaign, contact) on the partitioned table, and the batches, one after the other under the
    lock of the campaign's stored content, leave out the contacts the other queued."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL")
    Contact.objects.bulk_create(Contact(project=project.project, email=f"c{n:02d}@example.test") for n in range(25))
    contacts = list(Contact.objects.filter(project=project.project).values_list("id", "email"))
    campaign = _started(project.project, "Once")
    content = SendContent(
        subject="Hi",
        body="<p>Hi</p>",
        sender=Address(email="news@alice.test"),
        type=campaign.type,
        source=Email.Source.CAMPAIGN,
        campaign_id=campaign.id,
        campaign_since=campaign.sent_at,
    )
    recipients = [Recipient(email=email, contact_id=contact_id) for contact_id, email in contacts]

    def batch(_):
        emails_queue(project=project.project, content=content, recipients=recipients, policy=CAMPAIGN)

    concurrently(batch, range(3), threads=3)
    emails = Email.objects.filter(campaign_id=campaign.id)
    assert emails.count() == 25 and emails.values("contact_id").distinct().count() == 25


def test_fan_out_resumed_from_a_checkpoint_skips_nobody(committed, create_campaign, many, smtp_sink, settings):
    """The emails of the first batches exist, the rest not yet: the resumed fan-out creates exactly the rest."""
    settings.CAMPAIGN_BATCH_SIZE = 4
    campaign = create_campaign()
    job = Job.objects.create(
        project_id=Campaign.objects.get(pk=campaign["id"]).project_id,
        type="campaign_send",
        params={"campaignId": campaign["id"]},
        status=Job.Status.PROCESSING,
        heartbeat_at=timezone.now() - timedelta(hours=1),
        checkpoint={"after": many[7], "queued": 8},
    )
    Campaign.objects.filter(pk=campaign["id"]).update(
        status=CampaignStatus.SENDING, job=job, sent_at=timezone.now(), total_recipients=25
    )
    committed(lambda: campaign_fan_out(job_id=job.pk))
    assert recipients(smtp_sink) == many[8:]
    assert Campaign.objects.get(pk=campaign["id"]).total_recipients == 17


def test_sending_campaign_becomes_sent_when_its_last_email_is_terminal(create_campaign, project, many):
    campaign = create_campaign()
    job = Job.objects.create(project=project.project, type="campaign_send", status=Job.Status.COMPLETED)
    job.finished_at = timezone.now()
    job.save()
    Campaign.objects.filter(pk=campaign["id"]).update(status=CampaignStatus.SENDING, job=job)
    email = Email.objects.create(
        project=project.project, campaign_id=campaign["id"], to_email="a@example.test", from_email="n@alice.test"
    )
    assert campaigns_finish_sending() == 0
    Email.objects.filter(pk=email.pk).update(status=Email.Status.BOUNCED)
    assert campaigns_finish_sending() == 1
    assert Campaign.objects.get(pk=campaign["id"]).status == CampaignStatus.SENT


def test_a_recipient_whose_data_passes_a_rendering_limit_fails_alone(send, create_campaign, audience, smtp_sink):
    """The body loops over the contact's `items`: Ben's 10,001 items pass the loop limit. His email is FAILED with
    the reason; the batch, and everyone else's mail, goes on."""
    ben = audience["ben"]
    ben.data = {**ben.data, "items": list(range(10_001))}
    ben.save(update_fields=["data"])
    campaign = create_campaign(body="<p>{% for i in items %}{{ i }}{% endfor %}</p>")
    assert send(campaign["id"]).status_code == 200
    assert recipients(smtp_sink) == ["ann@example.test", "fay@example.test"]
    failed = Email.objects.get(campaign_id=campaign["id"], to_email="ben@example.test")
    assert failed.status == Email.Status.FAILED
    assert failed.last_error == "Not rendered: body: Template loops past 10,000 iterations"


def test_delivery_personalizes_the_unrendered_rows_of_the_fan_out(
    send, create_campaign, audience, smtp_sink, monkeypatch
):
    """The fan-out only inserts rows; each is rendered as it is sent, with its contact's data of that moment, and
    keeps the copy that was sent. A contact deleted in between gets nothing: the row fails saying why."""
    from messaging.sending import dispatch
    from messaging.sending.delivery import emails_deliver

    held = []
    monkeypatch.setattr(dispatch, "delivery_tasks_publish", lambda ids, priority=None: held.extend(ids))
    campaign = create_campaign()
    assert send(campaign["id"]).status_code == 200
    emails = Email.objects.filter(campaign_id=campaign["id"])
    assert emails.count() == 3 and not smtp_sink.received
    assert {(email.rendered, email.html, email.subject) for email in emails} == {
        (False, "", "Hello {{ firstName | default: 'there' }}")
    }
    ann, ben = audience["ann"], audience["ben"]
    ann.data = {**ann.data, "firstName": "Annie"}
    ann.save(update_fields=["data"])
    ben.delete()

    emails_deliver(email_ids=held)
    assert recipients(smtp_sink) == ["ann@example.test", "fay@example.test"]
    received = next(r for r in smtp_sink.received if r.rcpt_tos == ["ann@example.test"])
    assert received.message["Subject"] == "Hello Annie" and "Hi Annie" in received.html
    sent = emails.get(to_email="ann@example.test")
    assert sent.status == Email.Status.SENT and sent.rendered and sent.subject == "Hello Annie"
    assert "Hi Annie" in sent.html and "Unsubscribe" in sent.html
    failed = emails.get(to_email="ben@example.test")
    assert failed.status == Email.Status.FAILED
    assert failed.last_error == "The contact was deleted before the email was sent"
    assert campaigns_finish_sending() == 1


def test_queued_emails_keep_their_content_when_the_campaign_row_is_gone(
    send, create_campaign, audience, smtp_sink, monkeypatch
):
    """Delivery personalizes a campaign's unrendered emails from the content the fan-out stored with them, not from
    the campaign: an email delivered (or retried) after its campaign was deleted is still the campaign's message."""
    from messaging.sending import dispatch
    from messaging.sending.delivery import emails_deliver

    held = []
    monkeypatch.setattr(dispatch, "delivery_tasks_publish", lambda ids, priority=None: held.extend(ids))
    campaign = create_campaign()
    assert send(campaign["id"]).status_code == 200
    Campaign.objects.filter(pk=campaign["id"]).delete()

    emails_deliver(email_ids=held)
    assert recipients(smtp_sink) == AUDIENCE
    received = next(r for r in smtp_sink.received if r.rcpt_tos == ["ann@example.test"])
    assert received.message["Subject"] == "Hello Ann" and "Hi Ann" in received.html
    assert set(Email.objects.filter(campaign_id=campaign["id"]).values_list("status", flat=True)) == {"SENT"}


def test_a_failed_fan_out_keeps_the_campaign_sending_until_it_is_resumed(
    send, committed, create_campaign, many, smtp_sink, settings, monkeypatch, secret_client
):
    """A fan-out that fails for good after two batches leaves the campaign SENDING (not SENT: 17 of its 25 recipients
    have no email), its job FAILED with the error; resumed, a new job queues exactly the rest and the campaign ends."""
    from campaigns import sending

    settings.CAMPAIGN_BATCH_SIZE = 4
    queue_bulk, batches = sending.emails_queue, []

    def third_batch_fails(**kwargs):
        batches.append(1)
        if len(batches) == 3:
            raise RuntimeError("the database went away")
        return queue_bulk(**kwargs)

    monkeypatch.setattr(sending, "emails_queue", third_batch_fails)
    campaign = create_campaign()
    assert send(campaign["id"]).status_code == 200  # the eager fan-out's failure is logged after the commit
    failed = Job.objects.get(pk=Campaign.objects.get(pk=campaign["id"]).job_id)
    assert failed.status == Job.Status.FAILED and failed.error == "the database went away"
    assert recipients(smtp_sink) == many[:8]  # every email it made is terminal...
    assert campaigns_finish_sending() == 0  # ...and still the campaign is not SENT
    assert secret_client.get(f"/campaigns/{campaign['id']}").json()["data"]["status"] == "SENDING"

    monkeypatch.setattr(sending, "emails_queue", queue_bulk)
    committed(lambda: sending.campaign_fan_out_resume(campaign=Campaign.objects.get(pk=campaign["id"])))
    resumed = Campaign.objects.get(pk=campaign["id"]).job
    assert resumed.pk != failed.pk and resumed.status == Job.Status.COMPLETED
    assert recipients(smtp_sink) == many  # the rest, nobody twice
    assert campaigns_finish_sending() == 1
    data = secret_client.get(f"/campaigns/{campaign['id']}").json()["data"]
    assert data["status"] == "SENT" and data["totalRecipients"] == 25


@pytest.mark.django_db(transaction=True)
def test_a_campaign_is_not_sent_by_a_check_that_waited_for_its_resume(create_campaign, project):
    """The minute's check waits for the row lock of a campaign whose failed fan-out is being resumed: it must judge
    the new job (still to run), not find the campaign without one and call it SENT."""
    if connection.vendor != "postgresql":
        pytest.skip("a check waiting for a row lock needs PostgreSQL")
    campaign = Campaign.objects.get(pk=create_campaign()["id"])
    campaign.job = Job.objects.create(project=project.project, type="campaign_send", status=Job.Status.FAILED)
    campaign.status = CampaignStatus.SENDING
    campaign.save()
    resumed = Job.objects.create(project=project.project, type="campaign_send", status=Job.Status.PENDING)

    moved = behind_a_lock(
        lambda: Campaign.objects.filter(pk=campaign.pk).update(job=resumed),
        lambda: campaign_finish(campaign_id=campaign.pk),
    )
    assert moved is False
    assert Campaign.objects.get(pk=campaign.pk).status == CampaignStatus.SENDING


@pytest.mark.parametrize("job_status", [None, Job.Status.PROCESSING, Job.Status.COMPLETED])
def test_only_a_failed_fan_out_can_be_resumed(create_campaign, project, job_status):
    campaign = Campaign.objects.get(pk=create_campaign()["id"])
    if job_status is not None:
        campaign.job = Job.objects.create(project=project.project, type="campaign_send", status=job_status)
        campaign.status = CampaignStatus.SENDING
        campaign.save()
    with pytest.raises(Conflict):
        campaign_fan_out_resume(campaign=campaign)
    assert Job.objects.filter(type="campaign_send").count() == (job_status is not None)

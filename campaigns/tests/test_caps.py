"""The monthly campaigns cap holds when a campaign starts and while it fans out, not only when its send is asked
for: a scheduled campaign is checked again when it is due, a fan-out stops at the cap (campaigns fanning out
together included), and what was not sent is told, with why, in the campaign, its stats and the activity feed.
Mail goes to a real SMTP server on loopback."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from accounts.billing.services import billing_limits_update, usage_by_category
from accounts.models import Job
from campaigns.models import Campaign
from campaigns.sending import campaign_fan_out, campaign_send, campaigns_finish_sending, campaigns_start_due
from campaigns.tests.conftest import PRO, campaign_body
from conftest import behind_a_lock, client_with, concurrently
from contacts.models import Contact
from messaging.models import Email

AUDIENCE = ["ann@example.test", "ben@example.test", "fay@example.test"]
REASON = "Billing limit exceeded"


def later() -> str:
    return (timezone.now() + timedelta(hours=1)).isoformat()


def come_due(*campaign_ids) -> None:
    Campaign.objects.filter(pk__in=campaign_ids).update(scheduled_for=timezone.now() - timedelta(seconds=1))


def received(sink) -> list[str]:
    return sorted(r.rcpt_tos[0] for r in sink.received)


def campaign_json(client, campaign_id) -> dict:
    return client.get(f"/campaigns/{campaign_id}").json()["data"]


def not_sent_items(client) -> list[dict]:
    return client.get("/activity", {"types": "campaign.not_sent"}).json()["data"]


def test_three_scheduled_campaigns_under_a_cap_of_three_send_three(
    send, committed, create_campaign, audience, smtp_sink, secret_client, project, other_project
):
    """Each campaign of three fits the cap of three alone when it is scheduled; when all three come due, the first
    to reach the cap sends its three and the others send nothing: back to DRAFT, the whole audience not sent, with
    why. Another project's campaign due at the same moment goes out whole."""
    billing_limits_update(project=project.project, changes={"campaigns": 3})
    waves = [create_campaign(name=f"Wave {n}")["id"] for n in range(3)]
    for wave in waves:
        assert send(wave, {"scheduledFor": later()}).status_code == 200
    theirs_client = client_with(other_project.keys.secret_key)
    theirs = theirs_client.post("/campaigns", campaign_body(**{"from": "news@bob.test"}), format="json")
    theirs = theirs.json()["data"]["id"]
    assert send(theirs, {"scheduledFor": later()}, client=theirs_client).status_code == 200
    come_due(*waves, theirs)

    committed(campaigns_start_due)

    assert received(smtp_sink) == [*AUDIENCE, "oli@example.test"]
    assert usage_by_category(project=project.project)["campaigns"] == 3
    assert Email.objects.filter(project=project.project).count() == 3
    campaigns_finish_sending()
    states = sorted(
        (data["status"], data["totalRecipients"], data["notSentCount"], data["notSentReason"])
        for data in (campaign_json(secret_client, wave) for wave in waves)
    )
    assert states == [("DRAFT", 3, 3, REASON), ("DRAFT", 3, 3, REASON), ("SENT", 3, 0, "")]
    unsent = [wave for wave in waves if campaign_json(secret_client, wave)["status"] == "DRAFT"]
    assert [campaign_json(secret_client, wave)["scheduledFor"] for wave in unsent] == [None, None]
    stats = secret_client.get(f"/campaigns/{unsent[0]}/stats").json()
    assert (stats["sentCount"], stats["notSentCount"], stats["notSentReason"]) == (0, 3, REASON)
    items = not_sent_items(secret_client)
    assert sorted(item["id"] for item in items) == sorted(unsent)
    assert {(item["metadata"]["notSentCount"], item["metadata"]["notSentReason"]) for item in items} == {(3, REASON)}
    assert "campaign.not_sent" in secret_client.get("/activity/types").json()["types"]

    # The other project: sent whole, nothing unsent, and none of our items in its feed.
    data = campaign_json(theirs_client, theirs)
    assert (data["status"], data["totalRecipients"], data["notSentCount"]) == ("SENT", 1, 0)
    assert not_sent_items(theirs_client) == []
    assert "campaign.not_sent" not in theirs_client.get("/activity/types").json()["types"]

    # Raised, the cap lets an unsent one be sent again; what it left unsent is forgotten.
    billing_limits_update(project=project.project, changes={"campaigns": 6})
    assert send(unsent[0]).status_code == 200
    data = campaign_json(secret_client, unsent[0])
    assert (data["status"], data["notSentCount"], data["notSentReason"]) == ("SENDING", 0, "")
    assert len(received(smtp_sink)) == 7


def test_a_put_that_widens_a_scheduled_campaign_past_the_cap_sends_nothing(
    send, committed, create_campaign, project, smtp_sink, secret_client
):
    """A FILTERED campaign of one contact is scheduled under a cap of one, then a PUT turns it to ALL (21 contacts):
    when it comes due, the audience no longer fits, and it is not started."""
    billing_limits_update(project=project.project, changes={"campaigns": 1})
    Contact.objects.bulk_create(
        Contact(project=project.project, email=f"c{n:02d}@example.test", data={"plan": "pro" if n == 0 else "free"})
        for n in range(21)
    )
    campaign = create_campaign(audienceType="FILTERED", audienceCondition=PRO)["id"]
    assert send(campaign, {"scheduledFor": later()}).status_code == 200
    widened = secret_client.put(f"/campaigns/{campaign}", campaign_body(audienceType="ALL"), format="json")
    assert widened.status_code == 200 and widened.json()["data"]["status"] == "SCHEDULED"
    assert widened.json()["data"]["totalRecipients"] == 21
    come_due(campaign)

    assert committed(campaigns_start_due) == 0

    assert received(smtp_sink) == [] and not Email.objects.filter(campaign_id=campaign).exists()
    assert usage_by_category(project=project.project)["campaigns"] == 0
    data = campaign_json(secret_client, campaign)
    assert (data["status"], data["sentAt"], data["scheduledFor"]) == ("DRAFT", None, None)
    assert (data["notSentCount"], data["notSentReason"]) == (21, REASON)
    stats = secret_client.get(f"/campaigns/{campaign}/stats").json()
    assert (stats["notSentCount"], stats["notSentReason"]) == (21, REASON)
    [item] = not_sent_items(secret_client)
    assert item["id"] == campaign and item["metadata"]["notSentCount"] == 21
    assert item["metadata"]["status"] == "DRAFT"
    # Nothing is left to start.
    assert committed(campaigns_start_due) == 0


def test_a_fan_out_stops_at_the_cap_and_records_the_rest(
    committed, create_campaign, audience, smtp_sink, secret_client, project, settings
):
    """Two campaigns of three sent together under a cap of five: both fit when asked for (nothing is counted until
    a fan-out queues), the first fans out whole, the second stops after two, in its second batch. The second goes
    on to SENT with what it sent, the rest not sent, with why, in its stats and in the feed."""
    settings.CAMPAIGN_BATCH_SIZE = 2
    billing_limits_update(project=project.project, changes={"campaigns": 5})
    first, second = (create_campaign(name=name)["id"] for name in ("First", "Second"))

    def send_both():
        for campaign_id in (first, second):
            campaign_send(campaign=Campaign.objects.get(pk=campaign_id))

    committed(send_both)

    assert len(received(smtp_sink)) == 5
    assert usage_by_category(project=project.project)["campaigns"] == 5
    assert Email.objects.filter(campaign_id=second).count() == 2
    assert campaigns_finish_sending() == 2
    data = campaign_json(secret_client, second)
    assert (data["status"], data["totalRecipients"], data["notSentCount"], data["notSentReason"]) == (
        "SENT",
        2,
        1,
        REASON,
    )
    stats = secret_client.get(f"/campaigns/{second}/stats").json()
    assert (stats["totalRecipients"], stats["sentCount"], stats["notSentCount"]) == (2, 2, 1)
    assert campaign_json(secret_client, first)["notSentCount"] == 0
    [item] = not_sent_items(secret_client)
    assert item["id"] == second and (item["metadata"]["status"], item["metadata"]["notSentCount"]) == ("SENT", 1)
    sent = secret_client.get("/activity", {"types": "campaign.sent"}).json()["data"]
    assert {item["metadata"]["name"]: item["metadata"]["notSentCount"] for item in sent} == {"First": 0, "Second": 1}
    job = Job.objects.get(pk=Campaign.objects.get(pk=second).job_id)
    assert (job.status, job.result) == (Job.Status.COMPLETED, {"queued": 2, "notSent": 1})


def test_a_project_under_no_cap_fans_out_whole(committed, create_campaign, audience, smtp_sink, secret_client):
    campaign = create_campaign()["id"]
    committed(lambda: campaign_send(campaign=Campaign.objects.get(pk=campaign)))
    assert received(smtp_sink) == AUDIENCE
    assert campaign_json(secret_client, campaign)["notSentCount"] == 0
    assert not_sent_items(secret_client) == []


def _started(project, name: str) -> Campaign:
    """A campaign to ALL started with its fan-out job, the job not yet run."""
    campaign = Campaign.objects.create(
        project=project, name=name, subject="Hi", body="<p>Hi</p>", from_email="news@alice.test"
    )
    job = Job.objects.create(project=project, type="campaign_send", params={"campaignId": str(campaign.id)})
    campaign.status, campaign.job, campaign.sent_at, campaign.total_recipients = "SENDING", job, timezone.now(), 25
    campaign.save()
    return campaign


@pytest.mark.django_db(transaction=True)
def test_two_fan_outs_at_once_do_not_pass_the_cap_together(project, settings):
    """Two campaigns of 25 each fan out at the same time, in batches of 4, under a cap of 30: together they queue
    exactly 30, the usage counter says 30, and the 20 left are recorded as not sent."""
    settings.CAMPAIGN_BATCH_SIZE = 4
    Contact.objects.bulk_create(Contact(project=project.project, email=f"c{n:02d}@example.test") for n in range(25))
    billing_limits_update(project=project.project, changes={"campaigns": 30})
    campaigns = [_started(project.project, name) for name in ("One", "Two")]

    concurrently(lambda campaign: campaign_fan_out(job_id=campaign.job_id), campaigns, threads=2)

    assert Email.objects.filter(project=project.project, source=Email.Source.CAMPAIGN).count() == 30
    assert usage_by_category(project=project.project)["campaigns"] == 30
    rows = Campaign.objects.filter(pk__in=[c.pk for c in campaigns])
    assert sum(row.not_sent_count for row in rows) == 20
    for row in rows:
        assert row.total_recipients + row.not_sent_count == 25
        assert row.not_sent_reason == (REASON if row.not_sent_count else "")


@pytest.mark.django_db(transaction=True)
def test_a_fan_out_waits_for_the_count_of_a_batch_not_yet_committed(project, settings):
    """The first campaign's fan-out has queued its 25 in a transaction not yet committed when the second's runs: the
    second waits for the count (the counter row's lock), then finds 5 left of 30, queues them and records 20 as
    not sent. Read without the lock, usage would still be 0 and it would queue 25 more."""
    if connection.vendor != "postgresql":
        pytest.skip("a fan-out waiting for a row lock needs PostgreSQL")
    settings.CAMPAIGN_BATCH_SIZE = 30
    Contact.objects.bulk_create(Contact(project=project.project, email=f"c{n:02d}@example.test") for n in range(25))
    billing_limits_update(project=project.project, changes={"campaigns": 30})
    one, two = (_started(project.project, name) for name in ("One", "Two"))

    behind_a_lock(lambda: campaign_fan_out(job_id=one.job_id), lambda: campaign_fan_out(job_id=two.job_id))

    assert usage_by_category(project=project.project)["campaigns"] == 30
    assert Email.objects.filter(campaign_id=one.pk).count() == 25
    assert Email.objects.filter(campaign_id=two.pk).count() == 5
    two.refresh_from_db()
    assert (two.total_recipients, two.not_sent_count, two.not_sent_reason) == (5, 20, REASON)

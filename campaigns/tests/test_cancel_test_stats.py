"""Cancel, test messages and figures: the counters kept from delivery, tracking, provider feedback and the hosted
pages equal a recount from the email rows after a real run."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns.models import Campaign, CampaignStatus
from campaigns.sending import campaigns_finish_sending
from campaigns.stats import campaign_stats_recount
from contacts.models import Contact
from messaging.feedback.tests.feedback import feedback_settings_fixture, generic_post  # noqa: F401 - fixture
from messaging.models import Email

BASE = "http://localhost:8000"


def cancel(client, campaign_id):
    return client.post(f"/campaigns/{campaign_id}/cancel")


def test_cancel_a_scheduled_campaign_goes_back_to_draft(secret_client, send, create_campaign, audience):
    campaign = create_campaign()
    send(campaign["id"], {"scheduledFor": (timezone.now() + timedelta(days=1)).isoformat()})
    response = cancel(secret_client, campaign["id"])
    assert response.status_code == 200, response.json()
    assert response.json()["message"] == "Campaign cancelled successfully"
    data = response.json()["data"]
    assert (data["status"], data["scheduledFor"], data["sentAt"]) == ("DRAFT", None, None)


def test_cancel_before_anything_was_handed_over_removes_the_emails(secret_client, create_campaign, project, audience):
    campaign = create_campaign()
    Campaign.objects.filter(pk=campaign["id"]).update(status=CampaignStatus.SENDING, sent_at=timezone.now())
    Email.objects.create(
        project=project.project, campaign_id=campaign["id"], contact=audience["ann"], to_email="ann@example.test",
        from_email="news@alice.test", subject="S",
    )  # fmt: skip
    assert cancel(secret_client, campaign["id"]).json()["data"]["status"] == "DRAFT"
    assert not Email.objects.exists()


def test_cancel_while_sending_stops_the_unsent(secret_client, create_campaign, project, audience):
    campaign = create_campaign()
    Campaign.objects.filter(pk=campaign["id"]).update(status=CampaignStatus.SENDING, sent_at=timezone.now())
    for name, status in (("ann", "SENT"), ("ben", "QUEUED"), ("fay", "QUEUED")):
        Email.objects.create(
            project=project.project, campaign_id=campaign["id"], contact=audience[name], status=status,
            to_email=f"{name}@example.test", from_email="news@alice.test", subject="S",
        )  # fmt: skip
    data = cancel(secret_client, campaign["id"]).json()["data"]
    assert data["status"] == "CANCELLED" and data["sentAt"] is not None
    assert sorted(Email.objects.values_list("status", flat=True)) == ["CANCELLED", "CANCELLED", "SENT"]
    assert campaigns_finish_sending() == 0  # a cancelled campaign stays cancelled


@pytest.mark.parametrize("status", [CampaignStatus.DRAFT, CampaignStatus.SENT, CampaignStatus.CANCELLED])
def test_cancel_only_scheduled_or_sending(secret_client, create_campaign, status):
    campaign = create_campaign()
    Campaign.objects.filter(pk=campaign["id"]).update(status=status)
    response = cancel(secret_client, campaign["id"])
    assert response.status_code == 409 and response.json()["error"]["code"] == "CAMPAIGN_NOT_EDITABLE"
    assert Campaign.objects.get(pk=campaign["id"]).status == status


def test_a_cancel_stops_the_fan_out_between_batches(committed, secret_client, create_campaign, project, settings):
    """A fan-out whose campaign was cancelled and sent again: the old job stops, the new one does the work."""
    from accounts.models import Job
    from campaigns.sending import campaign_fan_out

    settings.CAMPAIGN_BATCH_SIZE = 2
    Contact.objects.bulk_create(Contact(project=project.project, email=f"c{i}@example.test") for i in range(5))
    campaign = create_campaign()
    stale = Job.objects.create(project=project.project, type="campaign_send", params={"campaignId": campaign["id"]})
    Campaign.objects.filter(pk=campaign["id"]).update(status=CampaignStatus.DRAFT, job=None)
    committed(lambda: campaign_fan_out(job_id=stale.pk))
    assert not Email.objects.exists()
    assert Job.objects.get(pk=stale.pk).result == {"queued": 0, "stopped": True}


def test_test_email_goes_to_a_member_only(secret_client, create_campaign, project, smtp_sink, committed):
    campaign = create_campaign()
    Contact.objects.create(project=project.project, email="alice@example.test", data={"firstName": "Alice"})
    refused = secret_client.post(f"/campaigns/{campaign['id']}/test", {"email": "stranger@example.test"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "FORBIDDEN"
    assert refused.json()["error"]["message"] == "Test emails can only be sent to project members"

    response = committed(
        lambda: secret_client.post(f"/campaigns/{campaign['id']}/test", {"email": "Alice@Example.test"}, format="json")
    )
    assert response.status_code == 200, response.json()
    assert response.json() == {"success": True, "message": "Test email sent to alice@example.test"}
    [received] = smtp_sink.received
    assert received.message["Subject"] == "[TEST] Hello Alice" and "Hi Alice" in received.html
    assert "/o/" not in received.html  # untracked
    email = Email.objects.get()
    assert (email.source, email.campaign_id) == ("test", None)
    assert secret_client.get(f"/campaigns/{campaign['id']}/stats").json()["sentCount"] == 0


def test_test_email_bad_input(secret_client, other_client, create_campaign):
    campaign = create_campaign()
    response = secret_client.post(f"/campaigns/{campaign['id']}/test", {"email": "nope"}, format="json")
    assert response.status_code == 422 and response.json()["error"]["errors"][0]["field"] == "email"
    response = other_client.post(f"/campaigns/{campaign['id']}/test", {"email": "bob@example.test"}, format="json")
    assert response.status_code == 404
    assert not Email.objects.exists()


def _tracked(html: str) -> tuple[list[str], list[str], str]:
    clicks = re.findall(rf"""href=["']{BASE}(/c/[^"']+)["']""", html)
    opens = re.findall(rf'<img src="{BASE}(/o/[^"]+)"', html)
    [unsubscribe] = re.findall(rf'href="{BASE}(/unsubscribe/[^"]+)"', html)
    return clicks, opens, unsubscribe


def test_counters_kept_from_events_equal_a_recount(
    secret_client,
    client,
    send,
    create_campaign,
    project,
    smtp_sink,
    feedback_settings,
    django_capture_on_commit_callbacks,
):
    Contact.objects.bulk_create(Contact(project=project.project, email=f"r{i}@example.test") for i in range(6))
    campaign = create_campaign(body='<p>Hi</p><a href="https://alice.test/offer">Offer</a>')
    send(campaign["id"])
    assert len(smtp_sink.received) == 6
    by_address = {r.rcpt_tos[0]: r.html for r in smtp_sink.received}
    email_of = {e.to_email: str(e.id) for e in Email.objects.filter(campaign_id=campaign["id"])}

    # What follows records its events after each commit, as in production.
    with django_capture_on_commit_callbacks(execute=True):
        # Opens (twice for one: counted once) and a click, through the real tracking routes.
        for address in ("r0@example.test", "r0@example.test", "r1@example.test"):
            assert client.get(_tracked(by_address[address])[1][0]).status_code == 200
        assert client.get(_tracked(by_address["r1@example.test"])[0][0]).status_code == 302
        # Provider feedback: deliveries, a hard bounce, a soft bounce (not a bounce of the row), a complaint.
        events = [{"id": f"d{i}", "type": "delivered", "emailId": email_of[f"r{i}@example.test"]} for i in range(4)]
        events += [
            {"id": "b1", "type": "bounced", "emailId": email_of["r4@example.test"], "bounceType": "hard"},
            {"id": "b2", "type": "bounced", "emailId": email_of["r5@example.test"], "bounceType": "soft"},
            {"id": "c1", "type": "complained", "emailId": email_of["r3@example.test"]},
        ]
        assert generic_post(client, events).status_code == 200
        # An unsubscribe through the campaign's link, twice (the second changes nothing).
        unsubscribe = _tracked(by_address["r2@example.test"])[2]
        assert client.post(unsubscribe).status_code == 200
        client.post(unsubscribe)

    stats = secret_client.get(f"/campaigns/{campaign['id']}/stats").json()
    assert stats == {
        "totalRecipients": 6,
        "sentCount": 6,
        "deliveredCount": 4,
        "openedCount": 2,
        "clickedCount": 1,
        "bouncedCount": 1,
        "complainedCount": 1,
        "unsubscribedCount": 1,
        "notSentCount": 0,
        "notSentReason": "",
        "openRate": 33.33,
        "clickRate": 16.67,
        "bounceRate": 16.67,
        "deliveryRate": 66.67,
    }
    row = Campaign.objects.get(pk=campaign["id"])
    assert campaign_stats_recount(campaign=row) == {
        counter: getattr(row, counter) for counter in campaign_stats_recount(campaign=row)
    }
    data = secret_client.get(f"/campaigns/{campaign['id']}").json()["data"]
    assert (data["openedCount"], data["unsubscribedCount"]) == (2, 1)


def test_stats_of_a_draft_and_of_another_project(secret_client, other_client, create_campaign, audience):
    campaign = create_campaign()
    stats = secret_client.get(f"/campaigns/{campaign['id']}/stats").json()
    assert stats["totalRecipients"] == 3 and stats["sentCount"] == 0 and stats["openRate"] == 0.0
    assert other_client.get(f"/campaigns/{campaign['id']}/stats").status_code == 404


def test_an_opt_out_through_the_same_email_counts_once(
    project, create_campaign, audience, django_capture_on_commit_callbacks
):
    from contacts.services import contact_subscription_set

    campaign = create_campaign()
    email = Email.objects.create(
        project=project.project, campaign_id=campaign["id"], contact=audience["ann"], to_email="ann@example.test",
        from_email="news@alice.test", subject="S", status="SENT",
    )  # fmt: skip
    ann = audience["ann"]
    for subscribed in (False, True, False):
        with django_capture_on_commit_callbacks(execute=True):
            contact_subscription_set(contact=ann, subscribed=subscribed, source="page", email_id=str(email.id))
    row = Campaign.objects.get(pk=campaign["id"])
    assert row.unsubscribed_count == 1 == campaign_stats_recount(campaign=row)["unsubscribed_count"]

"""What campaigns add to the activity feed, /activity/upcoming and the analytics, through the API."""

from datetime import timedelta

from django.utils import timezone

from campaigns.models import Campaign
from campaigns.sending import campaigns_finish_sending
from core.time import iso


def test_feed_upcoming_and_analytics(secret_client, other_client, send, create_campaign, audience, smtp_sink):
    launch = create_campaign(name="Launch", subject="Big news")
    later = create_campaign(name="Later")
    when = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    assert send(later["id"], {"scheduledFor": when.isoformat()}).status_code == 200
    assert send(launch["id"]).status_code == 200
    campaigns_finish_sending()

    feed = secret_client.get("/activity", {"types": "campaign.scheduled,campaign.sent"}).json()
    items = [(item["type"], item["metadata"]["name"]) for item in feed["data"]]
    assert items == [("campaign.sent", "Launch"), ("campaign.scheduled", "Later")]
    # The scheduled campaign counts its audience as the campaign itself shows it (its emails are not made yet).
    scheduled = feed["data"][1]["metadata"]
    assert (
        scheduled["totalRecipients"]
        == secret_client.get(f"/campaigns/{later['id']}").json()["data"]["totalRecipients"]
        == 3
    )
    sent = feed["data"][0]
    assert sent["id"] == launch["id"] and sent["contactId"] is None
    assert sent["metadata"]["status"] == "SENT" and sent["metadata"]["totalRecipients"] == 3
    everything = [item["type"] for item in secret_client.get("/activity", {"limit": 100}).json()["data"]]
    assert "campaign.sent" in everything and "email.sent" in everything
    types = secret_client.get("/activity/types").json()["types"]
    assert {"campaign.scheduled", "campaign.sent"} <= set(types)

    upcoming = secret_client.get("/activity/upcoming").json()["activities"]
    assert upcoming == [{"type": "campaign", "id": later["id"], "name": "Later", "scheduledFor": iso(when)}]
    assert secret_client.get("/activity/upcoming", {"daysAhead": 1}).json() == {"activities": []}

    top = secret_client.get("/analytics/top-campaigns").json()
    assert [(row["id"], row["name"], row["subject"], row["sentCount"]) for row in top] == [
        (launch["id"], "Launch", "Big news", 3)
    ]
    stats = secret_client.get("/analytics/campaign-stats").json()
    assert (stats["total"], stats["active"], stats["completed"]) == (2, 1, 1)

    # Another project sees none of it.
    assert other_client.get("/activity", {"types": "campaign.sent,campaign.scheduled"}).json()["data"] == []
    assert other_client.get("/activity/upcoming").json() == {"activities": []}
    assert other_client.get("/analytics/top-campaigns").json() == []
    assert other_client.get("/analytics/campaign-stats").json()["total"] == 0
    assert Campaign.objects.count() == 2

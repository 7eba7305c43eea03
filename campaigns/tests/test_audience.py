"""Audiences: ALL, SEGMENT (static and dynamic) and FILTERED, always within the base rule (subscribed, not snoozed,
not suppressed; TRANSACTIONAL ignores subscription and snooze), counted live while the campaign is a plan."""

import pytest

from campaigns.models import Campaign, CampaignStatus
from campaigns.selectors import campaign_audience
from campaigns.tests.conftest import PRO
from segments.models import Segment, SegmentMembership, SegmentType


def recipients(campaign: dict) -> set[str]:
    return set(campaign_audience(campaign=Campaign.objects.get(pk=campaign["id"])).values_list("email", flat=True))


def test_all(create_campaign, audience):
    campaign = create_campaign()
    assert campaign["totalRecipients"] == 3
    assert recipients(campaign) == {"ann@example.test", "ben@example.test", "fay@example.test"}


def test_transactional_ignores_subscription_and_snooze_but_not_suppression(create_campaign, audience):
    campaign = create_campaign(type="TRANSACTIONAL")
    assert recipients(campaign) == {f"{name}@example.test" for name in ("ann", "ben", "fay", "uma", "sam")}
    assert campaign["totalRecipients"] == 5


def test_filtered(create_campaign, audience):
    campaign = create_campaign(audienceType="FILTERED", audienceCondition=PRO)
    assert recipients(campaign) == {"ann@example.test", "ben@example.test"}
    assert campaign["totalRecipients"] == 2


def test_dynamic_segment_is_evaluated_live(secret_client, project, create_campaign, audience):
    segment = Segment.objects.create(project=project.project, name="Pro", condition=PRO)
    campaign = create_campaign(audienceType="SEGMENT", segmentId=str(segment.id))
    assert campaign["totalRecipients"] == 2
    audience["fay"].data = {"plan": "pro"}
    audience["fay"].save()
    assert secret_client.get(f"/campaigns/{campaign['id']}").json()["data"]["totalRecipients"] == 3


def test_static_segment_members(project, create_campaign, audience):
    segment = Segment.objects.create(project=project.project, name="VIP", type=SegmentType.STATIC)
    for name in ("ann", "uma", "sue"):
        SegmentMembership.objects.create(segment=segment, contact=audience[name])
    campaign = create_campaign(audienceType="SEGMENT", segmentId=str(segment.id))
    assert recipients(campaign) == {"ann@example.test"}


def test_sent_campaign_keeps_its_stored_count(secret_client, create_campaign, audience):
    campaign = create_campaign()
    Campaign.objects.filter(pk=campaign["id"]).update(status=CampaignStatus.SENT, total_recipients=7)
    assert secret_client.get(f"/campaigns/{campaign['id']}").json()["data"]["totalRecipients"] == 7


@pytest.mark.parametrize(
    ("status", "blocked"),
    [
        (CampaignStatus.DRAFT, True),
        (CampaignStatus.SCHEDULED, True),
        (CampaignStatus.SENDING, True),
        (CampaignStatus.SENT, False),
        (CampaignStatus.CANCELLED, False),
    ],
)
def test_segment_delete_is_409_while_a_campaign_needs_it(secret_client, project, create_campaign, status, blocked):
    segment = Segment.objects.create(project=project.project, name="Pro", condition=PRO)
    campaign = create_campaign(name="Launch", audienceType="SEGMENT", segmentId=str(segment.id))
    Campaign.objects.filter(pk=campaign["id"]).update(status=status)
    response = secret_client.delete(f"/segments/{segment.id}")
    if blocked:
        assert response.status_code == 409
        assert '"Launch"' in response.json()["error"]["message"]
        assert Segment.objects.filter(pk=segment.id).exists()
    else:
        assert response.status_code == 204
        assert secret_client.get(f"/campaigns/{campaign['id']}").json()["data"]["segment"] is None


def test_field_usage_lists_campaigns(secret_client, create_campaign):
    campaign = create_campaign(name="Pro offer", audienceType="FILTERED", audienceCondition=PRO)
    create_campaign(name="Everyone")
    usage = secret_client.get("/contacts/fields/data.plan/usage").json()
    assert usage["usedIn"]["campaigns"] == [{"id": campaign["id"], "name": "Pro offer"}]
    assert usage["canDelete"] is False

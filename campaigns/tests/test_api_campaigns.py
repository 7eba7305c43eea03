"""The campaigns CRUD endpoints through HTTP: shapes, validation shared with templates, audiences, and isolation."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from campaigns.models import Campaign, CampaignStatus
from campaigns.tests.conftest import PRO, campaign_body
from segments.models import Segment

KEYS = {
    "id", "name", "description", "subject", "body", "from", "fromName", "replyTo", "type", "projectId", "createdAt",
    "updatedAt", "status", "audienceType", "audienceCondition", "segmentId", "segment", "scheduledFor",
    "totalRecipients", "sentCount", "deliveredCount", "openedCount", "clickedCount", "bouncedCount",
    "complainedCount", "unsubscribedCount", "notSentCount", "notSentReason", "sentAt",
}  # fmt: skip


def test_create_is_a_wrapped_draft(secret_client, project):
    response = secret_client.post("/campaigns", campaign_body(description="Monthly"), format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert set(body) == {"success", "data"} and body["success"] is True
    data = body["data"]
    assert set(data) == KEYS
    assert data["status"] == "DRAFT" and data["type"] == "MARKETING" and data["audienceType"] == "ALL"
    assert data["segment"] is None and data["segmentId"] is None and data["scheduledFor"] is None
    assert data["projectId"] == str(project.id) and data["description"] == "Monthly"
    assert Campaign.objects.get(pk=data["id"]).name == "November news"


def test_get_put_and_list(secret_client, create_campaign):
    campaign = create_campaign()
    got = secret_client.get(f"/campaigns/{campaign['id']}").json()
    assert got == {"success": True, "data": campaign}
    replaced = secret_client.put(
        f"/campaigns/{campaign['id']}", campaign_body(name="Renamed", type="HEADLESS"), format="json"
    )
    assert replaced.status_code == 200, replaced.json()
    assert replaced.json()["data"]["name"] == "Renamed" and replaced.json()["data"]["type"] == "HEADLESS"
    # PUT replaces: a field left out goes back to its default.
    again = secret_client.put(f"/campaigns/{campaign['id']}", campaign_body(), format="json").json()["data"]
    assert again["type"] == "MARKETING" and again["name"] == "November news"


def test_list_filters_sorts_and_pages(secret_client, create_campaign, other_client):
    first = create_campaign(name="Alpha")
    create_campaign(name="Beta", subject="Spring sale")
    create_campaign(name="Gamma", **{"from": "promo@alice.test"})
    Campaign.objects.filter(pk=first["id"]).update(status=CampaignStatus.SENT)
    other_client.post("/campaigns", campaign_body(name="Theirs", **{"from": "a@bob.test"}), format="json")

    page = secret_client.get("/campaigns", {"pageSize": 2}).json()
    assert list(page) == ["data", "page", "pageSize", "total", "totalPages"]
    assert (page["total"], page["page"], page["pageSize"], page["totalPages"]) == (3, 1, 2, 2)
    assert [c["name"] for c in page["data"]] == ["Gamma", "Beta"]
    by_name = secret_client.get("/campaigns", {"sort": "name", "dir": "asc"}).json()
    assert [c["name"] for c in by_name["data"]] == ["Alpha", "Beta", "Gamma"]
    assert [c["name"] for c in secret_client.get("/campaigns", {"status": "SENT"}).json()["data"]] == ["Alpha"]
    assert [c["name"] for c in secret_client.get("/campaigns", {"search": "SPRING"}).json()["data"]] == ["Beta"]
    assert [c["name"] for c in secret_client.get("/campaigns", {"search": "promo@"}).json()["data"]] == ["Gamma"]
    assert secret_client.get("/campaigns", {"pageSize": 500}).json()["pageSize"] == 100


def test_unknown_status_filter_is_400(secret_client):
    response = secret_client.get("/campaigns", {"status": "DONE"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "BAD_REQUEST" and "status" in response.json()["error"]["message"]


def test_list_counts_each_distinct_audience_once(secret_client, create_campaign, audience):
    """The live `totalRecipients` of a page of plans: one audience count per distinct audience, not per row."""
    for index in range(5):
        create_campaign(name=f"C{index}", audienceType="FILTERED", audienceCondition=PRO)
    create_campaign(name="All")
    with CaptureQueriesContext(connection) as queries:
        data = secret_client.get("/campaigns").json()["data"]
    assert {c["name"]: c["totalRecipients"] for c in data} == {"All": 3, **{f"C{i}": 2 for i in range(5)}}
    assert len([q for q in queries.captured_queries if "contacts_contact" in q["sql"]]) == 2
    assert len(queries.captured_queries) <= 8


LONG = "x" * 256


@pytest.mark.parametrize(
    ("change", "status", "field"),
    [
        ({"name": None}, 422, "name"),
        ({"name": ""}, 422, "name"),
        ({"name": LONG}, 422, "name"),
        ({"subject": "Hi\nthere"}, 422, "subject"),
        ({"subject": "x" * 999}, 422, "subject"),
        ({"body": "<p>{% if x %}</p>"}, 422, "body"),
        ({"body": ""}, 422, "body"),
        ({"fromName": "Alice\r\nBcc: x@y.test"}, 422, "fromName"),
        ({"from": None}, 422, "from"),
        ({"from": "news@unverified.test"}, 403, None),
        ({"replyTo": "not an address"}, 422, "replyTo"),
        ({"type": "BULK"}, 422, "type"),
        ({"audienceType": "EVERYONE"}, 422, "audienceType"),
        ({"audienceType": "SEGMENT"}, 422, "segmentId"),
        ({"audienceType": "SEGMENT", "segmentId": "nope"}, 422, "segmentId"),
        ({"audienceType": "SEGMENT", "segmentId": str(uuid.uuid4())}, 422, "segmentId"),
        ({"audienceType": "FILTERED"}, 422, "audienceCondition"),
        ({"audienceType": "FILTERED", "audienceCondition": {"logic": "XOR", "groups": []}}, 422, "audienceCondition"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(secret_client, create_campaign, change, status, field):
    existing = create_campaign()
    body = {key: value for key, value in campaign_body(**change).items() if value is not None}
    for response in (
        secret_client.post("/campaigns", body, format="json"),
        secret_client.put(f"/campaigns/{existing['id']}", body, format="json"),
    ):
        assert response.status_code == status, response.json()
        error = response.json()["error"]
        if field:
            assert error["errors"][0]["field"].split(".")[0] == field, error
        else:
            assert error["code"] == "DOMAIN_NOT_VERIFIED"
    assert Campaign.objects.count() == 1
    assert secret_client.get(f"/campaigns/{existing['id']}").json()["data"] == existing


def test_syntax_error_names_line_and_column(secret_client):
    response = secret_client.post("/campaigns", campaign_body(body="<p>\n{% unknown %}</p>"), format="json")
    assert response.status_code == 422
    assert "line 2, column" in response.json()["error"]["errors"][0]["message"]


def test_condition_errors_are_under_audience_condition(secret_client):
    bad = {"logic": "AND", "groups": [{"filters": [{"field": "data.plan", "operator": "sameAs", "value": 1}]}]}
    response = secret_client.post(
        "/campaigns", campaign_body(audienceType="FILTERED", audienceCondition=bad), format="json"
    )
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0]["field"] == "audienceCondition.groups.0.filters.0.operator"


def test_another_projects_segment_is_refused(secret_client, other_project):
    theirs = Segment.objects.create(project=other_project.project, name="Theirs", condition=PRO)
    response = secret_client.post(
        "/campaigns", campaign_body(audienceType="SEGMENT", segmentId=str(theirs.id)), format="json"
    )
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0]["field"] == "segmentId"
    assert not Campaign.objects.exists()


def test_segment_is_embedded_and_other_audience_fields_dropped(secret_client, project):
    segment = Segment.objects.create(project=project.project, name="Pro users", condition=PRO)
    response = secret_client.post(
        "/campaigns",
        campaign_body(audienceType="SEGMENT", segmentId=str(segment.id), audienceCondition=PRO),
        format="json",
    )
    data = response.json()["data"]
    assert data["segment"] == {"id": str(segment.id), "name": "Pro users"}
    assert data["segmentId"] == str(segment.id) and data["audienceCondition"] is None


def test_edits_only_while_draft_or_scheduled(secret_client, create_campaign):
    campaign = create_campaign()
    for status in (CampaignStatus.SENDING, CampaignStatus.SENT, CampaignStatus.CANCELLED):
        Campaign.objects.filter(pk=campaign["id"]).update(status=status)
        response = secret_client.put(f"/campaigns/{campaign['id']}", campaign_body(name="New"), format="json")
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "CAMPAIGN_NOT_EDITABLE"
    assert Campaign.objects.get(pk=campaign["id"]).name == "November news"


def test_put_keeps_a_scheduled_campaign_scheduled(secret_client, create_campaign):
    from django.utils import timezone

    campaign = create_campaign()
    when = timezone.now() + timezone.timedelta(days=1)
    Campaign.objects.filter(pk=campaign["id"]).update(status=CampaignStatus.SCHEDULED, scheduled_for=when)
    data = secret_client.put(f"/campaigns/{campaign['id']}", campaign_body(name="New"), format="json").json()["data"]
    assert data["status"] == "SCHEDULED" and data["name"] == "New"
    assert Campaign.objects.get(pk=campaign["id"]).scheduled_for == when


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (CampaignStatus.DRAFT, 200),
        (CampaignStatus.SENT, 200),
        (CampaignStatus.CANCELLED, 200),
        (CampaignStatus.SCHEDULED, 409),
        (CampaignStatus.SENDING, 409),
    ],
)
def test_delete(secret_client, create_campaign, status, code):
    campaign = create_campaign()
    Campaign.objects.filter(pk=campaign["id"]).update(status=status)
    response = secret_client.delete(f"/campaigns/{campaign['id']}")
    assert response.status_code == code, response.json()
    if code == 200:
        assert response.json() == {"success": True, "message": "Campaign deleted successfully"}
        assert not Campaign.objects.exists()
    else:
        assert response.json()["error"]["code"] == "CAMPAIGN_ACTIVE"
        assert Campaign.objects.exists()


def test_duplicate(secret_client, project, create_campaign):
    segment = Segment.objects.create(project=project.project, name="Pro", condition=PRO)
    campaign = create_campaign(audienceType="SEGMENT", segmentId=str(segment.id))
    Campaign.objects.filter(pk=campaign["id"]).update(status=CampaignStatus.SENT, sent_count=5)
    response = secret_client.post(f"/campaigns/{campaign['id']}/duplicate")
    assert response.status_code == 201
    copy = response.json()["data"]
    assert copy["id"] != campaign["id"] and copy["name"] == "November news (Copy)"
    assert copy["status"] == "DRAFT" and copy["sentCount"] == 0 and copy["scheduledFor"] is None
    assert copy["segment"] == {"id": str(segment.id), "name": "Pro"} and copy["body"] == campaign["body"]


ROUTES = [
    ("get", ""),
    ("put", ""),
    ("delete", ""),
    ("post", "/duplicate"),
    ("post", "/send"),
    ("post", "/cancel"),
    ("post", "/test"),
    ("get", "/stats"),
]


@pytest.mark.parametrize(("method", "suffix"), ROUTES)
def test_another_projects_campaign_is_404(secret_client, other_client, create_campaign, method, suffix):
    campaign = create_campaign()
    body = campaign_body(**{"from": "a@bob.test"})
    for target in (campaign["id"], "not-a-uuid", str(uuid.uuid4())):
        response = getattr(other_client, method)(f"/campaigns/{target}{suffix}", body, format="json")
        assert response.status_code == 404, response.json()
        assert response.json()["error"]["code"] == "CAMPAIGN_NOT_FOUND"
    assert secret_client.get(f"/campaigns/{campaign['id']}").json()["data"] == campaign
    assert Campaign.objects.count() == 1

"""Admin: the list with status, audience and figures, a read-only page with the rendered preview, and actions that
call the services."""

from campaigns.models import Campaign
from campaigns.tests.conftest import PRO
from segments.models import Segment


def test_list_preview_and_duplicate(admin_client, project, create_campaign):
    segment = Segment.objects.create(project=project.project, name="Pro users", condition=PRO)
    campaign = create_campaign(
        subject="Hi {{ firstName | default: 'friend' }}",
        body="<p>Hello <b>{{ firstName | default: 'friend' }}</b></p>",
        audienceType="SEGMENT",
        segmentId=str(segment.id),
    )
    listing = admin_client.get("/admin/campaigns/campaign/").content.decode()
    assert "November news" in listing and "SEGMENT: Pro users" in listing
    page = admin_client.get(f"/admin/campaigns/campaign/{campaign['id']}/change/").content.decode()
    assert "Hi friend" in page and "&lt;b&gt;friend&lt;/b&gt;" in page  # the body, inside the sandboxed frame

    response = admin_client.post(
        "/admin/campaigns/campaign/", {"action": "duplicate", "_selected_action": [campaign["id"]]}, follow=True
    )
    assert response.status_code == 200
    assert Campaign.objects.filter(name="November news (Copy)", status="DRAFT").count() == 1


def test_send_now_action_calls_the_service(admin_client, create_campaign, audience, django_capture_on_commit_callbacks):
    campaign = create_campaign()
    empty = create_campaign(name="Nobody", audienceType="FILTERED", audienceCondition={
        "logic": "AND", "groups": [{"filters": [{"field": "data.plan", "operator": "equals", "value": "none"}]}]
    })  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/admin/campaigns/campaign/",
            {"action": "send_now", "_selected_action": [campaign["id"], empty["id"]]},
            follow=True,
        )
    page = response.content.decode()
    assert "Started 1 campaign(s)." in page and "Nobody: Validation failed" in page
    assert Campaign.objects.get(pk=campaign["id"]).status == "SENDING"
    assert Campaign.objects.get(pk=empty["id"]).status == "DRAFT"


def test_cancel_and_recount_actions(admin_client, create_campaign):
    from django.utils import timezone

    campaign = create_campaign()
    Campaign.objects.filter(pk=campaign["id"]).update(
        status="SCHEDULED", scheduled_for=timezone.now() + timezone.timedelta(days=1), sent_count=9
    )
    for action in ("cancel", "recount"):
        response = admin_client.post(
            "/admin/campaigns/campaign/", {"action": action, "_selected_action": [campaign["id"]]}, follow=True
        )
        assert response.status_code == 200
    row = Campaign.objects.get(pk=campaign["id"])
    assert (row.status, row.scheduled_for, row.sent_count) == ("DRAFT", None, 0)

"""Admin: list and change pages render, the condition reads as words, static members show inline, recompute."""

from contacts.models import Contact, Event
from segments.models import Segment
from segments.tests.test_api_segments import create

CONDITION = {
    "logic": "OR",
    "groups": [
        {
            "filters": [
                {"field": "data.plan", "operator": "equals", "value": "pro"},
                {"field": "event.buy", "operator": "triggeredWithin", "value": 3, "unit": "days"},
            ]
        },
        {"filters": [{"field": "subscribed", "operator": "equals", "value": True}]},
    ],
}


def test_admin_pages_and_recompute(admin_client, secret_client, project):
    Contact.objects.create(project=project.project, email="ann@example.test", data={"plan": "pro"})
    dynamic = create(secret_client, name="Mixed", condition=CONDITION, trackMembership=True).json()
    static = secret_client.post("/segments", {"name": "VIP", "type": "STATIC"}, format="json").json()
    secret_client.post(f"/segments/{static['id']}/members", {"emails": ["ann@example.test"]}, format="json")

    assert admin_client.get("/admin/segments/segment/").status_code == 200
    page = admin_client.get(f"/admin/segments/segment/{dynamic['id']}/change/").content.decode()
    assert "((data.plan equals &quot;pro&quot; AND event.buy triggeredWithin 3 days) OR subscribed equals true)" in page
    page = admin_client.get(f"/admin/segments/segment/{static['id']}/change/").content.decode()
    assert "ann@example.test" in page

    response = admin_client.post(
        "/admin/segments/segment/", {"action": "recompute_now", "_selected_action": [dynamic["id"]]}, follow=True
    )
    assert response.status_code == 200
    assert Event.objects.filter(name="segment.mixed.entry").count() == 1
    assert Segment.objects.get(pk=dynamic["id"]).refreshed_at is not None

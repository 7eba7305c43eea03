"""The incremental path: a contact's events and subscription changes re-evaluate its tracked segments at once."""

from contacts.models import Contact, Event
from segments.models import Segment, SegmentMembership
from segments.services import segment_contact_reevaluate
from segments.tests.test_api_segments import create

BUYERS = {"logic": "AND", "groups": [{"filters": [{"field": "event.purchase", "operator": "triggered"}]}]}
SUBSCRIBED = {"logic": "AND", "groups": [{"filters": [{"field": "subscribed", "operator": "equals", "value": True}]}]}


def names():
    return sorted(Event.objects.filter(name__startswith="segment.").values_list("name", flat=True))


def test_tracking_an_event_enters_the_segment(secret_client, project, django_capture_on_commit_callbacks):
    segment = create(secret_client, name="Buyers", condition=BUYERS, trackMembership=True).json()
    create(secret_client, name="Untracked buyers", condition=BUYERS)
    with django_capture_on_commit_callbacks(execute=True):
        response = secret_client.post(
            "/events/track", {"email": "ann@example.test", "event": "purchase"}, format="json"
        )
    assert response.status_code in (200, 201), response.json()
    assert names() == ["segment.buyers.entry"]
    assert SegmentMembership.objects.filter(segment_id=segment["id"], exited_at=None).count() == 1
    assert Segment.objects.get(pk=segment["id"]).member_count == 1


def test_unsubscribing_exits_the_segment(secret_client, project, django_capture_on_commit_callbacks):
    contact = Contact.objects.create(project=project.project, email="ann@example.test")
    segment = create(secret_client, name="Subscribers", condition=SUBSCRIBED, trackMembership=True).json()
    secret_client.post(f"/segments/{segment['id']}/compute")
    with django_capture_on_commit_callbacks(execute=True):
        response = secret_client.patch(f"/contacts/{contact.id}", {"subscribed": False}, format="json")
    assert response.status_code == 200
    assert names() == ["segment.subscribers.entry", "segment.subscribers.exit"]
    assert Segment.objects.get(pk=segment["id"]).member_count == 0
    # Nothing changed since: a second evaluation moves nothing.
    assert segment_contact_reevaluate(contact_id=contact.id) == 0


def test_other_projects_segments_are_not_touched(secret_client, other_client, django_capture_on_commit_callbacks):
    theirs = create(other_client, name="Theirs", condition=BUYERS, trackMembership=True).json()
    with django_capture_on_commit_callbacks(execute=True):
        secret_client.post("/events/track", {"email": "ann@example.test", "event": "purchase"}, format="json")
    assert names() == []
    assert not SegmentMembership.objects.filter(segment_id=theirs["id"]).exists()


PLAN_PRO = {"logic": "AND", "groups": [{"filters": [{"field": "data.plan", "operator": "equals", "value": "pro"}]}]}


def test_a_data_change_enters_and_leaves_the_segment(secret_client, project, django_capture_on_commit_callbacks):
    segment = create(secret_client, name="Pro plan", condition=PLAN_PRO, trackMembership=True).json()
    with django_capture_on_commit_callbacks(execute=True):
        created = secret_client.post("/contacts", {"email": "ann@example.test", "data": {"plan": "pro"}}, format="json")
    assert names() == ["segment.pro-plan.entry"]
    with django_capture_on_commit_callbacks(execute=True):
        secret_client.patch(f"/contacts/{created.json()['id']}", {"data": {"plan": "free"}}, format="json")
    assert names() == ["segment.pro-plan.entry", "segment.pro-plan.exit"]
    assert Segment.objects.get(pk=segment["id"]).member_count == 0

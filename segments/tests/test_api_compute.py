"""Tracked membership: compute writes entries and exits and records segment.<slug>.entry/exit events."""

import pytest

from contacts.models import Contact, Event
from segments.models import SegmentMembership
from segments.tests.test_api_segments import PRO, create


@pytest.fixture
def tracked(secret_client, project):
    for name in ("ann", "bob"):
        Contact.objects.create(project=project.project, email=f"{name}@example.test", data={"plan": "pro"})
    Contact.objects.create(project=project.project, email="cat@example.test", data={"plan": "free"})
    return create(secret_client, name="Pro Users!", trackMembership=True).json()


def compute(client, segment):
    return client.post(f"/segments/{segment['id']}/compute")


def events(name):
    return sorted(Event.objects.filter(name=name).values_list("contact__email", flat=True))


def test_compute_enters_and_exits_with_events(secret_client, project, tracked):
    response = compute(secret_client, tracked)
    assert response.status_code == 200
    assert response.json() == {"added": 2, "removed": 0, "total": 2}
    assert events("segment.pro-users.entry") == ["ann@example.test", "bob@example.test"]
    event = Event.objects.filter(name="segment.pro-users.entry").first()
    assert event.data == {"segmentId": tracked["id"], "segmentName": "Pro Users!"}
    assert event.project_id == project.id

    # Nothing changed: nothing moves.
    assert compute(secret_client, tracked).json() == {"added": 0, "removed": 0, "total": 2}

    Contact.objects.filter(email="ann@example.test").update(data={"plan": "free"})
    Contact.objects.filter(email="cat@example.test").update(data={"plan": "pro"})
    assert compute(secret_client, tracked).json() == {"added": 1, "removed": 1, "total": 2}
    assert events("segment.pro-users.exit") == ["ann@example.test"]
    assert events("segment.pro-users.entry") == ["ann@example.test", "bob@example.test", "cat@example.test"]

    # Re-entry re-opens the membership row.
    Contact.objects.filter(email="ann@example.test").update(data={"plan": "pro"})
    assert compute(secret_client, tracked).json() == {"added": 1, "removed": 0, "total": 3}
    assert SegmentMembership.objects.filter(segment_id=tracked["id"]).count() == 3
    assert secret_client.get(f"/segments/{tracked['id']}").json()["memberCount"] == 3


def test_refresh_writes_no_membership_and_no_events(secret_client, tracked):
    assert secret_client.post(f"/segments/{tracked['id']}/refresh").json() == {"memberCount": 2}
    assert not SegmentMembership.objects.exists() and not Event.objects.exists()


def test_compute_needs_a_tracked_dynamic_segment(secret_client):
    untracked = create(secret_client).json()
    static = secret_client.post("/segments", {"name": "S", "type": "STATIC"}, format="json").json()
    for segment in (untracked, static):
        response = compute(secret_client, segment)
        assert response.status_code == 422
        assert response.json()["error"]["errors"][0]["field"] == "trackMembership"


def test_compute_of_another_projects_segment_is_404(other_client, tracked):
    assert compute(other_client, tracked).status_code == 404
    assert not Event.objects.exists()


def test_slug_falls_back_to_the_id(secret_client, project):
    Contact.objects.create(project=project.project, email="ann@example.test", data={"plan": "pro"})
    segment = secret_client.post(
        "/segments", {"name": "!!!", "condition": PRO, "trackMembership": True}, format="json"
    ).json()
    compute(secret_client, segment)
    assert events(f"segment.{segment['id']}.entry") == ["ann@example.test"]


def test_compute_works_in_chunks(secret_client, project, monkeypatch):
    monkeypatch.setattr("contacts.services.EVENTS_CHUNK", 2)
    for index in range(5):
        Contact.objects.create(project=project.project, email=f"c{index}@example.test", data={"plan": "pro"})
    segment = create(secret_client, name="Chunked", trackMembership=True).json()
    assert compute(secret_client, segment).json() == {"added": 5, "removed": 0, "total": 5}
    assert len(events("segment.chunked.entry")) == 5
    Contact.objects.update(data={})
    assert compute(secret_client, segment).json() == {"added": 0, "removed": 5, "total": 0}
    assert len(events("segment.chunked.exit")) == 5

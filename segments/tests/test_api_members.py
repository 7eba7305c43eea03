"""Static segment members: add by email (createMissing, subscribed, normalised), remove, list, count, isolation."""

import pytest

from contacts.models import Contact
from segments.models import SegmentMembership
from segments.tests.test_api_segments import create


@pytest.fixture
def vip(secret_client, project):
    Contact.objects.create(project=project.project, email="ann@example.test")
    Contact.objects.create(project=project.project, email="bob@example.test")
    return secret_client.post("/segments", {"name": "VIP", "type": "STATIC"}, format="json").json()


def add(client, segment, **body):
    return client.post(f"/segments/{segment['id']}/members", body, format="json")


def test_add_members_reports_added_created_and_not_found(secret_client, project, vip):
    response = add(secret_client, vip, emails=[" ANN@example.test", "ann@example.test", "new@example.test"])
    assert response.status_code == 200, response.json()
    assert response.json() == {"added": 1, "created": 0, "notFound": ["new@example.test"]}
    response = add(
        secret_client, vip, emails=["ann@example.test", "new@example.test"], createMissing=True, subscribed=False
    )
    assert response.json() == {"added": 1, "created": 1, "notFound": []}
    assert Contact.objects.get(project=project.project, email="new@example.test").subscribed is False
    assert secret_client.get(f"/segments/{vip['id']}").json()["memberCount"] == 2
    members = secret_client.get(f"/segments/{vip['id']}/contacts").json()
    assert {m["email"] for m in members["data"]} == {"ann@example.test", "new@example.test"} and members["total"] == 2


def test_remove_and_re_add(secret_client, vip):
    add(secret_client, vip, emails=["ann@example.test", "bob@example.test"])
    response = secret_client.delete(
        f"/segments/{vip['id']}/members", {"emails": ["ANN@example.test", "zed@example.test"]}, format="json"
    )
    assert response.status_code == 200 and response.json() == {"removed": 1}
    assert secret_client.get(f"/segments/{vip['id']}").json()["memberCount"] == 1
    assert add(secret_client, vip, emails=["ann@example.test"]).json()["added"] == 1
    assert SegmentMembership.objects.filter(segment_id=vip["id"], exited_at=None).count() == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"emails": []}, "emails"),
        ({"emails": ["nope"]}, "emails.0"),
        ({"emails": ["a@b.test"] * 501}, "emails"),
        ({}, "emails"),
        ({"emails": ["a@b.test"], "createMissing": "yes"}, "createMissing"),
    ],
)
def test_bad_member_input_is_422(secret_client, vip, body, field):
    response = add(secret_client, vip, **body)
    assert response.status_code == 422
    assert field in [e["field"] for e in response.json()["error"]["errors"]]


def test_members_only_on_static_segments(secret_client, vip):
    dynamic = create(secret_client).json()
    response = add(secret_client, dynamic, emails=["ann@example.test"])
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0]["field"] == "type"


def test_other_project_cannot_touch_members(secret_client, other_client, other_project, vip):
    Contact.objects.create(project=other_project.project, email="ann@example.test")
    assert add(other_client, vip, emails=["ann@example.test"]).status_code == 404
    assert (
        other_client.delete(
            f"/segments/{vip['id']}/members", {"emails": ["ann@example.test"]}, format="json"
        ).status_code
        == 404
    )
    theirs = other_client.post("/segments", {"name": "T", "type": "STATIC"}, format="json").json()
    # Their segment only ever gets their contact, whatever the email.
    assert add(other_client, theirs, emails=["ann@example.test", "bob@example.test"]).json()["notFound"] == [
        "bob@example.test"
    ]
    assert not SegmentMembership.objects.filter(segment_id=vip["id"]).exists()

"""`segment.<id>` filters: membership in SQL and Python, unknown and foreign segments, cycles, and delete."""

import pytest
from django.utils import timezone

from contacts.models import Contact
from segments.conditions import condition_matches, condition_q
from segments.tests.test_api_segments import create


def member_of(segment_id, operator="memberOfSegment", *more):
    return {"logic": "AND", "groups": [{"filters": [{"field": f"segment.{segment_id}", "operator": operator}, *more]}]}


@pytest.fixture
def pro(secret_client, project, other_project):
    Contact.objects.create(project=project.project, email="pro-sub@example.test", data={"plan": "pro"})
    Contact.objects.create(
        project=project.project, email="pro-unsub@example.test", data={"plan": "pro"}, subscribed=False
    )
    Contact.objects.create(project=project.project, email="free@example.test", data={"plan": "free"})
    Contact.objects.create(project=other_project.project, email="pro@example.test", data={"plan": "pro"})
    return create(secret_client).json()


@pytest.mark.parametrize(
    ("operator", "expected"),
    [("memberOfSegment", {"pro-sub@example.test"}), ("notMemberOfSegment", {"free@example.test"})],
)
def test_membership_filters(secret_client, project, pro, operator, expected):
    condition = member_of(pro["id"], operator, {"field": "subscribed", "operator": "equals", "value": True})
    response = secret_client.post("/segments", {"name": "Nested", "condition": condition}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["memberCount"] == len(expected)
    members = secret_client.get(f"/segments/{response.json()['id']}/contacts").json()["data"]
    assert {m["email"] for m in members} == expected
    contacts = Contact.objects.filter(project=project.project)
    now = timezone.now()
    assert {c.email for c in contacts if condition_matches(condition, contact=c, now=now)} == expected
    assert set(contacts.filter(condition_q(condition, now=now)).values_list("email", flat=True)) == expected


def test_unknown_and_foreign_segments_are_422(secret_client, other_client, pro):
    theirs = create(other_client).json()
    for ref in ("00000000-0000-4000-8000-000000000000", "nope", theirs["id"]):
        response = secret_client.post("/segments", {"name": "X", "condition": member_of(ref)}, format="json")
        assert response.status_code == 422
        error = response.json()["error"]["errors"][0]
        assert error["field"] == "condition.groups.0.filters.0.field"
        assert "Unknown segment" in error["message"]


def test_self_reference_and_cycles_are_422(secret_client, pro):
    response = secret_client.patch(f"/segments/{pro['id']}", {"condition": member_of(pro["id"])}, format="json")
    assert response.status_code == 422
    assert "cycle" in response.json()["error"]["errors"][0]["message"]
    b = secret_client.post("/segments", {"name": "B", "condition": member_of(pro["id"])}, format="json").json()
    nested = {"logic": "OR", "groups": [{"filters": [], "conditions": member_of(b["id"])}]}
    response = secret_client.patch(f"/segments/{pro['id']}", {"condition": nested}, format="json")
    assert response.status_code == 422
    error = response.json()["error"]["errors"][0]
    assert error["field"] == "condition.groups.0.conditions.groups.0.filters.0.field"
    assert f"{pro['id']} -> {b['id']} -> {pro['id']}" in error["message"]


def test_a_referenced_segment_cannot_be_deleted(secret_client, pro):
    secret_client.post("/segments", {"name": "Uses pro", "condition": member_of(pro["id"])}, format="json")
    response = secret_client.delete(f"/segments/{pro['id']}")
    assert response.status_code == 409
    assert '"Uses pro"' in response.json()["error"]["message"]


def test_static_segment_reference_uses_stored_members(secret_client, project, pro):
    static = secret_client.post("/segments", {"name": "VIP", "type": "STATIC"}, format="json").json()
    secret_client.post(f"/segments/{static['id']}/members", {"emails": ["free@example.test"]}, format="json")
    condition = member_of(static["id"])
    response = secret_client.post("/segments", {"name": "X", "condition": condition}, format="json")
    assert response.status_code == 201 and response.json()["memberCount"] == 1
    contacts = Contact.objects.filter(project=project.project)
    now = timezone.now()
    assert {c.email for c in contacts if condition_matches(condition, contact=c, now=now)} == {"free@example.test"}

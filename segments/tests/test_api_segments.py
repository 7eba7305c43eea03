"""Segments endpoints through HTTP: status, body and database state, and isolation between projects."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from contacts.models import Contact
from core.usage import usage_finders
from segments.models import Segment

PRO = {"logic": "AND", "groups": [{"filters": [{"field": "data.plan", "operator": "equals", "value": "pro"}]}]}
KEYS = [
    "id",
    "name",
    "description",
    "type",
    "condition",
    "trackMembership",
    "memberCount",
    "projectId",
    "createdAt",
    "updatedAt",
]


@pytest.fixture
def contacts(project, other_project):
    for index in range(3):
        Contact.objects.create(project=project.project, email=f"p{index}@example.test", data={"plan": "pro"})
    Contact.objects.create(project=project.project, email="free@example.test", data={"plan": "free"})
    Contact.objects.create(project=other_project.project, email="x@example.test", data={"plan": "pro"})


def create(client, **body):
    return client.post("/segments", {"name": "Pro", "condition": PRO, **body}, format="json")


def test_create_dynamic_segment_counts_members(secret_client, project, contacts):
    response = create(secret_client, description="Paying")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert list(body) == KEYS
    assert body["type"] == "DYNAMIC" and body["memberCount"] == 3 and body["trackMembership"] is False
    assert body["projectId"] == str(project.id) and body["condition"] == PRO
    assert Segment.objects.get(pk=body["id"]).member_count == 3


@pytest.mark.parametrize("condition", [None, "x", [], 1])
def test_dynamic_segment_without_object_condition_is_bare_400(secret_client, condition):
    body = {"name": "A"} if condition is None else {"name": "A", "condition": condition}
    response = secret_client.post("/segments", body, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["error"]
    assert not Segment.objects.exists()


def test_static_segment(secret_client):
    response = secret_client.post("/segments", {"name": "VIP", "type": "STATIC"}, format="json")
    assert response.status_code == 201
    assert response.json()["condition"] is None and response.json()["memberCount"] == 0


def _within(unit) -> dict:
    filter_ = {"field": "data.seen", "operator": "within", "value": 3, "unit": unit}
    return {"condition": {"logic": "AND", "groups": [{"filters": [filter_]}]}}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "STATIC", "condition": PRO}, "condition"),
        ({"name": "x" * 101}, "name"),
        ({"description": "x" * 501}, "description"),
        ({"type": "SMART"}, "type"),
        ({"trackMembership": "yes"}, "trackMembership"),
        ({"condition": {"logic": "XOR", "groups": PRO["groups"]}}, "condition.logic"),
        (
            {"condition": {"logic": "AND", "groups": [{"filters": [{"field": "data.", "operator": "exists"}]}]}},
            "condition.groups.0.filters.0.field",
        ),
        # A unit of the wrong JSON type (an unhashable one once made the validator fail with a 500).
        *[(_within(unit), "condition.groups.0.filters.0.unit") for unit in ([], {}, ["days"])],
    ],
)
def test_create_rejects_bad_input_with_422(secret_client, body, field):
    response = create(secret_client, **body)
    assert response.status_code == 422, response.json()
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert field in [e["field"] for e in error["errors"]]
    assert not Segment.objects.exists()


def test_list_is_a_bare_array_newest_first(secret_client, other_client):
    first = create(secret_client, name="First").json()
    second = create(secret_client, name="Second").json()
    create(other_client, name="Theirs")
    response = secret_client.get("/segments")
    assert response.status_code == 200
    assert [s["id"] for s in response.json()] == [second["id"], first["id"]]


def test_get_patch_and_recount(secret_client, contacts):
    segment = create(secret_client).json()
    assert secret_client.get(f"/segments/{segment['id']}").json() == segment
    free = {"logic": "AND", "groups": [{"filters": [{"field": "data.plan", "operator": "equals", "value": "free"}]}]}
    response = secret_client.patch(
        f"/segments/{segment['id']}", {"name": "Free", "condition": free, "trackMembership": True}, format="json"
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["name"], body["memberCount"], body["trackMembership"], body["condition"]) == ("Free", 1, True, free)
    assert body["updatedAt"] >= segment["updatedAt"]


def test_patch_validates(secret_client):
    segment = create(secret_client).json()
    bad = {"logic": "AND", "groups": []}
    response = secret_client.patch(f"/segments/{segment['id']}", {"condition": bad}, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0]["field"] == "condition.groups"
    static = secret_client.post("/segments", {"name": "VIP", "type": "STATIC"}, format="json").json()
    response = secret_client.patch(f"/segments/{static['id']}", {"condition": PRO}, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0]["field"] == "condition"
    assert Segment.objects.get(pk=segment["id"]).condition == PRO


def test_delete(secret_client):
    segment = create(secret_client).json()
    response = secret_client.delete(f"/segments/{segment['id']}")
    assert response.status_code == 204 and response.content == b""
    assert not Segment.objects.exists()


def test_delete_is_409_when_a_blocker_says_so(secret_client, monkeypatch):
    segment = create(secret_client).json()

    def blocker(project, found):
        return [{"id": "c1", "name": "Launch", "status": "DRAFT"}] if str(found.id) == segment["id"] else []

    monkeypatch.setitem(usage_finders.implementations, ("segment", "campaigns"), blocker)
    response = secret_client.delete(f"/segments/{segment['id']}")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "CONFLICT"
    assert "Launch" in response.json()["error"]["message"]
    assert Segment.objects.filter(pk=segment["id"]).exists()


def test_members_page_is_live(secret_client, project, contacts):
    segment = create(secret_client).json()
    Contact.objects.create(project=project.project, email="late@example.test", data={"plan": "pro"})
    response = secret_client.get(f"/segments/{segment['id']}/contacts?pageSize=2")
    assert response.status_code == 200
    body = response.json()
    assert list(body) == ["data", "total", "page", "pageSize", "totalPages"]
    assert body["data"][0]["email"] == "late@example.test"
    page2 = secret_client.get(f"/segments/{segment['id']}/contacts?pageSize=2&page=2").json()
    emails = {c["email"] for c in body["data"] + page2["data"]}
    assert emails == {"late@example.test", "p0@example.test", "p1@example.test", "p2@example.test"}
    assert secret_client.get(f"/segments/{segment['id']}/contacts?pageSize=500").json()["pageSize"] == 100


def test_members_page_total(secret_client, project, contacts):
    """Rows are live; the total is exact when the page shows the end of the list, else the memberCount counted
    within SEGMENT_REFRESH_MINUTES, else counted again (and cached)."""
    segment = create(secret_client).json()
    Contact.objects.create(project=project.project, email="late@example.test", data={"plan": "pro"})
    url = f"/segments/{segment['id']}/contacts?pageSize=2"

    def page(number):
        body = secret_client.get(f"{url}&page={number}").json()
        return body["total"], body["totalPages"], len(body["data"])

    assert page(1) == (3, 2, 2)  # more rows follow: the count taken on create, still fresh
    assert page(2) == (4, 2, 2)  # the end of the list is on this page: exact
    assert secret_client.get(f"{url}&pageSize=10").json()["total"] == 4
    assert page(3) == (3, 2, 0)  # past the end, and the cached count agrees with that
    Segment.objects.filter(pk=segment["id"]).update(counted_at=timezone.now() - timedelta(minutes=6))
    assert page(1) == (4, 2, 2)  # stale: counted again
    assert secret_client.get(f"/segments/{segment['id']}").json()["memberCount"] == 4
    Contact.objects.filter(email="late@example.test").delete()
    Contact.objects.filter(email="p0@example.test").delete()
    assert page(2) == (2, 1, 0)  # the cached 4 cannot be right when page 2 is empty: counted again


def test_refresh_updates_the_cached_count(secret_client, project, contacts):
    segment = create(secret_client).json()
    Contact.objects.create(project=project.project, email="late@example.test", data={"plan": "pro"})
    assert secret_client.get(f"/segments/{segment['id']}").json()["memberCount"] == 3
    response = secret_client.post(f"/segments/{segment['id']}/refresh")
    assert response.status_code == 200
    assert response.json() == {"memberCount": 4}
    assert secret_client.get(f"/segments/{segment['id']}").json()["memberCount"] == 4


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("get", "", None),
        ("patch", "", {"name": "Mine"}),
        ("delete", "", None),
        ("get", "/contacts", None),
        ("post", "/refresh", None),
    ],
)
def test_other_project_gets_404(secret_client, other_client, method, suffix, body):
    segment = create(secret_client).json()
    for client, segment_id in (
        (other_client, segment["id"]),
        (secret_client, str(uuid.uuid4())),
        (secret_client, "nope"),
    ):
        response = getattr(client, method)(f"/segments/{segment_id}{suffix}", body, format="json")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "SEGMENT_NOT_FOUND"
    assert Segment.objects.get(pk=segment["id"]).name == "Pro"

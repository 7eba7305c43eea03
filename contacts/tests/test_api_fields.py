import pytest

from contacts.models import Contact
from contacts.tests.conftest import error_of
from core.usage import usage_finders

pytestmark = pytest.mark.django_db


@pytest.fixture
def audience(make_contact):
    make_contact("a@example.com", data={"plan": "pro", "seats": 5, "vip": True, "born": "1990-05-01", "tags": ["x"]})
    make_contact(
        "b@example.com", data={"plan": "pro", "seats": 2, "address": {"city": "Oslo"}, "seen": "2024-01-02T03:04:05Z"}
    )
    make_contact("c@example.com", data={"plan": "free", "seats": "many", "vip": None})
    make_contact("d@example.com", data={})


def test_fields_lists_standard_and_custom_with_types_and_coverage(secret_client, audience):
    response = secret_client.get("/contacts/fields")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == len(body["fields"])
    assert body["fields"] == [
        {"field": "createdAt", "type": "date", "coverage": 100},
        {"field": "data.address", "type": "object", "coverage": 25},
        {"field": "data.born", "type": "date", "coverage": 25},
        {"field": "data.plan", "type": "string", "coverage": 75},
        {"field": "data.seats", "type": "number", "coverage": 75},
        {"field": "data.seen", "type": "date", "coverage": 25},
        {"field": "data.tags", "type": "array", "coverage": 25},
        {"field": "data.vip", "type": "boolean", "coverage": 25},
        {"field": "email", "type": "string", "coverage": 100},
        {"field": "subscribed", "type": "boolean", "coverage": 100},
        {"field": "updatedAt", "type": "date", "coverage": 100},
    ]


def test_fields_of_an_empty_project_are_the_standard_ones(secret_client):
    assert [f["field"] for f in secret_client.get("/contacts/fields").json()["fields"]] == [
        "createdAt",
        "email",
        "subscribed",
        "updatedAt",
    ]


def test_fields_other_project_sees_only_its_own(other_client, audience):
    assert other_client.get("/contacts/fields").json()["count"] == 4


@pytest.mark.parametrize("field", ["data.plan", "plan"])
def test_field_values_most_frequent_first(secret_client, audience, field):
    assert secret_client.get(f"/contacts/fields/{field}/values").json() == {
        "field": field,
        "values": [{"value": "pro", "count": 2}, {"value": "free", "count": 1}],
        "count": 2,
    }


def test_field_values_keep_json_types_and_limit(secret_client, audience):
    body = secret_client.get("/contacts/fields/data.seats/values?limit=2").json()
    assert body["count"] == 3 and len(body["values"]) == 2
    assert {v["value"] for v in secret_client.get("/contacts/fields/data.seats/values").json()["values"]} == {
        5,
        2,
        "many",
    }
    assert secret_client.get("/contacts/fields/data.vip/values").json()["values"] == [{"value": True, "count": 1}]


def test_field_values_of_a_standard_field(secret_client, audience):
    assert secret_client.get("/contacts/fields/subscribed/values").json()["values"] == [{"value": True, "count": 4}]


@pytest.mark.parametrize(("query", "status"), [("limit=abc", 422), ("limit=-5", 422), ("limit=999", 200)])
def test_field_values_limit(secret_client, audience, query, status):
    assert secret_client.get(f"/contacts/fields/data.plan/values?{query}").status_code == status


def test_field_values_other_project_sees_nothing(other_client, audience):
    assert other_client.get("/contacts/fields/data.plan/values").json()["values"] == []


def test_usage_and_delete_of_an_unused_field(secret_client, audience, other_project, make_contact):
    theirs = make_contact("z@example.com", data={"plan": "gold"}, persona=other_project)
    assert secret_client.get("/contacts/fields/data.plan/usage").json() == {
        "field": "data.plan",
        "usedIn": {"segments": [], "campaigns": [], "workflows": [], "templates": []},
        "contactCount": 3,
        "canDelete": True,
    }
    response = secret_client.delete("/contacts/fields/data.plan")
    assert response.status_code == 204 and response.content == b""
    mine = Contact.objects.filter(project__in=[c.project for c in Contact.objects.filter(email="a@example.com")])
    assert all("plan" not in c.data for c in mine)
    assert Contact.objects.get(email="a@example.com").data == {
        "seats": 5,
        "vip": True,
        "born": "1990-05-01",
        "tags": ["x"],
    }
    theirs.refresh_from_db()
    assert theirs.data == {"plan": "gold"}


def test_field_in_use_cannot_be_deleted(secret_client, audience, monkeypatch):
    monkeypatch.setitem(
        usage_finders.implementations,
        ("field", "segments"),
        lambda project, field: [{"id": "s1", "name": "Pros"}] if field == "data.plan" else [],
    )
    body = secret_client.get("/contacts/fields/data.plan/usage").json()
    assert body["usedIn"]["segments"] == [{"id": "s1", "name": "Pros"}] and body["canDelete"] is False
    response = secret_client.delete("/contacts/fields/data.plan")
    assert response.status_code == 409
    assert Contact.objects.filter(data__has_key="plan").count() == 3


@pytest.mark.parametrize("field", ["email", "subscribed", "createdAt", "plan"])
def test_only_custom_fields_can_be_deleted(secret_client, audience, field):
    response = secret_client.delete(f"/contacts/fields/{field}")
    assert response.status_code == 422
    assert error_of(response)["errors"][0]["field"] == "field"


def test_standard_field_usage_cannot_be_deleted(secret_client, audience):
    body = secret_client.get("/contacts/fields/email/usage").json()
    assert body["contactCount"] == 4 and body["canDelete"] is False


def test_registering_an_unknown_usage_kind_fails():
    with pytest.raises(ValueError):
        usage_finders.register(lambda project, field: [], key=("field", "nope"))


def test_other_project_cannot_see_or_delete_our_fields(other_client, audience):
    assert other_client.get("/contacts/fields/data.plan/usage").json()["contactCount"] == 0
    assert other_client.delete("/contacts/fields/data.plan").status_code == 204
    assert Contact.objects.filter(data__has_key="plan").count() == 3

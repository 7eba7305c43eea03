from datetime import timedelta

import pytest
from django.utils import timezone

from contacts.models import Event
from contacts.tests.conftest import error_of
from core.usage import usage_finders

pytestmark = pytest.mark.django_db


@pytest.fixture
def timeline(make_contact):
    ada, bob = make_contact("ada@example.com"), make_contact("bob@example.com")
    now = timezone.now()
    rows = [
        (ada, "signup", 40),
        (ada, "login", 3),
        (bob, "login", 2),
        (ada, "login", 1),
        (bob, "purchase", 0),
    ]
    for contact, name, days_ago in rows:
        Event.objects.create(
            project=contact.project,
            contact=contact,
            name=name,
            data={"d": days_ago},
            created_at=now - timedelta(days=days_ago, minutes=days_ago),
        )
    return ada, bob


def test_list_is_newest_first(secret_client, timeline, django_assert_max_num_queries):
    with django_assert_max_num_queries(4):
        response = secret_client.get("/events")
    body = response.json()
    assert body["total"] == 5 and body["hasMore"] is False
    assert [e["name"] for e in body["data"]] == ["purchase", "login", "login", "login", "signup"]
    first = body["data"][0]
    assert set(first) == {"id", "name", "contactId", "emailId", "data", "createdAt"}
    assert first["contactId"] == str(timeline[1].id) and first["emailId"] is None and first["data"] == {"d": 0}


@pytest.mark.parametrize(("query", "count"), [("name=login", 3), ("name=nothing", 0), ("name=signup", 1)])
def test_list_filters_by_name(secret_client, timeline, query, count):
    assert secret_client.get(f"/events?{query}").json()["total"] == count


def test_list_filters_by_contact(secret_client, timeline):
    ada, _ = timeline
    body = secret_client.get(f"/events?contactId={ada.id}").json()
    assert body["total"] == 3


def test_list_cursor_pages(secret_client, timeline):
    first = secret_client.get("/events?limit=2").json()
    second = secret_client.get(f"/events?limit=2&cursor={first['cursor']}").json()
    third = secret_client.get(f"/events?limit=2&cursor={second['cursor']}").json()
    ids = [e["id"] for page in (first, second, third) for e in page["data"]]
    assert len(set(ids)) == 5 and third["hasMore"] is False and second["total"] == 0


@pytest.mark.parametrize(
    ("query", "status"), [("limit=abc", 422), ("limit=-5", 422), ("cursor=xyz", 400), ("contactId=zz", 422)]
)
def test_list_bad_parameters(secret_client, timeline, query, status):
    assert secret_client.get(f"/events?{query}").status_code == status


def test_events_of_a_contact(secret_client, timeline, django_assert_max_num_queries):
    ada, _ = timeline
    with django_assert_max_num_queries(5):
        body = secret_client.get(f"/events/contact/{ada.id}").json()
    assert [e["name"] for e in body["data"]] == ["login", "login", "signup"]


def test_stats_counts_per_name_over_the_period(secret_client, timeline):
    assert secret_client.get("/events/stats").json() == [
        {"name": "login", "count": 3, "uniqueContacts": 2},
        {"name": "purchase", "count": 1, "uniqueContacts": 1},
    ]
    assert {s["name"] for s in secret_client.get("/events/stats?days=60").json()} == {"login", "purchase", "signup"}
    assert secret_client.get("/events/stats?days=abc").status_code == 422


def test_names(secret_client, timeline, other_project, make_contact):
    assert secret_client.get("/events/names").json() == {"eventNames": ["login", "purchase", "signup"]}
    # Each name once however many events carry it, sorted, and none of another project's.
    ada, _ = timeline
    moments = [timezone.now() - timedelta(days=days) for days in range(0, 400, 40)]
    Event.objects.bulk_create(
        Event(project=ada.project, contact=ada, name=name, created_at=moment)
        for moment in moments
        for name in ("email.sent", "a", "login", "zz top")
    )
    theirs = make_contact("cy@example.com", persona=other_project)
    Event.objects.create(project=theirs.project, contact=theirs, name="b")
    assert secret_client.get("/events/names").json() == {
        "eventNames": ["a", "email.sent", "login", "purchase", "signup", "zz top"]
    }


def test_usage_and_delete_by_name(secret_client, timeline):
    assert secret_client.get("/events/login/usage").json() == {
        "usedInSegments": [],
        "usedInWorkflows": [],
        "totalCount": 3,
        "uniqueContacts": 2,
        "canDelete": True,
    }
    response = secret_client.delete("/events/login")
    assert response.status_code == 200
    assert response.json() == {"deletedCount": 3}
    assert not Event.objects.filter(name="login").exists() and Event.objects.count() == 2
    assert secret_client.delete("/events/login").json() == {"deletedCount": 0}


def test_event_in_use_cannot_be_deleted(secret_client, timeline, monkeypatch):
    monkeypatch.setitem(
        usage_finders.implementations,
        ("event", "workflows"),
        lambda project, name: [{"id": "w1", "name": "Welcome"}] if name == "login" else [],
    )
    body = secret_client.get("/events/login/usage").json()
    assert body["usedInWorkflows"] == [{"id": "w1", "name": "Welcome"}] and body["canDelete"] is False
    response = secret_client.delete("/events/login")
    assert response.status_code == 409
    assert Event.objects.filter(name="login").count() == 3


def test_other_project_sees_none_of_the_events(other_client, timeline):
    ada, _ = timeline
    assert other_client.get("/events").json()["total"] == 0
    assert other_client.get("/events/stats").json() == []
    assert other_client.get("/events/names").json() == {"eventNames": []}
    assert other_client.get("/events/login/usage").json()["totalCount"] == 0
    assert error_of(other_client.get(f"/events/contact/{ada.id}"))["code"] == "CONTACT_NOT_FOUND"
    assert other_client.get(f"/events?contactId={ada.id}").json()["data"] == []
    assert other_client.delete("/events/login").json() == {"deletedCount": 0}
    assert Event.objects.count() == 5


@pytest.mark.parametrize("contact_id", ["nope", "00000000-0000-4000-8000-000000000000"])
def test_events_of_unknown_contact_is_404(secret_client, contact_id):
    assert error_of(secret_client.get(f"/events/contact/{contact_id}"))["code"] == "CONTACT_NOT_FOUND"

"""Concurrent /v1/track calls for one new address: one contact, every event kept, every data key merged. Both ways
(`track_client`): through the view and answered in front of Django."""

import pytest
from django.db import connection

from conftest import concurrently
from contacts.models import Contact, Event


@pytest.mark.django_db(transaction=True)
def test_concurrent_tracks_of_a_new_address_make_one_contact_and_keep_every_event(project, track_client):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL")

    def track(n):
        body = {"email": "Race@Example.test", "event": "signup", "data": {f"k{n}": n, "plan": "pro"}}
        return track_client.post("/v1/track", body, format="json").status_code

    assert set(concurrently(track, range(16))) == {200}
    contact = Contact.objects.get(project=project.project)
    assert contact.email == "race@example.test" and contact.subscribed is True
    assert contact.data == {"plan": "pro", **{f"k{n}": n for n in range(16)}}
    assert Event.objects.filter(contact=contact, name="signup").count() == 16


@pytest.mark.django_db(transaction=True)
def test_a_track_that_unsubscribes_records_its_event_and_the_subscription_event(track_client):
    client = track_client
    client.post("/v1/track", {"email": "ann@example.test", "event": "a"}, format="json")
    response = client.post("/v1/track", {"email": "ann@example.test", "event": "b", "subscribed": False}, format="json")
    assert response.status_code == 200
    names = list(Event.objects.order_by("created_at", "name").values_list("name", flat=True))
    assert sorted(names) == ["a", "b", "contact.unsubscribed"]
    assert Contact.objects.get().subscribed is False

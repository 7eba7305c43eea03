"""`POST /v1/track` as gunicorn serves it: a successful request is answered in front of Django
(`accounts.http.fastroute`, from `TrackView`) exactly as the view would answer it, and every other request reaches the
view. Each test runs both ways (`track_client`); the first compares the two answers themselves."""

import pytest

from accounts.tenancy.services import project_disable, project_regenerate_keys
from config.tests.wsgi import assert_answered_alike
from contacts.models import Contact, Event
from core.time import iso

from .conftest import TrackClient, subscription_events

pytestmark = pytest.mark.django_db


def test_answers_as_the_view_does(project, other_project):
    served = TrackClient("served", project.keys.public_key)
    viewed = TrackClient("django", project.keys.public_key)
    first = served.call({"email": " Ann@Example.com ", "event": "signup", "data": {"plan": "pro"}})
    assert first.status_code == 200 and not first.by_django
    contact = Contact.objects.get(project=project.project)
    event = Event.objects.get(project=project.project)
    assert (
        first.body
        == (
            f'{{"success":true,"data":{{"contact":"{contact.id}","event":"{event.id}",'
            f'"timestamp":"{iso(event.created_at)}"}}}}'
        ).encode()
    )
    assert (contact.email, contact.subscribed, contact.data) == ("ann@example.com", True, {"plan": "pro"})
    assert (event.name, event.data) == ("signup", {"plan": "pro"})
    assert not Contact.objects.filter(project=other_project.project).exists()

    # The same request through the view (Django's test client never takes the fast path): the same headers with the
    # same values, the same body but for the new event's id and time; and the other way round.
    second = viewed.call({"email": "ann@example.com", "event": "signup"})
    assert second.status_code == 200
    assert_answered_alike(first, second)
    assert second.json()["data"]["contact"] == str(contact.id)
    assert_answered_alike(second, served.call({"email": "ann@example.com", "event": "signup"}))
    assert len(first.headers["X-Request-Id"]) == 36
    echoed = served.call({"email": "b@x.test", "event": "e"}, headers={"X-Request-Id": "trace-1234"})
    assert echoed.headers["X-Request-Id"] == "trace-1234"


def test_a_subscription_change_records_its_event(track_client, make_contact):
    contact = make_contact("ann@example.com", subscribed=True)
    assert track_client.call({"email": "ann@example.com", "event": "e", "subscribed": False}).status_code == 200
    contact.refresh_from_db()
    assert contact.subscribed is False and subscription_events(contact) == ["contact.unsubscribed"]


@pytest.mark.parametrize(
    "payload, status, code",
    [
        ({"event": "signup"}, 422, "VALIDATION_ERROR"),
        ({"email": "not-an-email", "event": "signup"}, 422, "VALIDATION_ERROR"),
        ({"email": "a@b.test", "event": "email.open"}, 422, "VALIDATION_ERROR"),
        ({"email": "a@b.test", "event": "x", "subscribed": "yes"}, 422, "VALIDATION_ERROR"),
        ({"email": "a@b.test", "event": "x", "data": [1]}, 422, "VALIDATION_ERROR"),
        (["not", "an", "object"], 400, "INVALID_REQUEST_BODY"),
    ],
)
def test_invalid_input_gets_the_views_envelope_and_writes_nothing(track_client, payload, status, code):
    answer = track_client.call(payload)
    assert answer.status_code == status and answer.json()["error"]["code"] == code
    assert not Contact.objects.exists() and not Event.objects.exists()


def test_wrong_keys_bad_json_and_disabled_projects_reach_the_view(track_client, project):
    payload = {"email": "a@b.test", "event": "x"}
    assert track_client.using(project.keys.secret_key).call(payload).json()["error"]["code"] == "INVALID_API_KEY"
    assert track_client.using("pk_" + "0" * 64).call(payload).json()["error"]["code"] == "UNAUTHORIZED"
    assert track_client.call(raw=b'{"email": ').status_code == 400
    project_disable(project=project.project, reason="Test")
    assert track_client.call(payload).json()["error"]["code"] == "PROJECT_DISABLED"
    assert not Event.objects.exists()


def test_the_rate_limit_counts_both_paths_alike(track_client, project, settings, one_rate_window):
    settings.API_RATE_LIMIT_PER_MINUTE = 5
    payload = {"email": "a@b.test", "event": "x"}
    # A request with the wrong key counts in that key's budget (the secret key's, not the public key's); one with a
    # bad body counts in the public key's, in the view.
    track_client.using(project.keys.secret_key).call(payload)
    track_client.call(raw=b"[")
    answers = [track_client.call(payload) for _ in range(5)]
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 429]
    assert [a.headers["RateLimit-Remaining"] for a in answers] == ["3", "2", "1", "0", "0"]
    assert Event.objects.count() == 4


def test_an_idempotency_key_is_honoured_by_the_view(track_client):
    payload = {"email": "a@b.test", "event": "x"}
    first = track_client.call(payload, headers={"Idempotency-Key": "order-1"})
    again = track_client.call(payload, headers={"Idempotency-Key": "order-1"})
    assert (first.status_code, again.status_code) == (200, 409)
    assert again.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED" and Event.objects.count() == 1


def test_web_pages_may_call_track_and_only_track(track_client, public_client, secret_client):
    origin = {"HTTP_ORIGIN": "https://shop.example"}
    preflight = public_client.options(
        "/v1/track",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type",
        **origin,
    )
    assert preflight.status_code == 200 and preflight["Access-Control-Allow-Origin"] == "*"
    assert {"authorization", "content-type"} <= set(preflight["Access-Control-Allow-Headers"].split(", "))
    assert "POST" in preflight["Access-Control-Allow-Methods"] and "Access-Control-Allow-Credentials" not in preflight

    # A browser's call goes through the view, which answers with the CORS headers; the page may read the ids.
    answer = track_client.call({"email": "a@b.test", "event": "x"}, headers={"Origin": "https://shop.example"})
    assert answer.status_code == 200 and answer.headers["Access-Control-Allow-Origin"] == "*"
    assert "X-Request-Id" in answer.headers["Access-Control-Expose-Headers"]
    assert Event.objects.count() == 1

    # Secret-key endpoints never answer another origin: the secret key does not belong in a web page.
    listed = secret_client.get("/contacts", **origin)
    assert listed.status_code == 200 and "Access-Control-Allow-Origin" not in listed
    refused = secret_client.options("/contacts", HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET", **origin)
    assert "Access-Control-Allow-Origin" not in refused


def test_calls_are_counted_once_and_a_rotated_key_fails_at_once(track_client, project, settings, one_rate_window):
    # With Redis (the PostgreSQL run), a cached key is looked up and counted in one round trip.
    settings.API_KEY_CACHE_SECONDS, settings.API_RATE_LIMIT_PER_MINUTE = 300, 10
    payload = {"email": "a@b.test", "event": "x"}
    answers = [track_client.call(payload) for _ in range(3)]
    assert [a.headers["RateLimit-Remaining"] for a in answers] == ["9", "8", "7"]
    new = project_regenerate_keys(project=project.project)
    assert track_client.call(payload).json()["error"]["code"] == "UNAUTHORIZED"
    assert track_client.using(new.public_key).call(payload).headers["RateLimit-Remaining"] == "6"
    assert track_client.using(new.public_key).call(payload).headers["RateLimit-Remaining"] == "5"
    assert Event.objects.count() == 5


def test_an_event_without_data_to_store_leaves_the_contact_as_it_is(track_client, make_contact, project, other_project):
    stored = make_contact("ann@example.com", subscribed=False, data={"plan": "pro"})
    twin = make_contact("ann@example.com", persona=other_project)
    answer = track_client.call(
        {"email": "Ann@Example.com", "event": "login", "data": {"ip": {"value": "192.0.2.1", "persistent": False}}}
    )
    assert answer.status_code == 200 and answer.json()["data"]["contact"] == str(stored.id)
    contact = Contact.objects.get(pk=stored.id)
    assert (contact.subscribed, contact.data, contact.updated_at) == (False, {"plan": "pro"}, stored.updated_at)
    event = Event.objects.get(project=project.project)
    assert (event.contact_id, event.name, event.data) == (stored.id, "login", {"ip": "192.0.2.1"})
    assert not Event.objects.filter(contact=twin).exists()

    new = track_client.call({"email": "bob@example.com", "event": "login"})
    assert new.status_code == 200
    bob = Contact.objects.get(project=project.project, email="bob@example.com")
    assert (str(bob.id), bob.subscribed, bob.data) == (new.json()["data"]["contact"], True, {})
    assert Event.objects.get(contact=bob).data == {}

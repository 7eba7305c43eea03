"""POST /v1/track (public key) and POST /events/track (secret key), and the data rules they apply. Every /v1/track
test runs twice (`track_client`): through Django's view and as gunicorn serves it, answered in front of Django when
it succeeds."""

import pytest

from accounts.models import IdempotencyRecord
from contacts.models import Contact, Event
from contacts.tests.conftest import error_of, subscription_events

pytestmark = pytest.mark.django_db


def track(client, path="/v1/track", **body):
    body.setdefault("email", "ada@example.com")
    body.setdefault("event", "signup")
    return client.post(path, body, format="json")


def test_track_creates_contact_and_event(track_client, project, run_on_commit, recorded):
    response = run_on_commit(lambda: track(track_client, data={"plan": "pro"}))
    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    contact, event = Contact.objects.get(), Event.objects.get()
    assert body["data"]["contact"] == str(contact.id)
    assert body["data"]["event"] == str(event.id)
    assert body["data"]["timestamp"].endswith("Z")
    assert contact.project_id == project.id and contact.subscribed is True and contact.data == {"plan": "pro"}
    assert (event.name, event.contact_id, event.data) == ("signup", contact.id, {"plan": "pro"})
    assert recorded["single"] == [("signup", "ada@example.com")]
    assert recorded["bulk"] == [[("signup", "ada@example.com")]]


def test_events_track_is_the_same_behind_the_secret_key(secret_client, public_client):
    assert track(secret_client, "/events/track").status_code == 200
    assert Event.objects.count() == 1
    assert error_of(track(public_client, "/events/track"))["code"] == "INVALID_API_KEY"


def test_v1_track_rejects_the_secret_key(track_client, project):
    response = track(track_client.using(project.keys.secret_key))
    assert response.status_code == 401
    assert error_of(response)["code"] == "INVALID_API_KEY"
    assert "public key" in error_of(response)["message"]
    assert not Contact.objects.exists()


def test_track_again_records_a_new_event_for_the_same_contact(track_client):
    track(track_client)
    track(track_client, email="ADA@example.com")
    assert Contact.objects.count() == 1 and Event.objects.count() == 2


@pytest.mark.parametrize(
    ("start", "given", "expected_state", "expected_events"),
    [
        (None, None, True, []),
        (None, False, False, []),
        (True, None, True, []),
        (False, None, False, []),
        (True, False, False, ["contact.unsubscribed"]),
        (False, True, True, ["contact.subscribed"]),
        (True, True, True, []),
    ],
)
def test_track_subscription_rules(track_client, make_contact, start, given, expected_state, expected_events):
    if start is not None:
        make_contact("ada@example.com", subscribed=start)
    body = {} if given is None else {"subscribed": given}
    assert track(track_client, **body).status_code == 200
    contact = Contact.objects.get()
    assert contact.subscribed is expected_state
    assert subscription_events(contact) == expected_events
    assert Event.objects.filter(name="signup").count() == 1


def test_track_data_rules(track_client, make_contact):
    make_contact("ada@example.com", data={"keep": 1, "gone": 2, "blank": "still here"})
    data = {
        "gone": None,
        "blank": "",
        "plan": "pro",
        "seats": 5,
        "vip": True,
        "address": {"city": "Paris"},
        "tags": ["a", "b"],
        "orderId": {"value": "o-1", "persistent": False},
        "kept": {"value": "k", "persistent": True},
        "id": "hijack",
        "svc_id": "x",
        "svc_email": "x",
        "email": "x@example.com",
        "unsubscribeUrl": "x",
        "subscribeUrl": "x",
        "manageUrl": "x",
    }
    assert track(track_client, data=data).status_code == 200
    contact = Contact.objects.get()
    assert contact.email == "ada@example.com"
    assert contact.data == {
        "keep": 1,
        "blank": "still here",
        "plan": "pro",
        "seats": 5,
        "vip": True,
        "address": {"city": "Paris"},
        "tags": ["a", "b"],
        "kept": "k",
    }
    event = Event.objects.get(name="signup")
    # The event keeps every value of the request, persistent or not (unwrapped), and no reserved key.
    assert event.data == {
        "plan": "pro",
        "seats": 5,
        "vip": True,
        "address": {"city": "Paris"},
        "tags": ["a", "b"],
        "orderId": "o-1",
        "kept": "k",
    }


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"event": ""}, "event", "too_small"),
        ({"event": "x" * 256}, "event", "too_big"),
        ({"event": 5}, "event", "invalid_type"),
        ({"event": None}, "event", "invalid_type"),
        ({"event": "email.open"}, "event", "reserved_event"),
        ({"event": "email.anything"}, "event", "reserved_event"),
        ({"event": "contact.subscribed"}, "event", "reserved_event"),
        ({"event": "contact.unsubscribed"}, "event", "reserved_event"),
        ({"event": "segment.vip-customers.entry"}, "event", "reserved_event"),
        ({"event": "segment.vip.exit"}, "event", "reserved_event"),
        ({"email": "nope"}, "email", "invalid_string"),
        ({"email": None}, "email", "invalid_type"),
        ({"data": "x"}, "data", "invalid_type"),
        ({"data": {"locale": True}}, "data.locale", "invalid_type"),
        ({"subscribed": "true"}, "subscribed", "invalid_type"),
    ],
)
def test_track_bad_input_is_422_and_writes_nothing(track_client, body, field, code):
    response = track(track_client, **body)
    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "VALIDATION_ERROR"
    assert (error["errors"][0]["field"], error["errors"][0]["code"]) == (field, code)
    assert not Contact.objects.exists() and not Event.objects.exists()


def test_reserved_event_message(track_client):
    error = error_of(track(track_client, event="email.open"))
    assert error["errors"][0]["message"] == (
        'Event name "email.open" is reserved for system use and cannot be manually tracked'
    )


@pytest.mark.parametrize("name", ["contact.created", "segment.vip", "emails.sent", "segment..entry", "x" * 255])
def test_names_near_reserved_are_allowed(track_client, name):
    assert track(track_client, event=name).status_code == 200


def test_idempotency_key_replay_is_409_and_records_once(track_client):
    first = track_client.post(
        "/v1/track", {"email": "a@example.com", "event": "paid"}, format="json", HTTP_IDEMPOTENCY_KEY="order-1"
    )
    assert first.status_code == 200
    again = track_client.post(
        "/v1/track", {"email": "a@example.com", "event": "paid"}, format="json", HTTP_IDEMPOTENCY_KEY="order-1"
    )
    assert again.status_code == 409
    error = error_of(again)
    assert error["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert error["details"]["originalRequest"] == "POST /v1/track"
    assert Event.objects.count() == 1


def test_idempotency_key_is_released_after_a_4xx(track_client):
    bad = track_client.post("/v1/track", {"email": "nope", "event": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert bad.status_code == 422
    assert not IdempotencyRecord.objects.exists()
    good = track_client.post(
        "/v1/track", {"email": "a@example.com", "event": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="k1"
    )
    assert good.status_code == 200


def test_track_with_another_projects_public_key_touches_only_that_project(track_client, other_project, make_contact):
    mine = make_contact("ada@example.com", data={"a": 1})
    response = track(track_client.using(other_project.keys.public_key), data={"a": 2})
    assert response.status_code == 200
    mine.refresh_from_db()
    assert mine.data == {"a": 1}
    assert Contact.objects.filter(project=other_project.project, data={"a": 2}).exists()

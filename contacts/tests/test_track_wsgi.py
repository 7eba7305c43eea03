"""`POST /v1/track` as gunicorn serves it: a successful request is answered in front of Django
(`config.api.fastroute`, from `TrackView`) exactly as the view would answer it, and every other request reaches the view."""

import json

import pytest

from accounts.services import project_disable, project_regenerate_keys
from config.tests.wsgi import wsgi_call
from contacts.models import Contact, Event
from core.time import iso

from .conftest import subscription_events

pytestmark = pytest.mark.django_db


def track(key: str, payload, *, headers: dict | None = None, raw: bytes | None = None):
    body = raw if raw is not None else json.dumps(payload).encode()
    return wsgi_call(
        "POST",
        "/v1/track",
        body=body,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json", **(headers or {})},
    )


def test_answers_as_the_view_does(project, other_project, public_client):
    served = track(project.keys.public_key, {"email": " Ann@Example.com ", "event": "signup", "data": {"plan": "pro"}})
    assert served.status == 200
    contact = Contact.objects.get(project=project.project)
    event = Event.objects.get(project=project.project)
    assert (
        served.body
        == (  # the answer built by TrackOutputSerializer, byte for byte what was built by hand
            f'{{"success":true,"data":{{"contact":"{contact.id}","event":"{event.id}",'
            f'"timestamp":"{iso(event.created_at)}"}}}}'
        ).encode()
    )
    assert (contact.email, contact.subscribed, contact.data) == ("ann@example.com", True, {"plan": "pro"})
    assert (event.name, event.data) == ("signup", {"plan": "pro"})
    assert not Contact.objects.filter(project=other_project.project).exists()

    # The same request through the view (Django's test client never takes the fast path) has the same headers.
    viewed = public_client.post("/v1/track", {"email": "ann@example.com", "event": "signup"}, format="json")
    assert viewed.status_code == 200 and set(viewed.json()) == {"success", "data"}
    assert set(served.headers) == {name for name in viewed.headers}
    assert served.headers["RateLimit-Remaining"] == str(int(viewed.headers["RateLimit-Remaining"]) + 1)
    assert len(served.headers["X-Request-Id"]) == 36
    assert (
        track(
            project.keys.public_key, {"email": "b@x.test", "event": "e"}, headers={"X-Request-Id": "trace-1234"}
        ).headers["X-Request-Id"]
        == "trace-1234"
    )


def test_a_subscription_change_records_its_event(project, make_contact):
    contact = make_contact("ann@example.com", subscribed=True)
    assert track(project.keys.public_key, {"email": "ann@example.com", "event": "e", "subscribed": False}).status == 200
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
def test_invalid_input_gets_the_views_envelope_and_writes_nothing(project, payload, status, code):
    answer = track(project.keys.public_key, payload)
    assert answer.status == status and answer.json()["error"]["code"] == code
    assert not Contact.objects.exists() and not Event.objects.exists()


def test_wrong_keys_bad_json_and_disabled_projects_reach_the_view(project):
    payload = {"email": "a@b.test", "event": "x"}
    assert track(project.keys.secret_key, payload).json()["error"]["code"] == "INVALID_API_KEY"
    assert track("pk_" + "0" * 64, payload).json()["error"]["code"] == "UNAUTHORIZED"
    assert track(project.keys.public_key, None, raw=b'{"email": ').status == 400
    project_disable(project=project.project, reason="Test")
    assert track(project.keys.public_key, payload).json()["error"]["code"] == "PROJECT_DISABLED"
    assert not Event.objects.exists()


def test_the_rate_limit_counts_both_paths_alike(project, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 5
    payload = {"email": "a@b.test", "event": "x"}
    # A request with the wrong key and one with a bad body count against the project, in the view.
    track(project.keys.secret_key, payload)
    track(project.keys.public_key, None, raw=b"[")
    answers = [track(project.keys.public_key, payload) for _ in range(4)]
    assert [a.status for a in answers] == [200, 200, 200, 429]
    assert [a.headers["RateLimit-Remaining"] for a in answers] == ["2", "1", "0", "0"]
    assert Event.objects.count() == 3


def test_an_idempotency_key_is_honoured_by_the_view(project):
    payload = {"email": "a@b.test", "event": "x"}
    first = track(project.keys.public_key, payload, headers={"Idempotency-Key": "order-1"})
    again = track(project.keys.public_key, payload, headers={"Idempotency-Key": "order-1"})
    assert (first.status, again.status) == (200, 409)
    assert again.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED" and Event.objects.count() == 1


def test_web_pages_may_call_track_and_only_track(project, public_client, secret_client):
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
    answer = track(
        project.keys.public_key, {"email": "a@b.test", "event": "x"}, headers={"Origin": "https://shop.example"}
    )
    assert answer.status == 200 and answer.headers["access-control-allow-origin"] == "*"
    assert "X-Request-Id" in answer.headers["access-control-expose-headers"]
    assert Event.objects.count() == 1

    # Secret-key endpoints never answer another origin: the secret key does not belong in a web page.
    listed = secret_client.get("/contacts", **origin)
    assert listed.status_code == 200 and "Access-Control-Allow-Origin" not in listed
    refused = secret_client.options("/contacts", HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET", **origin)
    assert "Access-Control-Allow-Origin" not in refused


def test_served_calls_are_counted_once_and_a_rotated_key_fails_at_once(project, settings):
    # With Redis (the PostgreSQL run), a cached key is looked up and counted in one round trip.
    settings.API_KEY_CACHE_SECONDS, settings.API_RATE_LIMIT_PER_MINUTE = 300, 10
    payload = {"email": "a@b.test", "event": "x"}
    answers = [track(project.keys.public_key, payload) for _ in range(3)]
    assert [a.headers["RateLimit-Remaining"] for a in answers] == ["9", "8", "7"]
    new = project_regenerate_keys(project=project.project)
    assert track(project.keys.public_key, payload).json()["error"]["code"] == "UNAUTHORIZED"
    assert track(new.public_key, payload).headers["RateLimit-Remaining"] == "6"
    assert track(new.public_key, payload).headers["RateLimit-Remaining"] == "5"
    assert Event.objects.count() == 5

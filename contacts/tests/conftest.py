import json
from dataclasses import dataclass

import pytest

from config.tests.wsgi import wsgi_call
from conftest import client_with
from contacts.models import Contact, Event
from contacts.signals import event_recorded, events_recorded


@dataclass(frozen=True)
class TrackClient:
    """POST /v1/track with a key, through Django's test client (`way="django"`: the view) or through the application
    gunicorn serves (`way="served"`: answered in front of Django when it succeeds, accounts.http.fastroute)."""

    way: str
    key: str

    def using(self, key: str) -> "TrackClient":
        return TrackClient(self.way, key)

    def post(self, path: str, body, format: str = "json", **extra):
        """As Django's test client (`HTTP_*` headers as keywords), for the tests written against it."""
        assert (path, format) == ("/v1/track", "json")
        headers = {name.removeprefix("HTTP_").replace("_", "-"): value for name, value in extra.items()}
        return self.call(body, headers=headers)

    def call(self, payload=None, *, headers: dict | None = None, raw: bytes | None = None):
        body = raw if raw is not None else json.dumps(payload).encode()
        if self.way == "django":
            meta = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in (headers or {}).items()}
            return client_with(self.key).generic("POST", "/v1/track", body, "application/json", **meta)
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json", **(headers or {})}
        return wsgi_call("POST", "/v1/track", body=body, headers=headers)


@pytest.fixture(params=["django", "served"])
def track_client(request, project) -> TrackClient:
    """The project's public-key client of POST /v1/track: each test using it runs both ways (`TrackClient`)."""
    return TrackClient(request.param, project.keys.public_key)


@pytest.fixture
def make_contact(project):
    def make(email="ada@example.com", *, subscribed=True, data=None, persona=None):
        owner = (persona or project).project
        return Contact.objects.create(project=owner, email=email, subscribed=subscribed, data=data or {})

    return make


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    """Run what services queue with transaction.on_commit (Celery tasks, signals) as a real commit would."""

    def run(call):
        with django_capture_on_commit_callbacks(execute=True):
            return call()

    return run


@pytest.fixture
def recorded():
    """Every event announced through the contacts hooks, as (name, contact email) pairs, single and bulk."""
    seen = {"single": [], "bulk": []}

    def on_one(sender, project, contact, event, **kwargs):
        seen["single"].append((event.name, contact.email))

    def on_many(sender, project, events, **kwargs):
        seen["bulk"].append([(e.name, e.contact.email) for e in events])

    event_recorded.connect(on_one)
    events_recorded.connect(on_many)
    yield seen
    event_recorded.disconnect(on_one)
    events_recorded.disconnect(on_many)


def subscription_events(contact=None):
    queryset = Event.objects.filter(name__in=["contact.subscribed", "contact.unsubscribed"])
    if contact is not None:
        queryset = queryset.filter(contact=contact)
    return list(queryset.order_by("created_at").values_list("name", flat=True))


def error_of(response):
    body = response.json()
    assert body["success"] is False, body
    assert body["error"]["statusCode"] == response.status_code
    return body["error"]

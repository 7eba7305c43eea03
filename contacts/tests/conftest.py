import pytest

from contacts.models import Contact, Event
from contacts.signals import event_recorded, events_recorded


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

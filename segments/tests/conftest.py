from datetime import UTC, datetime, timedelta

import pytest

from contacts.models import Contact, Event
from messaging.models import Email

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


@pytest.fixture
def people(project, other_project):
    """Contacts whose data covers the edge cases the condition language names: "", 0, false, null, missing keys, numeric
    strings, dates and nested objects. Returned by short name."""
    rows = {
        "ann": {
            "plan": "pro",
            "age": 30,
            "score": "42",
            "vip": True,
            "signup": "2026-01-05",
            "tags": ["a"],
            "seen": "2026-11-22T11:00:00Z",
        },
        "bob": {
            "plan": "Pro",
            "age": "31",
            "score": 7.5,
            "vip": False,
            "signup": "2026-01-05T23:59:59Z",
            "seen": "2026-11-19T14:00:00+02:00",
        },
        "cat": {
            "plan": "",
            "age": 0,
            "score": "x42",
            "vip": None,
            "signup": "2026-01-06T00:00:00+00:00",
            "seen": "2026-02-30T10:00:00Z",
        },
        "dan": {
            "plan": None,
            "address": {"city": "Oslo", "zip": "0150"},
            "signup": "2026-01-05T10:00:00+02:00",
            "seen": 5,
        },
        "eve": {},
        "fay": {
            "plan": "promo",
            "age": 5,
            "address": {"city": "oslo"},
            "vip": 1,
            "signup": "2026-01-06T01:00:00+02:00",
            "seen": "2026-11-22 11:30",
        },
    }
    made = {}
    for index, (name, data) in enumerate(rows.items()):
        made[name] = Contact.objects.create(
            project=project.project,
            email=f"{name}@Example.test".lower(),
            subscribed=index % 2 == 0,
            data=data,
            created_at=NOW - timedelta(days=index * 10),
            updated_at=NOW - timedelta(hours=index),
        )
    # Same data in another project: never selected.
    Contact.objects.create(project=other_project.project, email="ann@example.test", data=rows["ann"])
    Event.objects.create(
        project=project.project, contact=made["ann"], name="purchase", created_at=NOW - timedelta(days=2)
    )
    Event.objects.create(
        project=project.project, contact=made["bob"], name="purchase", created_at=NOW - timedelta(days=40)
    )
    Event.objects.create(
        project=project.project, contact=made["bob"], name="login", created_at=NOW - timedelta(minutes=5)
    )
    # ann: sent 3 days ago and opened 1 hour ago; cat: sent 20 days ago, bounced; eve: an email never sent.
    sent = dict(project=project.project, to_email="x@example.test", from_email="a@alice.test", subject="Hi")
    Email.objects.create(
        contact=made["ann"], sent_at=NOW - timedelta(days=3), opened_at=NOW - timedelta(hours=1), **sent
    )
    Email.objects.create(
        contact=made["cat"], sent_at=NOW - timedelta(days=20), bounced_at=NOW - timedelta(days=20), **sent
    )
    Email.objects.create(contact=made["eve"], **sent)
    return made

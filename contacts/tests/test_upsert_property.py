"""Property: PostgreSQL's fast upsert and the portable upsert are one rule.

For any starting contact (absent, or present with any data, subscribed or not, snoozed or not) and any request (data
with deletions, nested objects, the persistent and non-persistent forms, reserved keys; any subscription flags), both
implementations of `contacts.upsert` store the same contact, return the same result, and record and announce the
same events. Concurrent writers of one contact end at the same merged contact on both.
"""

import json
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction
from django.test import TestCase
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import concurrently
from contacts.models import Contact, Event
from contacts.signals import contacts_changed, events_recorded
from contacts.upsert import PortableUpsert, PostgresUpsert

FAST, PORTABLE = PostgresUpsert(), PortableUpsert()
SNOOZED_UNTIL = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has only the portable upsert: the property compares it with PostgreSQL's fast path")


KEYS = st.sampled_from(["plan", "seats", "a", "b"])
SCALARS = st.one_of(
    st.booleans(),
    st.integers(-(10**12), 10**12),
    # Below 1e15 a float survives jsonb unchanged; above, jsonb writes 7.2e+16 back as the integer 72057594037922220,
    # which equals no float, so what a path returns (the merge) and what it stored would differ for both paths.
    st.floats(min_value=-1e15, max_value=1e15),
    st.text(alphabet="aZé 1-", max_size=4),
)
# Values as stored: scalars, `null` inside objects and arrays, nested objects and arrays.
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(st.one_of(inner, st.none()), max_size=2),
        st.dictionaries(st.sampled_from(["x", "y", "value"]), st.one_of(inner, st.none()), max_size=2),
    ),
    max_leaves=4,
)
# Every form `data_rules` sorts: null deletes, "" is ignored, {value, persistent: false} is a request variable,
# {value, persistent: true} stores the value (or deletes it when null), other objects are stored as given.
INCOMING = st.one_of(
    st.none(),
    st.just(""),
    JSON,
    st.builds(lambda v: {"value": v, "persistent": False}, st.one_of(JSON, st.none())),
    st.builds(lambda v: {"value": v, "persistent": True}, st.one_of(JSON, st.none())),
    st.builds(lambda v: {"value": v}, JSON),
    st.just({"persistent": True}),
)
STORED = st.dictionaries(KEYS, JSON, max_size=4)
REQUEST_DATA = st.one_of(
    st.none(),
    st.dictionaries(st.one_of(KEYS, st.sampled_from(["email", "id", "unsubscribeUrl"])), INCOMING, max_size=5),
)
EXISTING = st.one_of(
    st.none(),
    st.fixed_dictionaries({"data": STORED, "subscribed": st.booleans(), "snoozed": st.booleans()}),
)
REQUEST = st.fixed_dictionaries(
    {
        "operation": st.sampled_from(["upsert", "track"]),
        "email": st.sampled_from(["ann@example.test", "Ann@Example.TEST", " ann@example.test "]),
        "data": REQUEST_DATA,
        "subscribed": st.one_of(st.none(), st.booleans()),
        "new_subscribed": st.booleans(),
    }
)


class Announced:
    """The events and contact changes announced after commit, through the contacts hooks."""

    def __init__(self):
        self.events, self.changed = [], 0

    def on_events(self, sender, project, events, **kwargs):
        self.events.extend((event.name, event.data) for event in events)

    def on_changed(self, sender, project_id, contact_ids, **kwargs):
        self.changed += len(contact_ids)


@pytest.fixture
def announced():
    seen = Announced()
    events_recorded.connect(seen.on_events)
    contacts_changed.connect(seen.on_changed)
    yield seen
    events_recorded.disconnect(seen.on_events)
    contacts_changed.disconnect(seen.on_changed)


def by_name(events) -> list:
    return sorted(events, key=lambda event: (event[0], json.dumps(event[1], sort_keys=True)))


def stored_contact(project) -> tuple | None:
    contact = Contact.objects.filter(project=project).first()
    return contact and (contact.email, contact.data, contact.subscribed, contact.snoozed_until)


def upsert_outcome(path, project, existing, request, announced) -> dict:
    """What `path` does to `existing` for `request`, rolled back afterwards so the other path starts the same."""
    announced.__init__()
    with transaction.atomic():
        if existing is not None:
            Contact.objects.create(
                project=project,
                email="ann@example.test",
                data=existing["data"],
                subscribed=existing["subscribed"],
                snoozed_until=SNOOZED_UNTIL if existing["snoozed"] else None,
            )
        with TestCase.captureOnCommitCallbacks(execute=True):
            if request["operation"] == "track":
                result = path.track(
                    project=project,
                    email=request["email"],
                    name="signup",
                    subscribed=request["subscribed"],
                    data=request["data"],
                )
                returned = {"created": result.created, "event": (result.event.name, result.event.data)}
            else:
                result = path.upsert(
                    project=project,
                    email=request["email"],
                    subscribed=request["subscribed"],
                    data=request["data"],
                    new_subscribed=request["new_subscribed"],
                    source="api",
                )
                returned = {"created": result.created, "changed": result.changed, "variables": result.variables}
        stored = stored_contact(project)
        # The contact a path returns is the one it stored.
        contact = result.contact
        assert (contact.email, contact.data, contact.subscribed) == stored[:3]
        outcome = {
            "stored": stored,
            "returned": returned,
            "recorded": by_name(Event.objects.filter(project=project).values_list("name", "data")),
            "announced": by_name(announced.events),
            "changed": announced.changed,
        }
        transaction.set_rollback(True)
    return outcome


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(existing=EXISTING, request_=REQUEST)
def test_the_fast_path_and_the_portable_path_agree(project, announced, existing, request_):
    fast = upsert_outcome(FAST, project.project, existing, request_, announced)
    portable = upsert_outcome(PORTABLE, project.project, existing, request_, announced)
    assert fast == portable
    assert fast["recorded"] == fast["announced"]


STARTS = {
    "absent": None,
    "present": {"keep": 1, "plan": "free", **{f"drop{n}": n for n in range(12)}},
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("operation", ["upsert", "track"])
@pytest.mark.parametrize("start", STARTS.values(), ids=STARTS.keys())
def test_concurrent_writers_end_at_the_same_merged_contact_on_both_paths(project, other_project, start, operation):
    """Twelve writers of one contact at once, each setting its own key, deleting one and setting a shared one: the
    fast path (whose guarded writes fall back to the portable path when they lose) and the portable path alone end
    at the same contact, with every writer's change merged and every event kept."""

    def final(owner, path) -> tuple:
        if start is not None:
            Contact.objects.create(project=owner, email="race@example.test", data=start, subscribed=False)

        def write(n):
            data = {f"k{n}": n, f"drop{n}": None, "plan": "pro"}
            if operation == "track":
                path.track(project=owner, email="Race@Example.test", name="signup", subscribed=None, data=data)
            else:
                path.upsert(
                    project=owner,
                    email="Race@Example.test",
                    subscribed=None,
                    data=data,
                    new_subscribed=True,
                    source="api",
                )

        concurrently(write, range(12))
        contact = Contact.objects.get(project=owner)
        events = sorted(Event.objects.filter(project=owner).values_list("name", flat=True))
        return contact.email, contact.data, contact.subscribed, events

    fast = final(project.project, FAST)
    assert fast == final(other_project.project, PORTABLE)
    expected = {"plan": "pro", **({"keep": 1} if start else {}), **{f"k{n}": n for n in range(12)}}
    assert fast[:3] == ("race@example.test", expected, start is None)
    assert fast[3] == (["signup"] * 12 if operation == "track" else [])

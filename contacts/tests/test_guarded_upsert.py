"""The upsert read first and written later with a dependent row (a single recipient's /v1/send): it writes only if
the contact is still as read, and then the contact and the dependent row together or neither.

The tests commit for real (a row's version is its transaction), so each change between the read and the write is
another transaction's, as it would be under load."""

import pytest
from django.db import connection

from contacts.models import Contact, Event
from contacts.upsert import contact_upsert_guarded, contact_upsert_read

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("the guarded upsert is PostgreSQL's")


def dependent_event(pending, name="sent"):
    """A row that refers to the contact, as the email of a send does."""
    return Event(project=pending.contact.project, contact=pending.contact, name=name, data={})


def write(pending, dependent) -> bool:
    """The caller's side of the guarded write: the contact's statement with the dependent rows added, run."""
    guarded = contact_upsert_guarded(pending)
    guarded.insert(dependent)
    return guarded.run()


def read(project, email="ann@example.test", **data):
    return contact_upsert_read(project=project.project, email=email, data=data, new_subscribed=False)


def test_a_new_contact_is_created_with_the_dependent_row(project):
    pending = read(project, "Ann@Example.test", plan="pro")
    assert (pending.outcome, pending.contact.email, pending.contact.data) == (
        "created",
        "ann@example.test",
        {"plan": "pro"},
    )
    event = dependent_event(pending)
    assert write(pending, [event]) is True
    contact = Contact.objects.get(project=project.project)
    assert (contact.id, contact.subscribed, contact.data) == (pending.contact.id, False, {"plan": "pro"})
    assert Event.objects.get().contact_id == contact.id


def test_an_existing_contact_gets_the_merged_data_and_keeps_its_subscription(project):
    Contact.objects.create(project=project.project, email="ann@example.test", subscribed=True, data={"a": 1, "b": 2})
    pending = read(project, plan="pro", b=None)
    assert pending.outcome == "updated" and pending.contact.data == {"a": 1, "plan": "pro"}
    assert write(pending, [dependent_event(pending)]) is True
    contact = Contact.objects.get()
    assert (contact.subscribed, contact.data) == (True, {"a": 1, "plan": "pro"})
    assert Event.objects.get().contact_id == contact.id


def test_an_unchanged_contact_is_not_rewritten(project):
    stored = Contact.objects.create(project=project.project, email="ann@example.test", data={"plan": "pro"})
    pending = read(project, plan="pro")
    assert pending.outcome == "unchanged"
    assert write(pending, [dependent_event(pending)]) is True
    assert Contact.objects.get().updated_at == stored.updated_at
    assert Event.objects.count() == 1


def test_a_contact_changed_after_the_read_writes_nothing(project):
    Contact.objects.create(project=project.project, email="ann@example.test", data={"plan": "free"})
    pending = read(project, seats=5)
    Contact.objects.filter(email="ann@example.test").update(data={"plan": "pro"})  # another request, committed
    assert write(pending, [dependent_event(pending)]) is False
    assert Contact.objects.get().data == {"plan": "pro"}
    assert Event.objects.count() == 0


def test_a_subscription_change_after_the_read_writes_nothing(project):
    Contact.objects.create(project=project.project, email="ann@example.test", subscribed=True)
    pending = read(project)
    Contact.objects.filter(email="ann@example.test").update(subscribed=False)
    assert write(pending, [dependent_event(pending)]) is False
    assert Event.objects.count() == 0


def test_a_contact_created_after_the_read_is_not_duplicated(project):
    pending = read(project, plan="pro")
    other = Contact.objects.create(project=project.project, email="ann@example.test", data={"plan": "free"})
    assert write(pending, [dependent_event(pending)]) is False
    assert list(Contact.objects.values_list("id", "data")) == [(other.id, {"plan": "free"})]
    assert Event.objects.count() == 0


def test_a_contact_deleted_after_the_read_is_not_written_back(project):
    Contact.objects.create(project=project.project, email="ann@example.test")
    pending = read(project, plan="pro")
    Contact.objects.all().delete()
    assert write(pending, [dependent_event(pending)]) is False
    assert (Contact.objects.count(), Event.objects.count()) == (0, 0)


def test_the_read_and_the_write_stay_in_the_callers_project(project, other_project):
    theirs = Contact.objects.create(project=other_project.project, email="ann@example.test", data={"secret": "x"})
    pending = read(project, plan="pro")
    assert pending.outcome == "created" and "secret" not in pending.contact.data
    assert write(pending, [dependent_event(pending)]) is True
    theirs.refresh_from_db()
    assert theirs.data == {"secret": "x"}
    assert Contact.objects.filter(project=project.project).get().data == {"plan": "pro"}

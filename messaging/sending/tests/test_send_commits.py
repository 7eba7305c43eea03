"""`POST /v1/send` as served, with real commits: a single recipient's send is written without a transaction around
it (contact and email in one statement), any other send in one transaction. Either way a send that fails writes
nothing, and one whose contact changed while it rendered is rendered again from what the contact holds now."""

import json

import pytest
from django.db import connection

from config.tests.wsgi import wsgi_call
from conftest import concurrently
from contacts.models import Contact
from messaging.models import Email
from messaging.sending import services as sending

pytestmark = pytest.mark.django_db(transaction=True)


def served_send(project, **overrides):
    payload = {"to": "ann@example.test", "from": "hello@alice.test", "subject": "Hi", "body": "<p>Hi</p>", **overrides}
    headers = {"Authorization": f"Bearer {project.keys.secret_key}", "Content-Type": "application/json"}
    return wsgi_call("POST", "/v1/send", body=json.dumps(payload).encode(), headers=headers)


def test_a_single_send_stores_the_contact_and_the_email_together(project):
    Contact.objects.create(project=project.project, email="ann@example.test", subscribed=True, data={"plan": "pro"})
    response = served_send(project, subject="Your {{ plan }} plan", data={"seats": 5})
    assert response.status == 200
    [entry] = response.json()["data"]["emails"]
    email = Email.objects.get(id=entry["email"])
    contact = Contact.objects.get()
    assert (email.contact_id, email.subject, email.status) == (contact.id, "Your pro plan", "SENT")  # eager delivery
    assert (contact.subscribed, contact.data) == (True, {"plan": "pro", "seats": 5})


def test_a_contact_changed_while_the_send_rendered_is_rendered_again(project, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("the single-statement send is PostgreSQL's")
    Contact.objects.create(project=project.project, email="ann@example.test", data={"plan": "free"})
    read = sending.contact_upsert_read

    def read_then_another_request_writes(**kwargs):
        pending = read(**kwargs)
        Contact.objects.filter(email="ann@example.test").update(data={"plan": "pro"})
        return pending

    monkeypatch.setattr(sending, "contact_upsert_read", read_then_another_request_writes)
    response = served_send(project, subject="Your {{ plan }} plan", data={"seats": 5})
    assert response.status == 200
    email = Email.objects.get()
    assert email.subject == "Your pro plan"
    assert Contact.objects.get().data == {"plan": "pro", "seats": 5}


def test_a_send_that_fails_at_a_later_recipient_writes_nothing(project, settings):
    settings.SEND_MESSAGE_MAX_BYTES = 9000
    bob = Contact.objects.create(project=project.project, email="bob@example.test", data={"bio": "b" * 4000})
    recipients = ["ann@example.test", "bob@example.test"]
    response = served_send(project, to=recipients, body="<p>Hello {{ bio }}</p>", data={"plan": "pro"})
    assert response.status == 422
    assert response.json()["error"]["errors"][0]["field"] == "body"
    assert list(Contact.objects.values_list("id", "data")) == [(bob.id, {"bio": "b" * 4000})]
    assert Email.objects.count() == 0


def test_a_single_send_that_fails_after_reading_its_contact_writes_nothing(project, settings):
    settings.SEND_MESSAGE_MAX_BYTES = 9000
    Contact.objects.create(project=project.project, email="bob@example.test", data={"bio": "b" * 4000})
    response = served_send(project, to="bob@example.test", body="<p>{{ bio }}</p>", data={"plan": "pro"})
    assert response.status == 422
    assert Contact.objects.get().data == {"bio": "b" * 4000}
    assert Email.objects.count() == 0


def test_concurrent_sends_to_one_new_address_make_one_contact_and_keep_every_email(project):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL")

    def send(n):
        return served_send(project, to="Race@Example.test", subject=f"Key {{{{ k{n} }}}}", data={f"k{n}": n}).status

    assert set(concurrently(send, range(16))) == {200}
    contact = Contact.objects.get(project=project.project)
    assert contact.email == "race@example.test" and contact.subscribed is False
    assert contact.data == {f"k{n}": n for n in range(16)}
    subjects = sorted(Email.objects.filter(contact=contact).values_list("subject", flat=True))
    assert subjects == sorted(f"Key {n}" for n in range(16))

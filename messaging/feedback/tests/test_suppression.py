"""The suppression list end to end: a send reaches the SMTP server, the MTA reports a hard bounce for it, and later
sends to the address are refused (marketing) or stored SUPPRESSED and never delivered (transactional)."""

import pytest

from contacts.models import Contact, Event
from messaging.feedback.suppression import suppression_add
from messaging.feedback.tests.feedback import feedback_settings_fixture, generic_post  # noqa: F401 - fixture
from messaging.models import Email, Suppression

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("feedback_settings")]

TRANSACTIONAL = {"from": "hello@alice.test", "subject": "Your receipt", "body": "<p>Thanks</p>"}


@pytest.fixture
def marketing_template(secret_client):
    return secret_client.post(
        "/templates",
        {"name": "News", "subject": "News", "body": "<p>News</p>", "from": "news@alice.test", "type": "MARKETING"},
        format="json",
    ).json()["id"]


def bounce_received_message(client, received, bounce_type="hard"):
    """What a self-run MTA reports: the Message-ID of the message it could not deliver."""
    event = {
        "id": f"bounce-{received.message['Message-ID']}",
        "type": "bounced",
        "bounceType": bounce_type,
        "messageId": received.message["Message-ID"],
        "recipient": received.rcpt_tos[0],
        "reason": "550 5.1.1 user unknown",
    }
    return generic_post(client, [event])


def test_a_hard_bounce_suppresses_the_address_for_later_sends(send, smtp_sink, client, project, marketing_template):
    assert send({**TRANSACTIONAL, "to": "ann@example.test", "subscribed": True}).status_code == 200
    [received] = smtp_sink.received
    email = Email.objects.get()

    assert bounce_received_message(client, received).status_code == 200

    email.refresh_from_db()
    assert email.status == Email.Status.BOUNCED
    contact = Contact.objects.get(email="ann@example.test")
    assert contact.subscribed is False
    assert Event.objects.filter(contact=contact, name="contact.unsubscribed", data={"source": "bounce"}).exists()
    bounce = Event.objects.get(name="email.bounce")
    assert (bounce.email_id, bounce.data["bounceType"]) == (email.id, "hard")
    assert Suppression.objects.get(project=project.project, email="ann@example.test").reason == "BOUNCE"

    # Marketing: the whole request is refused, even when it asks to resubscribe the contact.
    response = send({"to": "Ann@Example.test", "template": marketing_template, "subscribed": True})
    assert response.status_code == 422
    error = response.json()["error"]["errors"][0]
    assert error["field"] == "to"
    assert "suppressed after a hard bounce" in error["message"]
    response = send({"to": ["bob@example.test", "ann@example.test"], "template": marketing_template})
    assert response.json()["error"]["errors"][0]["field"] == "to.1"
    assert Email.objects.count() == 1

    # Transactional: stored with the reason, never handed to the server.
    response = send({**TRANSACTIONAL, "to": "ann@example.test"})
    assert response.status_code == 200
    held = Email.objects.get(id=response.json()["data"]["emails"][0]["email"])
    assert held.status == Email.Status.SUPPRESSED
    assert held.last_error == "ann@example.test is suppressed after a hard bounce"
    assert len(smtp_sink.received) == 1


def test_a_soft_bounce_does_not_suppress(send, smtp_sink, client):
    send({**TRANSACTIONAL, "to": "ann@example.test"})
    assert bounce_received_message(client, smtp_sink.received[0], bounce_type="soft").status_code == 200
    assert not Suppression.objects.exists()
    assert send({**TRANSACTIONAL, "to": "ann@example.test"}).status_code == 200
    assert len(smtp_sink.received) == 2


def test_an_address_suppressed_while_queued_is_skipped_at_delivery(
    secret_client, smtp_sink, project, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        assert (
            secret_client.post("/v1/send", {**TRANSACTIONAL, "to": "ann@example.test"}, format="json").status_code
            == 200
        )
    suppression_add(project=project.project, email="ANN@example.test ", reason=Suppression.Reason.COMPLAINT)
    for callback in callbacks:
        callback()
    email = Email.objects.get()
    assert email.status == Email.Status.SUPPRESSED
    assert email.last_error == "ann@example.test is suppressed after a spam complaint"
    assert smtp_sink.received == []


def test_another_projects_suppression_does_not_apply(send, smtp_sink, other_project, marketing_template):
    suppression_add(project=other_project.project, email="ann@example.test", reason=Suppression.Reason.MANUAL)
    assert send({"to": "ann@example.test", "template": marketing_template, "subscribed": True}).status_code == 200
    assert len(smtp_sink.received) == 1


def test_operator_adds_and_removes_an_address_in_admin(admin_client, send, smtp_sink, project):
    response = admin_client.post(
        "/admin/messaging/suppression/add/",
        {"project": project.id, "email": " Ann@Example.TEST", "reason": "MANUAL", "detail": "asked by phone"},
    )
    assert response.status_code == 302
    suppression = Suppression.objects.get()
    assert (suppression.email, suppression.reason) == ("ann@example.test", "MANUAL")
    assert admin_client.get("/admin/messaging/suppression/?q=ann").status_code == 200
    assert admin_client.get(f"/admin/messaging/suppression/{suppression.id}/change/").status_code == 200

    Contact.objects.create(project=project.project, email="ann@example.test", subscribed=False)
    admin_client.post("/admin/messaging/suppression/", {"action": "remove", "_selected_action": [suppression.id]})
    assert not Suppression.objects.exists()
    assert Contact.objects.get(email="ann@example.test").subscribed is False, "removal does not resubscribe"
    assert send({**TRANSACTIONAL, "to": "ann@example.test"}).status_code == 200
    assert len(smtp_sink.received) == 1


def test_admin_lists_receipts(admin_client, client, project):
    generic_post(client, [{"id": "a-1", "type": "delivered", "messageId": "<unknown@x>"}])
    page = admin_client.get("/admin/messaging/webhookreceipt/?outcome__exact=IGNORED")
    assert page.status_code == 200
    assert "unknown message" in page.content.decode()
    assert admin_client.get("/admin/messaging/webhookreceipt/add/").status_code == 403

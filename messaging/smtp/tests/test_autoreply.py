"""An auto-reply, end to end: a message arrives on the inbound listener, the `email.received` event starts the
workflow it triggers, whose SEND_EMAIL step answers the sender, and the answer reaches a real SMTP server. Set up
through the API only, as docs/smtp.md ("An auto-reply") tells a user to."""

from email.message import EmailMessage

import pytest

from config.tests.processes import wait_until
from conftest import client_with
from messaging.models import Email
from workflows.models import WorkflowExecution

pytestmark = pytest.mark.usefixtures("dns_server")


def auto_reply(client, *, sender: str) -> dict:
    """The recipe: a transactional template that quotes the received message, and a workflow triggered by
    `email.received` whose one step sends it to the contact (the sender of the message)."""
    template = client.post(
        "/templates",
        {
            "name": "Auto-reply",
            "type": "TRANSACTIONAL",
            "from": sender,
            "fromName": "Support",
            "subject": "Re: {{ event.subject }}",
            "body": "<p>Hello {{ event.fromName | default: 'there' }}, we got your message and answer within a day.</p>"
            "<blockquote>{{ event.text }}</blockquote>",
        },
        format="json",
    )
    assert template.status_code == 201, template.content
    workflow = client.post(
        "/workflows",
        {"name": "Auto-reply", "triggerConfig": {"eventName": "email.received"}, "allowReentry": True},
        format="json",
    )
    assert workflow.status_code == 201, workflow.content
    workflow = workflow.json()
    step = {"type": "SEND_EMAIL", "config": {"templateId": template.json()["id"]}}
    assert client.post(f"/workflows/{workflow['id']}/steps", step, format="json").status_code == 201
    assert client.patch(f"/workflows/{workflow['id']}", {"enabled": True}, format="json").status_code == 200
    return workflow


def question(*, to: str) -> bytes:
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "Carol Ray <carol@example.com>", to, "Where is my order?"
    mail["Message-ID"] = "<q1@example.com>"
    mail.set_content("Order 42 has not arrived & I'm worried.")
    return mail.as_bytes()


def test_a_received_message_is_answered_by_the_workflow_it_triggers(
    inbound, project, other_project, secret_client, smtp_sink
):
    ours = auto_reply(secret_client, sender="support@alice.test")
    theirs = auto_reply(client_with(other_project.keys.secret_key), sender="help@bob.test")

    assert inbound.send(question(to="support@alice.test"), to="support@alice.test").data.code == 250

    [reply] = wait_until(lambda: smtp_sink.received, timeout=15, what="the auto-reply")
    assert reply.rcpt_tos == ["carol@example.com"]
    mail = reply.message
    assert (mail["From"], mail["To"], mail["Subject"]) == (
        "Support <support@alice.test>",
        "carol@example.com",
        "Re: Where is my order?",
    )
    assert "Hello Carol Ray, we got your message" in reply.html
    assert "Order 42 has not arrived &amp; I&#39;m worried." in reply.html  # the event's text, escaped in HTML
    [execution] = WorkflowExecution.objects.filter(workflow_id=ours["id"])
    assert (execution.status, execution.contact.email) == ("COMPLETED", "carol@example.com")
    # Marked SENT right after the server's 250.
    email = wait_until(
        lambda: Email.objects.filter(workflow_id=ours["id"], status="SENT").first(), timeout=10, what="SENT"
    )
    assert (email.project_id, email.source, email.to_email) == (project.project.id, "workflow", "carol@example.com")
    # The other project's auto-reply answers mail to its own domains only: this message was not its own.
    assert not WorkflowExecution.objects.filter(workflow_id=theirs["id"]).exists()
    assert not Email.objects.filter(project=other_project.project).exists()

    # Its own mail is answered by its own workflow, from its own address; ours does not run again.
    assert inbound.send(question(to="help@bob.test"), to="help@bob.test").data.code == 250
    wait_until(lambda: len(smtp_sink.received) == 2, timeout=15, what="the other project's auto-reply")
    answer = smtp_sink.received[1].message
    assert (answer["From"], smtp_sink.received[1].rcpt_tos) == ("Support <help@bob.test>", ["carol@example.com"])
    assert WorkflowExecution.objects.filter(workflow_id=ours["id"]).count() == 1

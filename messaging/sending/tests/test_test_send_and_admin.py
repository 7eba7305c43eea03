from contextlib import contextmanager
from datetime import timedelta

import pytest
from celery.signals import task_prerun
from django.contrib.messages import get_messages
from django.utils import timezone

from contacts.models import Contact, Event
from messaging.models import Email, EmailType, Template
from messaging.sending.delivery import emails_sweep
from messaging.sending.services import SendContent, email_send_test
from messaging.sending.tasks import deliver_emails_task, sweep_emails_task
from messaging.vocabulary import Address

pytestmark = pytest.mark.django_db


def test_a_test_email_is_rendered_with_sample_data_and_marked_as_test(
    project, smtp_sink, django_capture_on_commit_callbacks
):
    content = SendContent(
        subject="Hi {{ name ?? 'there' }}",
        body="<p>{{ plan }}</p>",
        sender=Address(email="hi@alice.test", name="Alice"),
        type=EmailType.MARKETING,
    )
    with django_capture_on_commit_callbacks(execute=True):
        email = email_send_test(
            project=project.project,
            to=Address(email="owner@alice.test"),
            content=content,
            sample_data={"name": "Sample", "plan": "pro"},
        )
    [received] = smtp_sink.received
    assert received.message["Subject"] == "[TEST] Hi Sample"
    assert "<p>pro</p>" in received.html
    email.refresh_from_db()
    assert (email.source, email.status, email.contact_id) == ("test", "SENT", None)
    assert not Contact.objects.exists() and not Event.objects.exists()


def test_admin_lists_and_previews_emails(admin_client, send, smtp_sink):
    send({"to": "ann@example.test", "from": "hi@alice.test", "subject": "S", "body": "<p>Preview me</p>"})
    email = Email.objects.get()
    assert admin_client.get("/admin/messaging/email/?status__exact=SENT").status_code == 200
    page = admin_client.get(f"/admin/messaging/email/{email.id}/change/").content.decode()
    assert "srcdoc=" in page and "Preview me" in page
    assert admin_client.get("/admin/messaging/template/").status_code == 200


@contextmanager
def delivery_tasks_run():
    """The id lists of the delivery tasks run meanwhile (eager Celery runs each as it is published)."""
    batches = []

    def record(sender=None, args=(), **kwargs):
        if sender.name == deliver_emails_task.name:
            batches.append(sorted(args[0]))

    task_prerun.connect(record)
    try:
        yield batches
    finally:
        task_prerun.disconnect(record)


def test_admin_retry_hands_each_failed_email_to_delivery_once(
    admin_client, send, smtp_sink, settings, django_capture_on_commit_callbacks
):
    settings.DELIVERY_BATCH_SIZE = 2
    smtp_sink.reply_to_rcpt = "550 no"
    to = ["ann@example.test", "bob@example.test", "cid@example.test"]
    send({"to": to, "from": "hi@alice.test", "subject": "S", "body": "<p>B</p>"})
    assert set(Email.objects.values_list("status", flat=True)) == {"FAILED"}
    Email.objects.update(updated_at=timezone.now() - timedelta(hours=1))  # they failed an hour ago
    smtp_sink.reply_to_rcpt = None
    ids = sorted(str(pk) for pk in Email.objects.values_list("id", flat=True))

    with delivery_tasks_run() as batches:
        with django_capture_on_commit_callbacks() as callbacks:
            response = admin_client.post(
                "/admin/messaging/email/", {"action": "retry_now", "_selected_action": ids}, follow=True
            )
        # Until the retry commits nothing is published, and the sweeper leaves the rows to the tasks on their way.
        assert batches == []
        assert set(Email.objects.values_list("status", "attempts")) == {("QUEUED", 0)}
        assert emails_sweep() == []
        for callback in callbacks:
            callback()
        sweep_emails_task.delay()

    assert "Queued 3 email(s)" in [str(message) for message in get_messages(response.wsgi_request)]
    assert sorted(len(batch) for batch in batches) == [1, 2]  # tasks of DELIVERY_BATCH_SIZE, each id once
    assert sorted(email_id for batch in batches for email_id in batch) == ids
    assert set(Email.objects.values_list("status", flat=True)) == {"SENT"}
    assert sorted(message.rcpt_tos[0] for message in smtp_sink.received) == to


def _template_form(project, **overrides):
    form = {
        "project": str(project.id),
        "name": "Welcome",
        "description": "",
        "subject": "Hi {{ name }}",
        "body": "<p>Hello</p>",
        "from_email": "hello@alice.test",
        "from_name": "Alice",
        "reply_to": "",
        "type": "MARKETING",
    }
    return {**form, **overrides}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"body": "{% for i in (1..10001) %}x{% endfor %}"}, "Template loops past 10,000 iterations"),
        ({"subject": "Hi {% if name %}unclosed"}, "at line 1, column 25"),
        ({"from_name": "Alice\r\nBcc: evil@x.test"}, "Must not contain line breaks"),
        ({"from_email": "hello@nowhere.test"}, "nowhere.test"),
        ({"reply_to": "not-an-email"}, "valid email"),
    ],
)
def test_the_admin_template_form_keeps_the_api_rules(admin_client, project, overrides, message):
    response = admin_client.post("/admin/messaging/template/add/", _template_form(project, **overrides))
    assert response.status_code == 200  # the form again, with its error
    assert message in response.content.decode()
    assert not Template.objects.exists()


def test_the_admin_saves_a_valid_template(admin_client, project):
    response = admin_client.post("/admin/messaging/template/add/", _template_form(project))
    assert response.status_code == 302
    assert Template.objects.get().from_email == "hello@alice.test"

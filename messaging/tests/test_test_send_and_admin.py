import pytest

from accounts.models import User
from contacts.models import Contact, Event
from messaging.models import Email, EmailType
from messaging.sending.parse import Address
from messaging.sending.services import SendContent, email_send_test

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


@pytest.fixture
def admin_client(client):
    User.objects.create_superuser("root@example.test", "pw")
    client.login(email="root@example.test", password="pw")
    return client


def test_admin_lists_and_previews_emails(admin_client, send, smtp_sink):
    send({"to": "ann@example.test", "from": "hi@alice.test", "subject": "S", "body": "<p>Preview me</p>"})
    email = Email.objects.get()
    assert admin_client.get("/admin/messaging/email/?status__exact=SENT").status_code == 200
    page = admin_client.get(f"/admin/messaging/email/{email.id}/change/").content.decode()
    assert "srcdoc=" in page and "Preview me" in page
    assert admin_client.get("/admin/messaging/template/").status_code == 200


def test_admin_retry_action_requeues_failed_emails(admin_client, send, smtp_sink):
    smtp_sink.reply_to_rcpt = "550 no"
    send({"to": "ann@example.test", "from": "hi@alice.test", "subject": "S", "body": "<p>B</p>"})
    email = Email.objects.get()
    assert email.status == "FAILED"
    smtp_sink.reply_to_rcpt = None
    admin_client.post("/admin/messaging/email/", {"action": "retry_now", "_selected_action": [email.id]})
    email.refresh_from_db()
    assert email.status == "SENT"
    assert len(smtp_sink.received) == 1

import base64
import logging
import re

import dkim
import pytest
from django.test import Client

from contacts.models import Contact, Event
from domains.dkim import record_name, record_value
from domains.models import Domain
from messaging.models import Email

pytestmark = pytest.mark.django_db
B64 = base64.b64encode


# A string doubled twenty times: 16 MB, were the sandbox not to stop it at 1 MB.
DOUBLING = '{% assign s = "0123456789abcdef" %}{% for i in (1..20) %}{% assign s = s | append: s %}{% endfor %}{{ s }}'


def body(**overrides):
    return {"to": "ann@example.test", "from": "hello@alice.test", "subject": "Hi", "body": "<p>Hello</p>", **overrides}


def test_a_send_reaches_the_smtp_server_with_everything_rendered(send, smtp_sink, project):
    response = send(
        body(
            to={"name": "Ann Lee", "email": "Ann@Example.test"},
            **{"from": {"name": "Alice Shop", "email": "hello@alice.test"}},
            subject="Hello {{ name }}, your {{ plan }} plan",
            body='<p>Hi {{ name }} <b>{{ plan }}</b> {{ note }}</p><a href="{{ unsubscribeUrl }}">unsubscribe</a>',
            data={"plan": "pro", "note": "<script>x</script>", "temp": {"value": "once", "persistent": False}},
            headers={"X-Campaign": "spring"},
            reply="support@alice.test",
        )
    )
    assert response.status_code == 200
    payload = response.json()
    assert payload["success"] is True
    [entry] = payload["data"]["emails"]
    contact = Contact.objects.get(project=project.project, email="ann@example.test")
    assert entry["contact"] == {"id": str(contact.id), "email": "ann@example.test"}
    assert contact.subscribed is False
    assert contact.data == {"name": "Ann Lee", "plan": "pro", "note": "<script>x</script>"}

    [received] = smtp_sink.received
    message = received.message
    assert received.rcpt_tos == ["ann@example.test"]
    assert message["From"] == "Alice Shop <hello@alice.test>"
    assert message["To"] == "Ann Lee <ann@example.test>"
    assert message["Reply-To"] == "support@alice.test"
    assert message["Subject"] == "Hello Ann Lee, your pro plan"
    assert message["X-Campaign"] == "spring"
    assert message["Message-ID"] == f"<{entry['email']}@alice.test>"
    assert "&lt;script&gt;x&lt;/script&gt;" in received.html
    assert "<b>pro</b>" in received.html
    assert "/unsubscribe/" in received.html
    assert "Hi Ann Lee pro" in received.text
    # A transactional message that links to the unsubscribe page carries the one-click headers too.
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"

    email = Email.objects.get(id=entry["email"])
    assert (email.status, email.attempts) == ("SENT", 1)
    sent_event = Event.objects.get(contact=contact, name="email.sent")
    assert sent_event.email_id == email.id
    assert sent_event.data["emailId"] == str(email.id)
    assert sent_event.data["subject"] == "Hello Ann Lee, your pro plan"


def test_the_dkim_signature_verifies_against_the_domain_key(send, smtp_sink):
    assert send(body()).status_code == 200
    domain = Domain.objects.get(name="alice.test")
    published = {
        record_name(selector=domain.dkim_selector, domain_name=domain.name): record_value(domain.dkim_public_key)
    }
    raw = smtp_sink.received[0].raw
    assert raw.startswith(b"DKIM-Signature:")
    assert dkim.verify(raw, dnsfunc=lambda name, timeout=5: published.get(name.decode().rstrip(".")).encode())


def test_several_recipients_each_get_their_own_contact_row_and_message(send, smtp_sink):
    response = send(
        body(to=["one@example.test", {"name": "Two", "email": "two@example.test"}], body="<p>{{ email }}</p>")
    )
    emails = response.json()["data"]["emails"]
    assert [e["contact"]["email"] for e in emails] == ["one@example.test", "two@example.test"]
    assert len({e["email"] for e in emails}) == 2
    assert sorted(r.rcpt_tos[0] for r in smtp_sink.received) == ["one@example.test", "two@example.test"]
    for received in smtp_sink.received:
        assert received.rcpt_tos[0] in received.html


def test_marketing_template_gets_footer_and_list_unsubscribe(send, smtp_sink, secret_client):
    template = secret_client.post(
        "/templates",
        {
            "name": "News",
            "subject": "News for {{ name ?? 'you' }}",
            "body": "<html><body><p>News</p></body></html>",
            "from": "news@alice.test",
            "fromName": "Alice News",
        },
        format="json",
    ).json()
    response = send({"to": "ann@example.test", "template": template["id"], "subscribed": True})
    assert response.status_code == 200
    message = smtp_sink.received[0].message
    assert message["Subject"] == "News for you"
    assert message["From"] == "Alice News <news@alice.test>"
    assert message["List-Unsubscribe"].startswith("<http://localhost:8000/unsubscribe/")
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    html = smtp_sink.received[0].html
    assert "Unsubscribe</a></p></body>" in html


def test_explicit_fields_override_the_template(send, smtp_sink, secret_client):
    template = secret_client.post(
        "/templates",
        {
            "name": "T",
            "subject": "Template subject",
            "body": "<p>T</p>",
            "from": "a@alice.test",
            "type": "TRANSACTIONAL",
        },
        format="json",
    ).json()
    send(
        {
            "to": "ann@example.test",
            "template": template["id"],
            "subject": "Own subject",
            "from": "b@alice.test",
            "name": "Named",
        }
    )
    message = smtp_sink.received[0].message
    assert (message["Subject"], message["From"]) == ("Own subject", "Named <b@alice.test>")
    assert "<p>T</p>" in smtp_sink.received[0].html
    assert message["List-Unsubscribe"] is None


def test_attachments_arrive_decoded(send, smtp_sink):
    response = send(
        body(
            attachments=[
                {"filename": "report.txt", "content": B64(b"hello report").decode(), "contentType": "text/plain"},
                {
                    "filename": "logo.png",
                    "content": B64(b"\x89PNG").decode(),
                    "contentType": "image/png",
                    "contentId": "logo",
                    "disposition": "inline",
                },
            ]
        )
    )
    assert response.status_code == 200
    parts = {part.get_filename(): part for part in smtp_sink.received[0].message.walk() if part.get_filename()}
    assert parts["report.txt"].get_content() == "hello report"
    assert parts["logo.png"].get_payload(decode=True) == b"\x89PNG"
    assert parts["logo.png"]["Content-ID"] == "<logo>"


def test_subscription_given_on_send_changes_an_existing_contact_with_an_event(send, smtp_sink, project):
    contact = Contact.objects.create(project=project.project, email="ann@example.test", subscribed=False)
    send(body(subscribed=True))
    contact.refresh_from_db()
    assert contact.subscribed is True
    assert Event.objects.filter(contact=contact, name="contact.subscribed").count() == 1
    send(body(subscribed=True))
    assert Event.objects.filter(contact=contact, name="contact.subscribed").count() == 1


def test_an_opted_out_contact_rejects_a_marketing_send(send, smtp_sink, project, secret_client):
    Contact.objects.create(project=project.project, email="gone@example.test", subscribed=False)
    template = secret_client.post(
        "/templates", {"name": "M", "subject": "S", "body": "<p>B</p>", "from": "a@alice.test"}, format="json"
    ).json()
    response = send({"to": ["ok@example.test", "gone@example.test"], "template": template["id"]})
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0]["field"] == "to.1"
    assert smtp_sink.received == [] and not Email.objects.exists()
    assert not Contact.objects.filter(email="ok@example.test").exists()


ATTACHMENT = {"filename": "a.txt", "content": B64(b"x").decode(), "contentType": "text/plain"}


@pytest.mark.parametrize(
    ("overrides", "status", "field"),
    [
        ({"to": None}, 422, "to"),
        ({"to": []}, 422, "to"),
        ({"to": ["ok@example.test", "not-an-email", "b@example.test"]}, 422, "to.1"),
        ({"to": [{"name": "x"}]}, 422, "to.0.email"),
        ({"subject": "a\nb"}, 422, "subject"),
        ({"subject": "x" * 999}, 422, "subject"),
        ({"body": "x" * (2 * 1024 * 1024 + 1)}, 422, "body"),
        ({"body": "é" * (1024 * 1024 + 1)}, 422, "body"),  # 2 MB and 2 bytes of UTF-8
        ({"headers": {"X-A\r\nBcc": "evil@x.test"}}, 422, "headers.X-A\r\nBcc"),
        ({"headers": {"X-Long": "v" * 999}}, 422, "headers.X-Long"),
        ({"headers": {"X-Inject": "a\r\nBcc: evil@x.test"}}, 422, "headers.X-Inject"),
        ({"headers": {"X-Nul": "a\x00b"}}, 422, "headers.X-Nul"),
        # No CR, LF or NUL in any display name: each would end the From or To line early.
        ({"name": "Support\r\nBcc: evil@x.test"}, 422, "name"),
        ({"name": "Support\nBcc: evil@x.test"}, 422, "name"),
        ({"name": "Support\x00"}, 422, "name"),
        ({"from": {"name": "Support\r\nBcc: evil@x.test", "email": "hello@alice.test"}}, 422, "from.name"),
        ({"from": {"name": "Support\x00", "email": "hello@alice.test"}}, 422, "from.name"),
        ({"to": [{"name": "Ann\r\nBcc: evil@x.test", "email": "ann@example.test"}]}, 422, "to.0.name"),
        ({"to": [{"name": "Ann\x00", "email": "ann@example.test"}]}, 422, "to.0.name"),
        ({"reply": "support@alice.test\r\nBcc: evil@x.test"}, 422, "reply"),
        ({"reply": {"name": "S\r\nBcc: evil@x.test", "email": "support@alice.test"}}, 422, "reply.name"),
        ({"attachments": [{**ATTACHMENT, "filename": 'a"; x="b.txt'}]}, 422, "attachments.0.filename"),
        ({"attachments": [{**ATTACHMENT, "filename": "a\r\nBcc: evil@x.test"}]}, 422, "attachments.0.filename"),
        ({"attachments": [{**ATTACHMENT, "filename": "a\x00.txt"}]}, 422, "attachments.0.filename"),
        ({"headers": {"Bcc": "evil@x.test"}}, 422, "headers.Bcc"),
        ({"headers": {"message-id": "<x@y>"}}, 422, "headers.message-id"),
        ({"attachments": [ATTACHMENT] * 11}, 422, "attachments"),
        ({"attachments": [{**ATTACHMENT, "content": "***not base64***"}]}, 422, "attachments.0.content"),
        ({"attachments": [{**ATTACHMENT, "disposition": "inline"}]}, 422, "attachments.0.contentId"),
        ({"template": "not-a-uuid"}, 422, "template"),
        ({"body": None}, 422, "body"),
        ({"from": "hello@bob.test"}, 403, None),
        ({"from": "hello@nowhere.test"}, 403, None),
        ({"from": None}, 422, "from"),
        ({"data": []}, 422, "data"),
        ({"subscribed": "yes"}, 422, "subscribed"),
        # Inline content past a rendering limit is refused, not sent as its source (docs/api/templates.md).
        ({"body": "{% for i in (1..20000) %}x{% endfor %}"}, 422, "body"),
        ({"subject": "{% for i in (1..20000) %}x{% endfor %}"}, 422, "subject"),
        ({"body": DOUBLING}, 422, "body"),
    ],
)
def test_bad_requests_store_and_send_nothing(send, smtp_sink, overrides, status, field):
    payload = {key: value for key, value in body(**overrides).items() if value is not None}
    response = send(payload)
    assert response.status_code == status, response.json()
    error = response.json()["error"]
    if field is not None:
        assert error["errors"][0]["field"] == field
    else:
        assert error["code"] == "DOMAIN_NOT_VERIFIED"
    assert not Email.objects.exists()
    assert not Contact.objects.exists()
    assert smtp_sink.received == []


def test_inline_content_past_a_rendering_limit_is_refused_with_its_idempotency_key_free(send, smtp_sink):
    looping = body(body="{% for i in (1..20000) %}x{% endfor %}")
    response = send(looping, HTTP_IDEMPOTENCY_KEY="order-7")
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0] == {
        "field": "body",
        "code": "too_big",
        "message": "Template loops past 10,000 iterations",
    }
    assert send(body(), HTTP_IDEMPOTENCY_KEY="order-7").status_code == 200
    assert len(smtp_sink.received) == 1


def test_data_that_pushes_a_saved_template_past_a_limit_fails_the_send_not_the_worker(send, smtp_sink, secret_client):
    template = secret_client.post(
        "/templates",
        {"name": "List", "subject": "S", "body": "{% for i in items %}{{ i }}{% endfor %}", "from": "hello@alice.test"},
        format="json",
    ).json()
    response = send({"to": "ann@example.test", "template": template["id"], "data": {"items": list(range(10_001))}})
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0]["field"] == "body"
    assert not Email.objects.exists()
    assert smtp_sink.received == []


def test_attachments_over_the_total_limit_are_rejected(send, smtp_sink, settings):
    settings.SEND_ATTACHMENTS_MAX_BYTES = 10
    response = send(body(attachments=[{**ATTACHMENT, "content": B64(b"x" * 11).decode()}]))
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0] == {
        "field": "attachments",
        "code": "too_big",
        "message": "Attachments are at most 10 bytes in total (decoded)",
    }
    assert smtp_sink.received == []


def test_another_projects_template_is_a_404(send, smtp_sink, other_client):
    template = other_client.post(
        "/templates", {"name": "B", "subject": "S", "body": "<p>B</p>", "from": "b@bob.test"}, format="json"
    ).json()
    response = send({"to": "ann@example.test", "template": template["id"]})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "TEMPLATE_NOT_FOUND"


def test_the_public_key_cannot_send(public_client):
    response = public_client.post("/v1/send", body(), format="json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "INVALID_API_KEY"


def test_an_idempotency_key_sends_once(send, smtp_sink):
    first = send(body(), HTTP_IDEMPOTENCY_KEY="order-42")
    second = send(body(), HTTP_IDEMPOTENCY_KEY="order-42")
    assert (first.status_code, second.status_code) == (200, 409)
    assert second.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert len(smtp_sink.received) == 1 and Email.objects.count() == 1


def test_unknown_top_level_fields_are_ignored(send, smtp_sink):
    assert send(body(clientVersion="node-1.2", extra={"a": 1})).status_code == 200


def test_the_default_outbox_writes_one_eml_file_per_message_and_logs_it(send, settings, tmp_path, caplog):
    settings.EMAIL_BACKEND = "messaging.sending.outbox.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path)
    logger = logging.getLogger("messaging.sending.outbox")
    logger.addHandler(caplog.handler)  # the service's logging does not hand its records up to pytest's
    caplog.set_level("INFO", logger=logger.name)
    for subject in ("Outbox check", "Second"):
        html = '<p>Confirm: <a href="https://app.example.test/verify?token=abc">here</a></p>'
        assert send(body(subject=subject, body=html)).status_code == 200
    written = sorted(tmp_path.iterdir())
    assert [path.suffix for path in written] == [".eml", ".eml"]
    # The bytes an SMTP server would have received: signed, CRLF line ends, one message per file.
    raw = written[0].read_bytes()
    assert raw.startswith(b"DKIM-Signature:") and b"\r\nSubject: Outbox check\r\n" in raw
    assert raw.count(b"\r\nSubject: ") == 1
    line = next(record.getMessage() for record in caplog.records if "Outbox check" in record.getMessage())
    assert "ann@example.test" in line and str(written[0]) in line
    # The first link, as the recipient would click it (through click tracking, to where the sender pointed it).
    link = re.search(r"\(first link: (\S+)\)$", line).group(1)
    followed = Client().get(link.removeprefix(settings.PUBLIC_URL))
    assert (followed.status_code, followed["Location"]) == (302, "https://app.example.test/verify?token=abc")


def test_a_provider_backend_gets_a_complete_email_message(send, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    from django.core import mail

    send(body(subject="Provider check", attachments=[ATTACHMENT], headers={"X-Tag": "t"}))
    [message] = mail.outbox
    assert message.subject == "Provider check"
    assert message.to == ["ann@example.test"] and message.from_email == "Alice's shop <hello@alice.test>"
    assert message.alternatives[0][1] == "text/html" and "<p>Hello</p>" in message.alternatives[0][0]
    assert message.extra_headers["X-Tag"] == "t"
    assert message.attachments[0][0] == "a.txt"

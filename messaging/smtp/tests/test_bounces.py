"""Delivery and abuse reports sent back to a bounce address: the same effects as a provider's bounce and complaint
webhooks, once per report, and nothing for a token the service did not make."""

from pathlib import Path

import pytest

from contacts.models import Contact, Event
from core.metrics import SMTP_MESSAGES
from messaging.feedback.returnpath import bounce_address, token_make, token_read
from messaging.feedback.tests.feedback import sent_email
from messaging.models import Email, Suppression, WebhookReceipt

DATA = Path(__file__).parent / "data"

pytestmark = pytest.mark.usefixtures("dns_server", "return_path")


@pytest.fixture
def return_path(settings):
    settings.DOMAINS_RETURN_PATH_HOST = "bounces.herald.example"


def address_of(email: Email) -> str:
    return bounce_address(email_id=email.id, domain_name="alice.test")


def sample(name: str) -> bytes:
    return (DATA / name).read_bytes()


# RFC 3464, 10.1 (a simple DSN), as a mail server sends it back for the message of ours it could not deliver.
RFC3464 = """\
From: Mail Delivery Subsystem <MAILER-DAEMON@mx.example.net>
To: {to}
Subject: Returned mail: see transcript for details
Message-ID: <dsn-1@mx.example.net>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="RAA14128.773615765/CS.UTK.EDU"

--RAA14128.773615765/CS.UTK.EDU

The original message was received at Sat, 1 Jan 2028 12:00:00 +0000 from localhost
   ----- The following addresses had permanent fatal errors -----
<ann@example.test>

--RAA14128.773615765/CS.UTK.EDU
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.net
Arrival-Date: Sat, 1 Jan 2028 12:00:00 +0000

Original-Recipient: rfc822;ann@example.test
Final-Recipient: rfc822;ann@example.test
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 <ann@example.test>... User unknown

--RAA14128.773615765/CS.UTK.EDU
Content-Type: text/rfc822-headers

From: news@alice.test
To: ann@example.test
Subject: Hello

--RAA14128.773615765/CS.UTK.EDU--
"""

# An abuse report (RFC 5965, appendix B.2), as a mailbox provider's feedback loop sends it.
ARF = """\
From: <abusedesk@mailbox.example>
Date: Thu, 8 Mar 2028 14:00:00 EDT
Subject: FW: Hello
To: {to}
Message-ID: <arf-1@mailbox.example>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="part1_13d.2e68ed54_boundary"

--part1_13d.2e68ed54_boundary
Content-Type: text/plain; charset="US-ASCII"
Content-Transfer-Encoding: 7bit

This is an email abuse report for an email message received from IP 192.0.2.1 on Thu, 8 Mar 2028 14:00:00 EDT.

--part1_13d.2e68ed54_boundary
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: SomeGenerator/1.0
Version: 1
Original-Mail-From: <bounce+x@bounces.alice.test>
Original-Rcpt-To: <ann@example.test>
Arrival-Date: Thu, 8 Mar 2028 14:00:00 EDT
Source-IP: 192.0.2.1

--part1_13d.2e68ed54_boundary
Content-Type: message/rfc822
Content-Disposition: inline

From: <news@alice.test>
To: <ann@example.test>
Subject: Hello
Message-ID: <{email_id}@alice.test>

Hello

--part1_13d.2e68ed54_boundary--
"""


def events_of(email: Email) -> list[tuple[str, str | None]]:
    return list(Event.objects.filter(email_id=email.id).order_by("created_at").values_list("name", "data__bounceType"))


@pytest.mark.parametrize("report", ["rfc3464", "dsn_01.txt", "postfix_01.txt", "qmail_01.txt"])
def test_a_permanent_failure_is_a_hard_bounce(inbound, project, report):
    email = sent_email(project.project)
    to = address_of(email)
    raw = RFC3464.format(to=to).encode() if report == "rfc3464" else sample(report)
    applied = SMTP_MESSAGES.labels(listener="inbound", outcome="report", reason="applied")._value.get()
    assert inbound.send(raw, to=to, mail_from="").data.code == 250

    email.refresh_from_db()
    assert email.status == Email.Status.BOUNCED and email.bounced_at is not None
    assert events_of(email) == [("email.bounce", "hard")]
    assert Contact.objects.get(pk=email.contact_id).subscribed is False
    assert Suppression.objects.filter(project=project.project, email="ann@example.test", reason="BOUNCE").exists()
    receipt = WebhookReceipt.objects.get(provider="smtp")
    assert (receipt.event_type, receipt.outcome, receipt.email_id) == ("dsn", "PROCESSED", email.id)
    assert SMTP_MESSAGES.labels(listener="inbound", outcome="report", reason="applied")._value.get() == applied + 1
    # Nothing of it is inbound mail of the project.
    assert not Event.objects.filter(name="email.received").exists()


def test_the_rfc3464_report_names_its_status_and_diagnostic(inbound, project):
    email = sent_email(project.project)
    inbound.send(RFC3464.format(to=address_of(email)), to=address_of(email), mail_from="")
    email.refresh_from_db()
    assert "5.1.1" in email.last_error and "User unknown" in email.last_error


def test_a_report_delivered_twice_acts_once(inbound, project):
    email = sent_email(project.project)
    raw = RFC3464.format(to=address_of(email))
    for _ in range(2):
        assert inbound.send(raw, to=address_of(email), mail_from="").data.code == 250
    assert events_of(email) == [("email.bounce", "hard")]
    assert WebhookReceipt.objects.filter(provider="smtp").count() == 1


def test_a_transient_failure_is_a_soft_bounce_that_suppresses_nothing(inbound, project):
    email = sent_email(project.project)
    inbound.send(sample("dsn_05.txt"), to=address_of(email), mail_from="")
    email.refresh_from_db()
    assert email.status == Email.Status.SENT
    assert events_of(email) == [("email.bounce", "soft")]
    assert Contact.objects.get(pk=email.contact_id).subscribed is True
    assert not Suppression.objects.exists()


def test_an_abuse_report_is_a_complaint(inbound, project):
    email = sent_email(project.project)
    inbound.send(ARF.format(to=address_of(email), email_id=email.id), to=address_of(email), mail_from="")
    email.refresh_from_db()
    assert email.status == Email.Status.COMPLAINED
    assert events_of(email) == [("email.complaint", None)]
    assert Suppression.objects.filter(email="ann@example.test", reason="COMPLAINT").exists()
    assert WebhookReceipt.objects.get(provider="smtp").detail == "complaint"


@pytest.mark.parametrize("forged", ["tampered", "other-secret", "garbage"])
def test_a_forged_token_is_accepted_and_ignored(inbound, project, settings, forged):
    email = sent_email(project.project)
    token = token_make(email.id)
    if forged == "tampered":
        token = token[:-1] + ("a" if token[-1] != "a" else "b")
    elif forged == "other-secret":
        settings.SECRET_KEY = "another-secret-key-" + "x" * 40
        token = token_make(email.id)
        settings.SECRET_KEY = "test-only-secret-key-not-for-production-0123456789-abcdefghij"
    else:
        token = "zzzz"
    to = f"bounce+{token}@bounces.alice.test"
    unknown = SMTP_MESSAGES.labels(listener="inbound", outcome="report", reason="unknown")._value.get()
    session = inbound.send(RFC3464.format(to=to), to=to, mail_from="")
    assert (session.rcpts[0].code, session.data.line) == (250, "250 2.0.0 Ok")
    email.refresh_from_db()
    assert email.status == Email.Status.SENT and not Event.objects.exists() and not Suppression.objects.exists()
    assert SMTP_MESSAGES.labels(listener="inbound", outcome="report", reason="unknown")._value.get() == unknown + 1


def test_a_token_outlives_a_key_rotation_through_the_fallbacks(project, settings):
    email = sent_email(project.project)
    token = token_make(email.id)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-rotated-secret-key-" + "y" * 40
    assert token_read(token) == email.id and token_read(token.upper()) == email.id


def test_a_message_that_reports_nothing_changes_nothing(inbound, project):
    email = sent_email(project.project)
    raw = f"From: ann@example.test\r\nTo: {address_of(email)}\r\nSubject: Out of office\r\n\r\nBack on Monday.\r\n"
    assert inbound.send(raw, to=address_of(email), mail_from="").data.code == 250
    email.refresh_from_db()
    assert email.status == Email.Status.SENT and not Event.objects.exists()


def test_a_sent_message_bounces_back_to_its_own_return_path(inbound, project, secret_client, smtp_sink):
    body = {"to": "ann@example.test", "from": "news@alice.test", "subject": "Hello", "body": "<p>Hi</p>"}
    response = secret_client.post("/v1/send", body, format="json")
    assert response.status_code == 200, response.content
    [delivered] = smtp_sink.received
    email = Email.objects.get(pk=response.json()["data"]["emails"][0]["email"])
    assert delivered.mail_from == address_of(email)
    inbound.send(RFC3464.format(to=delivered.mail_from), to=delivered.mail_from, mail_from="")
    email.refresh_from_db()
    assert email.status == Email.Status.BOUNCED


def test_operators_find_received_mail_and_reports_in_the_admin_read_only(inbound, project, admin_client):
    email = sent_email(project.project)
    inbound.send(RFC3464.format(to=address_of(email)), to=address_of(email), mail_from="")
    raw = "From: carol@example.com\r\nTo: support@alice.test\r\nSubject: Question about Hello\r\n\r\nHi\r\n"
    inbound.send(raw, to="support@alice.test")
    received = Event.objects.get(name="email.received")
    receipt = WebhookReceipt.objects.get(provider="smtp")

    events = admin_client.get("/admin/contacts/event/", {"q": "email.received"}).content.decode()
    assert f"/admin/contacts/event/{received.pk}/change/" in events and "email.bounce" not in events
    receipts = admin_client.get("/admin/messaging/webhookreceipt/", {"provider": "smtp"}).content.decode()
    assert f"/admin/messaging/webhookreceipt/{receipt.pk}/change/" in receipts and "hard bounce" in receipts
    page = admin_client.get(f"/admin/contacts/event/{received.pk}/change/").content.decode()
    assert "Question about Hello" in page and 'name="_save"' not in page

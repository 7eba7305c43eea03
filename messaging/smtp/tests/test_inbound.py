"""Mail received on the inbound listener: who may be a recipient, what a message becomes for the project that owns
the domain (contact, event, activity, workflow, billing), and the limits."""

import base64
import smtplib
from email.message import EmailMessage

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from accounts.billing.models import Category, ProjectBilling, UsageCounter
from contacts.models import Contact, Event
from core.metrics import SMTP_MESSAGES
from domains.services import domain_create
from workflows.models import WorkflowExecution

pytestmark = pytest.mark.usefixtures("dns_server")


def message(*, sender="Carol <carol@example.com>", to="support@alice.test", subject="Order 42", **headers) -> bytes:
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = sender, to, subject
    mail["Message-ID"] = "<m1@example.com>"
    for name, value in headers.items():
        mail[name.replace("_", "-")] = value
    mail.set_content("Where is my order?")
    mail.add_alternative("<p>Where is my order?</p>", subtype="html")
    mail.add_attachment(b"%PDF-1.4 invoice", maintype="application", subtype="pdf", filename="invoice.pdf")
    return mail.as_bytes()


def received(project):
    return list(Event.objects.filter(project=project.project, name="email.received"))


def counted(outcome: str, reason: str = "") -> float:
    return SMTP_MESSAGES.labels(listener="inbound", outcome=outcome, reason=reason)._value.get()


@pytest.mark.parametrize(
    "address",
    [
        "someone@pending.test",  # claimed by the project, not verified
        "someone@nobody.test",  # nobody's domain
        "someone@sub.alice.test",  # a subdomain of a verified domain is another domain
        "someone@alice.test.evil.example",
        "bounce+abc@alice.test.evil.example",
        "bounce+abc@bounces.pending.test",  # a bounce address of a domain nobody verified
        "no-domain",
        "someone@[127.0.0.1]",
    ],
)
def test_only_verified_domains_and_their_bounce_addresses_are_recipients(inbound, project, address):
    domain_create(project=project.project, name="pending.test")
    relayed = counted("refused", "relay")
    session = inbound.send(message(to=address), to=address)
    assert session.rcpts[0].line == "550 5.7.1 Relay access denied"
    assert session.data is None
    assert not Event.objects.exists() and not Contact.objects.exists()
    assert counted("refused", "relay") == relayed + 1


def test_a_message_becomes_the_senders_contact_an_event_an_activity_item_and_a_unit_of_inbound(
    inbound, project, other_project, secret_client
):
    raw = message(Cc="Dan <dan@example.com>", In_Reply_To="<first@alice.test>", References="<a@x> <first@alice.test>")
    before = counted("received")
    session = inbound.send(raw, to="support@alice.test")
    assert session.data.line == "250 2.0.0 Ok"

    contact = Contact.objects.get(project=project.project)
    assert (contact.email, contact.subscribed) == ("carol@example.com", True)
    [event] = received(project)
    assert event.contact_id == contact.id
    assert event.data == {
        "messageId": "<m1@example.com>",
        "from": "carol@example.com",
        "fromName": "Carol",
        "to": ["support@alice.test"],
        "cc": ["dan@example.com"],
        "subject": "Order 42",
        "text": "Where is my order?\n",
        "html": "<p>Where is my order?</p>\n",
        "inReplyTo": "<first@alice.test>",
        "references": ["<a@x>", "<first@alice.test>"],
        "attachments": [{"filename": "invoice.pdf", "contentType": "application/pdf", "size": 16}],
        "spf": "none",
        "dkim": "none",
        "dmarc": "none",
    }
    [item] = secret_client.get("/activity", {"type": "email.received"}).json()["data"]
    assert (item["type"], item["contactEmail"], item["metadata"]["subject"]) == (
        "email.received",
        "carol@example.com",
        "Order 42",
    )
    usage = UsageCounter.objects.filter(project=project.project, category=Category.INBOUND)
    assert sum(usage.values_list("count", flat=True)) == 1
    assert counted("received") == before + 1
    # Nothing of it reaches the other project.
    assert not received(other_project) and not Contact.objects.filter(project=other_project.project).exists()


def test_an_existing_contacts_subscription_is_not_changed(inbound, project):
    Contact.objects.create(project=project.project, email="carol@example.com", subscribed=False)
    inbound.send(message(), to="support@alice.test")
    contact = Contact.objects.get(project=project.project)
    assert contact.subscribed is False and len(received(project)) == 1


def test_one_event_per_project_with_only_its_own_recipients(inbound, project, other_project):
    to = ["support@alice.test", "sales@alice.test", "help@bob.test", "x@nobody.test"]
    session = inbound.send(message(to="support@alice.test, help@bob.test"), to=to)
    assert [reply.code for reply in session.rcpts] == [250, 250, 250, 550]
    assert session.data.code == 250
    [alice] = received(project)
    [bob] = received(other_project)
    assert alice.data["to"] == ["support@alice.test", "sales@alice.test"]
    assert bob.data["to"] == ["help@bob.test"]
    assert alice.contact.project_id == project.id and bob.contact.project_id == other_project.id
    for persona in (project, other_project):
        usage = UsageCounter.objects.filter(project=persona.project, category=Category.INBOUND)
        assert sum(usage.values_list("count", flat=True)) == 1


def test_a_received_message_starts_the_workflows_it_triggers(inbound, project, secret_client):
    workflow = secret_client.post(
        "/workflows", {"name": "Auto-reply", "triggerConfig": {"eventName": "email.received"}}, format="json"
    ).json()
    step = {"type": "DELAY", "config": {"amount": 1, "unit": "days"}}
    assert secret_client.post(f"/workflows/{workflow['id']}/steps", step, format="json").status_code == 201
    assert secret_client.patch(f"/workflows/{workflow['id']}", {"enabled": True}, format="json").status_code == 200
    inbound.send(message(), to="support@alice.test")
    [execution] = WorkflowExecution.objects.filter(workflow_id=workflow["id"])
    assert execution.contact.email == "carol@example.com"


def test_long_bodies_are_cut_at_256_kb(inbound, project):
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "carol@example.com", "support@alice.test", "Long"
    mail.set_content("é" * 200_000)  # 400,000 bytes in UTF-8
    inbound.send(mail.as_bytes(), to="support@alice.test")
    [event] = received(project)
    assert event.data["truncated"] is True
    assert len(event.data["text"].encode()) == 256 * 1024 and event.data["html"] == ""


def test_a_message_without_a_sender_address_is_refused(inbound, project):
    raw = b"To: support@alice.test\r\nSubject: who?\r\n\r\nNobody wrote this.\r\n"
    session = inbound.send(raw, to="support@alice.test", mail_from="")
    assert session.data.line == "550 5.6.0 The message has no sender address"
    assert not Event.objects.exists()


def test_past_the_inbound_cap_recipients_are_deferred_and_nothing_is_stored(inbound, project, other_project):
    ProjectBilling.objects.create(project=project.project, limit_inbound=1)
    assert inbound.send(message(), to="support@alice.test").data.code == 250
    session = inbound.send(message(), to=["support@alice.test", "help@bob.test"])
    assert session.rcpts[0].line.startswith("452 4.7.1 ")
    assert session.rcpts[1].code == 250 and session.data.code == 250
    assert len(received(project)) == 1 and len(received(other_project)) == 1


def test_several_messages_over_one_connection_each_become_an_event_within_the_cap(inbound, project):
    ProjectBilling.objects.create(project=project.project, limit_inbound=3)
    with smtplib.SMTP(inbound.host, inbound.port, local_hostname="mx.remote.example", timeout=30) as smtp:
        for n in range(3):
            assert smtp.sendmail("sender@remote.example", ["support@alice.test"], message(subject=f"Order {n}")) == {}
        # The domain is looked up once per connection, the cap for every recipient.
        with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
            smtp.sendmail("sender@remote.example", ["support@alice.test"], message(subject="Order 3"))
    assert refused.value.recipients["support@alice.test"][0] == 452
    assert sorted(event.data["subject"] for event in received(project)) == ["Order 0", "Order 1", "Order 2"]


def test_messages_are_limited_per_client_address(inbound, project, settings, one_rate_window):
    settings.SMTP_INBOUND_RATE_LIMIT_PER_MINUTE = 2
    replies = [inbound.send(message(), to="support@alice.test").mail.code for _ in range(3)]
    assert replies == [250, 250, 450]
    assert len(received(project)) == 2


# SPF, DKIM and DMARC ------------------------------------------------------------------------------------------------


@pytest.fixture
def signer(dns_zone):
    """A DKIM key of example.com published in the loopback DNS: `signer(raw)` is raw with its signature."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    dns_zone[("sel._domainkey.example.com", "TXT")] = [f"v=DKIM1; k=rsa; p={base64.b64encode(public).decode()}"]

    def sign(raw: bytes, domain: bytes = b"example.com") -> bytes:
        return dkim.sign(raw, b"sel", domain, private, include_headers=[b"from", b"to", b"subject"]) + raw

    return sign


@pytest.mark.parametrize(
    ("spf_record", "dmarc_record", "signed", "expected"),
    [
        ("v=spf1 ip4:127.0.0.1 -all", "v=DMARC1; p=reject", True, ("pass", "pass", "pass")),
        ("v=spf1 -all", "v=DMARC1; p=reject", True, ("fail", "pass", "pass")),  # DKIM aligned is enough
        ("v=spf1 ip4:127.0.0.1 -all", "v=DMARC1; p=reject", False, ("pass", "none", "pass")),  # SPF aligned
        ("v=spf1 -all", "v=DMARC1; p=reject", False, ("fail", "none", "fail")),
        ("v=spf1 ~all", None, False, ("softfail", "none", "none")),
        ("v=spf1 ?all", "v=DMARC1; p=none", False, ("neutral", "none", "fail")),
        (None, None, False, ("none", "none", "none")),
    ],
)
def test_authentication_results_are_checked_on_receipt(
    inbound, project, dns_zone, signer, spf_record, dmarc_record, signed, expected
):
    if spf_record:
        dns_zone[("example.com", "TXT")] = [spf_record]
    if dmarc_record:
        dns_zone[("_dmarc.example.com", "TXT")] = [dmarc_record]
    raw = message()
    inbound.send(signer(raw) if signed else raw, to="support@alice.test", mail_from="bounces@example.com")
    [event] = received(project)
    assert (event.data["spf"], event.data["dkim"], event.data["dmarc"]) == expected


def test_an_altered_signed_message_fails_dkim_and_an_unaligned_signature_does_not_pass_dmarc(
    inbound, project, dns_zone, signer
):
    dns_zone[("_dmarc.example.com", "TXT")] = ["v=DMARC1; p=reject"]
    dns_zone[("_dmarc.example.net", "TXT")] = ["v=DMARC1; p=reject"]
    altered = signer(message()).replace(b"Order 42", b"Order 43")
    inbound.send(altered, to="support@alice.test", mail_from="")
    unaligned = signer(message(sender="eve@example.net"))
    inbound.send(unaligned, to="support@alice.test", mail_from="")
    first, second = sorted(received(project), key=lambda event: event.created_at)
    assert (first.data["dkim"], first.data["dmarc"]) == ("fail", "fail")
    assert (second.data["dkim"], second.data["dmarc"]) == ("pass", "fail")


def test_a_dns_timeout_is_a_temporary_error_not_a_failure(inbound, project, dns_server, settings):
    dns_server.mode = "silent"
    settings.DNS_TIMEOUT_SECONDS = 0.2
    inbound.send(message(), to="support@alice.test")
    [event] = received(project)
    assert (event.data["spf"], event.data["dmarc"]) == ("temperror", "temperror")

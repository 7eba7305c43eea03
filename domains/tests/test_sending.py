"""Sender authorisation and DKIM signing: what templates, campaigns and /v1/send rely on."""

from email.message import EmailMessage

import dkim as dkimpy
import pytest

from core.errors import ServiceError
from domains.dkim import txt_lookup
from domains.models import Domain
from domains.services import domain_create, domain_mark_verified_by_operator, domain_sign_message, sender_domain_for


@pytest.mark.parametrize(
    "address",
    ["news@alice.test", "News@ALICE.TEST", "x@alice.test.", "x@mail.alice.test", "x@a.b.alice.test"],
)
def test_verified_domain_and_its_subdomains_may_send(project, address):
    assert sender_domain_for(project=project.project, address=address).name == "alice.test"


def test_closest_verified_domain_signs(project):
    domain_mark_verified_by_operator(project=project.project, name="mail.alice.test")
    assert sender_domain_for(project=project.project, address="x@eu.mail.alice.test").name == "mail.alice.test"


@pytest.mark.parametrize(
    ("address", "named"),
    [
        ("x@bob.test", "bob.test"),  # verified, but for the other project
        ("x@notalice.test", "notalice.test"),
        ("x@test", "test"),
        ("x@pending.example", "pending.example"),
        ("not-an-address", "not-an-address"),
    ],
)
def test_other_senders_are_403_naming_the_domain(project, other_project, address, named):
    from core.errors import ServiceError

    domain_create(project=project.project, name="pending.example")
    with pytest.raises(ServiceError) as caught:
        sender_domain_for(project=project.project, address=address)
    assert (caught.value.status, caught.value.code) == (403, "DOMAIN_NOT_VERIFIED")
    assert f'"{named}"' in caught.value.message


def test_a_sender_is_remembered_until_its_domain_changes(project, django_assert_num_queries):
    """Accepting a send does not ask the database again for a sender it has just authorised; saving or deleting a
    domain of the project is seen at once."""
    sender_domain_for(project=project.project, address="news@mail.alice.test")
    with django_assert_num_queries(0):
        assert sender_domain_for(project=project.project, address="news@mail.alice.test").name == "alice.test"
    # A closer domain verified since: it signs from now on.
    domain_mark_verified_by_operator(project=project.project, name="mail.alice.test")
    assert sender_domain_for(project=project.project, address="news@mail.alice.test").name == "mail.alice.test"
    domain = Domain.objects.get(name="mail.alice.test")
    domain.status = Domain.Status.PENDING
    domain.save()
    assert sender_domain_for(project=project.project, address="news@mail.alice.test").name == "alice.test"
    Domain.objects.get(name="alice.test").delete()
    from core.errors import ServiceError

    with pytest.raises(ServiceError):
        sender_domain_for(project=project.project, address="news@mail.alice.test")


def test_signing_always_asks_the_database(project, django_assert_num_queries):
    sender_domain_for(project=project.project, address="news@alice.test")
    with django_assert_num_queries(1):
        assert sender_domain_for(project=project.project, address="news@alice.test", for_signing=True).pk


def message(sender: str) -> bytes:
    msg = EmailMessage()
    msg["From"] = f"Alice <{sender}>"
    msg["To"] = "someone@example.net"
    msg["Subject"] = "Hello"
    msg["Date"] = "Sun, 22 Nov 2026 01:02:03 +0000"
    msg["Message-ID"] = "<1@alice.test>"
    msg.set_content("Hi there,\nthis is signed.\n")
    return msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))


def test_signature_verifies_against_the_published_record(secret_client, dns_zone):
    body = secret_client.post("/domains", {"domain": "signed.example"}, format="json").json()
    dkim_record = next(r for r in body["records"] if r["purpose"] == "dkim")
    dns_zone[(dkim_record["name"], "TXT")] = [dkim_record["value"]]
    assert secret_client.get(f"/domains/{body['id']}/verify").json()["status"] == "verified"

    domain = sender_domain_for(project=Domain.objects.get(pk=body["id"]).project, address="news@eu.signed.example")
    raw = message("news@eu.signed.example")
    header = domain_sign_message(domain=domain, message=raw)

    assert header.startswith(b"DKIM-Signature: ")
    assert b"d=signed.example" in header and f"s={body['dkimSelector']}".encode() in header
    assert dkimpy.verify(header + raw, dnsfunc=txt_lookup)
    # Tampering breaks it; the wrong published key does too.
    assert not dkimpy.verify(header + raw.replace(b"this is signed", b"this is forged"), dnsfunc=txt_lookup)
    other = domain_create(project=domain.project, name="other.example")
    dns_zone[(dkim_record["name"], "TXT")] = [f"v=DKIM1; k=rsa; p={other.dkim_public_key}"]
    assert not dkimpy.verify(header + raw, dnsfunc=txt_lookup)


def test_operator_verified_domain_gets_a_key_on_first_signature(project, dns_zone):
    domain = Domain.objects.get(name="alice.test")
    assert domain.dkim_public_key == ""
    header = domain_sign_message(domain=domain, message=message("x@alice.test"))
    domain.refresh_from_db()
    assert domain.dkim_selector and domain.dkim_public_key
    dns_zone[(f"{domain.dkim_selector}._domainkey.alice.test", "TXT")] = [f"v=DKIM1; k=rsa; p={domain.dkim_public_key}"]
    assert dkimpy.verify(header + message("x@alice.test"), dnsfunc=txt_lookup)


def test_private_key_survives_a_secret_key_rotation_listed_in_fallbacks(project, settings):
    domain = domain_create(project=project.project, name="rotate.example")
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-brand-new-secret-key-for-this-test-only-0123456789"
    assert domain_sign_message(domain=domain, message=message("x@rotate.example")).startswith(b"DKIM-Signature")
    settings.SECRET_KEY_FALLBACKS = []
    with pytest.raises(ServiceError) as refused:
        domain_sign_message(domain=domain, message=message("x@rotate.example"))
    assert refused.value.message == 'The DKIM key of domain "rotate.example" can no longer be read by the service'


@pytest.mark.parametrize("linesep", ["\r\n", "\n"])
def test_signature_covers_the_present_signed_headers_whatever_the_line_ends(project, dns_zone, linesep):
    domain = Domain.objects.get(name="alice.test")
    lines = [
        "X-Mailer: not signed",
        "From: Alice <x@alice.test>",
        "To: someone@example.net",
        "Subject: a subject folded",
        "  over two lines",
        "Date: Sun, 22 Nov 2026 01:02:03 +0000",
        "Message-ID: <2@alice.test>",
        "",
        ". a line with a leading dot",
        "",
    ]
    raw = linesep.join(lines).encode()
    header = domain_sign_message(domain=domain, message=raw)
    domain.refresh_from_db()
    dns_zone[(f"{domain.dkim_selector}._domainkey.alice.test", "TXT")] = [f"v=DKIM1; k=rsa; p={domain.dkim_public_key}"]

    tags = dkimpy.util.parse_tag_value(header.split(b":", 1)[1])
    assert b"".join(tags[b"h"].split()) == b"from:to:subject:date:message-id"
    assert dkimpy.verify(header + raw, dnsfunc=txt_lookup)
    assert not dkimpy.verify(header + raw.replace(b"over two", b"over 2"), dnsfunc=txt_lookup)
    assert dkimpy.verify(header + raw.replace(b"not signed", b"changed"), dnsfunc=txt_lookup)

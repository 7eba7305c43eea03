"""The submission listener driven as an app would drive it: Python's smtplib over STARTTLS (and plaintext on
loopback), against the real server in process, with the emails delivered to a real SMTP sink."""

import smtplib
import threading
import tracemalloc
import uuid
from email import policy
from email.message import EmailMessage

import dkim
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from django.utils import timezone
from prometheus_client import REGISTRY

from accounts.billing.services import billing_limits_update
from accounts.models import IdempotencyRecord
from accounts.tenancy.services import project_disable
from config.tests.processes import wait_until
from contacts.models import Contact
from domains.dkim import record_name, record_value
from domains.models import Domain
from messaging.feedback.suppression import suppression_add
from messaging.models import Email, Suppression, created_window
from messaging.smtp import submission
from messaging.smtp.server import Listener, SmtpServer
from messaging.smtp.submission import SubmissionHandler
from messaging.smtp.tests.servers import running
from workflows.tests.receivers import certificates

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """STARTTLS offered; AUTH only after it."""
    with running(tls_folder=tmp_path_factory.mktemp("tls"), SMTP_ALLOW_PLAINTEXT_AUTH=False) as server:
        yield server


@pytest.fixture(scope="module")
def plain_server():
    """No TLS, plaintext AUTH allowed: loopback only, as `make run` has it."""
    with running(SMTP_ALLOW_PLAINTEXT_AUTH=True) as server:
        yield server


def message(*, to="Ann Lee <ann@example.test>", sender="Alice Shop <hello@alice.test>", message_id=None, **headers):
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = headers.pop("subject", "Your order")
    msg["Message-ID"] = message_id or f"<{uuid.uuid4()}@app.example>"
    for name, value in headers.items():
        msg[name.replace("_", "-")] = value
    msg.set_content("Hello in text\n")
    msg.add_alternative("<p>Hello <b>in HTML</b></p>", subtype="html")
    return msg


def submit(client: smtplib.SMTP, msg, recipients) -> tuple[int, str]:
    """MAIL, RCPT for each recipient and DATA; the reply to DATA (a refused RCPT raises)."""
    client.mail("app@example.test")
    for recipient in recipients:
        code, reply = client.rcpt(recipient)
        assert code == 250, (recipient, code, reply)
    code, reply = client.data(msg.as_bytes(policy=policy.SMTP) if isinstance(msg, EmailMessage) else msg)
    return code, reply.decode()


def counted(outcome: str, reason: str = "") -> float:
    labels = {"listener": "submission", "outcome": outcome, "reason": reason}
    return REGISTRY.get_sample_value("herald_smtp_messages_total", labels) or 0


def test_a_message_to_one_recipient_gets_a_time_ordered_id_like_every_email(tls_server, project, smtp_sink):
    with tls_server.client(key=project.keys.secret_key) as client:
        code, reply = submit(client, message(), ["ann@example.test"])
    assert code == 250, reply
    email = Email.objects.get(to_email="ann@example.test")
    assert reply == f"2.0.0 Ok: queued as {email.id}"
    # Its id names its month, so a lookup by id (a tracked open, the delivery claim) reads that month alone.
    assert email.id.version == 7 and created_window([email.id]) is not None


def test_a_message_becomes_one_signed_email_per_recipient_and_bcc_never_shows(tls_server, project, smtp_sink):
    msg = message(Cc="Bob <bob@example.test>", Reply_To="support@alice.test", X_Order="42")
    msg.add_attachment(b"%PDF-1.4 invoice", maintype="application", subtype="pdf", filename="invoice.pdf")
    accepted_before = counted("accepted")
    with tls_server.client(key=project.keys.secret_key) as client:
        code, reply = submit(client, msg, ["ann@example.test", "bob@example.test", "carol@example.test"])

    assert code == 250, reply
    first = Email.objects.get(to_email="ann@example.test")
    assert reply == f"2.0.0 Ok: queued as {first.id}"
    assert counted("accepted") == accepted_before + 1
    emails = Email.objects.filter(project=project.project)
    assert sorted(emails.values_list("to_email", flat=True)) == [
        "ann@example.test",
        "bob@example.test",
        "carol@example.test",
    ]
    assert {e.subject for e in emails} == {"Your order"}
    assert Contact.objects.get(project=project.project, email="ann@example.test").data == {"name": "Ann Lee"}
    assert Contact.objects.filter(project=project.project).count() == 3

    received = wait_until(lambda: len(smtp_sink.received) == 3 and smtp_sink.received, timeout=10, what="delivery")
    domain = Domain.objects.get(name="alice.test")
    published = {record_name(selector=domain.dkim_selector, domain_name="alice.test"): domain.dkim_public_key}
    by_recipient = {r.rcpt_tos[0]: r for r in received}
    assert sorted(by_recipient) == ["ann@example.test", "bob@example.test", "carol@example.test"]
    for address, copy in by_recipient.items():
        mail = copy.message
        assert address in mail["To"] and "," not in mail["To"]
        assert mail["Cc"] is None and mail["Bcc"] is None
        assert (mail["From"], mail["Reply-To"], mail["X-Order"]) == (
            "Alice Shop <hello@alice.test>",
            "support@alice.test",
            "42",
        )
        assert "<b>in HTML</b>" in copy.html
        assert [part.get_filename() for part in mail.iter_attachments()] == ["invoice.pdf"]
        assert b"carol@example.test" not in copy.raw or address == "carol@example.test"
        assert dkim.verify(
            copy.raw, dnsfunc=lambda name, timeout=5: record_value(published[name.decode()[:-1]]).encode()
        )
    assert by_recipient["ann@example.test"].message["To"] == "Ann Lee <ann@example.test>"


def test_the_text_part_of_a_message_is_the_text_alternative_of_every_copy(plain_server, project, smtp_sink):
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "hello@alice.test", "Ann Lee <ann@example.test>", "Both"
    msg.set_content("Dear {{ name }},\n\n  indented line, kept as written\nSee https://alice.test/o/42\n")
    msg.add_alternative('<p>Dear {{ name }}, <a href="https://alice.test/o/42">your order</a></p>', subtype="html")
    with plain_server.client(tls=False, key=project.keys.secret_key) as client:
        assert submit(client, msg, ["ann@example.test"])[0] == 250
    [copy] = wait_until(lambda: smtp_sink.received, timeout=10, what="delivery")
    assert copy.message.get_content_type() == "multipart/alternative"
    # The submitted text, rendered like the subject and body, not one made from the HTML ("your order (https:...)").
    text = "Dear Ann Lee,\n\n  indented line, kept as written\nSee https://alice.test/o/42\n"
    assert copy.text.replace("\r\n", "\n") == text  # lines end in CRLF on the wire
    assert copy.html.startswith("<p>Dear Ann Lee, <a href=")
    email = Email.objects.get(project=project.project)
    assert email.text == text and email.html.startswith("<p>Dear Ann Lee")


def test_a_text_only_message_is_sent_as_text_plain_with_its_lines(plain_server, project, smtp_sink):
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "hello@alice.test", "ann@example.test", "Plain"
    lines = ["Line one & more", "Line two <not a tag>", "", "    four spaces, then a long line " + "x" * 120]
    msg.set_content("\n".join(lines) + "\n")
    with plain_server.client(tls=False, key=project.keys.secret_key) as client:
        assert submit(client, msg, ["ann@example.test"])[0] == 250
    [copy] = wait_until(lambda: smtp_sink.received, timeout=10, what="delivery")
    mail = copy.message
    assert mail.get_content_type() == "text/plain" and not mail.is_multipart()
    assert mail.get_body(("html",)) is None
    assert mail.get_content().splitlines() == lines
    assert mail["From"] == "Alice's shop <hello@alice.test>"  # no name: the project's, as /v1/send
    email = Email.objects.get(project=project.project)
    assert (email.html, email.text) == ("", "\n".join(lines) + "\n")


def test_a_resent_message_id_is_answered_the_same_and_stored_once(plain_server, project, other_project, smtp_sink):
    msg = message(message_id="<order-42@app.example>")
    with plain_server.client(tls=False, key=project.keys.secret_key) as client:
        first = submit(client, msg, ["ann@example.test"])
        again = submit(client, msg, ["ann@example.test", "bob@example.test"])
    assert first[0] == 250 and again == first
    assert Email.objects.filter(project=project.project).count() == 1
    # The other project's message with the same Message-ID is its own.
    other = message(sender="hello@bob.test", message_id="<order-42@app.example>")
    with plain_server.client(tls=False, key=other_project.keys.secret_key) as client:
        theirs = submit(client, other, ["ann@example.test"])
    assert theirs[0] == 250 and theirs != first
    assert Email.objects.filter(project=other_project.project).count() == 1
    wait_until(lambda: len(smtp_sink.received) == 2, timeout=10, what="delivery")


def test_several_messages_over_one_connection_each_become_their_emails(plain_server, project, smtp_sink):
    resent = message(message_id="<again@app.example>")
    with plain_server.client(tls=False, key=project.keys.secret_key) as client:
        replies = [submit(client, message(subject=f"Order {n}"), [f"r{n}@example.test"]) for n in range(4)]
        first = submit(client, resent, ["ann@example.test"])
        replies += [submit(client, message(subject="Order 4"), ["r4@example.test", "r5@example.test"])]
        assert submit(client, resent, ["ann@example.test"]) == first
    assert [code for code, _ in replies] == [250] * 5
    emails = Email.objects.filter(project=project.project)
    subjects = sorted(emails.values_list("subject", flat=True))
    assert subjects == ["Order 0", "Order 1", "Order 2", "Order 3", "Order 4", "Order 4", "Your order"]
    # Each reply names its own message's first email.
    firsts = ["r0", "r1", "r2", "r3", "ann", "r4"]
    expected = [f"2.0.0 Ok: queued as {emails.get(to_email=f'{name}@example.test').id}" for name in firsts]
    assert [reply for _, reply in [*replies[:4], first, replies[4]]] == expected
    wait_until(lambda: len(smtp_sink.received) == 7, timeout=10, what="delivery")


@pytest.mark.parametrize("recipients", [1, 2])
def test_a_message_id_past_its_records_lifetime_is_accepted_again(plain_server, project, recipients):
    msg = message(message_id="<old@app.example>")
    to = ["ann@example.test", "bob@example.test"][:recipients]
    with plain_server.client(tls=False, key=project.keys.secret_key) as client:
        first = submit(client, msg, to)
        IdempotencyRecord.objects.filter(project=project.project).update(expires_at=timezone.now())
        again = submit(client, msg, to)
        assert submit(client, msg, to) == again
    assert first[0] == again[0] == 250 and again != first
    assert Email.objects.filter(project=project.project).count() == 2 * recipients


def test_a_text_message_with_an_attachment_is_sent_with_it(plain_server, project, smtp_sink):
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "hello@alice.test", "ann@example.test", "Invoice"
    msg.set_content("Your invoice is attached.\n")
    msg.add_attachment(b"%PDF-1.4 invoice", maintype="application", subtype="pdf", filename="invoice.pdf")
    with plain_server.client(tls=False, key=project.keys.secret_key) as client:
        assert submit(client, msg, ["ann@example.test"])[0] == 250
    [copy] = wait_until(lambda: smtp_sink.received, timeout=10, what="delivery")
    assert copy.text.startswith("Your invoice is attached.")
    assert [part.get_filename() for part in copy.message.iter_attachments()] == ["invoice.pdf"]


@pytest.mark.parametrize("recipients", [1, 2])
def test_concurrent_resends_store_the_message_once(plain_server, project, smtp_sink, recipients):
    msg = message(message_id="<race@app.example>")
    replies, start = [], threading.Barrier(3)

    def send():
        with plain_server.client(tls=False, key=project.keys.secret_key) as client:
            client.mail("app@example.test")
            for recipient in ["ann@example.test", "bob@example.test"][:recipients]:
                client.rcpt(recipient)
            start.wait(timeout=10)
            replies.append(client.data(msg.as_bytes(policy=policy.SMTP)))

    threads = [threading.Thread(target=send) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(replies) == 3 and len(set(replies)) == 1 and replies[0][0] == 250
    assert Email.objects.filter(project=project.project).count() == recipients


@pytest.mark.parametrize("credential", ["public", "unknown", "disabled"])
def test_only_an_enabled_projects_secret_key_authenticates(tls_server, project, credential):
    key = {"public": project.keys.public_key, "unknown": "sk_" + "0" * 64}.get(credential, project.keys.secret_key)
    if credential == "disabled":
        project_disable(project=project.project, reason="abuse")
    with tls_server.client() as client, pytest.raises(smtplib.SMTPAuthenticationError) as refused:
        client.login("herald", key)
    assert (refused.value.smtp_code, refused.value.smtp_error) == (535, b"5.7.8 Authentication credentials invalid")


def test_auth_before_starttls_and_mail_before_auth_are_refused(tls_server, project):
    with tls_server.client(tls=False) as client:
        assert "starttls" in client.esmtp_features and "auth" not in client.esmtp_features
        code, reply = client.docmd("AUTH", "PLAIN " + "AGhlcmFsZABzaw==")
        assert (code, reply) == (538, b"5.7.11 Encryption required for requested authentication mechanism")
    with tls_server.client() as client:
        assert client.mail("app@example.test") == (530, b"5.7.0 Authentication required")


def test_more_than_ten_failed_attempts_close_the_connection_and_lock_the_address(plain_server, project, redis_cache):
    with plain_server.client(tls=False) as client:
        for _ in range(submission.AUTH_FAILURES_ALLOWED):
            assert client.docmd("AUTH", "PLAIN " + _plain("sk_wrong"))[0] == 535
        code, reply = client.docmd("AUTH", "PLAIN " + _plain("sk_wrong"))
        assert (code, reply) == (421, b"4.7.0 Too many failed authentication attempts, try again later")
        with pytest.raises(smtplib.SMTPServerDisconnected):
            client.noop()
    # Even the right key is refused from that address until the window has passed.
    with plain_server.client(tls=False) as client:
        code, _ = client.docmd("AUTH", "PLAIN " + _plain(project.keys.secret_key))
        assert code == 421


def _plain(password: str) -> str:
    import base64

    return base64.b64encode(f"\0herald\0{password}".encode()).decode()


def test_a_suppressed_recipient_is_refused_and_the_others_go_on(plain_server, project, other_project, smtp_sink):
    suppression_add(project=project.project, email="bob@example.test", reason=Suppression.Reason.BOUNCE)
    suppression_add(project=other_project.project, email="ann@example.test", reason=Suppression.Reason.BOUNCE)
    with plain_server.client(tls=False, key=project.keys.secret_key) as client:
        client.mail("app@example.test")
        assert client.rcpt("bob@example.test") == (550, b"5.7.1 bob@example.test is suppressed after a hard bounce")
        assert client.rcpt("ann@example.test")[0] == 250  # suppressed by the other project only
        assert client.data(message().as_bytes(policy=policy.SMTP))[0] == 250
    assert list(Email.objects.values_list("to_email", flat=True)) == ["ann@example.test"]


def test_recipients_past_the_limit_are_refused(plain_server, project, settings):
    settings.SMTP_MAX_RECIPIENTS = 2
    with plain_server.client(tls=False, key=project.keys.secret_key) as client:
        client.mail("app@example.test")
        assert client.rcpt("a@example.test")[0] == client.rcpt("b@example.test")[0] == 250
        assert client.rcpt("c@example.test") == (452, b"4.5.3 Too many recipients")
        assert client.data(message().as_bytes(policy=policy.SMTP))[0] == 250
    assert Email.objects.count() == 2


DISPLAY_NAME_WITH_LINE_BREAK = (
    b"From: =?utf-8?q?Evil=0D=0ABcc=3A_x=40evil=2Etest?= <hello@alice.test>\r\nTo: ann@example.test\r\n"
    b"Subject: Hi\r\nMessage-ID: <nl@app.example>\r\n\r\nHello\r\n"
)


@pytest.mark.parametrize(
    "raw, code, reply",
    [
        (message(sender="hello@unverified.test"), 550, "5.7.1 Domain"),
        (message(sender="hello@bob.test"), 550, "5.7.1 Domain"),  # the other project's domain
        (DISPLAY_NAME_WITH_LINE_BREAK, 550, "5.6.0 from.name"),
        (b"To: ann@example.test\r\nSubject: Hi\r\n\r\nNo sender\r\n", 554, "5.6.0 The message cannot be parsed"),
        (
            b"From: hello@alice.test\r\nSubject: Hi\r\nContent-Type: application/pdf\r\n\r\nJVBERg==\r\n",
            554,
            "5.6.0 The message cannot be parsed",
        ),
    ],
    ids=["unverified", "other-projects-domain", "line-break-in-name", "no-from", "no-body"],
)
def test_a_refused_message_stores_nothing(plain_server, project, other_project, raw, code, reply):
    with plain_server.client(tls=False, key=project.keys.secret_key) as client:
        answer = submit(client, raw, ["ann@example.test"])
    assert answer[0] == code and answer[1].startswith(reply), answer
    assert Email.objects.count() == Contact.objects.count() == 0


def test_past_the_monthly_cap_a_message_is_refused_for_now(plain_server, project, other_project):
    billing_limits_update(project=project.project, changes={"transactional": 1})
    with plain_server.client(tls=False, key=project.keys.secret_key) as client:
        assert submit(client, message(), ["ann@example.test"])[0] == 250
        code, reply = submit(client, message(), ["bob@example.test"])
    assert (code, reply[:6]) == (452, "4.7.1 ")
    assert list(Email.objects.values_list("to_email", flat=True)) == ["ann@example.test"]
    with plain_server.client(tls=False, key=other_project.keys.secret_key) as client:
        assert submit(client, message(sender="hello@bob.test"), ["bob@example.test"])[0] == 250


def test_messages_count_against_the_projects_rate_limit(
    plain_server, project, other_project, settings, one_rate_window
):
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    with plain_server.client(tls=False, key=project.keys.secret_key) as client:
        assert submit(client, message(), ["ann@example.test"])[0] == 250
        code, reply = submit(client, message(), ["ann@example.test"])
    assert (code, reply.split(" try again")[0]) == (451, "4.7.1 Rate limit exceeded,")
    assert Email.objects.filter(project=project.project).count() == 1
    with plain_server.client(tls=False, key=other_project.keys.secret_key) as client:
        assert submit(client, message(sender="hello@bob.test"), ["ann@example.test"])[0] == 250


def test_an_internal_error_is_a_temporary_failure_never_a_crash(plain_server, project, monkeypatch, caplog):
    def planted(**kwargs):
        raise RuntimeError("planted")

    monkeypatch.setattr(submission, "emails_queue", planted)
    with plain_server.client(tls=False, key=project.keys.secret_key) as client:
        assert submit(client, message(), ["ann@example.test"]) == (451, "4.3.0 Internal error, try again later")
        assert client.noop()[0] == 250  # the session goes on
    assert "planted" in caplog.text


def test_a_huge_message_is_refused_without_being_kept(project, tmp_path):
    limited = running(SMTP_ALLOW_PLAINTEXT_AUTH=True, SMTP_MAX_MESSAGE_BYTES=1024 * 1024)
    with limited as server, server.client(tls=False, key=project.keys.secret_key) as client:
        assert client.esmtp_features["size"] == str(1024 * 1024)
        assert client.mail("app@example.test", ["SIZE=5000000"]) == (552, b"5.3.4 Message too big for system")
        client.mail("app@example.test")
        client.rcpt("ann@example.test")
        assert client.docmd("DATA")[0] == 354
        line = b"x" * 998 + b"\r\n"
        chunk = line * 1000  # 1 MB
        tracemalloc.start()
        for _ in range(32):
            client.send(chunk)
        client.send(b".\r\n")
        code, reply = client.getreply()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert (code, reply) == (552, b"5.3.4 Message too big for system")
        assert peak < 8 * 1024 * 1024, f"{peak:,} bytes held while 32 MB went by"
        assert client.noop()[0] == 250
    assert Email.objects.count() == 0


def test_plaintext_auth_is_refused_off_loopback_unless_tls_is_configured(tmp_path):
    listener = Listener("submission", "0.0.0.0:2587", SubmissionHandler())
    with override_settings(SMTP_ALLOW_PLAINTEXT_AUTH=True), pytest.raises(ImproperlyConfigured, match="loopback"):
        SmtpServer([listener])
    certificates(tmp_path, "mail.example.test")
    cert, key = str(tmp_path / "server.pem"), str(tmp_path / "server.key")
    with override_settings(SMTP_ALLOW_PLAINTEXT_AUTH=True, SMTP_TLS_CERT_FILE=cert, SMTP_TLS_KEY_FILE=key):
        assert SmtpServer([listener]).config.tls is not None


def test_stopping_closes_idle_sessions_with_421(project):
    with running(SMTP_ALLOW_PLAINTEXT_AUTH=True) as server:
        client = server.client(tls=False, key=project.keys.secret_key)
    assert client.getreply() == (421, b"4.3.2 Service shutting down")

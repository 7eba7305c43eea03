"""Delivery discipline: each accepted email handed to the transport exactly once, failures sorted."""

import asyncio
import re
import smtplib
import threading
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from conftest import client_with, concurrently
from contacts.models import Event
from domains.models import Domain
from domains.services import domain_dkim_key_ensure
from messaging.models import Email
from messaging.sending import dispatch
from messaging.sending.delivery import emails_claim, emails_deliver, emails_sweep
from messaging.sending.tasks import deliver_emails_task, sweep_emails_task
from messaging.sending.throttle import send_slot_wait

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(send, smtp_sink, settings):
    """Three accepted emails whose delivery tasks were lost (as if the broker had dropped them)."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    from messaging.sending import services as sending

    original = sending.enqueue_delivery
    sending.enqueue_delivery = lambda ids: None
    try:
        response = send(
            {
                "to": ["a@example.test", "b@example.test", "c@example.test"],
                "from": "hi@alice.test",
                "subject": "S",
                "body": "<p>B</p>",
            }
        )
    finally:
        sending.enqueue_delivery = original
    assert response.status_code == 200
    assert smtp_sink.received == []
    return [entry["email"] for entry in response.json()["data"]["emails"]]


def test_duplicate_tasks_send_each_email_once(queued, smtp_sink):
    deliver_emails_task.delay(queued)
    deliver_emails_task.delay(queued)
    deliver_emails_task.delay(queued[:1])
    assert sorted(r.rcpt_tos[0] for r in smtp_sink.received) == ["a@example.test", "b@example.test", "c@example.test"]
    assert Event.objects.filter(name="email.sent").count() == 3
    assert set(Email.objects.values_list("status", flat=True)) == {"SENT"}


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicate_tasks_send_each_email_once(queued, smtp_sink):
    concurrently(lambda _: emails_deliver(email_ids=queued), range(4), threads=4)
    assert len(smtp_sink.received) == 3
    assert Email.objects.filter(status="SENT").count() == 3


def test_a_worker_that_died_mid_batch_loses_nothing_and_repeats_nothing(queued, smtp_sink, settings):
    # The crash point: the batch was claimed and the first email sent, then the worker died.
    emails_claim(email_ids=queued)
    Email.objects.filter(id=queued[0]).update(status="SENT", sent_at=timezone.now())
    # The broker redelivers the task (acks_late) before the claim times out: nothing is claimable yet.
    assert emails_deliver(email_ids=queued).sent == []
    # After the claim timeout the sweeper puts the unsent rows back and queues them.
    later = timezone.now() + timedelta(seconds=settings.DELIVERY_LEASE_SECONDS + 200)
    overdue = emails_sweep(now=later)
    assert sorted(map(str, overdue)) == sorted(queued[1:])
    emails_deliver(email_ids=overdue)
    assert sorted(r.rcpt_tos[0] for r in smtp_sink.received) == ["b@example.test", "c@example.test"]
    assert Email.objects.filter(status="SENT").count() == 3


def test_a_message_that_cannot_be_built_fails_alone_after_its_attempts(queued, smtp_sink, settings, monkeypatch):
    """A row whose MIME or DKIM step raises something unexpected (here an error planted in the build of one email)
    is retried like a transient failure, then FAILED with its error; the rest of its batch is sent meanwhile."""
    from messaging.sending import delivery

    settings.DELIVERY_MAX_ATTEMPTS = 2
    prepare = delivery._prepare

    def failing_for_bob(email, domains):
        if email.to_email == "b@example.test":
            raise RuntimeError("the build broke")
        return prepare(email, domains)

    monkeypatch.setattr(delivery, "_prepare", failing_for_bob)
    report = emails_deliver(email_ids=queued)
    assert sorted(r.rcpt_tos[0] for r in smtp_sink.received) == ["a@example.test", "c@example.test"]
    assert dict(Email.objects.values_list("to_email", "status")) == {
        "a@example.test": "SENT",
        "b@example.test": "QUEUED",
        "c@example.test": "SENT",
    }
    assert list(report.retry) == [Email.objects.get(id=queued[1]).id]
    Email.objects.filter(id=queued[1]).update(next_attempt_at=timezone.now())
    emails_deliver(email_ids=queued)
    email = Email.objects.get(id=queued[1])
    assert (email.status, email.attempts) == ("FAILED", 2)
    assert email.last_error.startswith("Could not send the message: ")
    assert Event.objects.get(name="email.failed").data["error"] == email.last_error
    assert len(smtp_sink.received) == 2


def test_a_dkim_key_that_no_longer_decrypts_fails_the_mail_at_once(queued, smtp_sink, settings):
    domain_dkim_key_ensure(domain=Domain.objects.get(name="alice.test"))
    settings.SECRET_KEY = "a-new-secret-key-without-the-former-one-in-fallbacks-0123456789"
    report = emails_deliver(email_ids=queued)
    assert smtp_sink.received == [] and report.retry == {}
    assert set(Email.objects.values_list("status", "last_error")) == {
        ("FAILED", 'The DKIM key of domain "alice.test" can no longer be read by the service')
    }
    assert Event.objects.filter(name="email.failed").count() == 3


def test_the_sweeper_publishes_a_campaigns_overdue_rows_again_behind_transactional_mail(
    queued, smtp_sink, settings, monkeypatch
):
    """A large campaign's rows still wait in the broker after the publish grace; published again, they keep the
    campaign's priority, so they do not go ahead of the transactional mail accepted meanwhile."""
    Email.objects.filter(id=queued[0]).update(campaign_id=uuid.uuid4())
    Email.objects.update(updated_at=timezone.now() - timedelta(seconds=settings.DELIVERY_PUBLISH_GRACE_SECONDS + 1))
    published = []
    monkeypatch.setattr(
        dispatch, "delivery_tasks_publish", lambda ids, priority=None: published.append((sorted(ids), priority))
    )
    sweep_emails_task.delay()
    assert sorted(published) == sorted([(sorted(queued[1:]), None), ([queued[0]], dispatch.BULK_PRIORITY)])


def test_rows_of_workers_that_keep_dying_fail_once_their_attempts_are_used(queued, smtp_sink, settings):
    """Each claim counts an attempt: the sweeper requeues a dead worker's rows while they have attempts left, then
    fails them with an event instead of handing them to the next worker for ever."""
    settings.DELIVERY_MAX_ATTEMPTS = 2
    later = timezone.now() + timedelta(seconds=settings.DELIVERY_LEASE_SECONDS + 1)
    emails_claim(email_ids=queued)  # the worker dies
    assert sorted(map(str, emails_sweep(now=later))) == sorted(queued)
    assert set(Email.objects.values_list("status", "attempts")) == {("QUEUED", 1)}
    emails_claim(email_ids=queued)  # and the next one too
    assert emails_sweep(now=later) == []
    assert set(Email.objects.values_list("status", "attempts")) == {("FAILED", 2)}
    assert Event.objects.filter(name="email.failed").count() == 3
    assert smtp_sink.received == []


@pytest.mark.django_db(transaction=True)
def test_a_worker_on_a_slow_relay_keeps_its_lease_while_it_sends(queued, smtp_sink, settings):
    """The batch takes longer than the lease: the worker renews it, so the sweeper and a second worker running all
    along take nothing from it and every message goes once."""
    settings.DELIVERY_LEASE_SECONDS = 2
    smtp_sink.delay = 0.8  # three messages: 2.4 s
    domain_dkim_key_ensure(domain=Domain.objects.get(name="alice.test"))  # no key to make during the first message

    def first_worker():
        try:
            emails_deliver(email_ids=queued)
        finally:
            connection.close()

    worker = threading.Thread(target=first_worker)
    worker.start()
    try:
        while worker.is_alive():
            emails_deliver(email_ids=emails_sweep())
            time.sleep(0.05)
    finally:
        worker.join()
    assert sorted(r.rcpt_tos[0] for r in smtp_sink.received) == ["a@example.test", "b@example.test", "c@example.test"]
    assert Email.objects.filter(status="SENT").count() == 3
    assert Event.objects.filter(name="email.sent").count() == 3


def test_a_dead_workers_emails_are_taken_over_when_its_lease_expires(queued, smtp_sink, settings):
    settings.DELIVERY_LEASE_SECONDS = 30
    claimed = emails_claim(email_ids=queued)  # and the worker dies before sending any
    claimed_at = claimed[0].claimed_at
    assert emails_sweep(now=claimed_at + timedelta(seconds=29)) == []
    overdue = emails_sweep(now=claimed_at + timedelta(seconds=31))
    assert sorted(map(str, overdue)) == sorted(queued)
    emails_deliver(email_ids=overdue)
    assert sorted(r.rcpt_tos[0] for r in smtp_sink.received) == ["a@example.test", "b@example.test", "c@example.test"]


def test_the_sweeper_publishes_emails_whose_task_never_arrived(queued, smtp_sink):
    Email.objects.update(updated_at=timezone.now() - timedelta(minutes=5))
    assert sweep_emails_task.delay().get() == 3
    assert len(smtp_sink.received) == 3


def test_a_permanent_rejection_fails_the_email_with_the_servers_reply(queued, smtp_sink):
    smtp_sink.reply_to_rcpt = "550 5.1.1 No such user"
    report = emails_deliver(email_ids=queued[:1])
    email = Email.objects.get(id=queued[0])
    assert email.status == "FAILED"
    assert "550" in email.last_error and "No such user" in email.last_error
    assert report.retry == {}
    event = Event.objects.get(name="email.failed")
    assert event.data["emailId"] == queued[0] and "550" in event.data["error"]


def test_mail_from_a_domain_unverified_meanwhile_is_failed_never_sent(send, smtp_sink):
    """Another process may accept a send for a few seconds after the domain lost its verification (it remembers the
    sender, domains.authorized); delivery checks the domain again and sends nothing from it."""
    body = {"to": "a@example.test", "from": "hi@alice.test", "subject": "S", "body": "<p>B</p>"}
    assert send(body).status_code == 200  # this process now remembers the sender
    Domain.objects.filter(name="alice.test").update(status=Domain.Status.PENDING)  # as another process would
    response = send(body)
    assert response.status_code == 200
    email = Email.objects.get(id=response.json()["data"]["emails"][0]["email"])
    assert (email.status, email.last_error) == ("FAILED", 'Domain "alice.test" is not verified for this project')
    assert len(smtp_sink.received) == 1


@pytest.mark.parametrize("pipelining", [True, False])
def test_envelope_and_data_command_go_in_one_write_to_a_server_that_pipelines(
    queued, smtp_sink, pipelining, monkeypatch
):
    """SMTP pipelining (messaging.sending.transport): two round trips per message instead of four."""
    smtp_sink.pipelining = pipelining
    writes = []
    send = smtplib.SMTP.send
    monkeypatch.setattr(smtplib.SMTP, "send", lambda smtp, data: writes.append(data) or send(smtp, data))
    emails_deliver(email_ids=queued)
    envelopes = [w for w in writes if isinstance(w, str) and w.startswith("MAIL FROM:")]
    if pipelining:
        assert [w.split("\r\n")[1:] for w in envelopes] == [
            [f"RCPT TO:<{r.rcpt_tos[0]}>", "DATA", ""] for r in smtp_sink.received
        ]
    else:
        assert [w.split("\r\n")[1:] for w in envelopes] == [[""]] * len(queued)
    assert len(smtp_sink.received) == len(queued)


@pytest.mark.parametrize("pipelining", [True, False])
def test_a_refused_message_leaves_the_connection_ready_for_the_next(queued, smtp_sink, pipelining):
    smtp_sink.pipelining = pipelining
    smtp_sink.refused["b@example.test"] = "550 5.1.1 No such user"
    report = emails_deliver(email_ids=queued)
    assert sorted(r.rcpt_tos[0] for r in smtp_sink.received) == ["a@example.test", "c@example.test"]
    assert dict(Email.objects.values_list("to_email", "status")) == {
        "a@example.test": "SENT",
        "b@example.test": "FAILED",
        "c@example.test": "SENT",
    }
    assert [str(email.id) for email, _ in report.failed] == [queued[1]]


@pytest.mark.parametrize("pipelining", [True, False])
def test_a_refused_sender_fails_each_message_with_its_own_reply(queued, smtp_sink, pipelining):
    smtp_sink.pipelining = pipelining
    smtp_sink.reply_to_mail = "553 5.7.1 Sender not allowed"
    report = emails_deliver(email_ids=queued)
    assert smtp_sink.received == []
    assert sorted((str(email.id), error) for email, error in report.failed) == sorted(
        (email_id, "553 5.7.1 Sender not allowed") for email_id in queued
    )
    assert set(Email.objects.values_list("status", flat=True)) == {"FAILED"}


def test_a_temporary_rejection_is_retried_later(queued, smtp_sink):
    smtp_sink.reply_to_rcpt = "451 4.3.0 Try again later"
    report = emails_deliver(email_ids=queued[:1])
    email = Email.objects.get(id=queued[0])
    assert (email.status, email.attempts) == ("QUEUED", 1)
    assert email.next_attempt_at > timezone.now()
    assert "451" in email.last_error
    assert list(report.retry) == [email.id]
    # Not due yet: a task arriving early claims nothing.
    assert emails_deliver(email_ids=queued[:1]).sent == []
    smtp_sink.reply_to_rcpt = None
    Email.objects.filter(id=email.id).update(next_attempt_at=timezone.now())
    assert [e.id for e, _ in emails_deliver(email_ids=queued[:1]).sent] == [email.id]


def test_an_unreachable_server_requeues_the_whole_batch(queued, settings):
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", 9  # nothing listens on the discard port
    report = emails_deliver(email_ids=queued)
    assert len(report.retry) == 3
    assert set(Email.objects.values_list("status", flat=True)) == {"QUEUED"}
    assert all("connect" in e.last_error.lower() for e in Email.objects.all())


def test_attempts_are_bounded(queued, smtp_sink, settings):
    settings.DELIVERY_MAX_ATTEMPTS = 2
    smtp_sink.reply_to_rcpt = "421 busy"
    emails_deliver(email_ids=queued[:1])
    Email.objects.filter(id=queued[0]).update(next_attempt_at=timezone.now())
    emails_deliver(email_ids=queued[:1])
    assert Email.objects.get(id=queued[0]).status == "FAILED"


def test_the_send_rate_throttles_without_rejecting(queued, smtp_sink, settings):
    settings.SEND_RATE_PER_PROJECT_PER_SECOND = 1
    domain_dkim_key_ensure(domain=Domain.objects.get(name="alice.test"))  # making it could take the next token's second
    report = emails_deliver(email_ids=queued)
    assert len(report.sent) == 1
    assert len(report.retry) == 2 and all(0 < delay <= 3 for delay in report.retry.values())
    assert Email.objects.filter(status="QUEUED").count() == 2


def test_a_project_over_its_rate_waits_for_its_tokens_alone_without_using_attempts(
    project, secret_client, other_project, smtp_sink, settings, monkeypatch
):
    """One batch, two projects, one of them out of tokens: the other's mail goes now; the throttled project's rows
    go back until its bucket has a token for each (one every two seconds, so that a slow machine does not refill it
    mid-test), attempts untouched, and are sent then."""
    from messaging.sending import services as sending

    monkeypatch.setattr(sending, "enqueue_delivery", lambda ids: None)  # the test delivers them itself
    settings.SEND_RATE_PER_PROJECT_PER_SECOND = 0.5

    def accepted(client, sender, recipients):
        body = {"to": recipients, "from": sender, "subject": "S", "body": "<p>B</p>"}
        response = client.post("/v1/send", body, format="json")
        assert response.status_code == 200
        return [entry["email"] for entry in response.json()["data"]["emails"]]

    alice = accepted(secret_client, "hi@alice.test", ["a1@example.test", "a2@example.test"])
    bob = accepted(client_with(other_project.keys.secret_key), "hi@bob.test", ["b1@example.test"])
    assert send_slot_wait(project.id) == 0  # Alice's one token goes elsewhere
    report = emails_deliver(email_ids=alice + bob)
    assert [r.rcpt_tos[0] for r in smtp_sink.received] == ["b1@example.test"]
    rows = {email.to_email: email for email in Email.objects.filter(id__in=alice)}
    first, second = rows["a1@example.test"], rows["a2@example.test"]
    assert {first.status, second.status} == {"QUEUED"} and first.attempts == second.attempts == 0
    # Whole seconds: a token within two for one of them, the next one two seconds later (in the batch's order).
    assert set(report.retry) == {first.id, second.id} and sorted(report.retry.values()) == [2, 4]
    assert min(first.next_attempt_at, second.next_attempt_at) <= timezone.now() + timedelta(seconds=2)
    deadline = time.monotonic() + 20
    while Email.objects.filter(id__in=alice, status="SENT").count() < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        emails_deliver(email_ids=alice)
    assert set(Email.objects.filter(id__in=alice).values_list("status", "attempts")) == {("SENT", 1)}
    assert len(smtp_sink.received) == 3


def test_a_send_rate_that_cannot_be_counted_holds_no_mail(queued, smtp_sink, settings):
    """The bucket lives in the cache: with the cache unreachable mail goes unthrottled, as API requests do."""
    settings.SEND_RATE_PER_PROJECT_PER_SECOND = 1
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:9/0"}
    }
    report = emails_deliver(email_ids=queued)
    assert len(report.sent) == 3 and len(smtp_sink.received) == 3


def test_an_address_that_could_inject_smtp_commands_is_never_written(smtp_sink):
    from messaging.sending.transport import PreparedMessage, Transport, TransportError

    message = PreparedMessage(
        raw=b"Subject: x\r\n\r\nbody\r\n",
        envelope_from="hi@alice.test",
        recipients=["a@example.test>\r\nRCPT TO:<evil@example.test"],
        as_email_message=lambda: None,
    )
    with Transport() as transport, pytest.raises(TransportError) as refused:
        transport.send(message)
    assert refused.value.permanent and smtp_sink.received == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("from_name", "Support\r\nBcc: evil@x.test"),
        ("to_name", "Ann\nBcc: evil@x.test"),
        ("subject", "Hello\r\nBcc: evil@x.test"),
        ("reply_to", "support@alice.test\r\nBcc: evil@x.test"),
        ("headers", {"X-Note": "a\r\nBcc: evil@x.test"}),
        ("from_name", "Support\x00"),
    ],
)
def test_a_stored_header_value_that_would_add_a_header_fails_that_email_only(queued, smtp_sink, field, value):
    """Rows written before an input rule existed (or edited by hand) reach the MIME writer, which refuses them:
    that one email fails with the reason, the others of the batch go out, and no injected header reaches the
    server."""
    if "\x00" in str(value) and connection.vendor == "postgresql":
        pytest.skip("PostgreSQL cannot store a NUL in text: no such row can exist there")
    Email.objects.filter(id=queued[1]).update(**{field: value})
    report = emails_deliver(email_ids=queued)
    assert sorted(r.rcpt_tos[0] for r in smtp_sink.received) == ["a@example.test", "c@example.test"]
    assert all(b"evil@x.test" not in r.raw and r.message["Bcc"] is None for r in smtp_sink.received)
    failed = Email.objects.get(id=queued[1])
    assert failed.status == "FAILED"
    assert failed.last_error.startswith("Not sent: ") and "line break or NUL" in failed.last_error
    assert [email.id for email, _ in report.failed] == [failed.id]
    assert report.retry == {}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the plan of PostgreSQL's claim statement")
def test_a_claim_finds_its_rows_by_id_among_many_queued_before_any_analyze(project):
    """Right after a bulk insert (a campaign's batch) the statistics say no row is QUEUED; the claim planned from
    them walked the status index through every queued row once per claimed row (1.3 s for 50 of 2,000, and
    quadratic in the queue). It must look its rows up by id whatever the statistics say: on the table partitioned by
    month, whose primary key (id, created_at) no longer tells the planner that an id names one row, through that key
    of the partitions of the ids' window, and never by a sequential scan."""
    from messaging.sending.delivery import _PG_CLAIM, pg_claim_params

    now = timezone.now()
    rows = [
        Email(
            project=project.project,
            to_email=f"r{i}@example.test",
            from_email="hi@alice.test",
            subject="S",
            html="<p>x</p>",
        )
        for i in range(2000)
    ]
    Email.objects.bulk_create(rows, batch_size=1000)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {_PG_CLAIM}", pg_claim_params([email.id for email in rows[:50]], now))
        plan = "\n".join(line for (line,) in cursor.fetchall())
    assert "email_status_claimed" not in plan, plan
    assert "Seq Scan" not in plan, plan
    assert re.search(r"Index Scan using messaging_email_\w*pkey", plan), plan
    assert len(emails_claim(email_ids=[email.id for email in rows[:50]])) == 50


def test_with_a_return_path_host_the_envelope_sender_is_the_emails_bounce_address(send, smtp_sink, settings):
    from messaging.feedback.returnpath import token_read

    message = {
        "to": "ann@example.test",
        "from": {"name": "Alice", "email": "hi@news.alice.test"},
        "subject": "S",
        "body": "<p>B</p>",
    }
    assert send(message).status_code == 200
    settings.DOMAINS_RETURN_PATH_HOST = "bounces.herald.example"
    response = send(message)
    assert response.status_code == 200, response.content
    email_id = response.json()["data"]["emails"][0]["email"]
    plain, returned = smtp_sink.received
    assert plain.mail_from == "hi@news.alice.test"
    # At the bounce subdomain of the verified domain that signs the message; the header From is unchanged.
    local, _, host = returned.mail_from.partition("@")
    assert host == "bounces.alice.test" and local.startswith("bounce+") and len(local) <= 64
    assert str(token_read(local.removeprefix("bounce+"))) == email_id
    assert returned.message["From"] == "Alice <hi@news.alice.test>"


def test_a_provider_backend_keeps_the_sender_when_a_return_path_host_is_set(send, settings):
    from django.core import mail

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.DOMAINS_RETURN_PATH_HOST = "bounces.herald.example"
    send({"to": "ann@example.test", "from": "hi@alice.test", "subject": "S", "body": "<p>B</p>"})
    [message] = mail.outbox
    assert message.from_email == "Alice's shop <hi@alice.test>"


def test_a_batch_out_of_time_puts_the_rows_it_holds_back_and_publishes_them_again(queued, smtp_sink, soft_time_limit):
    """The task's soft time limit strikes while the relay hangs on the second message's recipient: the connection is
    dropped rather than closed politely (no QUIT waiting on the hung exchange), that row and the third go back to
    the queue at once (the third without an attempt counted), the task publishes them again, and every message goes
    once."""
    original_rcpt, hung = smtp_sink.handle_RCPT, []

    async def hanging_rcpt(server, session, envelope, address, rcpt_options):
        if address == "b@example.test" and not hung:
            hung.append(address)
            soft_time_limit()
            await asyncio.sleep(10)
        return await original_rcpt(server, session, envelope, address, rcpt_options)

    smtp_sink.handle_RCPT = hanging_rcpt
    start = time.monotonic()
    deliver_emails_task.delay(queued)  # its retries run here (the eager test broker)
    assert hung and time.monotonic() - start < 5
    assert sorted(r.rcpt_tos[0] for r in smtp_sink.received) == ["a@example.test", "b@example.test", "c@example.test"]
    attempts = dict(Email.objects.values_list("to_email", "attempts"))
    assert attempts == {"a@example.test": 1, "b@example.test": 2, "c@example.test": 1}
    assert set(Email.objects.values_list("status", flat=True)) == {"SENT"}
    assert Event.objects.filter(name="email.sent").count() == 3

"""Accepted emails reach the workers through the Redis delivery queue: every one is delivered once, those whose
dispatch was lost are picked up by the sweeper, and a real worker does it all on its own."""

import os

import pytest

from config.celery import app
from config.tests.processes import celery_worker, wait_until
from conftest import REDIS_URL
from contacts.models import Contact
from messaging.models import Email
from messaging.sending.dispatch import _Batcher, emails_dispatch, enqueue_bulk_delivery
from messaging.sending.tasks import sweep_emails_task

BODY = {"from": "hi@alice.test", "subject": "Hello", "body": "<p>Hi</p>"}


def _queue_length(cache, name: str = "delivery:waiting") -> int:
    return cache._cache.get_client(write=True).llen(cache.make_and_validate_key(name))


@pytest.mark.django_db
def test_single_recipient_sends_are_delivered_once_through_the_queue(send, smtp_sink, redis_cache):
    for n in range(3):
        assert send({**BODY, "to": f"r{n}@example.test"}).status_code == 200
    assert sorted(m.rcpt_tos[0] for m in smtp_sink.received) == [f"r{n}@example.test" for n in range(3)]
    assert set(Email.objects.values_list("status", flat=True)) == {Email.Status.SENT}
    assert _queue_length(redis_cache) == 0


def _queued_ids(cache) -> list[str]:
    key = cache.make_and_validate_key("delivery:waiting")
    return [raw.decode() for raw in cache._cache.get_client(write=True).lrange(key, 0, -1)]


@pytest.mark.django_db
def test_a_process_hands_over_what_its_requests_committed_together(send, redis_cache, settings):
    """In production, each process appends the ids its requests committed in the last moment in one command, from
    a thread of its own: the request does not wait for it, and every id arrives, in order."""
    settings.DELIVERY_HANDOVER_SECONDS = 1.0
    app.conf.task_always_eager = False  # no worker: the ids stay in the list
    try:
        responses = [send({**BODY, "to": f"b{n}@example.test"}) for n in range(3)]
        assert _queue_length(redis_cache) == 0  # still held by this process
        wait_until(lambda: _queue_length(redis_cache) == 3, timeout=10, what="three ids in the delivery queue")
    finally:
        app.conf.task_always_eager = True
    assert _queued_ids(redis_cache) == [r.json()["data"]["emails"][0]["email"] for r in responses]


@pytest.mark.django_db
def test_ids_whose_dispatch_was_lost_are_sent_by_the_sweeper(send, smtp_sink, redis_cache):
    app.conf.task_always_eager = False  # no worker consumes the broker: the dispatch task is never run
    try:
        for n in range(2):
            assert send({**BODY, "to": f"late{n}@example.test"}).status_code == 200
    finally:
        app.conf.task_always_eager = True
    assert smtp_sink.received == [] and _queue_length(redis_cache) == 2
    sweep_emails_task.delay()
    assert sorted(m.rcpt_tos[0] for m in smtp_sink.received) == ["late0@example.test", "late1@example.test"]
    assert emails_dispatch() == 0


@pytest.mark.django_db
def test_bulk_ids_wait_in_their_own_list_and_are_dispatched_after_single_sends(
    project, send, smtp_sink, redis_cache, django_capture_on_commit_callbacks
):
    """A campaign's batch is one append to the bulk list; the dispatch (here the sweeper's, the scheduled one
    lost) publishes the single requests' ids first, then the bulk ones, and each email is sent once."""
    app.conf.task_always_eager = False  # no worker: the ids stay in the lists
    try:
        contacts = Contact.objects.bulk_create(
            [Contact(project=project.project, email=f"bulk{n}@example.test") for n in range(3)]
        )
        bulk = Email.objects.bulk_create(
            [
                Email(project=project.project, contact=c, to_email=c.email, from_email="hi@alice.test", subject="B")
                for c in contacts
            ]
        )
        with django_capture_on_commit_callbacks(execute=True):
            enqueue_bulk_delivery([email.id for email in bulk])
        assert send({**BODY, "to": "single@example.test"}).status_code == 200
    finally:
        app.conf.task_always_eager = True
    assert (_queue_length(redis_cache, "delivery:bulk"), _queue_length(redis_cache)) == (3, 1)
    assert smtp_sink.received == []
    sweep_emails_task.delay()
    order = [m.rcpt_tos[0] for m in smtp_sink.received]
    assert order[0] == "single@example.test"
    assert sorted(order[1:]) == [f"bulk{n}@example.test" for n in range(3)]
    assert (_queue_length(redis_cache, "delivery:bulk"), _queue_length(redis_cache)) == (0, 0)
    assert emails_dispatch() == 0


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_worker_delivers_single_sends_that_went_through_the_queue(secret_client, redis_cache):
    from messaging.sending.tests.smtp import start_sink

    sink, controller = start_sink()
    app.conf.task_always_eager = False
    try:
        with celery_worker(EMAIL_URL=f"smtp://{sink.host}:{sink.port}", CACHE_URL=REDIS_URL):
            for n in range(6):
                response = secret_client.post("/v1/send", {**BODY, "to": f"w{n}@example.test"}, format="json")
                assert response.status_code == 200
            wait_until(lambda: len(sink.received) >= 6, timeout=60, what="six messages at the SMTP server")
            wait_until(lambda: Email.objects.filter(status="SENT").count() == 6, timeout=30, what="rows marked SENT")
    finally:
        app.conf.task_always_eager = True
        controller.stop()
    assert sorted(m.rcpt_tos[0] for m in sink.received) == [f"w{n}@example.test" for n in range(6)]


def test_a_forked_worker_starts_with_nothing_held_and_a_free_lock():
    """gunicorn and Celery fork their workers: a child must neither hand over its parent's ids again nor wait on
    a lock that a thread of the parent held at the fork (which would hang it)."""
    batcher = _Batcher()
    batcher._lock.acquire()  # as if the parent's hand-over thread were in the middle of a flush
    batcher._pending.append("held-by-the-parent")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it inherited, without running anything of pytest's
        free = batcher._lock.acquire(timeout=1)
        os.write(write, b"free-and-empty" if free and batcher._pending == [] else b"inherited")
        os._exit(0)
    os.waitpid(pid, 0)
    batcher._lock.release()
    assert os.read(read, 64) == b"free-and-empty"
    assert batcher._pending == ["held-by-the-parent"]  # the parent still hands them over

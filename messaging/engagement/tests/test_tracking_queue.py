"""Opens and clicks queued in Redis: the endpoints answer without the database, a drain writes the hits in order
with the times they happened, and a real worker does it on its own behind a real web server."""

import json

import httpx
import pytest
from django.utils import timezone

from config.celery import app
from config.tests.processes import celery_worker, gunicorn_server, wait_until
from conftest import REDIS_URL
from contacts.models import Event
from messaging.engagement.hits import tracking_hits_drain
from messaging.engagement.tests.conftest import sent_email
from messaging.engagement.tracking import click_token, open_token
from messaging.models import Email


def _raw(cache):
    return cache._cache.get_client(write=True)


def _data(name: str) -> list[dict]:
    """The events of `name` by their counter (one batch's events share their creation time)."""
    return sorted((e.data for e in Event.objects.filter(name=name)), key=lambda d: d.get("opens", d.get("clicks")))


@pytest.mark.django_db
def test_hits_wait_in_redis_and_a_drain_writes_them_in_order_with_their_own_times(client, project, redis_cache):
    email = sent_email(project)
    raw = _raw(redis_cache)
    raw.set(redis_cache.make_and_validate_key("tracking:hits:lock"), "a drain is running")  # holds the queue
    before = timezone.now()
    assert client.get(f"/o/{open_token(email.id)}").status_code == 200
    assert client.get(f"/o/{open_token(email.id)}").status_code == 200
    assert client.get(f"/c/{click_token(email.id, 'https://shop.example/sale')}").status_code == 302
    email.refresh_from_db()
    assert (email.opens, email.clicks, email.status) == (0, 0, Email.Status.SENT)
    assert raw.llen(redis_cache.make_and_validate_key("tracking:hits")) == 3

    raw.delete(redis_cache.make_and_validate_key("tracking:hits:lock"))
    assert tracking_hits_drain() == 3
    email.refresh_from_db()
    assert (email.opens, email.clicks, email.status) == (2, 1, Email.Status.CLICKED)
    assert before <= email.opened_at <= email.clicked_at < timezone.now()
    opens = _data("email.open")
    assert [(d["opens"], d["isFirstOpen"]) for d in opens] == [(1, True), (2, False)]
    assert opens[0]["openedAt"] == email.opened_at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    [click] = _data("email.click")
    assert (click["link"], click["clicks"], click["isFirstClick"]) == ("https://shop.example/sale", 1, True)
    assert tracking_hits_drain() == 0


@pytest.mark.django_db
def test_with_the_client_limit_on_only_hits_within_it_are_queued(client, project, redis_cache, settings):
    settings.TRACKING_RATE_LIMIT_PER_MINUTE = 3
    email = sent_email(project)
    raw = _raw(redis_cache)
    raw.set(redis_cache.make_and_validate_key("tracking:hits:lock"), "a drain is running")
    for _ in range(4):
        assert client.get(f"/o/{open_token(email.id)}").status_code == 200
    assert client.get(f"/c/{click_token(email.id, 'https://shop.example/sale')}").status_code == 302
    assert client.get(f"/o/{open_token(email.id)}", REMOTE_ADDR="192.0.2.9").status_code == 200  # another reader
    assert raw.llen(redis_cache.make_and_validate_key("tracking:hits")) == 4

    raw.delete(redis_cache.make_and_validate_key("tracking:hits:lock"))
    assert tracking_hits_drain() == 4
    email.refresh_from_db()
    assert (email.opens, email.clicks) == (4, 0)
    raw.script_flush()  # a Redis that restarted knows no scripts: the hit is still counted and queued
    raw.set(redis_cache.make_and_validate_key("tracking:hits:lock"), "a drain is running")
    assert client.get(f"/o/{open_token(email.id)}", REMOTE_ADDR="192.0.2.10").status_code == 200
    assert raw.llen(redis_cache.make_and_validate_key("tracking:hits")) == 1


@pytest.mark.django_db
def test_a_hit_for_a_deleted_email_and_a_malformed_entry_are_dropped(project, redis_cache):
    email = sent_email(project)
    raw = _raw(redis_cache)
    queue = redis_cache.make_and_validate_key("tracking:hits")
    raw.rpush(queue, b"not json")
    raw.rpush(queue, json.dumps(["open", "8e0f0a51-4c4b-4a41-9a6b-2b1b0f1d2c3e", timezone.now().isoformat(), ""]))
    raw.rpush(queue, json.dumps(["open", str(email.id), timezone.now().isoformat(), ""]))
    assert tracking_hits_drain() == 3
    email.refresh_from_db()
    assert email.opens == 1 and raw.llen(queue) == 0


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_worker_writes_the_hits_a_web_server_queued(project, redis_cache):
    email = sent_email(project)
    app.conf.task_always_eager = False
    try:
        with celery_worker(CACHE_URL=REDIS_URL), gunicorn_server(CACHE_URL=REDIS_URL) as base:
            for _ in range(3):
                assert httpx.get(f"{base}/o/{open_token(email.id)}").status_code == 200
            wait_until(
                lambda: Email.objects.get(pk=email.pk).opens == 3, timeout=30, what="the worker to count three opens"
            )
    finally:
        app.conf.task_always_eager = True
    assert [d["opens"] for d in _data("email.open")] == [1, 2, 3]


@pytest.mark.django_db
def test_one_batch_counts_interleaved_hits_of_several_emails_each_in_order(project):
    from messaging.engagement.services import Hit, engagement_hits_record

    first = sent_email(project)
    second = Email.objects.create(
        project=project.project,
        contact=first.contact,
        to_email="ann@example.test",
        from_email="a@alice.test",
        subject="T",
        status=Email.Status.SENT,
    )
    now = timezone.now()
    plan = [("open", first), ("open", second), ("open", first), ("click", first), ("click", second), ("open", first)]
    hits = [Hit(kind, str(email.id), now, "https://x.example/" if kind == "click" else "") for kind, email in plan]
    assert all(engagement_hits_record(hits=hits))
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.opens, first.clicks, second.opens, second.clicks) == (3, 1, 1, 1)
    opens = [e.data for e in Event.objects.filter(name="email.open", email_id=first.id)]
    assert sorted((d["opens"], d["isFirstOpen"]) for d in opens) == [(1, True), (2, False), (3, False)]
    [later] = [e.data for e in Event.objects.filter(name="email.open", email_id=second.id)]
    assert (later["opens"], later["isFirstOpen"]) == (1, True)

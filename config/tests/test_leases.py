"""Leases on the real database: taken, renewed, refused to a second holder, taken over once expired, released; expiry
judged on the database's clock; a statement fenced by `lease_held` changes nothing once the lease is gone; and the
admin shows leases without changing them."""

import os
import signal
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models.functions import Now
from django.utils import timezone

from config.beat import LeasedDatabaseScheduler
from config.celery import app
from config.leases import lease_get, lease_held, lease_release, lease_take
from config.models import Lease

pytestmark = pytest.mark.django_db

FIRST, SECOND = "host-a:101:aaaa", "host-b:202:bbbb"


def age(name: str = "beat", *, expired: bool) -> None:
    """As if it had been taken an hour ago and last renewed 31 s ago, for 30 s (`expired`) or for 60 s."""
    Lease.objects.filter(name=name).update(
        acquired_at=Now() - timedelta(hours=1),
        renewed_at=Now() - timedelta(seconds=31),
        expires_at=Now() - timedelta(seconds=31) + timedelta(seconds=30 if expired else 60),
    )


def expire(name: str = "beat") -> None:
    age(name, expired=True)


def test_the_first_take_makes_the_lease_for_its_length_on_the_database_clock():
    assert lease_get(name="beat") is None
    assert lease_take(name="beat", holder=FIRST, seconds=30) is True
    lease = lease_get(name="beat")
    assert (lease.holder, lease.host, lease.pid, lease.expired) == (FIRST, "host-a", "101", False)
    assert lease.acquired_at == lease.renewed_at
    assert lease.expires_at - lease.renewed_at == timedelta(seconds=30)
    assert abs(lease.now - timezone.now()) < timedelta(seconds=5)


def test_a_renewal_extends_it_and_keeps_when_it_was_taken():
    lease_take(name="beat", holder=FIRST, seconds=30)
    age(expired=False)
    taken = lease_get(name="beat")
    assert lease_take(name="beat", holder=FIRST, seconds=60) is True
    renewed = lease_get(name="beat")
    assert renewed.acquired_at == taken.acquired_at
    assert renewed.renewed_at - taken.renewed_at >= timedelta(seconds=31)
    assert renewed.expires_at - renewed.renewed_at == timedelta(seconds=60)


def test_a_second_holder_is_refused_while_it_runs_and_takes_it_once_it_expired():
    lease_take(name="beat", holder=FIRST, seconds=30)
    assert lease_take(name="beat", holder=SECOND, seconds=30) is False
    assert lease_get(name="beat").holder == FIRST
    expire()
    assert lease_get(name="beat").expired is True
    assert lease_take(name="beat", holder=SECOND, seconds=30) is True
    lease = lease_get(name="beat")
    assert (lease.holder, lease.expired) == (SECOND, False)
    assert lease.acquired_at == lease.renewed_at  # a new tenure
    assert lease_take(name="beat", holder=FIRST, seconds=30) is False  # the former holder cannot renew it


def test_a_holder_that_takes_its_own_expired_lease_again_starts_a_new_tenure():
    lease_take(name="beat", holder=FIRST, seconds=30)
    expire()
    taken_before = lease_get(name="beat").acquired_at
    assert lease_take(name="beat", holder=FIRST, seconds=30) is True
    lease = lease_get(name="beat")
    assert lease.acquired_at == lease.renewed_at
    assert lease.acquired_at - taken_before >= timedelta(hours=1)


def test_a_release_frees_it_at_once_and_only_its_holder_may_release():
    lease_take(name="beat", holder=FIRST, seconds=30)
    assert lease_release(name="beat", holder=SECOND) is False
    assert lease_get(name="beat").expired is False
    assert lease_release(name="beat", holder=FIRST) is True
    lease = lease_get(name="beat")
    assert (lease.holder, lease.expired) == (FIRST, True)  # who held it stays readable
    assert lease_release(name="beat", holder=FIRST) is False  # once
    assert lease_take(name="beat", holder=SECOND, seconds=30) is True


def test_leases_of_different_names_are_independent():
    assert lease_take(name="beat", holder=FIRST, seconds=30) is True
    assert lease_take(name="other", holder=SECOND, seconds=30) is True
    assert {lease.name: lease.holder for lease in Lease.objects.all()} == {"beat": FIRST, "other": SECOND}


def test_a_statement_fenced_by_the_lease_changes_nothing_once_the_lease_is_gone():
    lease_take(name="beat", holder=FIRST, seconds=30)
    fenced = Lease.objects.filter(name="other-row")
    Lease.objects.create(name="other-row", holder="")

    def write() -> int:
        return fenced.filter(lease_held(name="beat", holder=FIRST)).update(holder="written")

    assert write() == 1
    expire()
    assert write() == 0
    lease_take(name="beat", holder=SECOND, seconds=30)
    assert write() == 0
    assert fenced.filter(lease_held(name="beat", holder=SECOND)).update(holder="by the second") == 1


def test_the_admin_shows_who_holds_it_and_whether_it_expired_and_changes_nothing(admin_client):
    lease_take(name="beat", holder=FIRST, seconds=30)
    lease_take(name="other", holder=SECOND, seconds=30)
    expire("other")
    page = admin_client.get("/admin/config/lease/")
    assert page.status_code == 200
    listed = {lease.name: (lease.host, lease.pid, lease.expired) for lease in page.context["cl"].result_list}
    assert listed == {"beat": ("host-a", "101", False), "other": ("host-b", "202", True)}
    assert admin_client.get("/admin/config/lease/add/").status_code == 403
    change = admin_client.get("/admin/config/lease/beat/change/")
    assert change.status_code == 200 and b'name="_save"' not in change.content
    admin_client.post("/admin/config/lease/beat/change/", {"holder": "someone"})
    assert lease_get(name="beat").holder == FIRST


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite's connections have no lock a statement holds")
def test_a_leader_stopped_in_the_middle_of_a_statement_still_releases_the_lease():
    """celery-beat stops in its SIGTERM handler, which may run while a statement of the beat's connection waits for
    the server, its lock held: the release goes through all the same."""
    scheduler = LeasedDatabaseScheduler(app=app, lazy=True)
    scheduler.tick()
    assert scheduler.leading and lease_get(name="beat").expired is False
    connection.ensure_connection()
    with connection.connection.lock:  # the statement the signal interrupted
        scheduler.close()
    assert scheduler.leading is False and lease_get(name="beat").expired is True


@pytest.mark.django_db(transaction=True)  # the scheduler closes connections as it reads
def test_a_stop_signal_while_the_schedule_is_read_arrives_once_the_scheduler_is_built(monkeypatch):
    """Celery's stop handler asks for the scheduler: run while the scheduler was being built, it built another on the
    same connection and failed instead of exiting, and beat went on running."""
    from django_celery_beat.schedulers import DatabaseScheduler

    arrived = []
    reading = DatabaseScheduler.setup_schedule

    def signalled_while_reading(scheduler):
        os.kill(os.getpid(), signal.SIGTERM)  # the stop arrives in the middle of the schedule's reading
        reading(scheduler)
        arrived.append(("read", bool(arrived)))

    previous = signal.signal(signal.SIGTERM, lambda number, frame: arrived.append(("signal", bool(arrived))))
    monkeypatch.setattr(DatabaseScheduler, "setup_schedule", signalled_while_reading)
    # Another thread, as a process has (a signal may be given to it, and its handler still runs in the main thread).
    other_thread = threading.Thread(target=threading.Event().wait, args=(5,), daemon=True)
    other_thread.start()
    try:
        LeasedDatabaseScheduler(app=app)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert arrived == [("read", False), ("signal", True)]

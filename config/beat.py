"""celery-beat on every host, one scheduling at a time: django-celery-beat's database scheduler under a lease.

Every beat tries to take the lease `beat` (`config.leases`) every BEAT_LEASE_RETRY_SECONDS; the one that holds it
schedules and renews it as often, the others publish nothing. A leader that cannot renew (the database gone, the
lease taken after it expired) stops at once; a stopped one (SIGTERM) releases the lease, so a standby takes over
within the retry interval, and a killed one's lease expires after BEAT_LEASE_SECONDS.

Each run of an entry is claimed before it is published, by one statement that records it (`last_run_at`, one more
`total_run_count`) only while this beat holds the lease and only if nobody recorded a run since this beat read the
entry. So a new leader, which reads the schedule from the database first, goes on from the runs its predecessor
recorded, and two beats never publish the same run even if both believed they led (a leader paused past its lease).
The stock scheduler saves its runs every few minutes instead, and a takeover would run them again.
"""

import logging
import os
import secrets
import signal
import socket
import threading
import time
from contextlib import contextmanager

from django.conf import settings
from django.db import Error, close_old_connections, connections
from django.db.models import F
from django_celery_beat.schedulers import DatabaseScheduler

from config.leases import BEAT_LEASE as LEASE
from config.leases import lease_get, lease_held, lease_release, lease_take

logger = logging.getLogger(__name__)
STOPS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def _stop_signals_held():
    """SIGTERM and SIGINT received inside are raised again on the way out (Python runs signal handlers in the main
    thread, whichever thread the kernel gave the signal to, so the handlers are swapped rather than the mask)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []
    previous = {number: signal.signal(number, lambda number, frame: received.append(number)) for number in STOPS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in received[:1]:
            signal.raise_signal(number)


class LeasedDatabaseScheduler(DatabaseScheduler):
    def __init__(self, *args, **kwargs):
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.leading = False
        self._standing_by = False
        self._next_take = 0.0  # time.monotonic() of the next take or renewal
        # A stop signal is held while the schedule is read and written here. Celery's handler for it asks for the
        # scheduler, which is still being built: it built a second one on the same connection, in the middle of this
        # one's statements, and raised that one's database error instead of exiting. Library code caught the error
        # and beat ran on, deaf to the stop, until killed. Held, the signal arrives once the scheduler exists.
        with _stop_signals_held():
            super().__init__(*args, **kwargs)

    def tick(self, *args, **kwargs):
        if time.monotonic() >= self._next_take:
            self._take()
        until_take = max(self._next_take - time.monotonic(), 0.0)
        if not self.leading:
            return until_take
        return min(super().tick(*args, **kwargs), until_take)

    def _take(self) -> None:
        try:
            close_old_connections()  # as Django does around a request: drop a connection an error left unusable
            taken = lease_take(name=LEASE, holder=self.holder, seconds=settings.BEAT_LEASE_SECONDS)
        except Error as exc:
            logger.warning("beat %s: the lease could not be taken or renewed: %s", self.holder, exc)
            taken = False
        self._next_take = time.monotonic() + settings.BEAT_LEASE_RETRY_SECONDS
        if taken and not self.leading:
            logger.info("beat %s: took the lease, scheduling from now on", self.holder)
            self.leading, self._standing_by = True, False
            self._read_schedule_again()
        elif not taken and self.leading:
            logger.warning("beat %s: lost the lease, no longer scheduling", self.holder)
            self.leading = False
        if not taken and not self._standing_by:
            self._standing_by = True
            logger.info("beat %s: standing by, the lease is held by %s", self.holder, self._lease_holder())

    def _lease_holder(self) -> str:
        try:
            lease = lease_get(name=LEASE)
        except Error:
            return "nobody the database could name"
        return lease.holder if lease is not None and lease.holder else "nobody yet"

    def _read_schedule_again(self) -> None:
        # The runs another beat recorded meanwhile are in the database only: read every entry again before the
        # next tick, and rebuild the heap from them.
        self._initial_read = True
        self._heap = None

    def reserve(self, entry):
        # The run is recorded by its claim (apply_entry), not saved later by sync(): what sync() would write later
        # could be lost with this process, and a leader after it would run the entry again.
        return next(entry)

    def apply_entry(self, entry, producer=None):
        if self._claim(entry):
            super().apply_entry(entry, producer=producer)
            return
        logger.warning("beat %s: %s not sent: the lease is lost, or another beat ran it", self.holder, entry.name)
        self._read_schedule_again()
        self._next_take = 0.0  # judge the lease at the next tick

    def _claim(self, entry) -> bool:
        """Records the run `reserve` made of `entry` (its model holds the new last run and count) if the entry is
        still as this beat read it and the lease is still this beat's, in one statement."""
        try:
            return bool(
                self.Model.objects.filter(pk=entry.model.pk, total_run_count=entry.total_run_count)
                .filter(lease_held(name=LEASE, holder=self.holder))
                .update(last_run_at=entry.model.last_run_at, total_run_count=F("total_run_count") + 1)
            )
        except Error as exc:
            logger.warning("beat %s: the run of %s could not be recorded: %s", self.holder, entry.name, exc)
            return False

    def close(self):
        try:
            super().close()
        finally:
            if self.leading:
                self.leading = False
                self._release()

    def _release(self) -> None:
        # On a connection of its own, in a thread: close() runs in celery's SIGTERM handler, which may interrupt a
        # statement of this thread's connection (psycopg lets signal handlers run while it waits for the server),
        # and that connection, busy and locked, would never answer the release.
        releasing = threading.Thread(target=self._release_on_own_connection, name="beat-release", daemon=True)
        releasing.start()
        releasing.join(timeout=10)

    def _release_on_own_connection(self) -> None:
        try:
            if lease_release(name=LEASE, holder=self.holder):
                logger.info("beat %s: released the lease", self.holder)
        except Error as exc:
            logger.warning(
                "beat %s: the lease could not be released (%s); it expires within %s s",
                self.holder,
                exc,
                settings.BEAT_LEASE_SECONDS,
            )
        finally:
            connections.close_all()  # this thread's own

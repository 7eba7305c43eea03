"""Handing accepted emails to the delivery workers.

With Redis as the cache (production), committed emails' ids are appended to a Redis list, and the append that finds
the list empty schedules `dispatch_emails_task`. That task takes the waiting ids and publishes delivery tasks of up
to `DELIVERY_BATCH_SIZE` emails each. A Celery publish costs several times the append, and under load the ids of
many single-recipient requests travel in one delivery task, which then sends them over one SMTP connection.

Each process appends what its requests committed in the last `DELIVERY_HANDOVER_SECONDS` with one command, from a
thread of its own: one Redis round trip per request was a tenth of a /v1/send request's CPU. With the setting at 0
(the tests) the request appends its own ids after its commit.

Without Redis (the embedded default), or when Redis cannot be reached, the delivery tasks are published at once.

Nothing accepted is lost on the way: the rows are QUEUED in the database before their ids move, and the sweeper
(every minute) dispatches what is waiting in the list and re-publishes QUEUED rows whose task never came (ids that a
process held when it was killed, too). A row dispatched twice is claimed once (`messaging.delivery.emails_claim`).
"""

import atexit
import logging
import math
import os
import threading
import time
from collections import defaultdict

from django.conf import settings
from django.core.cache import caches

from core.cache import list_drain, list_hand_over, redis_client
from core.commit import after_commit

logger = logging.getLogger(__name__)
_QUEUE = "delivery:waiting"
# Bulk mail (campaign batches) waits behind everything else. On Redis, kombu keeps a list per priority step and a
# worker reads the lists in order, 0 (the default of every other task) first and 9 last, so a delivery task of a
# campaign is taken only when no transactional one is waiting. (The filesystem broker of the embedded install is
# first in, first out.)
BULK_PRIORITY = 9


def delivery_tasks_publish(email_ids: list[str], *, priority: int | None = None) -> None:
    """Publish delivery tasks of up to `DELIVERY_BATCH_SIZE` ids; a broker failure is logged (the sweeper retries)."""
    from messaging.tasks import deliver_emails_task

    options = {} if priority is None else {"priority": priority}
    size = settings.DELIVERY_BATCH_SIZE
    for start in range(0, len(email_ids), size):
        batch = email_ids[start : start + size]
        try:
            deliver_emails_task.apply_async(args=[batch], **options)
        except Exception:
            logger.exception("Could not queue %d email(s) for delivery; the sweeper will send them", len(batch))


def delivery_retries_publish(retry: dict) -> None:
    """Publish the delivery tasks of emails put back for later (email id -> seconds): one task per whole second,
    rounded up so that every row is due when its task runs, of up to `DELIVERY_BATCH_SIZE` ids (a throttled
    project's rows go back in runs a second apart, not one task each). A broker failure is logged: the sweeper
    publishes overdue rows."""
    from messaging.tasks import deliver_emails_task

    moments = defaultdict(list)
    for email_id, delay in retry.items():
        moments[math.ceil(delay)].append(str(email_id))
    size = settings.DELIVERY_BATCH_SIZE
    for countdown, ids in sorted(moments.items()):
        for start in range(0, len(ids), size):
            try:
                deliver_emails_task.apply_async(args=[ids[start : start + size]], countdown=countdown)
            except Exception:
                logger.exception("Could not schedule %d email(s) for a later attempt; the sweeper will", len(ids))


def _schedule_dispatch() -> None:
    from messaging.tasks import dispatch_emails_task

    try:
        dispatch_emails_task.delay()
    except Exception:  # the sweeper dispatches the list within a minute
        logger.exception("Could not schedule the dispatch of waiting emails")


def _hand_over(email_ids: list[str]) -> None:
    list_hand_over(caches["default"], _QUEUE, email_ids, publish=delivery_tasks_publish, drain=_schedule_dispatch)


class _Batcher:
    """The ids committed in this process, handed over together by one thread every `DELIVERY_HANDOVER_SECONDS`."""

    def __init__(self) -> None:
        self._reset()
        # A forked child starts empty, with its own lock and thread: it neither hands over its parent's ids again
        # nor waits on a lock the parent's thread held at the fork.
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, ids: list[str]) -> None:
        with self._lock:
            self._pending.extend(ids)
            self._wake.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="delivery-handover", daemon=True)
                self._thread.start()

    def flush(self) -> None:
        """Hand over what is held now; a failure is logged (the rows are QUEUED: the sweeper sends them)."""
        with self._lock:
            batch, self._pending = self._pending, []
            self._wake.clear()
        if not batch:
            return
        try:
            _hand_over(batch)
        except Exception:
            logger.exception("Could not hand %d email(s) over to delivery; the sweeper will send them", len(batch))

    def _run(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(settings.DELIVERY_HANDOVER_SECONDS)  # what other requests commit meanwhile goes along
            self.flush()


_batcher = _Batcher()
atexit.register(_batcher.flush)  # a worker that stops gracefully hands over what it holds


def _committed(ids: list[str]) -> None:
    if settings.DELIVERY_HANDOVER_SECONDS > 0 and redis_client(caches["default"]) is not None:
        _batcher.add(ids)
    else:
        _hand_over(ids)


def enqueue_delivery(email_ids: list) -> None:
    """Hand the ids to delivery workers once the rows are committed; a broker failure only delays them."""
    ids = [str(email_id) for email_id in email_ids]
    if ids:
        after_commit(lambda: _committed(ids), what=f"hand {len(ids)} email(s) over to delivery (the sweeper will)")


def enqueue_bulk_delivery(email_ids: list) -> None:
    """Bulk mail: published straight from the commit as delivery tasks of `BULK_PRIORITY` (its ids come a batch at a
    time, so the handover list that gathers single requests has nothing to add)."""
    ids = [str(email_id) for email_id in email_ids]
    if ids:
        after_commit(
            lambda: delivery_tasks_publish(ids, priority=BULK_PRIORITY),
            what=f"publish {len(ids)} bulk email(s) for delivery (the sweeper will)",
        )


def emails_dispatch() -> int:
    """Publish delivery tasks for the ids waiting in the list (oldest first); returns how many were taken."""
    return list_drain(caches["default"], _QUEUE, delivery_tasks_publish)

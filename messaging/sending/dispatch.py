"""Handing accepted emails to the delivery workers.

With Redis as the cache (production), committed emails' ids are appended to a Redis list, and the append that finds
the list empty schedules `dispatch_emails_task`. That task takes the waiting ids and publishes delivery tasks of up
to `DELIVERY_BATCH_SIZE` emails each. A Celery publish costs several times the append, and under load the ids of
many single-recipient requests travel in one delivery task, which then sends them over one SMTP connection.

Each process appends what its requests committed in the last `DELIVERY_HANDOVER_SECONDS` with one command, from a
thread of its own: one Redis round trip per request was a tenth of a /v1/send request's CPU. With the setting at 0
(the tests) the request appends its own ids after its commit.

A campaign's batches go through a second list, whose tasks the same dispatch publishes at `BULK_PRIORITY` after
the single requests' (`enqueue_bulk_delivery`).

Without Redis (the embedded default), or when Redis cannot be reached, the delivery tasks are published at once.

Nothing accepted is lost on the way: the rows are QUEUED in the database before their ids move, and the sweeper
(every minute) dispatches what is waiting in the lists and re-publishes QUEUED rows whose task never came (ids that a
process held when it was killed, too). A row dispatched twice is claimed once (`messaging.sending.delivery.emails_claim`).
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
from core.tasks import publish_in_batches
from messaging.models import Email

logger = logging.getLogger(__name__)
_QUEUE = "delivery:waiting"
_BULK_QUEUE = "delivery:bulk"
# A campaign appends a thousand ids at a time: the dispatch is scheduled when the list was empty, and again only
# every 20,000 waiting ids (a dispatch lost meanwhile; the sweeper drains the list every minute too), not per append.
_BULK_DRAIN_STEP = 20_000
# Bulk mail (campaign batches) waits behind everything else. On Redis, kombu keeps a list per priority step and a
# worker reads the lists in order, 0 (the default of every other task) first and 9 last, so a delivery task of a
# campaign is taken only when no transactional one is waiting. (The filesystem broker of the embedded install is
# first in, first out.)
BULK_PRIORITY = 9


def delivery_tasks_publish(email_ids: list[str], *, priority: int | None = None) -> None:
    """Publish delivery tasks of up to `DELIVERY_BATCH_SIZE` ids; a broker failure is logged (the sweeper retries)."""
    from messaging.sending.tasks import deliver_emails_task

    options = {} if priority is None else {"priority": priority}
    publish_in_batches(
        deliver_emails_task, email_ids, size=settings.DELIVERY_BATCH_SIZE, what="the sweeper will send them", **options
    )


def delivery_retries_publish(retry: dict) -> None:
    """Publish the delivery tasks of emails put back for later (email id -> seconds): one task per whole second,
    rounded up so that every row is due when its task runs, of up to `DELIVERY_BATCH_SIZE` ids (a throttled
    project's rows go back in runs a second apart, not one task each). A broker failure is logged: the sweeper
    publishes overdue rows."""
    from messaging.sending.tasks import deliver_emails_task

    moments = defaultdict(list)
    for email_id, delay in retry.items():
        moments[math.ceil(delay)].append(str(email_id))
    for countdown, ids in sorted(moments.items()):
        publish_in_batches(
            deliver_emails_task,
            ids,
            size=settings.DELIVERY_BATCH_SIZE,
            what="the sweeper will send them",
            countdown=countdown,
        )


def _schedule_dispatch() -> None:
    from messaging.sending.tasks import dispatch_emails_task

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


def _bulk_tasks_publish(email_ids: list[str]) -> None:
    delivery_tasks_publish(email_ids, priority=BULK_PRIORITY)


def enqueue_bulk_delivery(email_ids: list) -> None:
    """Bulk mail (a campaign's batch): its ids go to a list of their own once the rows are committed, and the
    dispatch task publishes their delivery tasks at `BULK_PRIORITY`. One append instead of a publish per
    `DELIVERY_BATCH_SIZE` ids: publishing was most of what a campaign's fan-out spent per batch, and the fan-out is
    what stands between a campaign's send and its last row queued."""
    ids = [str(email_id) for email_id in email_ids]
    if ids:
        after_commit(
            lambda: list_hand_over(
                caches["default"],
                _BULK_QUEUE,
                ids,
                publish=_bulk_tasks_publish,
                drain=_schedule_dispatch,
                step=_BULK_DRAIN_STEP,
            ),
            what=f"hand {len(ids)} bulk email(s) over to delivery (the sweeper will)",
        )


def overdue_tasks_publish(email_ids: list) -> None:
    """Publish again the delivery tasks of rows the sweeper found waiting too long (`emails_sweep`), each at its own
    priority: a large campaign's rows still wait behind each other in the broker after the publish grace, and
    published again at the default priority they would go ahead of the transactional mail accepted since."""
    bulk = set(Email.objects.filter(id__in=email_ids, campaign_id__isnull=False).values_list("id", flat=True))
    delivery_tasks_publish([str(email_id) for email_id in email_ids if email_id not in bulk])
    _bulk_tasks_publish([str(email_id) for email_id in email_ids if email_id in bulk])


def emails_dispatch() -> int:
    """Publish delivery tasks for the ids waiting in the lists (oldest first, single requests' before bulk mail's);
    returns how many were taken."""
    cache = caches["default"]
    return list_drain(cache, _QUEUE, delivery_tasks_publish) + list_drain(cache, _BULK_QUEUE, _bulk_tasks_publish)

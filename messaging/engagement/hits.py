"""The open pixel and click redirect answer without touching the database: each hit goes onto a Redis list and a
worker writes them in batches (`messaging.engagement.services.engagement_hits_record`, in the order they arrived).

The first hit pushed onto an empty list schedules a drain `TRACKING_HITS_DRAIN_SECONDS` later, so a burst costs
one task (every thousandth waiting hit schedules another, and a beat entry drains every minute, in case a task was
lost). Hits carry their own time, so
`openedAt` / `clickedAt` are when the reader opened or clicked, not when the batch was written; counts and
`email.open` / `email.click` events appear within seconds.

Without Redis (the embedded default) and when Redis cannot be reached, a hit is written at once. A worker that dies
between writing a batch and trimming it from the list writes that batch again: a hit may be counted twice in that
case, never lost while Redis is up.
"""

import json
import logging
import uuid
from datetime import datetime

from django.conf import settings
from django.core.cache import caches
from django.utils import timezone

from core.cache import redis_client
from messaging.engagement.limits import TRACKING, limit_exceeded, tracking_push_within_limit
from messaging.engagement.services import Hit, engagement_hits_record

logger = logging.getLogger(__name__)
_QUEUE = "tracking:hits"
_LOCK_SECONDS = 300


def _dumps(hit: Hit) -> str:
    return json.dumps([hit.kind, hit.email_id, hit.at.isoformat(), hit.link])


def _loads(raw: bytes) -> Hit | None:
    try:
        kind, email_id, at, link = json.loads(raw)
        return Hit(kind, str(uuid.UUID(email_id)), datetime.fromisoformat(at), link)
    except (TypeError, ValueError):
        logger.error("Dropped a malformed tracking hit: %r", raw[:200])
        return None


def _schedule_drain() -> None:
    from messaging.engagement.tasks import drain_tracking_hits_task

    try:
        drain_tracking_hits_task.apply_async(countdown=settings.TRACKING_HITS_DRAIN_SECONDS)
    except Exception:  # the beat entry drains the list within a minute
        logger.exception("Could not schedule the tracking hits drain")


def tracking_hit(*, kind: str, email_id: str, link: str = "", meta) -> None:
    """Count one pixel load (`kind` "open") or link follow ("click") of `email_id` by the client of `meta` (a
    request's META or a WSGI environ), unless that client is over its limit (`messaging.engagement.limits`)."""
    hit = Hit(kind, str(email_id), timezone.now(), link)
    if redis_client(caches["default"]) is not None:
        try:
            schedule = tracking_push_within_limit(meta, queue=_QUEUE, values=[_dumps(hit)])
        except Exception:
            logger.exception("Tracking hit queue unavailable; counting the hit now")
        else:
            if schedule:
                _schedule_drain()
            return
    if limit_exceeded(TRACKING, meta) is None:
        engagement_hits_record(hits=[hit])


def tracking_hits_drain(*, batch_size: int = 1000, max_batches: int = 200) -> int:
    """Write queued hits in batches, oldest first; one drain at a time. Returns how many were taken."""
    cache = caches["default"]
    client = redis_client(cache)
    if client is None:
        return 0
    queue, lock = cache.make_and_validate_key(_QUEUE), cache.make_and_validate_key(f"{_QUEUE}:lock")
    token = uuid.uuid4().hex
    if not client.set(lock, token, nx=True, ex=_LOCK_SECONDS):
        return 0
    taken = 0
    try:
        for _ in range(max_batches):
            raw = client.lrange(queue, 0, batch_size - 1)
            if not raw:
                break
            engagement_hits_record(hits=[hit for hit in map(_loads, raw) if hit is not None])
            client.ltrim(queue, len(raw), -1)
            taken += len(raw)
    finally:
        if client.get(lock) == token.encode():
            client.delete(lock)
    if taken and client.llen(queue):
        _schedule_drain()
    return taken

"""Direct access to the Redis client behind Django's cache, for the atomic counters that the cache API lacks."""

import logging
from collections.abc import Callable

from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger(__name__)


def redis_client(cache: BaseCache):
    """The cache's Redis client, or None when the cache is not Redis.

    Django builds a new client object for every cache call (about 0.2 ms); the hot paths (rate limit, send
    throttle) keep one per cache instance instead. Its connection pool already copes with forked workers.
    """
    if not isinstance(cache, RedisCache):
        return None
    client = getattr(cache, "_herald_redis_client", None)
    if client is None:
        client = cache._cache.get_client(write=True)
        cache._herald_redis_client = client
    return client


def list_push(cache: BaseCache, name: str, values: list[str], *, step: int = 1000) -> bool | None:
    """Append `values` to the Redis list `name` (a work queue drained by a Celery task). Returns whether the caller
    should schedule the task: the list was empty before (nobody has), or it just crossed another `step` waiting
    values (in case the scheduled task was lost). None when the cache is not Redis; Redis errors propagate."""
    client = redis_client(cache)
    if client is None:
        return None
    length = client.rpush(cache.make_and_validate_key(name), *values)
    return drain_due(length=length, pushed=len(values), step=step)


def list_hand_over(
    cache: BaseCache,
    name: str,
    values: list[str],
    *,
    publish: Callable[[list[str]], object],
    drain: Callable[[], object],
    step: int = 1000,
) -> None:
    """Append `values` to the work queue `name` and call `drain` (which schedules the queue's task) when `list_push`
    says so; without Redis, or when it fails, `publish` the values' own tasks at once."""
    try:
        schedule = list_push(cache, name, values, step=step)
    except Exception:
        logger.exception("Work queue %s unavailable; publishing its tasks directly", name)
        schedule = None
    if schedule is None:
        publish(values)
    elif schedule:
        drain()


def list_drain(cache: BaseCache, name: str, handle: Callable[[list[str]], object], *, take: int = 1000) -> int:
    """Take the values waiting in the Redis list `name` (oldest first), `take` at a time, each lot to `handle` (the
    task that `list_push` scheduled); returns how many were taken, 0 when the cache is not Redis."""
    client = redis_client(cache)
    if client is None:
        return 0
    key = cache.make_and_validate_key(name)
    taken = 0
    while True:
        raw = client.lpop(key, take)
        if not raw:
            return taken
        handle([value.decode() for value in raw])
        taken += len(raw)


def drain_due(*, length: int, pushed: int, step: int = 1000) -> bool:
    """Whether pushing `pushed` values that left a work queue `length` long should schedule its task (see
    `list_push`)."""
    before = length - pushed
    return before == 0 or before // step != length // step

"""Request rate limits: a fixed 60-second window per scope (a project, a client address...) counted in the shared
cache, and who the client is.

A fixed window never lets more than the limit through in one window and `RateLimit-Remaining` only falls inside
it. With Redis the count is one pipelined INCR + EXPIRE; other cache backends use add + incr.

Redis 6.2 or later (README.md): only commands and options Redis 6.2 has are sent (`EXPIRE ... NX` is Redis 7's, and
on Redis 6 its error would have been taken for an unreachable cache, which lets every request through).
"""

import logging
import time
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.core.cache import caches

from core.cache import drain_due, redis_client

logger = logging.getLogger(__name__)
WINDOW_SECONDS = 60


@dataclass(frozen=True)
class RateLimitState:
    limit: int
    remaining: int
    reset: int
    exceeded: bool
    count: int = 0

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset),
        }


def _increment(key: str, timeout: int) -> int:
    cache = caches["default"]
    client = redis_client(cache)
    if client is not None:
        full_key = cache.make_and_validate_key(key)
        # Every request sets the expiry again: `timeout` runs to the same moment (just past the window's end) for all
        # of them, so it is the expiry the first one set, and no counter is ever left without one (Redis 6.2 has no
        # EXPIRE NX). No MULTI/EXEC needed: a key that expires between the two leaves nothing to expire.
        pipe = client.pipeline(transaction=False)
        pipe.incr(full_key)
        pipe.expire(full_key, timeout)
        count, _ = pipe.execute()
        return int(count)
    cache.add(key, 0, timeout)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout)
        return 1


# The tracking URLs' count and their hit queue in one round trip: INCR and EXPIRE the counter, then RPUSH the values
# only while the count is within the limit. Returns the count and the list's length after the push (0: not pushed).
_HIT_THEN_PUSH = """
local count = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
if count > tonumber(ARGV[2]) then
    return {count, 0}
end
return {count, redis.call('RPUSH', KEYS[2], unpack(ARGV, 3))}
"""


@lru_cache(maxsize=4)
def _hit_then_push_script(client):
    # Sent by its digest (EVALSHA), and loaded again by redis-py when a restarted Redis no longer knows it.
    return client.register_script(_HIT_THEN_PUSH)


def rate_limit_hit_then_push(scope: str, *, limit: int, queue: str, values: list[str]) -> tuple[RateLimitState, bool]:
    """Count one request for `scope` against `limit` and, unless that passes the limit, append `values` to the Redis
    list `queue`, in one round trip. Returns the state and whether the caller should schedule the queue's task
    (`core.cache.drain_due`). The cache must be Redis
    (`core.cache.redis_client`); Redis errors propagate."""
    cache = caches["default"]
    client = redis_client(cache)
    window = Window.now()
    count, length = _hit_then_push_script(client)(
        keys=[cache.make_and_validate_key(window.key(scope)), cache.make_and_validate_key(queue)],
        args=[window.timeout, limit, *values],
    )
    window.count = int(count)
    if not length:
        return window.state(limit), False
    return window.state(limit), drain_due(length=length, pushed=len(values))


def counter_increment(key: str, *, timeout: int) -> int:
    """Add one to a counter in the shared cache that expires `timeout` seconds after its first count (a window
    that starts with the first event, as the login lockout's does); the new count."""
    cache = caches["default"]
    if cache.add(key, 1, timeout):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout)
        return 1


def counter_value(key: str) -> int:
    return int(caches["default"].get(key) or 0)


def project_scope(project_id, kind: str) -> str:
    """The budget of one project's calls with one kind of key: the public key is published in web pages, so its
    calls have a budget of their own and cannot use up the secret key's."""
    return f"project:{project_id}:{kind}"


@dataclass
class Window:
    """The current 60-second window, and one request's count in it once taken (by `rate_limit_hit`, or together
    with the key lookup by `accounts.tenancy.keycache.cached_project`, which learns the project's scope only then)."""

    number: int
    reset: int
    count: int | None = None

    @classmethod
    def now(cls) -> "Window":
        now = time.time()
        return cls(number=int(now // WINDOW_SECONDS), reset=WINDOW_SECONDS - int(now % WINDOW_SECONDS))

    def key(self, scope: str) -> str:
        return f"rl:{scope}:{self.number}"

    @property
    def timeout(self) -> int:
        return self.reset + 5

    def state(self, limit: int | None = None) -> RateLimitState:
        limit = settings.API_RATE_LIMIT_PER_MINUTE if limit is None else limit
        return RateLimitState(
            limit=limit,
            remaining=max(0, limit - self.count),
            reset=self.reset,
            exceeded=self.count > limit,
            count=self.count,
        )


def rate_limit_hit(scope: str, *, limit: int | None = None) -> RateLimitState | None:
    """Count one request for `scope` against `limit` per window (the API's, `API_RATE_LIMIT_PER_MINUTE`, unless
    given); None when the limit is off (0) or the cache cannot be reached."""
    limit = settings.API_RATE_LIMIT_PER_MINUTE if limit is None else limit
    if limit <= 0:
        return None
    window = Window.now()
    try:
        window.count = _increment(window.key(scope), window.timeout)
    except Exception:
        # The limit protects the service; an unreachable cache must not take the API down with it.
        logger.exception("Rate limit cache unavailable; request allowed")
        return None
    return window.state(limit)


def client_address(meta) -> str:
    """The client's address from a request's META or a WSGI environ: `REMOTE_ADDR`, or the `X-Forwarded-For` entry
    `TRUSTED_PROXY_COUNT` hops from the right when proxies are trusted (the entries left of it are the client's
    to write)."""
    hops = settings.TRUSTED_PROXY_COUNT
    if hops:
        forwarded = [part.strip() for part in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if part]
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return meta.get("REMOTE_ADDR", "unknown")

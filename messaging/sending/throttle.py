"""Per-project send rate: a token bucket in the shared cache, consulted before each message is handed over.

A project over its rate is not refused: its remaining messages wait in the queue until tokens are back (without
using their delivery attempts), while other projects' messages go on. With
Redis the bucket is one Lua script (atomic across workers); other caches use a best-effort read-modify-write.
A cache that cannot be reached lets messages go (logged), as the API rate limit lets requests through:
an outage of the cache must neither hold mail nor use up its delivery attempts.
"""

import logging
import time

from django.conf import settings
from django.core.cache import caches

from core.cache import redis_client

logger = logging.getLogger(__name__)
_BUCKET = """
local rate, burst, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + (now - at) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'at', now)
redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 60)
return tostring(wait)
"""


def send_slot_wait(project_id) -> float:
    """0 when a message of the project may go now, else the seconds until one may."""
    rate = settings.SEND_RATE_PER_PROJECT_PER_SECOND
    if rate <= 0:
        return 0.0
    try:
        return _bucket_wait(f"send-bucket:{project_id}", rate)
    except Exception:
        logger.exception("Send-rate bucket unavailable; the message of project %s goes unthrottled", project_id)
        return 0.0


def send_slot_after(wait: float, position: int) -> float:
    """The seconds until the message `position` places behind one that must wait `wait` may go, if no other worker
    takes the project's tokens meanwhile: they come back at the project's rate."""
    return wait + position / settings.SEND_RATE_PER_PROJECT_PER_SECOND


def _bucket_wait(key: str, rate: float) -> float:
    burst = max(1.0, rate)
    cache = caches["default"]
    now = time.time()
    client = redis_client(cache)
    if client is not None:
        full_key = cache.make_and_validate_key(key)
        return float(client.eval(_BUCKET, 1, full_key, rate, burst, now))
    tokens, at = cache.get(key, (burst, now))
    tokens = min(burst, tokens + (now - at) * rate)
    if tokens >= 1:
        cache.set(key, (tokens - 1, now), 3600)
        return 0.0
    cache.set(key, (tokens, now), 3600)
    return (1 - tokens) / rate

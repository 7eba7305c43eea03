"""Per-client-address limits on the public URLs of emails: the open pixel and click redirect, and the hosted pages.

Anyone can load a pixel or follow a link as often as they like; without a bound, one client could inflate a
campaign's opens and clicks and grow the hit queue without end. Each client address gets
`TRACKING_RATE_LIMIT_PER_MINUTE` (0 turns the limits off) in a fixed window, counted in the shared cache by the
API's counter (`core.ratelimit`), once for the tracking URLs and once, apart, for the hosted pages. What happens
over the limit is each endpoint's to decide: a reader is never shown an error for opening or clicking.
"""

import logging

from django.conf import settings
from django.core.cache import caches

from core.cache import list_push
from core.ratelimit import RateLimitState, client_address, rate_limit_hit, rate_limit_hit_then_push

logger = logging.getLogger(__name__)

TRACKING = "track"
PAGES = "page"


def limit_exceeded(kind: str, meta) -> RateLimitState | None:
    """Count one request of the client of `meta` (a request's META or a WSGI environ) to the `kind` of URLs
    (TRACKING or PAGES); its state when over the limit, else None (also when the limit is off or the cache cannot
    be reached)."""
    limit = settings.TRACKING_RATE_LIMIT_PER_MINUTE
    if limit <= 0:
        return None
    address = client_address(meta)
    state = rate_limit_hit(f"{kind}:{address}", limit=limit)
    return _over(state, kind, address)


def tracking_push_within_limit(meta, *, queue: str, values: list[str]) -> bool:
    """`limit_exceeded(TRACKING, meta)` and, when the client is within its limit, the push of `values` onto the
    Redis list `queue`, in one round trip (a tracking hit is all Redis work). Returns whether to schedule the
    queue's drain (never when over the limit: nothing was pushed). The cache must be Redis; Redis errors propagate."""
    limit = settings.TRACKING_RATE_LIMIT_PER_MINUTE
    if limit <= 0:
        return bool(list_push(caches["default"], queue, values))
    address = client_address(meta)
    state, schedule = rate_limit_hit_then_push(f"{TRACKING}:{address}", limit=limit, queue=queue, values=values)
    _over(state, TRACKING, address)
    return schedule


def _over(state: RateLimitState | None, kind: str, address: str) -> RateLimitState | None:
    if state is None or not state.exceeded:
        return None
    if state.count == state.limit + 1:  # once per window and address: a mail provider's image proxy may be the client
        logger.warning(
            "Client %s passed TRACKING_RATE_LIMIT_PER_MINUTE (%d) on the %s URLs; refused or not recorded for %d s",
            address,
            state.limit,
            "tracking" if kind == TRACKING else "page",
            state.reset,
        )
    return state

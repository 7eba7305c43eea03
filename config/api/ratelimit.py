"""The HTTP side of the rate limit (the counting is `core.ratelimit`): who the caller is, and how a request
counted in front of Django carries its count on to the view."""

from django.conf import settings

# Where a request counted in front of Django (config.api.fastroute) carries its count on to the view.
COUNTED_ENVIRON_KEY = "herald.rate_limit"


def client_address(request) -> str:
    """The caller's address, looking through as many X-Forwarded-For hops as there are trusted proxies."""
    hops = settings.TRUSTED_PROXY_COUNT
    if hops:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part]
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return request.META.get("REMOTE_ADDR", "unknown")

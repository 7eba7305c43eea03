"""The HTTP side of the rate limit (the counting and the address logic are `core.ratelimit`'s, shared with the
limits of the tracking URLs and hosted pages): who the caller is, and how a request counted in front of Django
carries its count on to the view."""

from core.ratelimit import client_address

# Where a request counted in front of Django (accounts.http.fastroute) carries its count on to the view.
COUNTED_ENVIRON_KEY = "herald.rate_limit"


def address_scope(meta) -> str:
    """The rate limit's budget of a request that names no project (sign-up, login, the account pages): its client
    address's."""
    return f"ip:{client_address(meta)}"

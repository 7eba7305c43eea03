"""The HTTP side of the rate limit (the counting and the address logic are `core.ratelimit`'s, shared with the
limits of the tracking URLs and hosted pages): who the caller is, and how a request counted in front of Django
carries its count on to the view."""

# Where a request counted in front of Django (accounts.http.fastroute) carries its count on to the view.
COUNTED_ENVIRON_KEY = "herald.rate_limit"

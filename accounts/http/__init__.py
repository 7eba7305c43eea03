"""The base every API view derives from, on `core.http`: who is calling and for which project (API keys and the
dashboard's session, `authentication`), the base views that authenticate, count the rate limit, check a member's
role, claim the `Idempotency-Key` (its records: `idempotency`), run writes atomically and scope every query to the
project (`views`), and the fast route that answers a key-authenticated `HandlerView` in front of Django
(`fastroute`).

It lives in accounts because all of it stands on accounts' keys, sessions, memberships and idempotency records;
every app's API builds on it, so it knows no app above accounts.
"""

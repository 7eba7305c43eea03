"""A shared cache of key → project for the authentication of every request.

Enabled when the cache is shared by all processes (Redis: `API_KEY_CACHE_SECONDS` > 0); a per-process cache could
not forget a rotated key in the other processes, so with local memory every request asks the database.

Forgetting must beat remembering. Invalidation writes a short-lived "stale" marker over the entries of the keys
involved (before and again after the change commits) instead of deleting them; lookups that find the marker go to
the database and do not refill, and refills use `add` (only if absent), so a request that read the old row just
before a rotation cannot put it back.
"""

from django.conf import settings
from django.core.cache import caches
from django.db import transaction

from accounts.models import Project

FIELDS = ("id", "name", "disabled", "disabled_reason", "public_key", "secret_key_hash")
STALE = "stale"
STALE_SECONDS = 30


def _key(digest: str) -> str:
    return f"apikey:{digest}"


def enabled() -> bool:
    return settings.API_KEY_CACHE_SECONDS > 0


def cached_project(digest: str) -> Project | str | None:
    """The cached project for a key hash, STALE when it must be read from the database, or None (not cached)."""
    try:
        entry = caches["default"].get(_key(digest))
    except Exception:
        return STALE
    if entry is None or entry == STALE:
        return entry
    project = Project(**dict(zip(FIELDS, entry, strict=True)))
    project._state.adding = False
    project._state.db = "default"
    return project


def remember(digest: str, project: Project) -> None:
    try:
        caches["default"].add(_key(digest), [getattr(project, name) for name in FIELDS], settings.API_KEY_CACHE_SECONDS)
    except Exception:  # an unreachable cache only costs the database lookup
        return


def forget(*digests: str) -> None:
    """Mark the entries of these key hashes stale, now and once the surrounding transaction commits."""
    if not enabled():
        return

    def mark() -> None:
        try:
            caches["default"].set_many({_key(digest): STALE for digest in digests}, STALE_SECONDS)
        except Exception:
            return

    mark()
    transaction.on_commit(mark)

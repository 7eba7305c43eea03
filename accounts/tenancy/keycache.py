"""A shared cache of key → project for the authentication of every request.

Enabled when the cache is shared by all processes (Redis: `API_KEY_CACHE_SECONDS` > 0); a per-process cache could
not forget a rotated key in the other processes, so with local memory every request asks the database.

Forgetting must beat remembering. Invalidation writes a short-lived "stale" marker over the entries of the keys
involved (before and again after the change commits) instead of deleting them; lookups that find the marker go to
the database and do not refill, and refills use `add` (only if absent), so a request that read the old row just
before a rotation cannot put it back.
"""

import json
import uuid

from django.conf import settings
from django.core.cache import caches
from redis.commands.core import Script

from accounts.models import Project
from core.cache import redis_client
from core.commit import after_commit
from core.ratelimit import Window, project_scope

# What a request reads of its project on hot paths (/v1/send reads the tracking mode); any change to this list
# must bump ENTRY_VERSION so entries written by the previous release are never read with the new layout.
FIELDS = ("id", "name", "disabled", "disabled_reason", "public_key", "secret_key_hash", "tracking_mode")
ENTRY_VERSION = 2
STALE = "stale"
STALE_SECONDS = 30


def _key(digest: str) -> str:
    return f"apikey:v{ENTRY_VERSION}:{digest}"


def enabled() -> bool:
    return settings.API_KEY_CACHE_SECONDS > 0


# Entries are short JSON strings written with the raw Redis client: Django's cache API builds a client and
# pickles on every call, which cost as much as the database query it replaces.


# With the key's entry, the request is counted in its project's rate-limit window: one round trip for both. The
# counter's name is the window's key for the entry's project id (the first of FIELDS); counted as core.ratelimit
# counts (INCR, then EXPIRE to just past the window's end: no Redis 7 option such as EXPIRE NX).
_GET_AND_COUNT = Script(
    None,
    b"""
local entry = redis.call('GET', KEYS[1])
if not entry or entry == ARGV[1] then return {entry or '', -1} end
local counter = ARGV[2] .. cjson.decode(entry)[1] .. ARGV[3]
local count = redis.call('INCR', counter)
redis.call('EXPIRE', counter, ARGV[4])
return {entry, count}
""",
)  # run by its SHA (EVALSHA), loaded into Redis on first use


def counter_key_parts(cache, window: Window, kind: str) -> tuple[str, str]:
    """The full cache key of a project's rate-limit counter in `window`, around the place of the project id: a
    script that learns the project from an entry counts the request in `head .. project_id .. tail`."""
    head, _, tail = cache.make_key(window.key(project_scope("\0", kind))).rpartition("\0")
    return head, tail


def _get(key: str, window: Window | None, kind: str):
    cache = caches["default"]
    client = redis_client(cache)
    if client is None:
        return cache.get(key)
    full_key = cache.make_and_validate_key(key)
    if window is None:
        raw = client.get(full_key)
    else:
        head, tail = counter_key_parts(cache, window, kind)
        raw, count = _GET_AND_COUNT([full_key], [json.dumps(STALE), head, tail, window.timeout], client=client)
        if count >= 0:
            window.count = count
        raw = raw or None
    return None if raw is None else json.loads(raw)


def cached_project(digest: str, window: Window | None = None, kind: str = "") -> Project | str | None:
    """The cached project for a key hash, STALE when it must be read from the database, or None (not cached).
    With `window`, a cached project's request is counted in it too (`window.count`), in the budget of `kind`."""
    try:
        entry = _get(_key(digest), window, kind)
    except Exception:
        return STALE
    if entry is None or entry == STALE:
        return entry
    return project_from_entry(entry)


def project_from_entry(entry: list) -> Project:
    """The project of a cache entry's FIELDS values (`project_entry`)."""
    values = dict(zip(FIELDS, entry, strict=True))
    values["id"] = uuid.UUID(values["id"])
    # Built as if loaded from the database with only these columns: any other field (tracking mode, ...) is
    # deferred and read fresh from the database on first access, never a silent default.
    # from_db takes the values in the model's field order.
    names = [field.attname for field in Project._meta.concrete_fields if field.attname in values]
    return Project.from_db("default", names, [values[name] for name in names])


def project_entry(project: Project) -> list:
    """The project's FIELDS values, as JSON can hold them."""
    return [str(getattr(project, name)) if name == "id" else getattr(project, name) for name in FIELDS]


def remember(digest: str, project: Project) -> None:
    cache = caches["default"]
    entry = json.dumps(project_entry(project))
    try:
        client = redis_client(cache)
        if client is None:
            cache.add(_key(digest), json.loads(entry), settings.API_KEY_CACHE_SECONDS)
        else:
            client.set(cache.make_and_validate_key(_key(digest)), entry, nx=True, ex=settings.API_KEY_CACHE_SECONDS)
    except Exception:  # an unreachable cache only costs the database lookup
        return


def forget(*digests: str) -> None:
    """Mark the entries of these key hashes stale, now and once the surrounding transaction commits."""
    if not enabled():
        return

    def mark() -> None:
        cache = caches["default"]
        try:
            client = redis_client(cache)
            if client is None:
                cache.set_many({_key(digest): STALE for digest in digests}, STALE_SECONDS)
                return
            pipe = client.pipeline()
            for digest in digests:
                pipe.set(cache.make_and_validate_key(_key(digest)), json.dumps(STALE), ex=STALE_SECONDS)
            pipe.execute()
        except Exception:
            return

    mark()
    after_commit(mark, what="mark cached API keys stale (they expire on their own)")

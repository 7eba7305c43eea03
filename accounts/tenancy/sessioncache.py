"""A shared cache of (dashboard session, project) → the member's role and the project, read and counted in the
project's rate limit in one Redis round trip, as a key request finds its project (`accounts.tenancy.keycache`).

Only with Redis as the cache, which every process shares (`SESSION_ACCESS_CACHE_SECONDS` > 0): a per-process cache
could not be told, in the other processes, that a member was removed. An entry is good while

- it lives: at most SESSION_ACCESS_CACHE_SECONDS, and never past its session's expiry;
- the generations of its user and of its project are still the ones it was written under.

Whatever ends or narrows a session's access moves a generation: the user's on logout and on any change to the user
(password, deactivation, ...), the project's on any change to the project (`services.project_auth_changed`) or to
any of its memberships. A generation is a random token, moved at once and again after the change commits; a request
reads the generations before it reads the database and writes its entry under them, so an entry built from a row
read before a change carries a generation the change has already replaced and is never used.

A generation outlives every entry written under the one before it (twice the entries' lifetime), so one that
expires cannot bring an old entry back: entries hold the token they saw, and a missing generation matches only
entries written while it was missing, all of them gone by then.
"""

import hashlib
import json
import secrets
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from redis.commands.core import Script

from accounts.models import Membership, User
from accounts.tenancy import keycache
from accounts.tenancy.keys import KeyKind
from core.cache import redis_client
from core.commit import after_commit
from core.ids import uuid_or_none
from core.ratelimit import Window

# Entry: [user id, user generation, project generation, role, *the project's keycache.FIELDS]; a change to the
# layout bumps the version so that entries of the previous release are never read with the new one.
ENTRY_VERSION = 1
_USER, _PROJECT = "u", "p"

# The entry, if both generations are still the ones it was written under; with a window, the request is counted in
# the entry's project's rate limit too (as keycache's script counts: INCR, then EXPIRE just past the window's end).
_GET_AND_COUNT = Script(
    None,
    b"""
local raw = redis.call('GET', KEYS[1])
if not raw then return {false, -1} end
local entry = cjson.decode(raw)
local project_id = entry[5]
if (redis.call('GET', ARGV[1] .. entry[1] .. ARGV[2]) or '') ~= entry[2]
    or (redis.call('GET', ARGV[3] .. project_id .. ARGV[4]) or '') ~= entry[3] then
    return {false, -1}
end
if ARGV[5] == '' then return {raw, -1} end
local counter = ARGV[5] .. project_id .. ARGV[6]
local count = redis.call('INCR', counter)
redis.call('EXPIRE', counter, ARGV[7])
return {raw, count}
""",
)  # run by its SHA (EVALSHA), loaded into Redis on first use


def enabled() -> bool:
    return settings.SESSION_ACCESS_CACHE_SECONDS > 0


def _entry_key(session_key: str, project_id: uuid.UUID) -> str:
    # The session key is a credential: entry names carry a digest of it, not the key.
    digest = hashlib.sha256(session_key.encode()).hexdigest()[:40]
    return f"sessionaccess:v{ENTRY_VERSION}:{digest}:{project_id}"


def _generation_key(kind: str, object_id) -> str:
    return f"sessionaccess:gen:{kind}:{object_id}"


def _generation_key_parts(cache, kind: str) -> tuple[str, str]:
    head, _, tail = cache.make_key(_generation_key(kind, "\0")).rpartition("\0")
    return head, tail


def cached_membership(session_key: str | None, project_id: str, window: Window | None) -> Membership | None:
    """The session's membership in the project from the shared cache, or None (not cached, out of date, or no Redis).
    With `window`, a cached membership's request is counted in its project's secret-key budget (`window.count`)."""
    project_uuid = uuid_or_none(project_id)
    cache = caches["default"]
    client = redis_client(cache)
    if not session_key or project_uuid is None or client is None:
        return None
    counter = keycache.counter_key_parts(cache, window, KeyKind.SECRET) if window is not None else ("", "")
    args = [*_generation_key_parts(cache, _USER), *_generation_key_parts(cache, _PROJECT), *counter]
    try:
        raw, count = _GET_AND_COUNT(
            [cache.make_and_validate_key(_entry_key(session_key, project_uuid))],
            [*args, window.timeout if window is not None else 0],
            client=client,
        )
    except Exception:  # an unreachable cache only costs the database lookup
        return None
    if not raw:
        return None
    if count >= 0:
        window.count = count
    entry = json.loads(raw)
    user = User(id=uuid.UUID(entry[0]), is_active=True)
    return Membership(user=user, project=keycache.project_from_entry(entry[4:]), role=entry[3])


@dataclass(frozen=True)
class Generations:
    user: str
    project: str


def generations(user_id, project_id: str) -> Generations | None:
    """The current generations of a user and a project, read before the database is: see the module's docstring."""
    cache = caches["default"]
    client = redis_client(cache)
    project_uuid = uuid_or_none(project_id)
    if client is None or project_uuid is None:
        return None
    keys = [cache.make_and_validate_key(_generation_key(_USER, user_id))]
    keys.append(cache.make_and_validate_key(_generation_key(_PROJECT, project_uuid)))
    try:
        user, project = client.mget(keys)
    except Exception:
        return None
    return Generations(user=(user or b"").decode(), project=(project or b"").decode())


def remember(session, membership: Membership, seen: Generations) -> None:
    """Cache a verified session's membership under the generations read before the membership was."""
    seconds = min(settings.SESSION_ACCESS_CACHE_SECONDS, session.get_expiry_age())
    cache = caches["default"]
    client = redis_client(cache)
    if client is None or seconds <= 0:
        return
    project = membership.project
    entry = [str(membership.user.pk), seen.user, seen.project, membership.role, *keycache.project_entry(project)]
    try:
        client.set(
            cache.make_and_validate_key(_entry_key(session.session_key, project.pk)), json.dumps(entry), ex=seconds
        )
    except Exception:
        return


def _move(kind: str, object_id) -> None:
    cache = caches["default"]
    client = redis_client(cache)
    if client is None:
        return
    key = cache.make_and_validate_key(_generation_key(kind, object_id))
    lifetime = 2 * max(settings.SESSION_ACCESS_CACHE_SECONDS, 1) + 60

    def move() -> None:
        try:
            client.set(key, secrets.token_hex(8), ex=lifetime)
        except Exception:
            return

    move()
    after_commit(move, what="move a session-access generation (its entries expire on their own)")


def forget_user(user_id) -> None:
    """Every cached access of the user's sessions is refused from the next request on, in every process."""
    _move(_USER, user_id)


def forget_project(project_id) -> None:
    """Every cached session access to the project is refused from the next request on, in every process."""
    _move(_PROJECT, uuid_or_none(project_id) or project_id)

"""Reads a streaming replica may serve (`DATABASE_REPLICA_URL`, docs/scaling.md "Read replica").

Only reads inside `replica_reads()` go to the replica: member pages, analytics, activity, exports and the admin's
lists, which may show data a few seconds old. Everything else stays on the primary, so a claim, a row lock or an
answer that must show what the same request (or the one before it) wrote never reads from a replica that has not
replayed that write yet. Writes always go to the primary, and so does every read inside a transaction on the
primary or taken for update (`select_for_update` reads through the write route).

A replica that cannot be reached is left alone for `DATABASE_REPLICA_RETRY_SECONDS` and its reads go to the primary
meanwhile; the fallback is logged at most once a minute per process.
"""

import logging
import math
import time
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

REPLICA = "replica"
LOG_EVERY_SECONDS = 60.0

logger = logging.getLogger(__name__)

_in_scope: ContextVar[bool] = ContextVar("replica_reads", default=False)
# Per process: when the replica may be tried again, and when its fallback was last logged.
_down = {"until": 0.0, "logged_at": -math.inf}


@contextmanager
def replica_reads():
    """Reads inside (a `with` block, or a decorated function) may come from the replica, if one is configured."""
    token = _in_scope.set(True)
    try:
        yield
    finally:
        _in_scope.reset(token)


def _replica_answers() -> bool:
    now = time.monotonic()
    if now < _down["until"]:
        return False
    replica = connections[REPLICA]
    try:
        # A connection kept from an earlier request is checked once per request (CONN_HEALTH_CHECKS, forced on for
        # the replica in the settings): a replica stopped since fails here, not in the middle of a read.
        replica.close_if_health_check_failed()
        replica.ensure_connection()
    except DatabaseError as exc:
        _down["until"] = now + settings.DATABASE_REPLICA_RETRY_SECONDS
        if now - _down["logged_at"] >= LOG_EVERY_SECONDS:
            _down["logged_at"] = now
            logger.warning(
                "Read replica unreachable, reading from the primary for the next %ss: %s",
                settings.DATABASE_REPLICA_RETRY_SECONDS,
                " ".join(str(exc).split()) or type(exc).__name__,
            )
        return False
    return True


class ReplicaRouter:
    """The database router (settings.DATABASE_ROUTERS). It names the primary explicitly everywhere it does not choose
    the replica: left to Django, a row read from the replica would be saved back to the replica."""

    def db_for_read(self, model, **hints):
        if (
            _in_scope.get()
            and REPLICA in connections.settings
            and not connections[DEFAULT_DB_ALIAS].in_atomic_block
            and _replica_answers()
        ):
            return REPLICA
        return DEFAULT_DB_ALIAS

    def db_for_write(self, model, **hints):
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints):
        # Both aliases hold the same rows: a contact read from the replica may be assigned to a row being written.
        return True

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        # The replica replays the primary's schema; it is never migrated itself.
        return False if db == REPLICA else None

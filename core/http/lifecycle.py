"""Django's request signals for a request answered in front of Django (`accounts.http.fastroute`).

Django's handler sends `request_started` and `request_finished` around every request, and its own receivers then
close database connections that are broken or past `DATABASE_CONN_MAX_AGE`, clear the query log (DEBUG), close
the caches and reset the thread's URLconf. Sent for a request answered in front of Django, the dispatch and the
receivers that have nothing to do there cost 40 µs, 6 % of a `/v1/send`: the caches here need no closing (Redis and
local memory close nothing; a backend that does is still closed), the URLconf is never set, and the query log is
kept only under DEBUG. So while Django's receivers are the only ones, `request_started` and `request_finished` do
their work that applies, directly; as soon as any other receiver listens (a test's, a library's), the signals are
sent as Django sends them.
"""

from django.conf import settings
from django.core import signals
from django.core.cache import caches, close_caches
from django.core.cache.backends.base import BaseCache
from django.core.handlers.base import reset_urlconf
from django.core.signals import setting_changed
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connections, reset_queries
from django.dispatch.dispatcher import _make_id


def _keys(*receivers) -> frozenset:
    """The keys Django's `Signal.connect` files these receivers under (for any sender)."""
    return frozenset((_make_id(receiver), _make_id(None)) for receiver in receivers)


_DJANGOS_STARTED = _keys(reset_queries, close_old_connections)
_DJANGOS_FINISHED = _keys(close_old_connections, close_caches, reset_urlconf)
_caches_close: bool | None = None


def _forget_caches(*, setting, **kwargs) -> None:
    global _caches_close
    if setting == "CACHES":
        _caches_close = None


setting_changed.connect(_forget_caches)


def _only(signal, keys: frozenset) -> bool:
    """Whether Django's receivers of `signal` are all that listen."""
    receivers = signal.receivers
    return len(receivers) == len(keys) and all(receiver[0] in keys for receiver in receivers)


def _close_connections() -> None:
    """`close_old_connections`, for the default connection alone when it is the only database."""
    if len(settings.DATABASES) > 1:
        close_old_connections()
    else:
        connections[DEFAULT_DB_ALIAS].close_if_unusable_or_obsolete()


def _caches_need_closing() -> bool:
    global _caches_close
    if _caches_close is None:
        _caches_close = any(type(caches[alias]).close is not BaseCache.close for alias in settings.CACHES)
    return _caches_close


def request_started(environ) -> None:
    if not _only(signals.request_started, _DJANGOS_STARTED):
        signals.request_started.send(sender=None, environ=environ)
        return
    if settings.DEBUG:
        reset_queries()
    _close_connections()


def request_finished() -> None:
    if not _only(signals.request_finished, _DJANGOS_FINISHED):
        signals.request_finished.send(sender=None)
        return
    _close_connections()
    if _caches_need_closing():
        close_caches()

"""Browser sessions are Django's (its session engine and middleware); identity adds only the purge of expired ones,
run by a periodic task. Apart from `users`, so that identity's tasks import no service that itself queues a task."""

from importlib import import_module

from django.conf import settings


def session_purge_expired() -> None:
    engine = import_module(settings.SESSION_ENGINE)
    engine.SessionStore.clear_expired()

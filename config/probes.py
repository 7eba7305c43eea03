"""Probes of the components the service runs on, shared by `/health` (config/views.py) and `manage.py doctor`
(config/doctor.py): each raises when its component does not answer."""

from django.core.cache import cache
from django.db import connection

from config.celery import app as celery_app


def database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def cache_roundtrip() -> None:
    cache.set("health:probe", "1", 10)
    if cache.get("health:probe") != "1":
        raise RuntimeError("cache did not return the probe value")


def broker_transport() -> None:
    """Import the broker's transport, which kombu does only at the first connection: a library missing from the
    install fails here, and is told apart from a broker that does not answer."""
    celery_app.connection_for_write().get_transport_cls()


def broker() -> None:
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=2)

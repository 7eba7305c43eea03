"""The request signals of an answer given in front of Django (`core.http.lifecycle`): Django's receivers' work is
done, and any other receiver is sent the signals as Django sends them."""

import time

import pytest
from django.core import signals
from django.db import connection

from core.http import lifecycle

pytestmark = pytest.mark.django_db(transaction=True)


def test_with_djangos_receivers_alone_a_connection_past_its_age_is_closed_at_both_ends():
    for boundary in (lambda: lifecycle.request_started({}), lifecycle.request_finished):
        connection.ensure_connection()
        assert connection.connection is not None
        connection.close_at = time.monotonic() - 1  # as DATABASE_CONN_MAX_AGE sets it, now past
        boundary()
        assert connection.connection is None


def test_with_djangos_receivers_alone_a_usable_connection_is_kept():
    connection.ensure_connection()
    connection.close_at = time.monotonic() + 60
    raw = connection.connection
    lifecycle.request_started({})
    lifecycle.request_finished()
    assert connection.connection is raw


def test_another_receiver_gets_both_signals_as_django_sends_them():
    heard = []

    def started(sender, **kwargs):
        heard.append(("started", sender, kwargs.get("environ")))

    def finished(sender, **kwargs):
        heard.append(("finished", sender, None))

    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        environ = {"PATH_INFO": "/v1/send"}
        lifecycle.request_started(environ)
        lifecycle.request_finished()
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)
    assert heard == [("started", None, environ), ("finished", None, None)]

"""The embedded broker's transport: messages go through its folder as through kombu's, and no wait for messages
lasts longer than a short poll, so that a stopping worker is not held up (docs/operations.md "Development install")."""

import socket
import time

import pytest
from kombu import Connection, Exchange, Queue

from config.settings.base import filesystem_broker_options
from core.filesystem_broker import MAX_WAIT_SECONDS


@pytest.fixture
def connection(tmp_path):
    with Connection("filesystem://localhost/", transport_options=filesystem_broker_options(tmp_path)) as connection:
        yield connection


def test_a_message_goes_through_the_folder(connection):
    queue = Queue("herald-test", Exchange("herald-test"), routing_key="herald-test")
    received = []
    with connection.Consumer(queue, callbacks=[lambda body, message: (received.append(body), message.ack())]):
        connection.Producer().publish({"id": 1}, exchange=queue.exchange, routing_key="herald-test", declare=[queue])
        connection.drain_events(timeout=2.0)
    assert received == [{"id": 1}]


def test_a_two_second_wait_for_messages_ends_within_a_poll(connection):
    queue = Queue("herald-empty", Exchange("herald-empty"), routing_key="herald-empty")
    with connection.Consumer(queue, callbacks=[]):
        started = time.monotonic()
        with pytest.raises(socket.timeout):
            connection.drain_events(timeout=2.0)  # what Celery's worker loop asks for
        assert time.monotonic() - started < MAX_WAIT_SECONDS + 0.5

"""Webhook test fixtures: real receivers on loopback, the domains app's real DNS server, and a record of every
outgoing connection the process makes."""

import socket
import sys

import pytest

# The loopback DNS server of the domains tests, with the service's resolver pointed at it.
from domains.tests.conftest import _dns_server, _fresh_dns_memory, dns_server, dns_zone  # noqa: F401
from workflows.tests.receivers import Receiver
from workflows.webhooks import WebhookResult, webhook_send

# Every socket.connect of the process while a test listens. An audit hook cannot be removed: it is added once, by
# the first test that asks, and does nothing while no test listens.
_listeners: list[list] = []


def _audit(event: str, args: tuple) -> None:
    if event == "socket.connect" and _listeners:
        sock, address = args
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            for listener in _listeners:
                listener.append(address[:2])


@pytest.fixture
def connections() -> list[tuple[str, int]]:
    """(host, port) of each TCP or UDP connect made during the test, from any thread: proves what was not dialled."""
    if not getattr(_audit, "added", False):
        sys.addaudithook(_audit)
        _audit.added = True
    made: list[tuple[str, int]] = []
    _listeners.append(made)
    yield made
    _listeners.remove(made)


@pytest.fixture
def start_receiver():
    """`start_receiver(host, tls=None)` starts a receiver on that loopback address; all are stopped after the test."""
    started: list[Receiver] = []

    def start(host: str = "127.0.0.1", **options) -> Receiver:
        started.append(Receiver(host, **options))
        return started[-1]

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def receiver(start_receiver) -> Receiver:
    return start_receiver()


@pytest.fixture
def allow_loopback(settings):
    """The receiver's address exempt from the guard, as a private deployment would exempt its own network."""
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]


SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def send(url: str, **overrides) -> WebhookResult:
    """A signed JSON POST to `url`, as a WEBHOOK step sends it; keyword arguments replace any part."""
    call = {
        "url": url,
        "method": "POST",
        "headers": {"Content-Type": "application/json"},
        "body": b'{"contact": {"email": "ann@example.test"}}',
        "secret": SECRET,
        "webhook_id": "msg_2f1c0a",
        **overrides,
    }
    return webhook_send(**call)

"""The one deadline of a webhook call: receivers on loopback that stall a call at each stage of the exchange (the
name lookup, the connect, the TLS handshake, the request, the answer's headers and its body, behind a redirect),
written as raw sockets. Every call ends within WEBHOOK_TIMEOUT_SECONDS + DEADLINE_SLACK_SECONDS, after the deadline
and not before, as a failure worth another attempt."""

import select
import socket
import time

import pytest

from workflows.tests.conftest import send
from workflows.tests.receivers import RawReceiver
from workflows.webhooks import webhook_call_limit

DEADLINE = 1.0
# Slow enough that no read waits a whole deadline, fast enough that a call without one takes many.
INTERVAL = 0.3
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Slow: " + b"a" * 30 + b"\r\nContent-Length: 2\r\n\r\nok"


@pytest.fixture(autouse=True)
def deadline(settings, allow_loopback):
    settings.WEBHOOK_TIMEOUT_SECONDS = DEADLINE


@pytest.fixture
def raw_receiver():
    """`raw_receiver(serve, **options)`: a `RawReceiver`, stopped after the test."""
    started: list[RawReceiver] = []

    def start(serve, **options) -> RawReceiver:
        started.append(RawReceiver(serve, **options))
        return started[-1]

    yield start
    for receiver in started:
        receiver.stop()


def timed(url: str, **overrides):
    started = time.monotonic()
    result = send(url, **overrides)
    return result, time.monotonic() - started


def assert_failed_at_the_deadline(result, elapsed: float, error: str = "timed out") -> None:
    assert (result.status_code, result.retryable, result.success) == (None, True, False)
    assert error in result.error
    assert DEADLINE - 0.05 <= elapsed <= webhook_call_limit()


def test_the_bound_is_the_timeout_and_half_a_second(settings):
    assert webhook_call_limit() == DEADLINE + 0.5
    settings.WEBHOOK_TIMEOUT_SECONDS = 10
    assert webhook_call_limit() == 10.5


def test_a_receiver_that_trickles_its_headers(raw_receiver):
    def serve(conversation):
        conversation.read_request()
        conversation.trickle(HEAD, INTERVAL)

    receiver = raw_receiver(serve)

    assert_failed_at_the_deadline(*timed(receiver.url("/hook")))


def test_a_receiver_that_trickles_its_headers_after_a_slow_redirect(raw_receiver):
    """The hops of a call share its deadline: the second one has what the first left."""

    def serve(conversation):
        conversation.read_request()
        if conversation.n == 0:
            conversation.stopping.wait(0.4)
            conversation.sock.sendall(
                b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /next\r\nContent-Length: 0\r\n\r\n"
            )
        else:
            conversation.trickle(HEAD, INTERVAL)

    receiver = raw_receiver(serve)

    assert_failed_at_the_deadline(*timed(receiver.url("/hook")))
    assert len(receiver.conversations) == 2


def test_a_receiver_that_trickles_its_body(raw_receiver):
    """Part of the answer came in time, but not all of it: the call failed, whatever its status said."""

    def serve(conversation):
        conversation.read_request()
        conversation.sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n")
        conversation.trickle(b"b" * 30, INTERVAL)

    receiver = raw_receiver(serve)

    assert_failed_at_the_deadline(*timed(receiver.url("/hook")))


def test_a_receiver_that_accepts_and_never_answers(raw_receiver):
    def serve(conversation):
        conversation.read_request()
        conversation.hang()

    receiver = raw_receiver(serve)

    assert_failed_at_the_deadline(*timed(receiver.url("/hook")))


def test_a_receiver_that_takes_the_request_slowly(raw_receiver):
    """About 3 MB/s: each send of the request makes some progress, so none alone waits a whole deadline, but the
    32 MB take ten seconds."""
    receiver = raw_receiver(lambda conversation: conversation.read_slowly(64 * 1024, 0.02))

    assert_failed_at_the_deadline(*timed(receiver.url("/hook"), body=b"x" * (32 * 1024 * 1024)))


def test_a_receiver_that_trickles_the_tls_handshake(raw_receiver):
    # A TLS record header announcing a 16 KB handshake message (the server's hello), then its bytes one by one.
    receiver = raw_receiver(lambda conversation: conversation.trickle(b"\x16\x03\x03\x40\x00" + b"\x02" * 60, INTERVAL))

    assert_failed_at_the_deadline(*timed(receiver.url("/hook", scheme="https")))


def test_a_receiver_that_never_accepts():
    """A full backlog: the listener's queue holds connections nobody accepts, so new ones get no answer at all."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    address = listener.getsockname()
    waiting = []
    try:
        while True:  # connect until one is left without an answer
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(address)
            waiting.append(filler)
            if not select.select([], [filler], [], 0.2)[1]:
                break
            assert len(waiting) < 20, "the backlog never filled"

        assert_failed_at_the_deadline(*timed(f"http://127.0.0.1:{address[1]}/hook"))
    finally:
        for sock in [*waiting, listener]:
            sock.close()


def test_the_name_lookups_count_against_the_deadline(silent_dns, settings):
    settings.DNS_TIMEOUT_SECONDS = 5  # each lookup alone would outlast the call's deadline

    result, elapsed = timed("http://hooks.example.test/hook")

    assert_failed_at_the_deadline(result, elapsed, error="DNS lookup of hooks.example.test timed out")

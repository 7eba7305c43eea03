"""One webhook call to a real receiver on loopback (exempt from the guard as a private deployment would exempt its
network): the signed request as received, the pinned connection (Host, SNI, certificate), what is kept of the
answer, and which failures are worth another attempt."""

import json
import time

import pytest

from messaging.feedback.signatures import svix_signature_valid
from workflows.tests.conftest import SECRET, send
from workflows.tests.receivers import Answer, Receiver, certificates, redirect
from workflows.webhooks.client import RESPONSE_LIMIT_BYTES


def signature_valid(received, *, secret: str = SECRET) -> bool:
    """Checked by the feedback app's Svix verifier (the same scheme under `svix-*` header names), not by the code
    that signed."""
    headers = {name.replace("webhook-", "svix-"): value for name, value in received.headers.items()}
    return svix_signature_valid(secret=secret, headers=headers, body=received.body, tolerance=300)


def test_the_receiver_gets_the_signed_request(allow_loopback, receiver):
    body = json.dumps({"contact": {"id": "c1", "email": "ann@example.test"}}).encode()

    result = send(
        receiver.url("/hooks/crm?source=herald"),
        method="PUT",
        headers={"Content-Type": "application/json", "X-Api-Token": "t0k3n", "Webhook-Signature": "v1,forged"},
        body=body,
        webhook_id="msg_exec42_step7",
    )

    assert (result.status_code, result.body, result.error, result.retryable, result.success) == (
        200,
        "ok",
        None,
        False,
        True,
    )
    [received] = receiver.requests
    assert (received.method, received.path, received.body) == ("PUT", "/hooks/crm?source=herald", body)
    assert received.headers["content-type"] == "application/json"
    assert received.headers["x-api-token"] == "t0k3n"
    assert received.headers["webhook-id"] == "msg_exec42_step7"
    assert abs(int(received.headers["webhook-timestamp"]) - time.time()) <= 5
    assert received.headers["webhook-signature"].startswith("v1,")
    assert received.headers["host"] == f"127.0.0.1:{receiver.port}"
    assert signature_valid(received)
    assert not signature_valid(received, secret="whsec_" + "A" * 44)


def test_a_get_without_a_body_is_signed_over_the_empty_body(allow_loopback, receiver):
    result = send(receiver.url("/ping"), method="GET", headers={}, body=b"")

    assert result.success
    [received] = receiver.requests
    assert (received.method, received.body) == ("GET", b"")
    assert signature_valid(received)


def test_a_name_is_resolved_once_and_kept_in_the_host_header(allow_loopback, receiver, dns_server, connections):
    dns_server.zone[("hooks.example.test", "A")] = ["127.0.0.1"]

    result = send(receiver.url("/hook", host="hooks.example.test"))

    assert result.status_code == 200
    # No system resolver knows this name: the call reached the receiver through the address the guard checked.
    assert dns_server.queries == [("hooks.example.test", "A"), ("hooks.example.test", "AAAA")]
    assert receiver.requests[0].headers["host"] == f"hooks.example.test:{receiver.port}"
    assert ("127.0.0.1", receiver.port) in connections


def test_an_internationalised_name_is_resolved_and_sent_in_its_idna_form(allow_loopback, receiver, dns_server):
    dns_server.zone[("xn--bcher-kva.example.test", "A")] = ["127.0.0.1"]

    result = send(receiver.url("/hook", host="Bücher.example.test"))

    assert result.status_code == 200
    assert dns_server.queries[0] == ("xn--bcher-kva.example.test", "A")
    assert receiver.requests[0].headers["host"] == f"xn--bcher-kva.example.test:{receiver.port}"


@pytest.fixture
def tls(tmp_path):
    return certificates(tmp_path, "hooks.example.test")


@pytest.fixture
def tls_receiver(tls, start_receiver):
    return start_receiver(tls=tls.context)


def test_https_keeps_the_name_for_sni_and_the_certificate(allow_loopback, tls, tls_receiver, dns_server, monkeypatch):
    dns_server.zone[("hooks.example.test", "A")] = ["127.0.0.1"]
    monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca_file))  # this deployment trusts the test CA

    result = send(tls_receiver.url("/hook", host="hooks.example.test"))

    assert result.status_code == 200
    assert tls.sni == ["hooks.example.test"]
    assert tls_receiver.requests[0].headers["host"] == f"hooks.example.test:{tls_receiver.port}"
    assert signature_valid(tls_receiver.requests[0])


def test_https_checks_the_certificate_against_the_name(allow_loopback, tls, tls_receiver, dns_server, monkeypatch):
    dns_server.zone[("other.example.test", "A")] = ["127.0.0.1"]
    monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca_file))

    result = send(tls_receiver.url("/hook", host="other.example.test"))

    assert result.status_code is None
    assert "CERTIFICATE_VERIFY_FAILED" in result.error
    assert "Hostname mismatch" in result.error
    assert tls.sni == ["other.example.test"]
    assert tls_receiver.requests == []


def test_https_refuses_an_untrusted_certificate(allow_loopback, tls, tls_receiver, dns_server):
    dns_server.zone[("hooks.example.test", "A")] = ["127.0.0.1"]

    result = send(tls_receiver.url("/hook", host="hooks.example.test"))

    assert "CERTIFICATE_VERIFY_FAILED" in result.error
    assert tls_receiver.requests == []


@pytest.mark.parametrize(
    ("status", "success", "retryable"),
    [
        (200, True, False),
        (204, True, False),
        (404, False, False),
        (410, False, False),
        (429, False, False),
        (500, False, True),
        (503, False, True),
    ],
)
def test_5xx_is_worth_another_attempt_and_4xx_is_not(status, success, retryable, allow_loopback, receiver):
    receiver.answers["/hook"] = Answer(status=status, body=b"" if status == 204 else b'{"detail": "x"}')

    result = send(receiver.url("/hook"))

    assert (result.status_code, result.success, result.retryable) == (status, success, retryable)
    assert result.error == (None if success else f"HTTP {status}")


def test_the_answer_is_kept_up_to_10_kb(allow_loopback, receiver):
    receiver.answers["/big"] = Answer(body="é".encode() + b"a" * (2 * 1024 * 1024))

    result = send(receiver.url("/big"))

    assert result.status_code == 200
    assert result.body == "é" + "a" * (RESPONSE_LIMIT_BYTES - 2)


def test_an_endless_answer_is_read_no_further_than_needed(allow_loopback, receiver):
    receiver.answers["/stream"] = Answer(endless=True)

    result = send(receiver.url("/stream"))

    assert (result.status_code, result.body) == (200, "x" * RESPONSE_LIMIT_BYTES)
    # What the receiver managed to write before the client hung up: socket buffers, not the 64 MB it would send.
    assert receiver.endless_bytes_sent < 16 * 1024 * 1024


def test_a_slow_receiver_is_a_timeout_worth_another_attempt(allow_loopback, receiver, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.3
    receiver.answers["/slow"] = Answer(delay=1.5)

    started = time.monotonic()
    result = send(receiver.url("/slow"))

    assert (result.status_code, result.error, result.retryable) == (None, "timed out", True)
    assert time.monotonic() - started < 1.2


def test_a_closed_port_is_a_network_error_worth_another_attempt(allow_loopback):
    closed = Receiver("127.0.0.1")
    closed.stop()

    result = send(closed.url("/"))

    assert result.status_code is None
    assert result.error.startswith("network error:")
    assert result.retryable


def test_redirects_are_followed_within_the_limit(allow_loopback, receiver):
    receiver.answers["/old"] = redirect("/moved", status=308)
    receiver.answers["/moved"] = redirect(receiver.url("/final"), status=303)

    result = send(receiver.url("/old"))

    assert result.status_code == 200
    assert [(request.method, request.path) for request in receiver.requests] == [
        ("POST", "/old"),
        ("POST", "/moved"),
        ("GET", "/final"),
    ]


def test_a_same_origin_redirect_carries_the_steps_headers_and_the_signature(allow_loopback, receiver):
    receiver.answers["/old"] = redirect(receiver.url("/moved"), status=307)

    result = send(receiver.url("/old"), headers={"Content-Type": "application/json", "X-Api-Token": "t0k3n"})

    assert result.status_code == 200
    old, moved = receiver.requests
    assert moved.path == "/moved" and moved.headers["x-api-token"] == "t0k3n"
    assert moved.headers["webhook-id"] == old.headers["webhook-id"] and signature_valid(moved)


# Where a redirect may send the step's headers and signature: `{other}` is a second receiver on 127.0.0.1 (another
# port), allowed by the guard, so only the origin rule stands between it and the secrets.
@pytest.mark.parametrize(
    "location, origin",
    [
        ("http://127.0.0.1:{other}/steal", "http://127.0.0.1:{other}"),
        ("http://localhost:{port}/steal", "http://localhost:{port}"),
        ("https://127.0.0.1:{port}/steal", "https://127.0.0.1:{port}"),
        ("//127.0.0.1:{other}/steal", "http://127.0.0.1:{other}"),
    ],
    ids=["another port", "another host", "another scheme", "scheme-relative"],
)
def test_a_cross_origin_redirect_is_not_followed(
    location, origin, allow_loopback, receiver, start_receiver, connections
):
    other = start_receiver()
    receiver.answers["/hook"] = redirect(location.format(other=other.port, port=receiver.port), status=307)

    result = send(receiver.url("/hook"), headers={"X-Api-Token": "t0k3n"})

    assert (result.status_code, result.retryable, result.success) == (None, False, False)
    expected = origin.format(other=other.port, port=receiver.port)
    assert result.error == f"refused: a redirect to another origin ({expected}) is not followed"
    assert [request.path for request in receiver.requests] == ["/hook"]
    assert other.requests == [] and other.connections == 0
    assert set(connections) == {("127.0.0.1", receiver.port)}


@pytest.mark.parametrize("headers", [{"X-Name": "Zoë"}, {"X-Injected": "a\r\nX-Evil: 1"}], ids=["non-ASCII", "CRLF"])
def test_a_header_the_protocol_forbids_is_a_final_error(headers, allow_loopback, receiver):
    result = send(receiver.url("/hook"), headers=headers)

    assert result.status_code is None
    assert result.error.startswith("invalid request:")
    assert not result.retryable
    assert receiver.requests == []

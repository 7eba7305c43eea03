"""The SSRF guard: every hostile target is refused before anything connects to it, whatever its spelling, its DNS
name or the redirect that points at it; refusals are final (never retried)."""

import ipaddress

import pytest

from workflows.tests.conftest import send
from workflows.tests.receivers import redirect
from workflows.webhooks.guard import address_refusal

# `{port}` is a live receiver on 127.0.0.1: without the guard these calls would reach it.
LOOPBACK = [
    "http://127.0.0.1:{port}/",
    "http://127.0.0.2:{port}/",
    "http://localhost.:{port}/",
    "http://hooks.localhost:{port}/",
    "http://[::1]:{port}/",
    "http://[::ffff:127.0.0.1]:{port}/",
    "http://[::ffff:7f00:1]:{port}/",
    "http://2130706433:{port}/",
    "http://0x7f000001:{port}/",
    "http://0x7f.1:{port}/",
    "http://017700000001:{port}/",
    "http://127.1:{port}/",
    "http://127.0.0.1.:{port}/",
    "http://127。0。0。1:{port}/",
    "http://0177.0.0.1:{port}/",
    "https://127.0.0.1:{port}/",
    "http://hooks@127.0.0.1:{port}/",
]

OTHER = {
    "private 10/8": "http://10.0.0.1/",
    "private 172.16/12": "http://172.16.5.4/",
    "private 192.168/16": "http://192.168.1.1:8080/",
    "metadata": "http://169.254.169.254/latest/meta-data/",
    "metadata v6": "http://[fd00:ec2::254]/",
    "link-local": "http://169.254.10.10/",
    "link-local v6": "http://[fe80::1]/",
    "link-local v6 with zone": "http://[fe80::1%25eth0]/",
    "CGNAT": "http://100.64.0.1/",
    "CGNAT top": "http://100.127.255.254/",
    "unique-local": "http://[fc00::1]/",
    "unique-local fd": "http://[fd12:3456:789a::1]/",
    "multicast": "http://224.0.0.251/",
    "multicast v6": "http://[ff02::1]/",
    "reserved": "http://240.0.0.1/",
    "broadcast": "http://255.255.255.255/",
    "unspecified": "http://0.0.0.0/",
    "unspecified v6": "http://[::]/",
    "this network, decimal": "http://0/",
    "documentation": "http://192.0.2.10/",
    "documentation v6": "http://[2001:db8::1]/",
    "benchmarking": "http://198.18.0.1/",
    "IPv4-compatible": "http://[::10.0.0.1]/",
    "mapped private": "http://[::ffff:10.0.0.1]/",
    "mapped metadata": "http://[::ffff:169.254.169.254]/",
    "mapped CGNAT": "http://[::ffff:100.64.0.1]/",
    "NAT64 loopback": "http://[64:ff9b::7f00:1]/",
    "NAT64 metadata": "http://[64:ff9b::a9fe:a9fe]/",
    "NAT64 local-use prefix": "http://[64:ff9b:1::a00:1]/",
    "6to4 loopback": "http://[2002:7f00:1::1]/",
    "6to4 private": "http://[2002:a00:1::1]/",
    "6to4 metadata": "http://[2002:a9fe:a9fe::]/",
    "Teredo, loopback client": "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
    "Teredo, private server": "http://[2001:0:a00:1::f7f7:f7f7]/",
    "scheme ftp": "ftp://example.com/file",
    "scheme file": "file:///etc/passwd",
    "scheme gopher": "gopher://example.com:70/_",
    "user info": "http://user:secret@example.com/",
    "no host": "http:///path",
}


def assert_refused(result) -> None:
    assert result.status_code is None
    assert "refused" in result.error
    assert not result.retryable
    assert not result.success


@pytest.mark.parametrize("template", LOOPBACK)
def test_a_loopback_target_is_refused_in_every_spelling(template, receiver, connections):
    result = send(template.format(port=receiver.port))

    assert_refused(result)
    assert connections == []
    assert receiver.connections == 0


@pytest.mark.parametrize("url", OTHER.values(), ids=OTHER.keys())
def test_a_non_public_target_is_refused_before_connecting(url, connections):
    result = send(url)

    assert_refused(result)
    assert connections == []


@pytest.mark.parametrize(
    "address",
    [
        "93.184.215.14",
        "2606:4700:4700::1111",
        "::ffff:93.184.215.14",
        "64:ff9b::5db8:d70e",
        "2002:5db8:d70e::1",
        "2001:0:4136:e378:8000:63bf:a247:28f1",
    ],
    ids=["IPv4", "IPv6", "IPv4-mapped", "NAT64", "6to4", "Teredo"],
)
def test_public_addresses_pass_in_every_form(address):
    # An IPv6-only deployment reaches IPv4 receivers through NAT64: the forms of a public address are not refused.
    assert address_refusal(ipaddress.ip_address(address)) is None


def test_the_refusal_says_why():
    assert send("http://[::ffff:169.254.169.254]/").error == (
        "refused: ::ffff:a9fe:a9fe is the IPv4-mapped form of 169.254.169.254, a cloud metadata address"
    )
    assert send("http://100.64.0.1/").error == "refused: 100.64.0.1 is a shared (CGNAT) address"
    assert send("ftp://example.com/").error == "refused: the scheme 'ftp' is not http or https"


@pytest.mark.parametrize(
    ("records", "reason"),
    [
        ({"A": ["10.0.0.5"]}, "a private address"),
        ({"A": ["127.0.0.1"]}, "a loopback address"),
        ({"A": ["169.254.169.254"]}, "a cloud metadata address"),
        ({"A": ["100.100.100.200"]}, "a shared (CGNAT) address"),
        ({"AAAA": ["fe80::1"]}, "a link-local address"),
        ({"AAAA": ["fd00:ec2::254"]}, "a cloud metadata address"),
        ({"AAAA": ["::ffff:127.0.0.1"]}, "the IPv4-mapped form of 127.0.0.1, a loopback address"),
        ({"AAAA": ["64:ff9b::a00:5"]}, "the NAT64 form of 10.0.0.5, a private address"),
        # One bad address among good ones refuses the name: a client could be handed either.
        ({"A": ["93.184.215.14", "10.0.0.5"]}, "a private address"),
        ({"A": ["93.184.215.14"], "AAAA": ["::1"]}, "a loopback address"),
    ],
)
def test_a_name_resolving_to_a_refused_address_is_refused(records, reason, dns_server, receiver, connections):
    for rdtype, values in records.items():
        dns_server.zone[("hooks.attacker.test", rdtype)] = values

    result = send(f"http://hooks.attacker.test:{receiver.port}/")

    assert_refused(result)
    assert result.error.endswith(f"{reason} (hooks.attacker.test resolves to it)")
    # Only the DNS server was asked anything; nothing else was dialled.
    assert set(connections) <= {("127.0.0.1", dns_server.port)}
    assert dns_server.queries == [("hooks.attacker.test", "A"), ("hooks.attacker.test", "AAAA")]
    assert receiver.connections == 0


def test_a_name_that_does_not_resolve_is_a_network_error(dns_zone):
    result = send("http://missing.attacker.test/")

    assert result.status_code is None
    assert result.error.startswith("network error: cannot resolve missing.attacker.test")
    assert result.retryable


@pytest.fixture
def second_loopback(start_receiver):
    """A receiver on another loopback address (127.0.0.2), outside the allowed 127.0.0.1/32."""
    return start_receiver("127.0.0.2")


@pytest.fixture
def loopback_v6(start_receiver):
    return start_receiver("::1")


@pytest.mark.parametrize(
    "target",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://[::ffff:169.254.169.254]/",
        "http://[64:ff9b::7f00:2]/",
        "{second}",
        "{v6}",
        "http://2130706434:{second_port}/",
        "http://hooks.attacker.test:{second_port}/",
        "ftp://127.0.0.1/",
        "file:///etc/passwd",
        "http://user:secret@127.0.0.1:{port}/final",
    ],
)
def test_a_redirect_to_a_refused_target_is_refused_before_connecting(
    target, allow_loopback, receiver, second_loopback, loopback_v6, dns_zone, connections
):
    dns_zone[("hooks.attacker.test", "A")] = ["127.0.0.2"]
    location = target.format(
        port=receiver.port,
        second=second_loopback.url("/"),
        second_port=second_loopback.port,
        v6=loopback_v6.url("/"),
    )
    receiver.answers["/hook"] = redirect(location)

    result = send(receiver.url("/hook"))

    assert_refused(result)
    assert [request.path for request in receiver.requests] == ["/hook"]
    assert second_loopback.connections == loopback_v6.connections == 0
    assert {host for host, _port in connections} <= {"127.0.0.1"}


def test_five_redirects_are_followed_and_a_sixth_is_refused(allow_loopback, receiver):
    for hop in range(6):
        receiver.answers[f"/hop{hop}"] = redirect(f"/hop{hop + 1}", status=307)

    assert send(receiver.url("/hop1")).status_code == 200  # /hop1 ... /hop6 -> /hop6 answers 200: 5 redirects
    receiver.requests.clear()
    result = send(receiver.url("/hop0"))

    assert_refused(result)
    assert result.error == "refused: more than 5 redirects"
    assert [request.path for request in receiver.requests] == [f"/hop{hop}" for hop in range(6)]


def test_allowed_networks_exempt_only_themselves(settings, receiver, second_loopback):
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]

    assert send(second_loopback.url("/")).status_code == 200
    assert_refused(send(receiver.url("/")))

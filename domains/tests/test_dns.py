import time

import pytest

from domains import dns
from domains.dns import DnsStatus

LONG = "v=DKIM1; k=rsa; p=" + "A" * 400


@pytest.mark.parametrize(
    ("name", "rdtype", "status", "records"),
    [
        ("mail.example.com", "MX", DnsStatus.OK, ("10 mx1.example.com",)),
        ("mail.example.com", "A", DnsStatus.OK, ("192.0.2.1",)),
        ("mail.example.com", "AAAA", DnsStatus.NO_ANSWER, ()),
        ("long.example.com", "TXT", DnsStatus.OK, (LONG,)),
        ("example.com", "TXT", DnsStatus.NO_ANSWER, ()),  # empty non-terminal
        ("nowhere.example.com", "A", DnsStatus.NXDOMAIN, ()),
    ],
)
def test_resolve_answers_from_the_zone(dns_zone, name, rdtype, status, records):
    dns_zone[("mail.example.com", "MX")] = ["10 mx1.example.com."]
    dns_zone[("mail.example.com", "A")] = ["192.0.2.1"]
    dns_zone[("long.example.com", "TXT")] = [LONG]

    result = dns.resolve(name, rdtype, use_cache=False)

    assert (result.status, result.records) == (status, records)
    assert (result.reason is None) == (status == DnsStatus.OK)


def test_servfail_is_a_result_not_an_exception(dns_server):
    dns_server.mode = "servfail"
    result = dns.resolve("example.com", "MX")
    assert result.status == DnsStatus.SERVFAIL
    assert result.temporary_failure
    assert "SERVFAIL" in result.reason


def test_timeout_is_a_result_not_an_exception(silent_dns):
    result = dns.resolve("example.com", "MX")
    assert result.status == DnsStatus.TIMEOUT
    assert result.reason == "DNS lookup of example.com timed out"
    assert result.name_exists is None


def test_answers_are_cached_per_name_and_type(dns_server):
    dns_server.zone[("cached.example.com", "MX")] = ["10 mx.cached.example.com."]
    for _ in range(50):
        assert dns.resolve("cached.example.com", "MX").found
    assert dns_server.queries.count(("cached.example.com", "MX")) == 1
    del dns_server.zone[("cached.example.com", "MX")]
    assert dns.resolve("cached.example.com", "MX").found  # still cached
    assert dns.resolve("cached.example.com", "MX", use_cache=False).status == DnsStatus.NXDOMAIN


@pytest.mark.parametrize(
    ("value", "host", "port"),
    [
        ("127.0.0.1", "127.0.0.1", 53),
        ("127.0.0.1:5353", "127.0.0.1", 5353),
        ("[::1]:5300", "::1", 5300),
        ("::1", "::1", 53),
    ],
)
def test_nameserver_setting_accepts_host_and_port(value, host, port):
    nameserver = dns.parse_nameserver(value)
    assert (nameserver.address, nameserver.port) == (host, port)


@pytest.mark.parametrize("value", ["dns.example.com", "127.0.0.1:0", "127.0.0.1:99999", "[::1]:x"])
def test_bad_nameserver_setting_fails_loudly(value):
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured):
        dns.parse_nameserver(value)


def test_process_memory_answers_before_the_shared_cache(dns_server, settings):
    from django.core.cache import cache

    dns_server.zone[("mem.example.com", "A")] = ["192.0.2.5"]
    assert dns.resolve("mem.example.com", "A").found
    cache.clear()
    assert dns.resolve("mem.example.com", "A").found
    assert dns_server.queries.count(("mem.example.com", "A")) == 1

    settings.DNS_LOCAL_CACHE_SECONDS = 0  # changing a DNS setting also empties the process memory
    cache.clear()
    assert dns.resolve("mem.example.com", "A").found
    assert dns_server.queries.count(("mem.example.com", "A")) == 2


def test_an_answer_too_big_for_udp_is_fetched_over_tcp(dns_server):
    # A 4096-bit DKIM key plus other TXT records at the apex exceed the UDP buffer: the answer comes over TCP.
    big = ["v=DKIM1; k=rsa; p=" + "B" * 700, "v=spf1 " + "include:x.example " * 40 + "~all", "z" * 300]
    dns_server.zone[("big.example.com", "TXT")] = big
    result = dns.resolve("big.example.com", "TXT", use_cache=False)
    assert result.status == DnsStatus.OK
    assert sorted(result.records) == sorted(big)
    assert dns_server.tcp_queries == 1


def test_a_callers_timeout_cuts_a_lookup_short_and_what_it_cut_is_not_cached(silent_dns, settings):
    settings.DNS_TIMEOUT_SECONDS = 5

    def timed(**options) -> tuple[DnsStatus, float]:
        started = time.monotonic()
        return dns.resolve("slow.example.com", "A", **options).status, time.monotonic() - started

    status, elapsed = timed(timeout=0.3)
    assert status == DnsStatus.TIMEOUT and 0.25 <= elapsed < 1
    status, elapsed = timed(timeout=0.3)  # asked again: the name's own timeout was never seen
    assert status == DnsStatus.TIMEOUT and elapsed >= 0.25
    settings.DNS_TIMEOUT_SECONDS = 0.3
    timed()  # a lookup that reached the resolver's own timeout is cached as a failure
    assert timed()[1] < 0.1

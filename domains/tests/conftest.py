"""DNS fixtures: a real DNS server on loopback that the service's resolver is pointed at."""

import pytest

from domains.dns import clear_local_cache
from domains.tests.dnsserver import DnsServer, SilentServer


@pytest.fixture(autouse=True)
def _fresh_dns_memory():
    clear_local_cache()
    yield
    clear_local_cache()


@pytest.fixture(scope="session")
def _dns_server():
    server = DnsServer()
    yield server
    server.stop()


@pytest.fixture
def dns_server(_dns_server, settings) -> DnsServer:
    """The loopback DNS server with an empty zone; write records into `dns_server.zone`."""
    _dns_server.reset()
    settings.DNS_NAMESERVERS = [_dns_server.address]
    settings.DNS_TIMEOUT_SECONDS = 2.0
    yield _dns_server
    _dns_server.reset()


@pytest.fixture
def dns_zone(dns_server):
    return dns_server.zone


@pytest.fixture
def silent_dns(settings):
    """Point the resolver at a server that never answers, with a short timeout."""
    server = SilentServer()
    settings.DNS_NAMESERVERS = [server.address]
    settings.DNS_TIMEOUT_SECONDS = 0.3
    yield server
    server.stop()

"""The SSRF guard of outbound webhooks: a project's URL must never reach the service's own network.

`checked_address(url)` is asked before every connection, redirects included:

1. only http and https, and no user info (`http://user:pass@host/`);
2. `localhost` and its subdomains are loopback names; a literal address is taken as it is, in every spelling a
   resolver would accept (`2130706433`, `0x7f.1`, `[::ffff:127.0.0.1]`); a name (in its ASCII form) is resolved
   once, through the service's resolver (`domains.selectors.host_addresses`);
3. every address found is checked, and one refused address refuses the call: loopback, private, link-local
   (with the cloud metadata addresses), shared (CGNAT), unique-local, multicast, unspecified, reserved and anything
   else that is not globally routable; an IPv6 address that carries an IPv4 address (IPv4-mapped, NAT64, 6to4,
   Teredo) is judged by the address it carries;
4. the address returned is the one to connect to (the transport pins it): a name is never resolved a second
   time, so its owner cannot answer the check with a public address and the connection with a private one.

`WEBHOOK_ALLOWED_NETWORKS` exempts networks (tests, receivers on a private network of the deployment).
"""

import functools
import ipaddress
import re
import socket

import httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from domains.selectors import host_addresses

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class WebhookRefused(Exception):
    """The guard refuses the URL; calling again cannot change that."""


# In order: the first network that holds an address names the refusal.
_REFUSED = tuple(
    (ipaddress.ip_network(cidr), reason)
    for cidr, reason in (
        ("169.254.169.254/32", "a cloud metadata address"),
        ("fd00:ec2::254/128", "a cloud metadata address"),
        ("0.0.0.0/8", "an unspecified address"),
        ("::/128", "an unspecified address"),
        ("127.0.0.0/8", "a loopback address"),
        ("::1/128", "a loopback address"),
        ("10.0.0.0/8", "a private address"),
        ("172.16.0.0/12", "a private address"),
        ("192.168.0.0/16", "a private address"),
        ("100.64.0.0/10", "a shared (CGNAT) address"),
        ("169.254.0.0/16", "a link-local address"),
        ("fe80::/10", "a link-local address"),
        ("fc00::/7", "a unique-local address"),
        ("224.0.0.0/4", "a multicast address"),
        ("ff00::/8", "a multicast address"),
        ("240.0.0.0/4", "a reserved address"),
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Characters of the legacy IPv4 spellings (decimal, octal, hex, fewer than four parts).
_NUMERIC_HOST = re.compile(r"[0-9a-fx.]+")


def checked_address(url: httpx.URL, *, timeout: float | None = None) -> IPAddress:
    """The address to connect to for `url`; raises `WebhookRefused`, or `httpx.ConnectError` when the name cannot
    be resolved (a network error, tried again later like one). A name's lookups take at most `timeout` seconds."""
    if url.scheme not in ("http", "https"):
        raise WebhookRefused(f"the scheme {url.scheme!r} is not http or https")
    if url.userinfo:
        raise WebhookRefused("a URL with user info")
    host = ascii_host(url)
    if not host:
        raise WebhookRefused("a URL without a host")
    if host.rstrip(".") == "localhost" or host.rstrip(".").endswith(".localhost"):
        # Resolvers answer these themselves, with loopback (RFC 6761), whatever DNS says.
        raise WebhookRefused(f"{host} is a loopback name")
    literal = _literal_address(host)
    addresses = [literal] if literal is not None else _resolved(host, timeout)
    for address in addresses:
        reason = address_refusal(address)
        if reason is not None:
            named = "" if literal is not None else f" ({host} resolves to it)"
            raise WebhookRefused(f"{address} is {reason}{named}")
    return addresses[0]


def ascii_host(url: httpx.URL) -> str:
    """The host as DNS and TLS know it: an internationalised name in its IDNA form (`xn--…`)."""
    return url.raw_host.decode("ascii")


def address_refusal(address: IPAddress) -> str | None:
    """Why the guard refuses `address`, or None when it may be called."""
    if any(address in network for network in allowed_networks()):
        return None
    carried = _carried_ipv4(address) if address.version == 6 else ()
    for form, inner in carried:
        reason = address_refusal(inner)
        if reason is not None:
            return f"the {form} form of {inner}, {reason}"
    if carried:
        # A transition form of public addresses reaches them, although the prefix itself is not globally routable.
        return None
    for network, reason in _REFUSED:
        if address in network:
            return reason
    if not address.is_global or address.is_reserved or address.is_multicast:
        return "not a public address"
    return None


def allowed_networks() -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return _parse_networks(tuple(settings.WEBHOOK_ALLOWED_NETWORKS))


@functools.cache
def _parse_networks(values: tuple[str, ...]) -> tuple:
    try:
        return tuple(ipaddress.ip_network(value.strip()) for value in values if value.strip())
    except ValueError as exc:
        raise ImproperlyConfigured(f"WEBHOOK_ALLOWED_NETWORKS: {exc}") from None


def _carried_ipv4(address: ipaddress.IPv6Address) -> tuple[tuple[str, ipaddress.IPv4Address], ...]:
    if address.ipv4_mapped is not None:
        return (("IPv4-mapped", address.ipv4_mapped),)
    if address in _NAT64:
        return (("NAT64", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)),)
    if address.sixtofour is not None:
        return (("6to4", address.sixtofour),)
    if address.teredo is not None:
        server, client = address.teredo
        return (("Teredo", server), ("Teredo", client))
    return ()


def _literal_address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    # A system resolver reads 2130706433, 0x7f.1 or 017700000001 as 127.0.0.1, and so must the guard: such a name is
    # never asked of DNS.
    if _NUMERIC_HOST.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host.rstrip(".")))
        except OSError:
            pass
    return None


def _resolved(host: str, timeout: float | None) -> list[IPAddress]:
    """Every IPv4 then IPv6 address of `host`: the first is the one connected to."""
    addresses, reasons = host_addresses(host=host, timeout=timeout)
    if not addresses:
        raise httpx.ConnectError(f"cannot resolve {host}: {reasons or 'no address'}")
    return [ipaddress.ip_address(address) for address in addresses]

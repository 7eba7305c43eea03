"""The one DNS resolver of the service, built on dnspython.

Every lookup (domain verification, `/v1/verify`, DKIM checks) goes through `resolve`, which:

1. asks the nameservers of `DNS_NAMESERVERS` (`host[:port]`, `[v6]:port`), or the system's when the list is empty,
   within `DNS_TIMEOUT_SECONDS` in total;
2. never raises for what DNS can answer or fail to answer: NXDOMAIN, no answer, SERVFAIL/REFUSED, a timeout or a
   malformed name all come back as a `DnsResult` with a `status` and a human `reason`;
3. keeps answers briefly in Django's cache (Redis in production), per name and type, so that verifying a thousand
   addresses of one domain asks DNS once, with a few seconds (`DNS_LOCAL_CACHE_SECONDS`) in the process in front
   of it. Callers that must see a record the owner just published pass `use_cache=False`.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import time
from dataclasses import dataclass
from enum import StrEnum

import dns.exception
import dns.name
import dns.nameserver
import dns.rdatatype
import dns.resolver
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)


class DnsStatus(StrEnum):
    OK = "ok"
    NXDOMAIN = "nxdomain"  # the name does not exist
    NO_ANSWER = "no_answer"  # the name exists, without records of this type
    SERVFAIL = "servfail"  # every nameserver failed (SERVFAIL, REFUSED, unreachable)
    TIMEOUT = "timeout"
    INVALID_NAME = "invalid_name"
    ERROR = "error"


# Temporary failures say nothing about the records; checks treat them as "could not tell".
TEMPORARY = frozenset({DnsStatus.SERVFAIL, DnsStatus.TIMEOUT, DnsStatus.ERROR})


@dataclass(frozen=True)
class DnsResult:
    name: str
    rdtype: str
    status: DnsStatus
    # Text of each record: TXT strings joined, "10 mx.example.com" for MX, addresses, CNAME targets (no final dot).
    records: tuple[str, ...] = ()
    ttl: int = 0
    reason: str | None = None

    @property
    def found(self) -> bool:
        return self.status == DnsStatus.OK and bool(self.records)

    @property
    def temporary_failure(self) -> bool:
        return self.status in TEMPORARY

    @property
    def name_exists(self) -> bool | None:
        """True when DNS knows the name, False on NXDOMAIN, None when the lookup could not tell."""
        if self.status in (DnsStatus.OK, DnsStatus.NO_ANSWER):
            return True
        if self.status in (DnsStatus.NXDOMAIN, DnsStatus.INVALID_NAME):
            return False
        return None


def parse_nameserver(value: str) -> dns.nameserver.Do53Nameserver:
    """`1.2.3.4`, `1.2.3.4:5353`, `::1`, `[::1]:5353` -> a nameserver; anything else fails loudly."""
    text = value.strip()
    host, port = text, 53
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest:
            port = _port(rest.removeprefix(":"), value)
    elif text.count(":") == 1:
        host, port_text = text.split(":")
        port = _port(port_text, value)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ImproperlyConfigured(f"DNS_NAMESERVERS: {value!r} is not an IP address with an optional port") from None
    return dns.nameserver.Do53Nameserver(host, port)


def _port(text: str, value: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ImproperlyConfigured(f"DNS_NAMESERVERS: {value!r} has an invalid port")
    return int(text)


_resolvers: dict[tuple, dns.resolver.Resolver] = {}


def get_resolver() -> dns.resolver.Resolver:
    """One resolver per configuration (tests change the settings between cases)."""
    nameservers = tuple(settings.DNS_NAMESERVERS)
    timeout = float(settings.DNS_TIMEOUT_SECONDS)
    key = (nameservers, timeout)
    resolver = _resolvers.get(key)
    if resolver is None:
        if nameservers:
            resolver = dns.resolver.Resolver(configure=False)
            resolver.nameservers = [parse_nameserver(value) for value in nameservers]
        else:
            resolver = dns.resolver.Resolver(configure=True)
        resolver.lifetime = timeout
        resolver.timeout = timeout
        resolver.use_edns(0, 0, 1232)
        _resolvers[key] = resolver
    return resolver


def _cache_key(name: str, rdtype: str) -> str:
    key = f"herald:dns:{rdtype}:{name}"
    if len(key) > 200:
        key = f"herald:dns:{rdtype}:#{hashlib.sha256(name.encode()).hexdigest()}"
    return key


def _cache_seconds(result: DnsResult) -> int:
    if result.status == DnsStatus.OK:
        return max(1, min(result.ttl or settings.DNS_CACHE_SECONDS, settings.DNS_CACHE_SECONDS))
    if result.status in (DnsStatus.NXDOMAIN, DnsStatus.NO_ANSWER, DnsStatus.INVALID_NAME):
        return settings.DNS_NEGATIVE_CACHE_SECONDS
    return settings.DNS_FAILURE_CACHE_SECONDS


def _pack(result: DnsResult) -> tuple:
    return (str(result.status), result.records, result.ttl, result.reason)


def _unpack(name: str, rdtype: str, value: tuple) -> DnsResult:
    status, records, ttl, reason = value
    return DnsResult(name=name, rdtype=rdtype, status=DnsStatus(status), records=tuple(records), ttl=ttl, reason=reason)


# A few seconds of answers in the process itself, in front of the shared cache: a hot domain then costs no cache
# round trip at all. Keyed by the nameserver configuration too, so tests that switch servers never see stale data.
_local: dict[tuple, tuple[float, tuple]] = {}
_LOCAL_MAX_ENTRIES = 10_000


def _local_key(key: str) -> tuple:
    return (key, tuple(settings.DNS_NAMESERVERS))


def _local_get(key: str) -> tuple | None:
    entry = _local.get(_local_key(key))
    if entry is None:
        return None
    if entry[0] < time.monotonic():
        _local.pop(_local_key(key), None)
        return None
    return entry[1]


def _local_set(key: str, value: tuple, seconds: int) -> None:
    seconds = min(seconds, settings.DNS_LOCAL_CACHE_SECONDS)
    if seconds <= 0:
        return
    if len(_local) >= _LOCAL_MAX_ENTRIES:
        _local.clear()
    _local[_local_key(key)] = (time.monotonic() + seconds, value)


def clear_local_cache() -> None:
    _local.clear()


def resolve(name: str, rdtype: str, *, use_cache: bool = True, timeout: float | None = None) -> DnsResult:
    """Look up `rdtype` records of `name`; never raises for DNS failures (see the module docstring).

    `timeout` cuts this lookup shorter than `DNS_TIMEOUT_SECONDS`, for a caller with a deadline of its own (a webhook
    call). A lookup it cut short is not cached: its timeout says nothing about the name."""
    name = name.lower().rstrip(".")
    rdtype = rdtype.upper()
    key = _cache_key(name, rdtype)
    if use_cache:
        hit = _local_get(key)
        if hit is None:
            try:
                hit = cache.get(key)
            except Exception:
                logger.warning("DNS answer cache unavailable", exc_info=True)
            if hit is not None:
                _local_set(key, hit, settings.DNS_LOCAL_CACHE_SECONDS)
        if hit is not None:
            return _unpack(name, rdtype, hit)
    lifetime = None if timeout is None or timeout >= settings.DNS_TIMEOUT_SECONDS else max(timeout, 0.0)
    result = _query(name, rdtype, lifetime)
    if lifetime is not None and result.status == DnsStatus.TIMEOUT:
        return result
    seconds = _cache_seconds(result)
    if seconds > 0:
        packed = _pack(result)
        _local_set(key, packed, seconds)
        try:
            cache.set(key, packed, seconds)
        except Exception:
            logger.warning("DNS answer cache unavailable", exc_info=True)
    return result


def _query(name: str, rdtype: str, lifetime: float | None) -> DnsResult:
    def fail(status: DnsStatus, reason: str) -> DnsResult:
        return DnsResult(name=name, rdtype=rdtype, status=status, reason=reason)

    try:
        answer = get_resolver().resolve(name, rdtype, search=False, lifetime=lifetime)
    except dns.resolver.NXDOMAIN:
        return fail(DnsStatus.NXDOMAIN, f"{name} does not exist (NXDOMAIN)")
    except dns.resolver.NoAnswer:
        return fail(DnsStatus.NO_ANSWER, f"No {rdtype} record found at {name}")
    except dns.resolver.NoNameservers:
        return fail(DnsStatus.SERVFAIL, f"DNS servers failed to answer for {name} (SERVFAIL)")
    except dns.exception.Timeout:
        return fail(DnsStatus.TIMEOUT, f"DNS lookup of {name} timed out")
    except (dns.name.NameTooLong, dns.name.LabelTooLong, dns.name.EmptyLabel, dns.resolver.YXDOMAIN):
        return fail(DnsStatus.INVALID_NAME, f"{name} is not a valid DNS name")
    except dns.exception.DNSException as exc:
        logger.warning("DNS lookup of %s %s failed: %s", rdtype, name, exc)
        return fail(DnsStatus.ERROR, f"DNS lookup of {name} failed")
    return DnsResult(
        name=name,
        rdtype=rdtype,
        status=DnsStatus.OK,
        records=tuple(_text(rdata) for rdata in answer),
        ttl=answer.rrset.ttl if answer.rrset is not None else 0,
    )


def _text(rdata) -> str:
    if rdata.rdtype == dns.rdatatype.TXT:
        # A long TXT record (a 2048-bit DKIM key) arrives as several strings that form one value.
        return b"".join(rdata.strings).decode("utf-8", "replace")
    if rdata.rdtype == dns.rdatatype.MX:
        return f"{rdata.preference} {rdata.exchange.to_text(omit_final_dot=True).lower()}"
    if rdata.rdtype in (dns.rdatatype.CNAME, dns.rdatatype.NS):
        return rdata.target.to_text(omit_final_dot=True).lower()
    return rdata.to_text()

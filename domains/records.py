"""The DNS records a domain owner publishes, and the check of each against DNS.

Only the DKIM record is required for `verified`; SPF, DMARC, the return-path CNAME and the inbound MX are
recommended and reported. Expected values depend on settings (SPF include, return-path host), so they are
computed, not stored; the result of the last check is stored per purpose together with the value it checked, and a
stored result for a value that has since changed shows as pending again.
"""

from dataclasses import dataclass
from enum import StrEnum

from django.conf import settings

from domains import dkim, dns
from domains.dns import DnsResult, DnsStatus
from domains.models import Domain


class Purpose(StrEnum):
    DKIM = "dkim"
    SPF = "spf"
    DMARC = "dmarc"
    RETURN_PATH = "return_path"
    INBOUND = "inbound"


class CheckStatus(StrEnum):
    PENDING = "pending"  # never checked, or DNS could not tell (timeout, SERVFAIL)
    VALID = "valid"
    INVALID = "invalid"


@dataclass(frozen=True)
class ExpectedRecord:
    purpose: Purpose
    type: str
    name: str
    value: str
    required: bool


@dataclass(frozen=True)
class RecordCheck:
    status: CheckStatus
    last_error: str | None = None
    # True when DNS answered that the record is not there (NXDOMAIN, no record, no matching record): the DKIM
    # misses that can send a verified domain back to pending. A timeout is never `absent`.
    absent: bool = False


def spf_mechanisms() -> list[str]:
    mechanisms = [f"include:{host.strip().rstrip('.').lower()}" for host in settings.DOMAINS_SPF_INCLUDES if host]
    for address in settings.DOMAINS_SPF_IP_ADDRESSES:
        address = address.strip()
        if address:
            mechanisms.append(f"{'ip6' if ':' in address else 'ip4'}:{address}")
    return mechanisms


def expected_records(domain: Domain) -> list[ExpectedRecord]:
    records = []
    if domain.dkim_selector and domain.dkim_public_key:
        records.append(
            ExpectedRecord(
                purpose=Purpose.DKIM,
                type="TXT",
                name=dkim.record_name(selector=domain.dkim_selector, domain_name=domain.name),
                value=dkim.record_value(domain.dkim_public_key),
                required=True,
            )
        )
    mechanisms = spf_mechanisms()
    if mechanisms:
        records.append(
            ExpectedRecord(
                purpose=Purpose.SPF,
                type="TXT",
                name=domain.name,
                value=" ".join(["v=spf1", *mechanisms, "~all"]),
                required=False,
            )
        )
    records.append(
        ExpectedRecord(
            purpose=Purpose.DMARC,
            type="TXT",
            name=f"_dmarc.{domain.name}",
            value=settings.DOMAINS_DMARC_RECOMMENDATION,
            required=False,
        )
    )
    if settings.DOMAINS_RETURN_PATH_HOST:
        records.append(
            ExpectedRecord(
                purpose=Purpose.RETURN_PATH,
                type="CNAME",
                name=f"{settings.DOMAINS_RETURN_PATH_SUBDOMAIN}.{domain.name}",
                value=settings.DOMAINS_RETURN_PATH_HOST,
                required=False,
            )
        )
    if settings.INBOUND_MX_HOST:
        # Mail for the domain reaches the service's inbound listener (docs/smtp.md, "Inbound mail").
        records.append(
            ExpectedRecord(
                purpose=Purpose.INBOUND,
                type="MX",
                name=domain.name,
                value=f"10 {settings.INBOUND_MX_HOST}",
                required=False,
            )
        )
    return records


def check(record: ExpectedRecord, *, public_key: str = "") -> RecordCheck:
    """Look the record up (never from the cache: the owner may just have published it) and judge it."""
    result = dns.resolve(record.name, record.type, use_cache=False)
    if result.temporary_failure:
        return RecordCheck(CheckStatus.PENDING, result.reason)
    if not result.found:
        return RecordCheck(CheckStatus.INVALID, f"No {record.type} record found at {record.name}", absent=True)
    return _JUDGES[record.purpose](record, result, public_key)


def _judge_dkim(record: ExpectedRecord, result: DnsResult, public_key: str) -> RecordCheck:
    if any(dkim.record_public_key(text) == public_key for text in result.records):
        return RecordCheck(CheckStatus.VALID)
    return RecordCheck(
        CheckStatus.INVALID,
        f"The TXT record at {record.name} does not carry this domain's DKIM public key",
        absent=True,
    )


def _judge_spf(record: ExpectedRecord, result: DnsResult, public_key: str) -> RecordCheck:
    spf = [text for text in result.records if text.lower().split(" ", 1)[0] == "v=spf1"]
    if not spf:
        return RecordCheck(CheckStatus.INVALID, f"No SPF record (v=spf1) found at {record.name}")
    if len(spf) > 1:
        return RecordCheck(CheckStatus.INVALID, f"More than one SPF record at {record.name}; merge them into one")
    terms = {term.lower().lstrip("+") for term in spf[0].split()}
    missing = [mechanism for mechanism in spf_mechanisms() if mechanism.lower() not in terms]
    if missing:
        return RecordCheck(CheckStatus.INVALID, f"The SPF record at {record.name} lacks {' '.join(missing)}")
    return RecordCheck(CheckStatus.VALID)


def _judge_dmarc(record: ExpectedRecord, result: DnsResult, public_key: str) -> RecordCheck:
    if any(text.split(";", 1)[0].replace(" ", "").upper() == "V=DMARC1" for text in result.records):
        return RecordCheck(CheckStatus.VALID)
    return RecordCheck(CheckStatus.INVALID, f"No DMARC record (v=DMARC1) found at {record.name}")


def _judge_return_path(record: ExpectedRecord, result: DnsResult, public_key: str) -> RecordCheck:
    if record.value in result.records:
        return RecordCheck(CheckStatus.VALID)
    return RecordCheck(
        CheckStatus.INVALID, f"The CNAME at {record.name} points to {result.records[0]}, not {record.value}"
    )


def _judge_inbound(record: ExpectedRecord, result: DnsResult, public_key: str) -> RecordCheck:
    # Any preference will do: what matters is that the domain's mail is routed to the service's host.
    host = record.value.split()[1]
    if any(text.split()[-1] == host for text in result.records):
        return RecordCheck(CheckStatus.VALID)
    return RecordCheck(CheckStatus.INVALID, f"No MX record at {record.name} points to {host}")


_JUDGES = {
    Purpose.DKIM: _judge_dkim,
    Purpose.SPF: _judge_spf,
    Purpose.DMARC: _judge_dmarc,
    Purpose.RETURN_PATH: _judge_return_path,
    Purpose.INBOUND: _judge_inbound,
}


def records_json(domain: Domain) -> list[dict]:
    """The records with the state of their last check, as the Domain JSON shows them."""
    out = []
    for record in expected_records(domain):
        stored = domain.record_checks.get(record.purpose) or {}
        current = stored.get("expected") == record.value
        out.append(
            {
                "type": record.type,
                "name": record.name,
                "value": record.value,
                "purpose": str(record.purpose),
                "required": record.required,
                "status": stored.get("status", CheckStatus.PENDING) if current else CheckStatus.PENDING,
                "lastError": stored.get("lastError") if current else None,
            }
        )
    return out


__all__ = ["CheckStatus", "DnsStatus", "ExpectedRecord", "Purpose", "RecordCheck", "check", "expected_records"]

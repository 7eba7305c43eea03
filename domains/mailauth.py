"""SPF, DKIM and DMARC of a message received over SMTP, each through a maintained library and the service's one
resolver (`domains.dns.resolve`: `DNS_NAMESERVERS`, its timeout and its cache).

1. SPF (RFC 7208): pyspf checks the client's address against the MAIL FROM domain's policy (the HELO name's when
   the sender is null, as pyspf does by itself).
2. DKIM (RFC 6376): dkimpy verifies each `DKIM-Signature`; pass when one verifies, none when there is none.
3. DMARC (RFC 7489): authheaders (from dkimpy's authors) finds the From domain's policy (`_dmarc.`, then the
   organisational domain's) and checks that a passing SPF or DKIM result is aligned with the From domain.

Each result is the library's word: `pass`, `fail`, `softfail`, `neutral`, `none`, `temperror` or `permerror`. A DNS
lookup that fails for a while (timeout, SERVFAIL) is a `temperror`; nothing here raises for what the sender wrote.
"""

import importlib.resources
import logging
from dataclasses import dataclass
from email.utils import getaddresses

import authheaders
import dkim
import spf
from authheaders import dmarc_lookup
from authres import DKIMAuthenticationResult, SPFAuthenticationResult
from django.conf import settings
from publicsuffix2 import PublicSuffixList

from domains.dns import DnsResult, resolve

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AuthResults:
    spf: str
    dkim: str
    dmarc: str


class _TemporaryDnsFailure(Exception):
    pass


def _txt(name) -> DnsResult:
    name = name.decode("ascii", "replace") if isinstance(name, bytes) else str(name)
    return resolve(name.rstrip("."), "TXT")


# SPF ----------------------------------------------------------------------------------------------------------------


def _spf_lookup(name, qtype, tcpfallback=True, timeout=30):
    """pyspf's lookup function, in the shape of its own `DNSLookup_dnspython`: [((name, type), value)]."""
    result = resolve(str(name).rstrip("."), qtype)
    if result.temporary_failure:
        raise spf.TempError(f"DNS {result.reason}")
    if qtype in ("TXT", "SPF"):
        # The strings of one TXT record form one value (RFC 7208, 3.3); the resolver has joined them already.
        return [((name, qtype), [text.encode()]) for text in result.records]
    if qtype == "MX":
        return [((name, qtype), (int(text.split()[0]), text.split()[1])) for text in result.records]
    return [((name, qtype), text.rstrip(".")) for text in result.records]


# pyspf looks names up through its module's `DNSLookup` (it puts its dnspython or pydns function there itself); ours
# asks the service's resolver, so SPF honours DNS_NAMESERVERS like every other lookup.
spf.DNSLookup = _spf_lookup


def _spf(*, ip: str, mail_from: str, helo: str) -> str:
    try:
        result, _explanation = spf.check2(i=ip, s=mail_from, h=helo, querytime=settings.DNS_TIMEOUT_SECONDS * 4)
    except Exception:  # the library's own errors come back as results; anything else is its failure, not the mail's
        logger.warning("SPF check of %s from %s failed", mail_from, ip, exc_info=True)
        return "temperror"
    return result or "none"


# DKIM ---------------------------------------------------------------------------------------------------------------


def _dkim_key(name, timeout=5):
    """dkimpy's `dnsfunc`: the TXT record at `<selector>._domainkey.<domain>`, as bytes, or None."""
    result = _txt(name)
    if result.temporary_failure:
        raise dkim.DnsTimeoutError(result.reason)
    keys = [text for text in result.records if "p=" in text] or list(result.records)
    return keys[0].encode() if keys else None


def _dkim(message: bytes) -> tuple[str, list[str]]:
    """The DKIM result and the domains (`d=`) of the signatures that verified."""
    verifier = dkim.DKIM(message)
    signatures = sum(1 for name, _ in verifier.headers if name.lower() == b"dkim-signature")
    if not signatures:
        return "none", []
    passed, results = [], []
    for index in range(signatures):
        try:
            ok = verifier.verify(idx=index, dnsfunc=_dkim_key)
            results.append("pass" if ok else "fail")
        except dkim.DnsTimeoutError:
            results.append("temperror")
        except dkim.DKIMException:
            results.append("permerror")
        if results[-1] == "pass":
            passed.append(verifier.signature_fields.get(b"d", b"").decode("ascii", "replace").lower())
    for result in ("pass", "temperror", "fail", "permerror"):
        if result in results:
            return result, passed
    return "fail", passed


# DMARC --------------------------------------------------------------------------------------------------------------


def _dmarc_record(name) -> str | None:
    """authheaders' `dnsfunc`: the one DMARC record at `name` (two or more count as none, RFC 7489 6.6.3)."""
    result = _txt(name)
    if result.temporary_failure:
        raise _TemporaryDnsFailure(result.reason)
    records = [text for text in result.records if text.startswith("v=DMARC1")]
    return records[0] if len(records) == 1 else None


# authheaders reads its public suffix list anew for every organisational domain it works out (0.1 s each, two or
# three a message); the same list, parsed once, gives the same answers.
_suffixes = PublicSuffixList(
    (importlib.resources.files("authheaders") / "public_suffix_list.txt").read_text(encoding="utf-8").splitlines()
)


def _org_domain(domain: str) -> str:
    return _suffixes.get_public_suffix(domain)


authheaders.get_org_domain = dmarc_lookup.get_org_domain = _org_domain


def _from_domain(message: bytes) -> str | None:
    headers, _ = dkim.rfc822_parse(message)
    values = [
        value.replace(b"\r\n", b"").decode(errors="ignore").strip()
        for name, value in headers
        if name.lower() == b"from"
    ]
    addresses = [address for _, address in getaddresses(values) if "@" in address]
    if len(addresses) != 1:  # none, or several authors: no single domain to align with
        return None
    return addresses[0].rpartition("@")[2].lower().rstrip(".") or None


def _dmarc(message: bytes, *, spf_result: str, mail_from: str, dkim_domains: list[str]) -> str:
    from_domain = _from_domain(message)
    if from_domain is None:
        return "permerror"
    # The signature of the From domain itself first: the one most likely aligned.
    dkim_domains = sorted(dkim_domains, key=lambda domain: domain != from_domain)
    dkim_result = (
        DKIMAuthenticationResult(result="pass", header_d=dkim_domains[0])
        if dkim_domains
        else DKIMAuthenticationResult(result="none")
    )
    try:
        result, *_ = authheaders.dmarc_per_from(
            from_domain,
            spf_result=SPFAuthenticationResult(result=spf_result, smtp_mailfrom=mail_from),
            dkim_result=dkim_result,
            dnsfunc=_dmarc_record,
        )
    except _TemporaryDnsFailure:
        return "temperror"
    except dmarc_lookup.DMARCException:
        return "permerror"
    return result


def authenticate(*, message: bytes, ip: str, mail_from: str, helo: str) -> AuthResults:
    """SPF of (ip, MAIL FROM, HELO), DKIM of the message's signatures, and DMARC of its From domain."""
    spf_mail_from = mail_from or f"postmaster@{helo}"
    spf_result = _spf(ip=ip, mail_from=mail_from, helo=helo)
    try:
        dkim_result, dkim_domains = _dkim(message)
    except Exception:  # a message dkimpy cannot even parse carries no signature it could check
        logger.info("DKIM check of a message from %s failed", ip, exc_info=True)
        dkim_result, dkim_domains = "permerror", []
    dmarc_result = _dmarc(message, spf_result=spf_result, mail_from=spf_mail_from, dkim_domains=dkim_domains)
    return AuthResults(spf=spf_result, dkim=dkim_result, dmarc=dmarc_result)

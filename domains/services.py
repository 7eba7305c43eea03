"""Writes on sender domains, and the one sender-authorisation rule used by templates, campaigns and /v1/send."""

import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from cryptography.fernet import InvalidToken
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Project
from core.db import select_prepared
from core.errors import Conflict, ErrorCode, ServiceError, ValidationFailed
from core.time import iso
from core.usage import refuse_delete_while_used, used_in
from domains import authorized, dkim, records
from domains.models import Domain
from domains.names import normalize_domain
from domains.records import CheckStatus, Purpose

logger = logging.getLogger(__name__)

_TAKEN = 'Domain "{}" is already registered'


class DomainClaimLost(Conflict):
    """A pending claim removed because another project verified the name first (the message does not say which)."""


def _normalized_or_422(name: str, *, field: str = "domain") -> str:
    normalized = normalize_domain(name)
    if normalized is None:
        raise ValidationFailed.field(field, f'"{name}" is not a valid domain name', "invalid_string")
    return normalized


def _claims_of(name: str) -> list[Domain]:
    """Every project's claim of `name`, locked, always in one order (by id), so that adding, verifying and removing
    claims of one name take turns instead of deadlocking. Call inside a transaction."""
    return list(Domain.objects.select_for_update().filter(name=name).order_by("pk"))


def _taken(claims, *, project: Project) -> bool:
    """Whether `project` may not add a name with these claims: another project has verified it, or this project
    holds it already."""
    return any(claim.is_verified or claim.project_id == project.id for claim in claims)


def _taken_error(name: str) -> Conflict:
    # One message whoever holds the name, so that nobody learns which domains other projects send from.
    return Conflict(_TAKEN.format(name), details={"domain": name})


def _release_pending_claims(*, owner: Domain) -> None:
    """Remove the other projects' pending claims of a name `owner` has just verified, in its transaction."""
    released, _ = (
        Domain.objects.filter(name=owner.name, status=Domain.Status.PENDING).exclude(project_id=owner.project_id)
    ).delete()
    if released:
        logger.info("Domain %s: %d pending claim(s) of other projects removed", owner.name, released)


def domain_create(*, project: Project, name: str) -> Domain:
    """Add a pending claim of a domain to a project, with a fresh DKIM key.

    Pending claims of other projects do not matter (the first to verify owns the name); 409 when another project
    has verified the name or this project holds it already.
    """
    normalized = _normalized_or_422(name)
    # Checked before the key is made (tens of milliseconds), and again on the locked claims before the insert.
    if _taken(Domain.objects.filter(name=normalized), project=project):
        raise _taken_error(normalized)
    public_key, private_key = dkim.generate_key_pair()
    domain = Domain(
        project=project,
        name=normalized,
        dkim_selector=dkim.new_selector(),
        dkim_public_key=public_key,
        dkim_private_key_encrypted=private_key,
    )
    domain.full_clean(validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            # Locking the name's claims waits for a verification of it in progress, which may remove them all.
            if _taken(_claims_of(normalized), project=project):
                raise _taken_error(normalized)
            domain.save(force_insert=True)
    except IntegrityError:  # the same project adding the name twice at once
        raise _taken_error(normalized) from None
    return domain


@transaction.atomic
def domain_mark_verified_by_operator(*, project: Project, name: str) -> Domain:
    """Record a domain as verified because an operator vouches for it (no DNS check); other projects' pending
    claims of it are removed, as for a verification by DNS. 409 when another project has verified it.

    Its DKIM key is made on first use (`domain_dkim_key_ensure`), which keeps this path cheap for commands and
    test fixtures. Operator-verified domains are still checked, but a missing DKIM record never demotes them.
    """
    normalized = _normalized_or_422(name)
    claims = _claims_of(normalized)
    if any(claim.is_verified and claim.project_id != project.id for claim in claims):
        raise Conflict("This domain is already registered by another project")
    domain = next((claim for claim in claims if claim.project_id == project.id), None)
    try:
        with transaction.atomic():
            if domain is None:
                domain = Domain.objects.create(project=project, name=normalized)
            domain.status = Domain.Status.VERIFIED
            domain.verification_method = Domain.Method.OPERATOR
            domain.verified_at = timezone.now()
            domain.dkim_miss_count = 0
            domain.save(update_fields=["status", "verification_method", "verified_at", "dkim_miss_count", "updated_at"])
    except IntegrityError:  # another project verified the name, or this one added it, at this very moment
        raise _taken_error(normalized) from None
    _release_pending_claims(owner=domain)
    return domain


def domain_dkim_key_ensure(*, domain: Domain) -> Domain:
    """Give a domain its selector and key pair if it has none yet (operator-verified domains); race-safe."""
    if domain.dkim_public_key and domain.dkim_selector:
        return domain
    public_key, private_key = dkim.generate_key_pair()
    Domain.objects.filter(pk=domain.pk, dkim_public_key="").update(
        dkim_selector=dkim.new_selector(),
        dkim_public_key=public_key,
        dkim_private_key_encrypted=private_key,
        updated_at=timezone.now(),
    )
    domain.refresh_from_db(fields=["dkim_selector", "dkim_public_key", "dkim_private_key_encrypted", "updated_at"])
    return domain


def domain_records_lookup(*, domain: Domain) -> dict[Purpose, tuple[records.ExpectedRecord, records.RecordCheck]]:
    """Look up and judge every record the domain's owner should publish, storing nothing (step 1 of
    `domain_check`, and `check_domains --dry-run`)."""
    expected = records.expected_records(domain)
    # The lookups run side by side: with a dead nameserver the check takes one timeout, not one per record.
    with ThreadPoolExecutor(max_workers=len(expected), thread_name_prefix="domain-check") as pool:
        checks = pool.map(lambda record: records.check(record, public_key=domain.dkim_public_key), expected)
        return {record.purpose: (record, result) for record, result in zip(expected, checks, strict=True)}


def domain_check(*, domain: Domain) -> Domain:
    """Check every record of a domain against DNS now and move its state.

    1. Look up the expected records, concurrently and outside any transaction (DNS can take seconds).
    2. In a short transaction on the name's locked claims, store each record's result and:
       - DKIM record carries our key: the domain is verified (method dns unless an operator vouched before) and
         the other projects' pending claims of the name are removed;
       - DKIM record absent (NXDOMAIN, no record, no matching key) on a verified domain: count a miss; at
         `DOMAINS_DKIM_MISSES_BEFORE_PENDING` misses in a row the domain goes back to pending (not for domains an
         operator vouched for);
       - DNS could not tell (timeout, SERVFAIL): nothing moves; the record shows pending with the reason.

    Raises DomainClaimLost (409) when another project verified the name first: this claim is gone then.
    """
    domain = domain_dkim_key_ensure(domain=domain)
    now = timezone.now()
    results = domain_records_lookup(domain=domain)
    lost = False
    try:
        with transaction.atomic():
            claims = _claims_of(domain.name)
            locked = next((claim for claim in claims if claim.pk == domain.pk), None)
            if locked is None:  # removed while we looked: another project verified the name first
                lost = True
            elif not locked.is_verified and any(claim.is_verified for claim in claims):
                # Added in the very instant another project verified the name (neither saw the other's row).
                locked.delete()
                lost = True
            elif _record_check(locked, results, now):
                _release_pending_claims(owner=locked)
    except IntegrityError:  # the constraint's word on a race the locks missed; the next check removes the claim
        lost = True
    if lost:
        raise DomainClaimLost(_TAKEN.format(domain.name), details={"domain": domain.name})
    return locked


def _record_check(locked: Domain, results: dict, now) -> bool:
    """Store one check's results on the locked claim and move its state (step 2 of `domain_check`); True when the
    claim has just become verified."""
    locked.record_checks = {
        str(purpose): {
            "status": str(result.status),
            "lastError": result.last_error,
            "expected": record.value,
            "checkedAt": iso(now),
        }
        for purpose, (record, result) in results.items()
    }
    locked.last_checked_at = now
    fields = ["record_checks", "last_checked_at", "updated_at"]
    verified_now = False
    _, dkim_result = results[Purpose.DKIM]
    if dkim_result.status == CheckStatus.VALID:
        if not locked.is_verified:
            verified_now = True
            locked.status = Domain.Status.VERIFIED
            locked.verification_method = Domain.Method.DNS
            locked.verified_at = now
            fields += ["status", "verification_method", "verified_at"]
            logger.info("Domain %s verified by project %s", locked.name, locked.project_id)
        locked.dkim_miss_count = 0
        fields.append("dkim_miss_count")
    elif dkim_result.absent and locked.is_verified and locked.verification_method != Domain.Method.OPERATOR:
        locked.dkim_miss_count += 1
        fields.append("dkim_miss_count")
        if locked.dkim_miss_count >= settings.DOMAINS_DKIM_MISSES_BEFORE_PENDING:
            # Back to pending releases the name: any project may claim it again, and the first to verify owns it.
            locked.status = Domain.Status.PENDING
            locked.verified_at = None
            locked.dkim_miss_count = 0
            fields += ["status", "verified_at"]
            logger.warning("Domain %s back to pending: DKIM record missing on consecutive checks", locked.name)
    locked.save(update_fields=fields)
    return verified_now


def domain_check_claim(*, domain_id, min_interval: timedelta = timedelta(seconds=60)) -> bool:
    """Claim a background check: False when the domain is gone or was checked within `min_interval` (by a
    user's `GET /domains/:id/verify` or an overlapping run), so two workers never check one domain at once."""
    now = timezone.now()
    return bool(
        Domain.objects.filter(pk=domain_id)
        .filter(Q(last_checked_at__isnull=True) | Q(last_checked_at__lt=now - min_interval))
        .update(last_checked_at=now)
    )


def domain_delete(*, domain: Domain) -> None:
    """Delete a domain, unless a template or campaign of the project would lose its sender (409 naming them)."""
    # A use whose address another verified domain of the project also covers keeps its sender.
    used = {
        kind: [use for use in uses if not _covered_by_other(domain, use["from"])]
        for kind, uses in used_in("domain", project=domain.project, of=domain.name).items()
    }
    uses = [use for kind_uses in used.values() for use in kind_uses]
    names = ", ".join(f'{use["type"]} "{use["name"]}"' for use in uses[:10])
    more = f" and {len(uses) - 10} more" if len(uses) > 10 else ""
    refuse_delete_while_used(
        used,
        f'Domain "{domain.name}" is the sender domain of {names}{more}; change their sender before deleting it',
        domain=domain.name,
        usedBy=uses,
    )
    domain.delete()


def _covered_by_other(domain: Domain, address: str) -> bool:
    host = _address_domain(address)
    if host is None:
        return False
    return (
        Domain.objects.filter(project_id=domain.project_id, status=Domain.Status.VERIFIED, name__in=_suffixes(host))
        .exclude(pk=domain.pk)
        .exists()
    )


def _address_domain(address: str) -> str | None:
    _, at, host = (address or "").strip().rpartition("@")
    if not at:
        return None
    return normalize_domain(host.strip().strip("<>").rstrip("."))


def _suffixes(host: str) -> list[str]:
    labels = host.split(".")
    return [".".join(labels[i:]) for i in range(len(labels) - 1)]


class DomainNotVerified(ServiceError):
    status, code = 403, ErrorCode.DOMAIN_NOT_VERIFIED


def sender_domain_for(*, project: Project, address: str, for_signing: bool = False) -> Domain:
    """The verified domain of `project` that authorises sending from `address`, or 403 DOMAIN_NOT_VERIFIED.

    The from-domain (lower-cased, trailing dot removed, IDNA-encoded) must equal a verified domain of the project
    or be a subdomain of one; the closest such domain is returned: the message is DKIM-signed as it. Only its id
    and name are loaded unless `for_signing` (the keys and the JSON of its DNS checks cost a fifth of a send
    request's CPU to load, and accepting a message needs only the name); that answer may come from the process's
    memory (`domains.authorized`), and is then shared: read it, never change it. `for_signing` always asks the
    database.
    """
    host = _address_domain(address)
    shown = (address or "").rpartition("@")[2].strip().rstrip(".").lower() or address
    if host is None:
        raise DomainNotVerified(
            f'Domain "{shown}" is not verified for this project',
            details={"domain": shown},
            suggestion="Add the domain under Domains and publish its DNS records",
        )
    candidates = _suffixes(host)
    if for_signing:
        domains = Domain.objects.filter(project=project, status=Domain.Status.VERIFIED, name__in=candidates)
    else:
        remembered = authorized.recall(project.id, host)
        if remembered is not None:
            return remembered
        domains = select_prepared(
            Domain, ("id", "project", "name"), project=project.id, status=Domain.Status.VERIFIED, name__in=candidates
        )
    verified = {domain.name: domain for domain in domains}
    for name in candidates:  # closest first
        if name in verified:
            if not for_signing:
                authorized.remember(project.id, host, verified[name])
            return verified[name]
    raise DomainNotVerified(
        f'Domain "{host}" is not verified for this project',
        details={"domain": host},
        suggestion="Add the domain under Domains and publish its DNS records",
    )


def domain_sign_message(*, domain: Domain, message: bytes) -> bytes:
    """The DKIM-Signature header for `message`, signed as `domain` with its key (made on first use).

    A key that no longer decrypts (SECRET_KEY changed without the former one in SECRET_KEY_FALLBACKS) is a
    `ServiceError`: no retry can sign with it, so delivery fails such mail at once instead of retrying it."""
    domain = domain_dkim_key_ensure(domain=domain)
    try:
        return dkim.sign(
            message=message,
            selector=domain.dkim_selector,
            domain_name=domain.name,
            private_key_encrypted=domain.dkim_private_key_encrypted,
        )
    except InvalidToken:
        logger.error(
            "The DKIM key of domain %s (%s) does not decrypt under SECRET_KEY or its fallbacks", domain.pk, domain.name
        )
        raise ServiceError(
            f'The DKIM key of domain "{domain.name}" can no longer be read by the service',
            code=ErrorCode.INTERNAL_SERVER_ERROR,
            status=500,
            suggestion="Put the former SECRET_KEY in SECRET_KEY_FALLBACKS, or give the domain a new DKIM key",
        ) from None

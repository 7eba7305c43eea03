import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q, QuerySet

from accounts.models import Project
from domains import mailauth
from domains.dns import resolve
from domains.models import Domain
from domains.names import normalize_domain


def domain_list(*, project: Project) -> QuerySet[Domain]:
    """A project's domains, verified and pending, newest first."""
    return Domain.objects.filter(project=project).order_by("-created_at", "id")


def domain_claims_of_others(*, name: str, project: Project) -> list[Domain]:
    """The claims of `name` (normalized) by projects other than `project`, the verified one first; for operators
    only (the API never says who else claims a name)."""
    return list(
        Domain.objects.filter(name=name).exclude(project=project).select_related("project").order_by("-status", "pk")
    )


def domains_due_for_check(*, now: datetime, limit: int | None = None) -> list:
    """Ids of the domains the periodic check should look at, least recently checked first, bounded.

    Pending domains are due on every run (owners are waiting for them); verified ones once per
    `DOMAINS_VERIFIED_RECHECK_MINUTES`, which is what notices a DKIM record that disappeared.
    """
    limit = limit or settings.DOMAINS_CHECK_BATCH_SIZE
    verified_before = now - timedelta(minutes=settings.DOMAINS_VERIFIED_RECHECK_MINUTES)
    never = Q(last_checked_at__isnull=True)
    pending = list(
        Domain.objects.filter(status=Domain.Status.PENDING)
        .filter(never | Q(last_checked_at__lt=now - timedelta(minutes=1)))
        .order_by("last_checked_at", "created_at")
        .values_list("id", flat=True)[:limit]
    )
    verified = list(
        Domain.objects.filter(status=Domain.Status.VERIFIED)
        .filter(never | Q(last_checked_at__lt=verified_before))
        .order_by("last_checked_at", "created_at")
        .values_list("id", flat=True)[: max(0, limit - len(pending))]
    )
    return pending + verified


def project_has_verified_domain(project) -> bool:
    return Domain.objects.filter(project=project, status=Domain.Status.VERIFIED).exists()


def default_sender_domains(project_ids) -> dict:
    """Each project's first verified domain: its `defaultSenderDomain` in the account endpoints."""
    rows = (
        Domain.objects.filter(project_id__in=list(project_ids), status=Domain.Status.VERIFIED)
        .order_by("project_id", "verified_at", "created_at")
        .values_list("project_id", "name")
    )
    found: dict = {}
    for project_id, name in rows:
        found.setdefault(project_id, name)
    return found


def host_addresses(*, host: str, timeout: float | None = None) -> tuple[list[str], str]:
    """The IPv4 then IPv6 addresses of `host` through the service's one resolver (`domains.dns`), and, when there
    are none, why (the resolver's reasons, or ""). `timeout` bounds both lookups together (`dns.resolve`)."""
    end = None if timeout is None else time.monotonic() + timeout
    answers = [
        resolve(host, rdtype, timeout=None if end is None else end - time.monotonic()) for rdtype in ("A", "AAAA")
    ]
    addresses = [record for answer in answers if answer.found for record in answer.records]
    return addresses, "; ".join(answer.reason for answer in answers if answer.reason)


def verified_domain_named(*, name: str) -> Domain | None:
    """The verified claim of the domain `name` (normalized here; exactly that name, not a parent) with its project, or
    None: a verified name has one owner across the service (`domain_verified_name`), so mail for it has one project."""
    name = normalize_domain(name)
    if name is None:
        return None
    return Domain.objects.filter(name=name, status=Domain.Status.VERIFIED).select_related("project").first()


def message_authenticate(*, message: bytes, ip: str, mail_from: str, helo: str):
    """SPF, DKIM and DMARC of a received message, looked up through the service's resolver (`domains.mailauth`)."""
    return mailauth.authenticate(message=message, ip=ip, mail_from=mail_from, helo=helo)

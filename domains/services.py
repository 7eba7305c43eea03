from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Project
from config.api.exceptions import Conflict, ValidationFailed
from domains.models import Domain
from domains.names import normalize_domain


@transaction.atomic
def domain_mark_verified_by_operator(*, project: Project, name: str) -> Domain:
    """Record a domain as verified because an operator vouches for it (no DNS check)."""
    normalized = normalize_domain(name)
    if normalized is None:
        raise ValidationFailed.field("domain", f'"{name}" is not a valid domain name', "invalid_string")
    domain = Domain.objects.select_for_update().filter(name=normalized).first()
    if domain is not None and domain.project_id != project.id:
        raise Conflict("This domain is already registered by another project")
    if domain is None:
        try:
            with transaction.atomic():
                domain = Domain.objects.create(project=project, name=normalized)
        except IntegrityError:
            raise Conflict("This domain is already registered by another project") from None
    domain.status = Domain.Status.VERIFIED
    domain.verification_method = Domain.Method.OPERATOR
    domain.verified_at = timezone.now()
    domain.save(update_fields=["status", "verification_method", "verified_at", "updated_at"])
    return domain

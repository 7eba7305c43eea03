import uuid

from django.db import models
from django.db.models import Q

from accounts.models import Project


class Domain(models.Model):
    """One project's claim of a sender domain.

    A pending claim blocks no one: several projects may claim one name, each with its own DKIM key,
    and the first to verify owns it (`domains.services`). So `name` is unique among verified domains across the
    service, and per project among all of them.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        VERIFIED = "verified"

    class Method(models.TextChoices):
        DNS = "dns"
        OPERATOR = "operator"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="domains")
    # Lower-case and IDNA-encoded (domains.names.normalize_domain).
    name = models.CharField(max_length=253)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    verification_method = models.CharField(max_length=10, choices=Method.choices, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    dkim_selector = models.CharField(max_length=63, blank=True)
    # SubjectPublicKeyInfo DER, base64: exactly the `p=` of the DKIM record.
    dkim_public_key = models.TextField(blank=True)
    # PKCS#8 PEM, Fernet-encrypted with a key derived from SECRET_KEY (domains.dkim); never leaves the service.
    dkim_private_key_encrypted = models.TextField(blank=True)
    # Result of the last check per record purpose: {purpose: {status, lastError, expected, checkedAt}}.
    record_checks = models.JSONField(default=dict, blank=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    # Checks in a row that found no DKIM record on a verified domain; at the limit it goes back to pending.
    dkim_miss_count = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # The database, not a check before the write, decides who verified first.
            models.UniqueConstraint(fields=["name"], condition=Q(status="verified"), name="domain_verified_name"),
            # Name first: it also serves every lookup of a name's claims.
            models.UniqueConstraint(fields=["name", "project"], name="domain_name_project"),
        ]
        indexes = [
            models.Index(fields=["project", "status"], name="domain_project_status"),
            models.Index(fields=["status", "last_checked_at"], name="domain_status_checked"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_verified(self) -> bool:
        return self.status == self.Status.VERIFIED

import uuid

from django.db import models

from accounts.models import Project


class Domain(models.Model):
    """A sender domain of a project. A domain belongs to one project only (decisions.md), so `name` is unique
    across the service, not per project."""

    class Status(models.TextChoices):
        PENDING = "pending"
        VERIFIED = "verified"

    class Method(models.TextChoices):
        DNS = "dns"
        OPERATOR = "operator"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="domains")
    # Lower-case and IDNA-encoded (domains.names.normalize_domain).
    name = models.CharField(max_length=253, unique=True)
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
        indexes = [
            models.Index(fields=["project", "status"], name="domain_project_status"),
            models.Index(fields=["status", "last_checked_at"], name="domain_status_checked"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_verified(self) -> bool:
        return self.status == self.Status.VERIFIED

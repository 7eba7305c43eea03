import uuid

from django.db import models

from accounts.models import Project


class Domain(models.Model):
    """A sender domain of a project. A domain belongs to one project only (decisions.md)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        VERIFIED = "verified"
        FAILED = "failed"

    class Method(models.TextChoices):
        DNS = "dns"
        OPERATOR = "operator"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="domains")
    name = models.CharField(max_length=253, unique=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    verification_method = models.CharField(max_length=10, choices=Method.choices, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["project", "status"], name="domain_project_status")]

    def __str__(self) -> str:
        return self.name

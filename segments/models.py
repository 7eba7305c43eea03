import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Project


class SegmentType(models.TextChoices):
    DYNAMIC = "DYNAMIC"
    STATIC = "STATIC"


class Segment(models.Model):
    """A named audience of a project: DYNAMIC (a condition over contacts) or STATIC (a managed member list)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="segments", db_index=False)
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=500, blank=True)
    type = models.CharField(max_length=7, choices=SegmentType.choices, default=SegmentType.DYNAMIC)
    # Validated by segments.conditions before it is saved; null for STATIC segments.
    condition = models.JSONField(null=True, blank=True)
    track_membership = models.BooleanField(default=False)
    member_count = models.PositiveIntegerField(default=0)
    # When member_count was last taken by a full count: the members page reuses a recent count (selectors).
    counted_at = models.DateTimeField(null=True, blank=True)
    # Periodic recount/recompute: when it last ran, and the claim of the run in progress (never two at once).
    refreshed_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["project", "created_at", "id"], name="segment_project_created"),
            models.Index(fields=["refreshed_at"], name="segment_refreshed"),
        ]

    def __str__(self) -> str:
        return self.name


class SegmentMembership(models.Model):
    """A contact's membership of a static segment or of a tracked dynamic one. One row per (segment,
    contact): a member while `exited_at` is null; re-entry clears `exited_at` and moves `entered_at`."""

    segment = models.ForeignKey(Segment, on_delete=models.CASCADE, related_name="memberships", db_index=False)
    contact = models.ForeignKey("contacts.Contact", on_delete=models.CASCADE, related_name="+")
    entered_at = models.DateTimeField(default=timezone.now)
    exited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["segment", "contact"], name="membership_unique_segment_contact")]

    def __str__(self) -> str:
        return f"{self.contact_id} in {self.segment_id}"

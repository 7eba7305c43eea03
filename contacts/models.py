import uuid

import uuid6
from django.db import models
from django.utils import timezone

from accounts.models import Project


class Contact(models.Model):
    """A person of a project's audience, identified by a lower-cased email unique within the project."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No single-column index on project: every composite index below starts with it.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="contacts", db_index=False)
    email = models.CharField(max_length=320)
    subscribed = models.BooleanField(default=True)
    snoozed_until = models.DateTimeField(null=True, blank=True)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "email"], name="contact_unique_project_email")]
        indexes = [
            # Cursor lists: (project, sort key, id) so every page is one index range scan, both directions.
            # The unique constraint above already serves sort=email and lookups by email.
            models.Index(fields=["project", "created_at", "id"], name="contact_project_created"),
            models.Index(fields=["project", "subscribed", "created_at", "id"], name="contact_project_sub_created"),
        ]

    def __str__(self) -> str:
        return self.email


class Event(models.Model):
    """Something a contact did (tracked through the API) or that happened to it (system events)."""

    # Time-ordered ids (UUIDv7, as `contacts.services._PG_UUID7` makes them in SQL): new events land on the right
    # edge of the primary-key index instead of on random pages of a table of millions (a third less WAL and time
    # for a bulk insert of 100,000 segment events).
    id = models.UUIDField(primary_key=True, default=uuid6.uuid7, editable=False)
    # Served by the composite indexes below; single-column FK indexes would only slow down every insert.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="events", db_index=False)
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="events", db_index=False)
    name = models.CharField(max_length=255)
    # Set on email.* events by the messaging app; a plain UUID so that contacts does not depend on messaging.
    email_id = models.UUIDField(null=True, blank=True)
    data = models.JSONField(default=dict, blank=True)
    # The chain of causes of an event that an automated run recorded (a workflow step's subscription change): the
    # ids of the runs that led to it, oldest first, as the recording app gives them; null for every other event.
    # This app stores it and never reads it (docs/workflows.md, "Chains of causes").
    chain = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["project", "created_at", "id"], name="event_project_created"),
            models.Index(fields=["contact", "created_at", "id"], name="event_contact_created"),
            # Contact last: segment conditions on `event.<name>` read the matching contacts from this index alone
            # (an index-only scan) to hash-join them with contacts; every (project, name, created_at) lookup of
            # the narrower index it replaced is served by its prefix.
            models.Index(fields=["project", "name", "created_at", "contact"], name="event_name_created_contact"),
            # A contact's segment entries and exits on its timeline, a few among its events (a busy contact has
            # tens of thousands in the timeline's window).
            models.Index(
                fields=["contact", "created_at", "id"],
                condition=models.Q(name__startswith="segment."),
                name="event_contact_segment",
            ),
            # The activity feed filtered by email: only email.* events carry one.
            models.Index(
                fields=["email_id", "created_at", "id"],
                condition=models.Q(email_id__isnull=False),
                name="event_email_created",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class ImportUpload(models.Model):
    """The bytes of an uploaded CSV, kept in the database until its import job has run, so that any worker
    (on any host) can read it. Deleted by the import when it finishes."""

    job = models.OneToOneField("accounts.Job", on_delete=models.CASCADE, primary_key=True, related_name="+")
    content = models.BinaryField()
    filename = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.filename or str(self.job_id)

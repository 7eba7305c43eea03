import uuid
from datetime import UTC, datetime, timedelta

import uuid6
from django.db import models
from django.utils import timezone

from accounts.models import Project
from contacts.models import Contact
from core.ids import uuid7_time


class EmailType(models.TextChoices):
    TRANSACTIONAL = "TRANSACTIONAL"
    MARKETING = "MARKETING"
    HEADLESS = "HEADLESS"


class Template(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="templates")
    name = models.CharField(max_length=255, blank=True)
    description = models.TextField(blank=True)
    subject = models.CharField(max_length=998, blank=True)
    body = models.TextField(blank=True)
    from_email = models.CharField(max_length=320)
    from_name = models.CharField(max_length=255, blank=True)
    reply_to = models.CharField(max_length=320, blank=True)
    type = models.CharField(max_length=13, choices=EmailType.choices, default=EmailType.MARKETING)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["project", "created_at"], name="template_project_created"),
            models.Index(fields=["project", "type", "created_at"], name="template_project_type_created"),
        ]

    def __str__(self) -> str:
        return self.name or str(self.id)


class AttachmentBundle(models.Model):
    """The attachments of one send request, stored once and shared by every recipient's email row."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="attachment_bundles")
    # [{filename, contentType, contentId, disposition, content (base64)}]
    items = models.JSONField(default=list)
    total_bytes = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{len(self.items)} attachment(s)"


class DeferredContent(models.Model):
    """The subject and body of emails stored unrendered: a campaign's, keyed by the campaign's id. Delivery
    personalizes each of them from this row as it sends (`messaging.sending.personalize`). Written through
    `deferred_content_store`; it outlives its campaign, so an email retried after the campaign is gone still has its
    content, and goes with its project."""

    id = models.UUIDField(primary_key=True)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    subject = models.CharField(max_length=998)
    body = models.TextField()
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.subject


# An email that still holds a body: its HTML, or a text part of its own (a text-only message has no HTML).
BODY_KEPT = ~models.Q(html="") | models.Q(text__isnull=False)


class Email(models.Model):
    """One message to one recipient: what to send, and what became of it."""

    class Status(models.TextChoices):
        QUEUED = "QUEUED"
        SENDING = "SENDING"
        SENT = "SENT"
        DELIVERED = "DELIVERED"
        OPENED = "OPENED"
        CLICKED = "CLICKED"
        BOUNCED = "BOUNCED"
        COMPLAINED = "COMPLAINED"
        FAILED = "FAILED"
        SUPPRESSED = "SUPPRESSED"
        CANCELLED = "CANCELLED"

    class Source(models.TextChoices):
        API = "api"
        CAMPAIGN = "campaign"
        WORKFLOW = "workflow"
        TEST = "test"

    # Time-ordered (UUIDv7) and made with the row's `created_at` (docs/scaling.md "Partitioned history"): a lookup
    # by id alone names the month the row lies in (`created_window`).
    id = models.UUIDField(primary_key=True, default=uuid6.uuid7, editable=False)
    # Foreign keys are indexed by the composite and partial indexes of Meta: every index is written by every
    # insert and by every status change (status is indexed, so those updates are never HOT).
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="emails", db_index=False)
    contact = models.ForeignKey(
        Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="emails", db_index=False
    )
    to_email = models.CharField(max_length=320)
    to_name = models.CharField(max_length=255, blank=True)
    template = models.ForeignKey(
        Template, on_delete=models.SET_NULL, null=True, blank=True, related_name="emails", db_index=False
    )
    # Plain ids so that messaging does not depend on the apps that send through it.
    campaign_id = models.UUIDField(null=True, blank=True)
    workflow_id = models.UUIDField(null=True, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.API)
    type = models.CharField(max_length=13, choices=EmailType.choices, default=EmailType.TRANSACTIONAL)
    from_email = models.CharField(max_length=320)
    from_name = models.CharField(max_length=255, blank=True)
    reply_to = models.CharField(max_length=320, blank=True)
    subject = models.CharField(max_length=998)
    html = models.TextField(blank=True)
    # The plain-text alternative as its sender wrote it (a message submitted over SMTP with a text part); null: made
    # from the HTML by delivery. A text-only message has this and an empty `html`, and is sent as text/plain.
    text = models.TextField(null=True, blank=True)  # noqa: DJ001 - null (no text written) is not an empty text
    # False while a campaign's email waits for delivery to personalize it: the fan-out only inserts rows, and
    # delivery renders the campaign's `DeferredContent` with the contact's data as it sends.
    rendered = models.BooleanField(default=True, db_default=True)
    headers = models.JSONField(default=dict, blank=True)
    attachments = models.ForeignKey(AttachmentBundle, on_delete=models.SET_NULL, null=True, blank=True, db_index=False)
    message_id = models.CharField(max_length=255, blank=True)
    provider_message_id = models.CharField(max_length=255, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    opened_at = models.DateTimeField(null=True, blank=True)
    clicked_at = models.DateTimeField(null=True, blank=True)
    bounced_at = models.DateTimeField(null=True, blank=True)
    complained_at = models.DateTimeField(null=True, blank=True)
    opens = models.PositiveIntegerField(default=0)
    clicks = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            # A campaign's emails (campaign rows only). Not unique: a partitioned table's unique indexes must hold
            # `created_at`; the fan-out keeps one email per contact and campaign under the campaign's lock
            # (`messaging.sending.services`, `_queue_unrendered`).
            models.Index(
                fields=["campaign_id", "contact"],
                name="email_campaign_contact",
                condition=models.Q(campaign_id__isnull=False),
            ),
            models.Index(fields=["project", "created_at"], name="email_project_created"),
            models.Index(fields=["status", "claimed_at"], name="email_status_claimed"),
            models.Index(fields=["contact", "created_at"], name="email_contact_created"),
            # Most emails have no template, campaign or attachments: only the rows that do are indexed.
            models.Index(fields=["template"], name="email_template", condition=models.Q(template__isnull=False)),
            models.Index(
                fields=["attachments"], name="email_attachments", condition=models.Q(attachments__isnull=False)
            ),
            # Feedback: provider notifications find their email by the provider's id (empty for SMTP sends).
            models.Index(
                fields=["provider_message_id"],
                name="email_provider_message_id",
                condition=~models.Q(provider_message_id=""),
            ),
            # Reputation: per-project bounce and complaint counts over a rolling window, from the index alone.
            models.Index(
                fields=["project", "bounced_at"],
                name="email_project_bounced",
                condition=models.Q(bounced_at__isnull=False),
            ),
            models.Index(
                fields=["project", "complained_at"],
                name="email_project_complained",
                condition=models.Q(complained_at__isnull=False),
            ),
            # Retention: only rows that still hold a rendered body (HTML or the sender's text), oldest first, so a
            # sweep never rereads the rows it already cleared.
            models.Index(fields=["created_at"], name="email_body_kept_created", condition=BODY_KEPT),
        ]

    def __str__(self) -> str:
        return f"{self.subject} -> {self.to_email}"


# How far a row's `created_at` may lie from its id's time: none for the rows of the send path, which take both from
# one moment; a row made another way (the admin, a test) gets its id and its `created_at` from two reads of the clock.
CREATED_MARGIN = timedelta(days=1)


def created_window(ids) -> tuple[datetime, datetime] | None:
    """Bounds of the `created_at` of the emails whose ids are `ids`, from the ids' own times (UUIDv7), widened by
    CREATED_MARGIN: a lookup by id that adds them reads only the month (or two) they name on a partitioned table,
    where an id alone is looked up in every month's index. None when an id is not a UUIDv7 (an email made before
    ids were) or there is none: no bound then."""
    times = [uuid7_time(email_id) for email_id in ids]
    if not times or None in times:
        return None
    return min(times) - CREATED_MARGIN, max(times) + CREATED_MARGIN


# The bounds of no window (an id that is not a UUIDv7), for statements that always take two.
ALL_TIME = (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC))


def created_bounds(ids) -> tuple[datetime, datetime]:
    """`created_window(ids)`, or ALL_TIME where there is none."""
    return created_window(ids) or ALL_TIME


def created_q(ids) -> models.Q:
    """`created_window(ids)` as a filter of `Email` (an empty one where there is no window)."""
    window = created_window(ids)
    return models.Q() if window is None else models.Q(created_at__range=window)


class Suppression(models.Model):
    """An address of a project that no mail goes to any more (until an operator removes it)."""

    class Reason(models.TextChoices):
        BOUNCE = "BOUNCE"
        COMPLAINT = "COMPLAINT"
        MANUAL = "MANUAL"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="suppressions")
    # Normalised like contact emails (trimmed, lower-cased).
    email = models.CharField(max_length=320)
    reason = models.CharField(max_length=9, choices=Reason.choices)
    # No database constraint: a partitioned table's primary key is (id, created_at), which a foreign key would have to
    # name whole. Deleting an email through the ORM still empties this; dropping a month of emails leaves the id of a
    # row that is gone, which reads as no email.
    source_email = models.ForeignKey(
        Email, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_constraint=False
    )
    detail = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "email"], name="suppression_project_email")]
        indexes = [models.Index(fields=["project", "created_at"], name="suppression_project_created")]

    def __str__(self) -> str:
        return self.email


class WebhookReceipt(models.Model):
    """One provider notification, kept for a week: its unique key makes a redelivered notification a no-op."""

    class Outcome(models.TextChoices):
        PROCESSED = "PROCESSED"
        IGNORED = "IGNORED"

    id = models.BigAutoField(primary_key=True)
    provider = models.CharField(max_length=20)
    event_id = models.CharField(max_length=255)
    event_type = models.CharField(max_length=20)
    outcome = models.CharField(max_length=9, choices=Outcome.choices, default=Outcome.PROCESSED)
    detail = models.CharField(max_length=255, blank=True)
    message_id = models.CharField(max_length=255, blank=True)
    recipient = models.CharField(max_length=320, blank=True)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    # No database constraint, as `Suppression.source_email`.
    email = models.ForeignKey(
        Email, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_constraint=False
    )
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "event_id"], name="webhookreceipt_provider_event")]
        indexes = [models.Index(fields=["received_at"], name="webhookreceipt_received")]

    def __str__(self) -> str:
        return f"{self.provider} {self.event_id}"


class EmailStatsHour(models.Model):
    """Per project and UTC hour, how many emails were sent, delivered, opened, clicked, bounced, complained about
    and failed, each email counted once per kind at its first occurrence. Maintained incrementally from the
    `email.*` events (`messaging.insights.rollup`) and rebuilt from the email rows by `rebuild_email_stats`; the
    dashboards read it instead of counting emails."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    hour = models.DateTimeField()
    sent = models.PositiveIntegerField(default=0)
    delivered = models.PositiveIntegerField(default=0)
    opened = models.PositiveIntegerField(default=0)
    clicked = models.PositiveIntegerField(default=0)
    bounced = models.PositiveIntegerField(default=0)
    complained = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)

    class Meta:
        # The target of the increments' ON CONFLICT, and the index of every range read (project first).
        constraints = [models.UniqueConstraint(fields=["project", "hour"], name="emailstatshour_project_hour")]
        verbose_name_plural = "email stats (hourly)"

    def __str__(self) -> str:
        return f"{self.project_id} {self.hour:%Y-%m-%d %H:00}"


class ProjectReputation(Project):
    """Projects as the admin shows their sending reputation (bounce and complaint figures, disable reason)."""

    class Meta:
        proxy = True
        verbose_name = "project reputation"
        verbose_name_plural = "project reputation"


class ReputationReview(models.Model):
    """When an operator last re-enabled a project the reputation guard had disabled: from then on its figures count
    only the mail sent since, so the next bounce does not disable it again on the old figures."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, primary_key=True, related_name="+")
    reviewed_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.project_id} reviewed {self.reviewed_at:%Y-%m-%d %H:%M}"


class ImageUpload(models.Model):
    """One image a project uploaded (`POST /uploads/image`), by its storage name: what the project's upload storage
    quota adds up."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=255, unique=True)
    size = models.PositiveBigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["project", "created_at"], name="imageupload_project_created")]

    def __str__(self) -> str:
        return self.name

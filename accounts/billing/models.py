"""Monthly caps, usage counters, billing warnings and the payment provider's subscription state of a project.

Usage is kept in counters written in the same transaction (or statement) as the email rows they count
(`billing.usage`), so reading it never counts emails. docs/billing.md explains the rules.
"""

from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from accounts.models import Project


class Category(models.TextChoices):
    TRANSACTIONAL = "transactional"
    CAMPAIGNS = "campaigns"
    WORKFLOWS = "workflows"
    INBOUND = "inbound"


def _cap(category: str) -> models.PositiveIntegerField:
    return models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=f"Emails of the {category} category per calendar month (UTC); empty for no cap",
    )


class ProjectBilling(models.Model):
    """A project's caps and subscription; a project without a row has no caps and no subscription."""

    class SubscriptionStatus(models.TextChoices):
        NONE = "", "none"
        ACTIVE = "active"
        TRIALING = "trialing"
        PAST_DUE = "past_due"
        CANCELED = "canceled"
        INCOMPLETE = "incomplete"
        UNPAID = "unpaid"

    project = models.OneToOneField(Project, on_delete=models.CASCADE, primary_key=True, related_name="billing")
    limit_transactional = _cap("transactional")
    limit_campaigns = _cap("campaigns")
    limit_workflows = _cap("workflows")
    limit_inbound = _cap("inbound")
    customer_id = models.CharField(max_length=255, blank=True, db_index=True, help_text="The payment provider's")
    subscription_id = models.CharField(max_length=255, blank=True)
    subscription_status = models.CharField(
        max_length=20, choices=SubscriptionStatus.choices, blank=True, default=SubscriptionStatus.NONE
    )
    subscription_period_end = models.DateTimeField(null=True, blank=True)
    # The creation time of the provider event last applied: an older event delivered late changes nothing.
    subscription_event_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"Billing of {self.project_id}"

    @property
    def subscribed(self) -> bool:
        return self.subscription_status in PAYING

    def limit(self, category: str) -> int | None:
        return getattr(self, f"limit_{category}")


PAYING = (ProjectBilling.SubscriptionStatus.ACTIVE, ProjectBilling.SubscriptionStatus.TRIALING)


class UsageCounter(models.Model):
    """Emails created in one category and month, spread over a few rows (shards) so that concurrent sends of one
    project rarely wait for each other's row lock; usage is the sum of a month's shards."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    category = models.CharField(max_length=16, choices=Category.choices)
    month = models.DateField(help_text="First day of the month (UTC)")
    shard = models.PositiveSmallIntegerField(default=0)
    count = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "category", "month", "shard"], name="usage_counter_unique_shard")
        ]

    def __str__(self) -> str:
        return f"{self.category} {self.month:%Y-%m} #{self.shard}: {self.count}"


class UsageWarning(models.Model):
    """A category that reached 80 % of its cap in a month: once per (project, category, month), in the activity
    feed and the admin."""

    id = models.UUIDField(primary_key=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    category = models.CharField(max_length=16, choices=Category.choices)
    month = models.DateField()
    limit = models.PositiveIntegerField()
    usage = models.PositiveBigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "category", "month"], name="usage_warning_unique_month")
        ]
        indexes = [models.Index(fields=["project", "created_at", "id"], name="usage_warning_project_created")]

    def __str__(self) -> str:
        return f"{self.category} at {self.usage}/{self.limit} in {self.month:%Y-%m}"


class ProviderEvent(models.Model):
    """A payment-provider webhook event already processed: a redelivery of the same id changes nothing."""

    event_id = models.CharField(max_length=255, primary_key=True)
    type = models.CharField(max_length=100)
    project = models.ForeignKey(Project, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    received_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.type} {self.event_id}"

"""A project's caps and usage as the account endpoints show and change them (docs/billing.md).

The payment provider's side (checkout, portal, invoices, webhooks) is in `billing.provider`; counting on the send
path in `billing.usage`.
"""

from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from accounts.billing.models import PAYING, Category, ProjectBilling, UsageCounter
from accounts.billing.usage import WARNING_RATIO, effective_limit, month_of
from accounts.models import Project
from core.errors import ValidationFailed

CATEGORIES = tuple(Category.values)


@dataclass(frozen=True)
class CategoryUsage:
    limit: int | None
    usage: int
    percentage: float
    is_warning: bool
    is_blocked: bool


@dataclass(frozen=True)
class Consumption:
    period_start: datetime
    period_end: datetime
    emails: dict[str, int]  # per category, and `total`


def billing_of(project: Project) -> ProjectBilling:
    """The project's billing row as stored, or an unsaved one with no caps and no subscription."""
    return ProjectBilling.objects.filter(project=project).first() or ProjectBilling(project=project)


def usage_by_category(*, project: Project, now: datetime | None = None) -> dict[str, int]:
    """Emails counted this month (UTC) per category: the sum of the counter shards."""
    month = month_of(now or timezone.now())
    rows = (
        UsageCounter.objects.filter(project=project, month=month)
        .values("category")
        .annotate(total=Sum("count"))
        .values_list("category", "total")
    )
    counted = dict(rows)
    return {category: int(counted.get(category) or 0) for category in CATEGORIES}


def category_usage(limit: int | None, usage: int) -> CategoryUsage:
    if limit is None:
        return CategoryUsage(limit=None, usage=usage, percentage=0.0, is_warning=False, is_blocked=False)
    percentage = round(usage * 100 / limit, 2)
    return CategoryUsage(
        limit=limit,
        usage=usage,
        percentage=percentage,
        is_warning=usage >= limit * WARNING_RATIO,
        is_blocked=usage >= limit,
    )


def billing_limits(*, project: Project) -> dict[str, CategoryUsage]:
    """Per category: the cap that applies (the project's own, or the free tier's when lower and unsubscribed),
    this month's usage, the percentage used, and whether it is past 80 % (`isWarning`) or full (`isBlocked`)."""
    billing = billing_of(project)
    usage = usage_by_category(project=project)
    return {
        category: category_usage(effective_limit(billing.limit(category), billing.subscription_status), usage[category])
        for category in CATEGORIES
    }


def _valid_cap(category: str, value) -> dict | None:
    """The field error of one cap, or None: a positive integer or null."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = "boolean" if isinstance(value, bool) else type(value).__name__
        return {
            "field": category,
            "message": f"Expected a positive integer or null, received {kind}",
            "code": "invalid_type",
        }
    if isinstance(value, float) and not value.is_integer():
        return {"field": category, "message": "Expected an integer", "code": "invalid_type", "received": value}
    if value < 1:
        return {
            "field": category,
            "message": "Must be at least 1 (null removes the limit)",
            "code": "too_small",
            "received": value,
        }
    if value > 2**31 - 1:
        return {"field": category, "message": f"Must be at most {2**31 - 1}", "code": "too_big", "received": value}
    return None


@transaction.atomic
def billing_limits_update(*, project: Project, changes: dict) -> dict[str, CategoryUsage]:
    """Set the caps named in `changes` (`{<category>: positive integer | null}`; other keys are ignored, a category
    left out keeps its cap). Every value is checked before anything is written (422 naming each bad field)."""
    if not isinstance(changes, dict):
        raise ValidationFailed.field("body", "Expected an object of limits per category", "invalid_type")
    wanted = {category: changes[category] for category in CATEGORIES if category in changes}
    errors = [error for category, value in wanted.items() if (error := _valid_cap(category, value))]
    if errors:
        raise ValidationFailed(errors)
    billing, _ = ProjectBilling.objects.select_for_update().get_or_create(project=project)
    for category, value in wanted.items():
        setattr(billing, f"limit_{category}", None if value is None else int(value))
    billing.updated_at = timezone.now()
    billing.full_clean()
    billing.save()
    return billing_limits(project=project)


def project_has_subscription(project: Project) -> bool:
    """An active or trialing subscription with the payment provider (the setup state's `hasSubscription`)."""
    return ProjectBilling.objects.filter(project=project, subscription_status__in=PAYING).exists()


def period_bounds(now: datetime) -> tuple[datetime, datetime]:
    """The calendar month (UTC) of `now`: its first moment and the first moment of the next one."""
    start = datetime.combine(month_of(now), datetime.min.time(), tzinfo=UTC)
    end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
    return start, end


def billing_consumption(*, project: Project) -> Consumption:
    now = timezone.now()
    start, end = period_bounds(now)
    emails = usage_by_category(project=project, now=now)
    return Consumption(period_start=start, period_end=end, emails={**emails, "total": sum(emails.values())})

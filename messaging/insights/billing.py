"""Billing warnings in the activity feed: `billing.warning` when a category of the project passed 80 % of its
monthly cap (`billing.usage.usage_warn`), one item per category and month."""

from django.db.models import QuerySet

from accounts.billing.models import UsageWarning
from accounts.models import Project
from messaging.insights.registry import ActivityFilters, ActivityItem, ActivitySource, activity_sources

WARNING = "billing.warning"


def _queryset(project: Project, filters: ActivityFilters) -> QuerySet | None:
    if (filters.types is not None and WARNING not in filters.types) or filters.contact_id or filters.email_id:
        return None
    warnings = UsageWarning.objects.filter(project=project)
    if filters.start:
        warnings = warnings.filter(created_at__gte=filters.start)
    if filters.end:
        warnings = warnings.filter(created_at__lte=filters.end)
    return warnings


def _item(warning: UsageWarning) -> ActivityItem:
    return ActivityItem(
        id=warning.id,
        type=WARNING,
        timestamp=warning.created_at,
        metadata={
            "category": warning.category,
            "limit": warning.limit,
            "usage": warning.usage,
            "percentage": round(warning.usage * 100 / warning.limit, 2),
            "month": f"{warning.month:%Y-%m}",
        },
    )


def _present_types(project: Project) -> list[str]:
    return [WARNING] if UsageWarning.objects.filter(project=project).exists() else []


SOURCE = ActivitySource(
    name="billing",
    types=(WARNING,),
    queryset=_queryset,
    timestamp_field="created_at",
    item=_item,
    present_types=_present_types,
)
activity_sources.register(SOURCE, key=SOURCE.name)

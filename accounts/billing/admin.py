"""Caps and usage on the project's admin page, the month's warnings, and the provider events received."""

from django.contrib import admin
from django.utils.html import format_html_join

from accounts.admin import ProjectAdmin
from accounts.billing.models import ProjectBilling, ProviderEvent, UsageWarning
from accounts.billing.services import billing_limits
from core.admin import RecordAdmin


class ProjectBillingInline(admin.StackedInline):
    """The caps are edited here (a positive integer, or empty for none); the subscription comes from the payment
    provider's webhook and is shown, not edited."""

    model = ProjectBilling
    can_delete = False
    extra = 0
    max_num = 1
    verbose_name = verbose_name_plural = "Billing: monthly caps and usage"
    fields = [
        "usage_this_month",
        ("limit_transactional", "limit_campaigns"),
        ("limit_workflows", "limit_inbound"),
        ("subscription_status", "subscription_period_end"),
        ("customer_id", "subscription_id"),
    ]
    readonly_fields = [
        "usage_this_month",
        "subscription_status",
        "subscription_period_end",
        "customer_id",
        "subscription_id",
    ]

    def get_extra(self, request, obj=None, **kwargs):
        # A project without a billing row gets an empty form, so caps can be set on any project.
        return 0 if obj is not None and ProjectBilling.objects.filter(project=obj).exists() else 1

    @admin.display(description="Usage this month (UTC)")
    def usage_this_month(self, billing: ProjectBilling):
        if billing.project_id is None:
            return "-"
        rows = []
        for category, state in billing_limits(project=billing.project).items():
            cap = "no cap" if state.limit is None else f"of {state.limit} ({state.percentage:g} %)"
            flag = " BLOCKED" if state.is_blocked else " WARNING: past 80 %" if state.is_warning else ""
            rows.append((category, state.usage, cap, flag))
        return format_html_join("", "<div><b>{}</b>: {} {}<b>{}</b></div>", rows)


ProjectAdmin.inlines = [*ProjectAdmin.inlines, ProjectBillingInline]


@admin.register(UsageWarning)
class UsageWarningAdmin(RecordAdmin):
    list_display = ["project", "category", "month", "usage", "limit", "created_at"]
    list_filter = ["category", "month"]
    search_fields = ["project__name", "project__id"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]
    date_hierarchy = "created_at"


@admin.register(ProviderEvent)
class ProviderEventAdmin(RecordAdmin):
    list_display = ["event_id", "type", "project", "received_at"]
    list_filter = ["type"]
    search_fields = ["event_id", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]

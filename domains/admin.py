from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join

from domains.models import Domain
from domains.records import records_json
from domains.services import domain_check, domain_mark_verified_by_operator


@admin.register(Domain)
class DomainAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "status", "verification_method", "last_checked_at", "verified_at", "created_at"]
    list_filter = ["status", "verification_method"]
    search_fields = ["name", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]
    actions = ["check_now", "mark_verified"]
    fields = [
        "name",
        "project",
        "status",
        "verification_method",
        "verified_at",
        "last_checked_at",
        "dkim_miss_count",
        "dkim_selector",
        "records_table",
    ]
    readonly_fields = [
        "status",
        "verification_method",
        "verified_at",
        "last_checked_at",
        "dkim_miss_count",
        "dkim_selector",
        "records_table",
    ]

    def get_readonly_fields(self, request, obj=None):
        # Name and project are set when the domain is added; moving one between projects is not a thing.
        return [*self.readonly_fields, "name", "project"] if obj else self.readonly_fields

    @admin.display(description="DNS records and last results")
    def records_table(self, obj: Domain):
        if obj.pk is None:
            return "-"
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td style='word-break:break-all'><code>{}</code></td>"
            "<td>{}</td><td>{}</td></tr>",
            (
                (
                    r["purpose"] + (" (required)" if r["required"] else ""),
                    r["type"],
                    r["name"],
                    r["value"],
                    r["status"],
                    r["lastError"] or "",
                )
                for r in records_json(obj)
            ),
        )
        return format_html(
            "<table><tr><th>Purpose</th><th>Type</th><th>Name</th><th>Value</th><th>Status</th><th>Last error</th>"
            "</tr>{}</table>",
            rows,
        )

    def save_model(self, request, obj, form, change):
        # Adding a domain in the admin records the operator's word for it, through the one service for that.
        if change:
            return
        saved = domain_mark_verified_by_operator(project=obj.project, name=obj.name)
        obj.pk = saved.pk

    @admin.action(description="Check DNS records now")
    def check_now(self, request, queryset):
        for domain in queryset.select_related("project"):
            checked = domain_check(domain=domain)
            self.message_user(
                request,
                f"{checked.name}: {checked.status}",
                messages.SUCCESS if checked.is_verified else messages.WARNING,
            )

    @admin.action(description="Mark verified (the operator vouches for the domain)")
    def mark_verified(self, request, queryset):
        for domain in queryset.select_related("project"):
            domain_mark_verified_by_operator(project=domain.project, name=domain.name)
        self.message_user(request, f"{queryset.count()} domain(s) marked verified by the operator", messages.SUCCESS)

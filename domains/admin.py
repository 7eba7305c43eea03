from django import forms
from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join

from core.errors import Conflict
from domains.models import Domain
from domains.names import normalize_domain
from domains.records import records_json
from domains.selectors import domain_claims_of_others
from domains.services import DomainClaimLost, domain_check, domain_mark_verified_by_operator


class DomainForm(forms.ModelForm):
    def clean(self):
        cleaned = super().clean()
        if not self.instance._state.adding or not cleaned.get("name") or not cleaned.get("project"):
            return cleaned
        # What domain_mark_verified_by_operator would refuse, as a form error rather than a failed save.
        name = normalize_domain(cleaned["name"])
        if name is None:
            self.add_error("name", "Not a valid domain name")
        elif any(claim.is_verified for claim in domain_claims_of_others(name=name, project=cleaned["project"])):
            self.add_error("name", "Another project has verified this domain")
        return cleaned


@admin.register(Domain)
class DomainAdmin(admin.ModelAdmin):
    form = DomainForm
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
        "other_claims",
    ]
    readonly_fields = [
        "status",
        "verification_method",
        "verified_at",
        "last_checked_at",
        "dkim_miss_count",
        "dkim_selector",
        "records_table",
        "other_claims",
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

    @admin.display(description="Claims of this name by other projects")
    def other_claims(self, obj: Domain):
        # Pending claims block no one: several projects may claim a name, and the first to verify it owns it.
        if obj._state.adding:
            return "-"
        claims = domain_claims_of_others(name=obj.name, project=obj.project)
        if not claims:
            return "None"
        return format_html_join(", ", "{} ({})", ((claim.project, claim.status) for claim in claims))

    def save_model(self, request, obj, form, change):
        # Adding a domain in the admin records the operator's word for it, through the one service for that.
        if change:
            return
        saved = domain_mark_verified_by_operator(project=obj.project, name=obj.name)
        obj.pk = saved.pk

    @admin.action(description="Check DNS records now", permissions=("change",))
    def check_now(self, request, queryset):
        for domain in queryset.select_related("project"):
            try:
                checked = domain_check(domain=domain)
            except DomainClaimLost:
                self.message_user(request, f"{domain.name}: removed, another project verified it", messages.WARNING)
                continue
            self.message_user(
                request,
                f"{checked.name}: {checked.status}",
                messages.SUCCESS if checked.is_verified else messages.WARNING,
            )

    @admin.action(description="Mark verified (the operator vouches for the domain)", permissions=("change",))
    def mark_verified(self, request, queryset):
        marked = 0
        for domain in queryset.select_related("project"):
            try:
                domain_mark_verified_by_operator(project=domain.project, name=domain.name)
            except Conflict:
                self.message_user(request, f"{domain.name}: another project has verified it", messages.ERROR)
                continue
            marked += 1
        self.message_user(request, f"{marked} domain(s) marked verified by the operator", messages.SUCCESS)

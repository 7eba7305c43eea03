from django import forms
from django.contrib import admin
from django.utils.html import format_html

from core.admin import RecordAdmin
from core.counts import EstimatedCountPaginator
from core.errors import ServiceError, ValidationFailed
from messaging.content.serializers import TemplateInputSerializer
from messaging.content.services import content_check
from messaging.feedback.reputation import project_reputation, project_reputation_reset
from messaging.feedback.suppression import suppression_add, suppression_remove
from messaging.models import (
    AttachmentBundle,
    Email,
    EmailStatsHour,
    ProjectReputation,
    Suppression,
    Template,
    WebhookReceipt,
)
from messaging.sending.services import emails_retry


class TemplateAdminForm(forms.ModelForm):
    """An operator's template meets the API's rules: the input serializer's checks of each field, then the
    service's (sender on a verified domain, content that parses and renders within the limits)."""

    class Meta:
        model = Template
        fields = ["project", "name", "description", "subject", "body", "from_email", "from_name", "reply_to", "type"]

    def clean(self):
        cleaned = super().clean()
        if self.errors or cleaned.get("project") is None:
            return cleaned
        serializer = TemplateInputSerializer(data={name: cleaned.get(field) for name, field in self._api_fields()})
        if not serializer.is_valid():
            by_name = dict(self._api_fields())
            for name, errors in serializer.errors.items():
                self.add_error(by_name.get(name), errors)
            return cleaned
        try:
            content_check(project=cleaned["project"], values=serializer.validated_data)
        except ValidationFailed as refused:
            by_name = dict(self._api_fields())
            for error in refused.errors:
                self.add_error(by_name.get(error["field"]), error["message"])
        except ServiceError as refused:
            self.add_error("from_email", refused.message)
        return cleaned

    @staticmethod
    def _api_fields():
        """(API name, model field) of every field the API takes."""
        fields = TemplateInputSerializer().fields
        return [(name, field.source) for name, field in fields.items()]


@admin.register(Template)
class TemplateAdmin(admin.ModelAdmin):
    form = TemplateAdminForm
    list_display = ["name", "project", "type", "subject", "from_email", "updated_at"]
    list_filter = ["type"]
    search_fields = ["name", "subject", "from_email", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]


@admin.register(Email)
class EmailAdmin(RecordAdmin):
    list_display = ["to_email", "subject", "project", "status", "source", "type", "attempts", "created_at", "sent_at"]
    list_filter = ["status", "source", "type", "project"]
    search_fields = ["=id", "to_email", "message_id", "subject"]
    list_select_related = ["project"]
    raw_id_fields = ["project", "contact", "template", "attachments"]
    readonly_fields = [
        "preview",
        "message_id",
        "provider_message_id",
        "attempts",
        "last_error",
        "created_at",
        "updated_at",
        "claimed_at",
        "sent_at",
        "delivered_at",
        "opened_at",
        "clicked_at",
    ]
    exclude = ["html"]
    # No date_hierarchy: its bounds (MIN/MAX of created_at) would read every email, created_at alone is not indexed.
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ["retry_now"]

    @admin.display(description="Rendered message")
    def preview(self, email: Email):
        if not email.rendered:
            return "Not rendered yet: a campaign's email is rendered for its contact when it is sent."
        # A sandboxed frame: the rendered HTML is shown as the recipient sees it, without running in the admin.
        return format_html(
            '<iframe sandbox="" srcdoc="{}" style="width:100%;height:480px;border:1px solid #ccc"></iframe>',
            email.html,
        )

    @admin.action(description="Queue the selected failed or queued emails again now", permissions=("act",))
    def retry_now(self, request, queryset):
        count = emails_retry(email_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"Queued {count} email(s)")


@admin.register(AttachmentBundle)
class AttachmentBundleAdmin(RecordAdmin):
    list_display = ["id", "project", "total_bytes", "created_at"]
    search_fields = ["=id", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]
    exclude = ["items"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False


@admin.register(Suppression)
class SuppressionAdmin(admin.ModelAdmin):
    list_display = ["email", "project", "reason", "detail", "created_at"]
    list_filter = ["reason"]
    search_fields = ["email", "=project__id", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project", "source_email"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ["remove"]

    def get_readonly_fields(self, request, obj=None):
        # An entry is added or removed, never rewritten: its address and cause are the record of what happened.
        return ["project", "email", "reason", "source_email", "created_at"] if obj else ["created_at"]

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # removal goes through the service (the action below)
        return actions

    def save_model(self, request, obj, form, change):
        if change:
            obj.save(update_fields=["detail"])
            return
        added = suppression_add(
            project=obj.project, email=obj.email, reason=obj.reason, source_email=obj.source_email, detail=obj.detail
        )
        obj.pk, obj.email, obj._state.adding = added.pk, added.email, False

    def delete_model(self, request, obj):
        suppression_remove(suppression=obj)

    @admin.action(description="Remove from the suppression list (contacts stay unsubscribed)", permissions=("delete",))
    def remove(self, request, queryset):
        count = 0
        for suppression in queryset:
            suppression_remove(suppression=suppression)
            count += 1
        self.message_user(request, f"Removed {count} address(es); mail may reach them again")


@admin.register(WebhookReceipt)
class WebhookReceiptAdmin(RecordAdmin):
    list_display = ["received_at", "provider", "event_type", "outcome", "detail", "recipient", "project"]
    list_filter = ["provider", "outcome", "event_type"]
    search_fields = ["event_id", "message_id", "recipient"]
    list_select_related = ["project"]
    raw_id_fields = ["project", "email"]
    date_hierarchy = "received_at"
    paginator = EstimatedCountPaginator
    show_full_result_count = False


@admin.register(ProjectReputation)
class ProjectReputationAdmin(admin.ModelAdmin):
    """Each project's bounce and complaint figures (3 indexed counts per row) and why it was disabled."""

    list_display = [
        "name",
        "state",
        "sent_7d",
        "bounce_rate",
        "complaint_rate",
        "last_24h",
        "disabled",
        "disabled_reason",
    ]
    list_filter = ["disabled", "disabled_reason"]
    search_fields = ["name", "=id"]
    list_per_page = 50
    fields = ["name", "disabled", "disabled_reason", "disabled_at", "figures"]
    readonly_fields = fields
    actions = ["enable"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def _reputation(self, project) -> dict:
        if not hasattr(project, "_reputation"):
            project._reputation = project_reputation(project=project)
        return project._reputation

    @admin.display(description="State")
    def state(self, project):
        return self._reputation(project)["state"]

    @admin.display(description="Sent (7 days)")
    def sent_7d(self, project):
        return self._reputation(project)["window"]["sent"]

    @admin.display(description="Bounce rate %")
    def bounce_rate(self, project):
        window = self._reputation(project)["window"]
        return "-" if window["bounceRate"] is None else window["bounceRate"]

    @admin.display(description="Complaint rate %")
    def complaint_rate(self, project):
        window = self._reputation(project)["window"]
        return "-" if window["complaintRate"] is None else window["complaintRate"]

    @admin.display(description="Bounces / complaints (24 h)")
    def last_24h(self, project):
        day = self._reputation(project)["last24Hours"]
        return f"{day['bounces']} / {day['complaints']}"

    @admin.display(description="Figures")
    def figures(self, project):
        reputation = self._reputation(project)
        lines = [
            f"Counted since {reputation['window']['since']}",
            *(reputation["reasons"] or ["Within every threshold"]),
        ]
        return format_html("<pre>{}</pre>", "\n".join(lines))

    @admin.action(
        description="Re-enable the selected projects, counting their figures from now on",
        permissions=("change",),
    )
    def enable(self, request, queryset):
        count = 0
        for project in queryset:
            project_reputation_reset(project=project)
            count += 1
        self.message_user(request, f"Re-enabled {count} project(s); their figures start again from now")


@admin.register(EmailStatsHour)
class EmailStatsHourAdmin(RecordAdmin):
    """Read-only: the counts are derived data (rebuild them with `manage.py rebuild_email_stats`)."""

    list_display = ["hour", "project", "sent", "delivered", "opened", "clicked", "bounced", "complained", "failed"]
    list_filter = ["project", ("hour", admin.DateFieldListFilter)]
    search_fields = ["=project__id", "project__name"]
    list_select_related = ["project"]
    date_hierarchy = "hour"
    ordering = ["-hour"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False

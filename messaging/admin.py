from django.contrib import admin
from django.utils.html import format_html

from messaging.models import AttachmentBundle, Email, EmailStatsHour, Template
from messaging.tasks import deliver_emails_task


@admin.register(Template)
class TemplateAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "type", "subject", "from_email", "updated_at"]
    list_filter = ["type"]
    search_fields = ["name", "subject", "from_email", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]


@admin.register(Email)
class EmailAdmin(admin.ModelAdmin):
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
    date_hierarchy = "created_at"
    show_full_result_count = False
    actions = ["retry_now"]

    @admin.display(description="Rendered message")
    def preview(self, email: Email):
        # A sandboxed frame: the rendered HTML is shown as the recipient sees it, without running in the admin.
        return format_html(
            '<iframe sandbox="" srcdoc="{}" style="width:100%;height:480px;border:1px solid #ccc"></iframe>',
            email.html,
        )

    @admin.action(description="Queue the selected failed or queued emails again now")
    def retry_now(self, request, queryset):
        ids = list(queryset.filter(status__in=[Email.Status.FAILED, Email.Status.QUEUED]).values_list("id", flat=True))
        Email.objects.filter(id__in=ids).update(status=Email.Status.QUEUED, next_attempt_at=None, attempts=0)
        for start in range(0, len(ids), 50):
            deliver_emails_task.delay([str(i) for i in ids[start : start + 50]])
        self.message_user(request, f"Queued {len(ids)} email(s)")


@admin.register(AttachmentBundle)
class AttachmentBundleAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "total_bytes", "created_at"]
    raw_id_fields = ["project"]
    exclude = ["items"]


@admin.register(EmailStatsHour)
class EmailStatsHourAdmin(admin.ModelAdmin):
    """Read-only: the counts are derived data (rebuild them with `manage.py rebuild_email_stats`)."""

    list_display = ["hour", "project", "sent", "delivered", "opened", "clicked", "bounced", "complained", "failed"]
    list_filter = ["project", ("hour", admin.DateFieldListFilter)]
    search_fields = ["=project__id", "project__name"]
    list_select_related = ["project"]
    date_hierarchy = "hour"
    ordering = ["-hour"]
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

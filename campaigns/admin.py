"""Admin for campaigns: status, audience, figures and schedule at a glance, a rendered preview, and actions that call
the same services as the API."""

from django.contrib import admin, messages
from django.contrib.auth import get_permission_codename
from django.utils.html import format_html

from campaigns.models import Campaign
from campaigns.sending import campaign_cancel, campaign_fan_out_resume, campaign_send
from campaigns.services import campaign_duplicate
from campaigns.stats import campaign_stats_rebuild
from core.errors import ServiceError
from messaging.content import rendering

# The preview has no recipient: the hosted-page links go nowhere.
_PREVIEW_LINKS = dict.fromkeys(("unsubscribeUrl", "subscribeUrl", "manageUrl"), "#")


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = [
        "name", "project", "status", "audience", "total_recipients", "sent_count", "opened_count", "clicked_count",
        "bounced_count", "not_sent_count", "scheduled_for", "sent_at", "fan_out",
    ]  # fmt: skip
    list_filter = ["status", "audience_type", "type"]
    search_fields = ["name", "subject", "from_email", "=id"]
    list_select_related = ["project", "segment", "job"]
    raw_id_fields = ["project", "segment"]
    readonly_fields = [
        "id", "project", "status", "scheduled_for", "sent_at", "total_recipients", "sent_count", "delivered_count",
        "opened_count", "clicked_count", "bounced_count", "complained_count", "unsubscribed_count", "not_sent_count",
        "not_sent_reason", "not_sent_at", "fan_out", "preview", "created_at", "updated_at",
    ]  # fmt: skip
    exclude = ["body"]
    ordering = ["-created_at"]
    actions = ["send_now", "cancel", "resume_fan_out", "duplicate", "recount"]

    @admin.display(description="fan-out")
    def fan_out(self, campaign: Campaign) -> str:
        # A failed fan-out keeps its campaign SENDING: this is where the operator sees why (then resumes or cancels).
        job = campaign.job
        if job is None:
            return "-"
        return f"{job.status}: {job.error}" if job.status == "FAILED" else f"{job.status} ({job.progress} %)"

    @admin.display(description="audience")
    def audience(self, campaign: Campaign) -> str:
        return f"{campaign.audience_type}: {campaign.segment.name}" if campaign.segment else campaign.audience_type

    @admin.display(description="Rendered message (no recipient)")
    def preview(self, campaign: Campaign):
        scope = rendering.template_scope(
            contact_id="", email="recipient@example.com", subscribed=True, data={}, links=_PREVIEW_LINKS
        )
        rendered = rendering.render_email(subject=campaign.subject, body=campaign.body, scope=scope, lenient=True)
        # A sandboxed frame: the HTML is shown as a recipient sees it, without running in the admin.
        return format_html(
            '<p><strong>{}</strong></p><iframe sandbox="" srcdoc="{}" '
            'style="width:100%;height:480px;border:1px solid #ccc"></iframe>',
            rendered.subject,
            rendered.html,
        )

    def has_add_permission(self, request):
        return False  # content and audience are checked against the project by the API's services

    def has_change_permission(self, request, obj=None):
        return False

    # Editing is off in the admin, but its actions are an operator's changes all the same: they ask for the user's
    # own model permissions (`change_campaign`; `add_campaign` to duplicate), not for the form's.
    def has_operate_permission(self, request) -> bool:
        return request.user.has_perm(f"campaigns.{get_permission_codename('change', self.opts)}")

    def has_duplicate_permission(self, request) -> bool:
        return request.user.has_perm(f"campaigns.{get_permission_codename('add', self.opts)}")

    def _each(self, request, queryset, service, done: str) -> None:
        count = 0
        for campaign in queryset:
            try:
                service(campaign=campaign)
                count += 1
            except ServiceError as exc:
                self.message_user(request, f"{campaign.name}: {exc.message}", messages.ERROR)
        if count:
            self.message_user(request, f"{done} {count} campaign(s).", messages.SUCCESS)

    @admin.action(description="Duplicate as a new draft", permissions=("duplicate",))
    def duplicate(self, request, queryset):
        self._each(request, queryset, campaign_duplicate, "Duplicated")

    @admin.action(description="Send now", permissions=("operate",))
    def send_now(self, request, queryset):
        self._each(request, queryset, campaign_send, "Started")

    @admin.action(description="Cancel (scheduled or sending)", permissions=("operate",))
    def cancel(self, request, queryset):
        self._each(request, queryset, campaign_cancel, "Cancelled")

    @admin.action(description="Resume a failed fan-out", permissions=("operate",))
    def resume_fan_out(self, request, queryset):
        self._each(request, queryset, campaign_fan_out_resume, "Resumed the fan-out of")

    @admin.action(description="Recount the figures from the emails", permissions=("operate",))
    def recount(self, request, queryset):
        self._each(request, queryset, campaign_stats_rebuild, "Recounted")

"""Admin for campaigns: status, audience, figures and schedule at a glance; the composer (a campaign written, previewed
for a contact, counted, tested, scheduled, sent or cancelled); and actions. Every write calls the API's services."""

import uuid

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.contrib.auth import get_permission_codename
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from accounts.models import Membership, Project
from campaigns.composer import AUDIENCE_FIELDS, CampaignForm, composer_preview, composer_recipients, refusal_errors
from campaigns.models import EDITABLE, Campaign, CampaignStatus
from campaigns.selectors import campaign_audience, campaign_render
from campaigns.sending import campaign_cancel, campaign_fan_out_resume, campaign_send, campaign_send_test
from campaigns.services import campaign_delete, campaign_duplicate
from campaigns.stats import campaign_stats_rebuild
from core.errors import ServiceError, ValidationFailed

FIGURES = [
    "status", "scheduled_for", "sent_at", "total_recipients", "sent_count", "delivered_count", "opened_count",
    "clicked_count", "bounced_count", "complained_count", "unsubscribed_count", "not_sent_count", "not_sent_reason",
    "not_sent_at", "fan_out", "created_at", "updated_at",
]  # fmt: skip


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = [
        "name", "project", "status", "audience", "total_recipients", "sent_count", "opened_count", "clicked_count",
        "bounced_count", "not_sent_count", "scheduled_for", "sent_at", "fan_out",
    ]  # fmt: skip
    list_filter = ["status", "audience_type", "type"]
    search_fields = ["name", "subject", "from_email", "=id"]
    list_select_related = ["project", "segment", "job"]
    readonly_fields = ["id", "project", *FIGURES, "preview"]
    form = CampaignForm
    change_form_template = "admin/campaigns/campaign/composer.html"
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
        try:
            rendered = campaign_render(campaign=campaign, contact=None)
        except ValidationFailed as refused:
            return refused.message
        # A sandboxed frame: the HTML is shown as a recipient sees it, without running in the admin.
        return format_html(
            '<p><strong>{}</strong></p><iframe sandbox="" title="Rendered message" srcdoc="{}" '
            'style="width:100%;height:480px;border:1px solid #ccc"></iframe>',
            rendered.subject,
            rendered.html,
        )

    def has_change_permission(self, request, obj=None):
        # A campaign that is no longer a plan (SENDING, SENT, CANCELLED) is shown read-only, as the API refuses it.
        return super().has_change_permission(request, obj) and (obj is None or obj.status in EDITABLE)

    def has_delete_permission(self, request, obj=None):
        # The API's rule (`campaign_delete`): a SCHEDULED or SENDING campaign is cancelled before it is deleted.
        active = obj is not None and obj.status in (CampaignStatus.SCHEDULED, CampaignStatus.SENDING)
        return super().has_delete_permission(request, obj) and not active

    def delete_model(self, request, obj):
        campaign_delete(campaign=obj)

    def delete_queryset(self, request, queryset):
        # "Delete selected" as the API deletes: one by one through the service, the active ones refused by name.
        for campaign in queryset:
            try:
                campaign_delete(campaign=campaign)
            except ServiceError as refused:
                self.message_user(request, f"{campaign.name}: {refused.message}", messages.ERROR)

    # Sending, scheduling and cancelling are an operator's changes of any campaign, editable or not: they ask for the
    # user's own model permission (`change_campaign`; `add_campaign` to duplicate), not for the form's.
    def has_operate_permission(self, request) -> bool:
        return request.user.has_perm(f"campaigns.{get_permission_codename('change', self.opts)}")

    def has_duplicate_permission(self, request) -> bool:
        return request.user.has_perm(f"campaigns.{get_permission_codename('add', self.opts)}")

    # The composer ----------------------------------------------------------------------------------------------

    def get_fieldsets(self, request, obj=None):
        editable = obj is None or self.has_change_permission(request, obj)
        fieldsets = [
            (None, {"fields": ["project", "name", "description", "type"]}),
            ("Sender", {"fields": ["from_email", "from_name", "reply_to"]}),
            ("Content", {"fields": ["subject", "body"] if editable else ["subject", "preview"]}),
            ("Audience", {"fields": AUDIENCE_FIELDS}),
        ]
        if obj is not None:
            # Folded while the campaign is a plan: the page is then about its content.
            fieldsets.append(("Status and figures", {"fields": FIGURES, "classes": ["collapse"] if editable else []}))
        return fieldsets

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        return type(form.__name__, (form,), {"project": obj.project if obj else self._chosen_project(request)})

    def save_model(self, request, obj, form, change):
        pass  # the form's validation wrote it, through the service (CampaignForm._post_clean)

    @staticmethod
    def _chosen_project(request) -> Project | None:
        try:
            return Project.objects.filter(pk=uuid.UUID(request.GET.get("project", ""))).first()
        except ValueError:
            return None

    def add_view(self, request, form_url="", extra_context=None):
        """A campaign belongs to one project, whose senders, segments and contacts the composer offers: the
        project is chosen first (`?project=<id>`)."""
        if self._chosen_project(request) is not None:
            return super().add_view(request, form_url, extra_context)
        if not self.has_add_permission(request):
            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Add campaign: choose its project",
            "projects": Project.objects.order_by("name", "id").only("id", "name"),
        }
        return TemplateResponse(request, "admin/campaigns/campaign/choose_project.html", context)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        project = context["adminform"].form.project
        if add or self.has_change_permission(request, obj):
            context["composer"] = self._composer(project, obj)
        if obj is not None and self.has_operate_permission(request):
            context["operations"] = self._operations(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _composer(self, project: Project, campaign: Campaign | None) -> dict:
        """The preview and count panel, as the saved campaign stands (for a new one: empty until typed in)."""
        composer = {
            "preview_url": reverse("admin:campaigns_campaign_preview", args=[project.pk]),
            "recipients_url": reverse("admin:campaigns_campaign_recipients", args=[project.pk]),
            "errors": [],
        }
        if campaign is not None:
            try:
                rendered = campaign_render(campaign=campaign, contact=None)
                composer.update(subject=rendered.subject, html=rendered.html)
            except ValidationFailed as refused:
                composer["errors"] = refusal_errors(refused)
            composer["recipients"] = campaign_audience(campaign=campaign).count()
        return composer

    def _operations(self, campaign: Campaign) -> dict:
        members = Membership.objects.filter(project_id=campaign.project_id).order_by("user__email")
        return {
            "can_send": campaign.status in EDITABLE,
            "can_cancel": campaign.status in (CampaignStatus.SCHEDULED, CampaignStatus.SENDING),
            "members": members.values_list("user__email", flat=True),
            **{
                f"{name}_url": reverse(f"admin:campaigns_campaign_{name}", args=[quote(campaign.pk)])
                for name in ("send", "test", "cancel")
            },
        }

    def get_urls(self):
        def view(method):
            return self.admin_site.admin_view(require_POST(method))

        return [
            path("preview/<uuid:project_id>/", view(self.preview_view), name="campaigns_campaign_preview"),
            path("recipients/<uuid:project_id>/", view(self.recipients_view), name="campaigns_campaign_recipients"),
            path("<path:object_id>/send/", view(self.send_view), name="campaigns_campaign_send"),
            path("<path:object_id>/test/", view(self.test_view), name="campaigns_campaign_test"),
            path("<path:object_id>/cancel/", view(self.cancel_view), name="campaigns_campaign_cancel"),
            *super().get_urls(),
        ]

    def _composed(self, request, project_id) -> Project:
        """The project of a composer's request (a POST of the composer's form), for a user who may see campaigns."""
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        return get_object_or_404(Project, pk=project_id)

    def preview_view(self, request, project_id):
        """The typed subject and body rendered for the chosen contact: JSON for the composer's script, a page of its
        own for the Preview button (no script), with the recipient count too."""
        project = self._composed(request, project_id)
        preview = composer_preview(request.POST, project)
        if _wants_json(request):
            return JsonResponse(_as_json(preview))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Preview",
            "project": project,
            "preview": preview,
            "audience": composer_recipients(request.POST, project),
        }
        return TemplateResponse(request, "admin/campaigns/campaign/preview.html", context)

    def recipients_view(self, request, project_id):
        """How many contacts the typed audience reaches now, counted as the send counts it (JSON)."""
        return JsonResponse(_as_json(composer_recipients(request.POST, self._composed(request, project_id))))

    def _operate(self, request, object_id, call) -> HttpResponse:
        campaign = self.get_object(request, unquote(object_id))
        if campaign is None:
            raise Http404("No such campaign")
        if not self.has_operate_permission(request):
            raise PermissionDenied
        try:
            done = call(campaign)
        except ServiceError as refused:
            self.message_user(request, _refusal_text(refused), messages.ERROR)
        else:
            self.message_user(request, done, messages.SUCCESS)
        return redirect(reverse("admin:campaigns_campaign_change", args=[quote(campaign.pk)]))

    def send_view(self, request, object_id):
        """Send now, or schedule at the posted `scheduled_for` (read as the API reads `scheduledFor`)."""
        when = request.POST.get("scheduled_for", "") if "_schedule" in request.POST else None
        return self._operate(
            request, object_id, lambda campaign: campaign_send(campaign=campaign, scheduled_for=when)[1]
        )

    def test_view(self, request, object_id):
        email = request.POST.get("email", "")
        return self._operate(request, object_id, lambda campaign: campaign_send_test(campaign=campaign, email=email))

    def cancel_view(self, request, object_id):
        return self._operate(
            request,
            object_id,
            lambda campaign: f"Campaign cancelled: it is {campaign_cancel(campaign=campaign).status}",
        )

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


def _wants_json(request) -> bool:
    return request.headers.get("Accept", "").startswith("application/json")


def _as_json(answer: dict) -> dict:
    return {**answer, "errors": [{"field": field, "message": message} for field, message in answer["errors"]]}


def _refusal_text(refused: ServiceError) -> str:
    return " ".join(part for part in (refused.message, refused.suggestion) if part)

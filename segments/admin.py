"""Admin for segments: type, cached count, the condition in words, static members inline, a "recompute now" action
that calls the same service as the periodic task, and add and change through the API's services with the condition
builder (segments/console.py), whose live count and field list are views of this admin."""

import json
import uuid

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import JsonResponse
from django.urls import path
from django.utils.html import format_html

from accounts.models import Project
from core.errors import ServiceError, ValidationFailed
from core.replica import replica_reads
from segments.conditions.spec import condition_text
from segments.console import ConditionField, builder_fields, service_errors_to_form
from segments.models import Segment, SegmentMembership, SegmentType
from segments.selectors import condition_preview
from segments.services import UNSET, segment_create, segment_recompute, segment_update

# The services' (API) field names, as the forms name them.
SERVICE_FIELDS = {
    "name": "name",
    "description": "description",
    "type": "type",
    "condition": "condition",
    "trackMembership": "track_membership",
}


class SegmentAddForm(forms.ModelForm):
    """A new segment, created by `segment_create` when the form is cleaned: the service is where the rules are,
    and a refusal there must reach the form's fields, which it no longer can once the admin calls `save_model`."""

    class Meta:
        model = Segment
        fields = ["project", "name", "description", "type", "track_membership"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["type"].help_text = "DYNAMIC: the contacts the condition selects. STATIC: a list managed by API."
        self.fields["condition"] = ConditionField(
            required=False,
            active_when=("type", SegmentType.DYNAMIC),
            help_text="Required for a DYNAMIC segment; a STATIC one has none.",
        )

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            self.instance = segment_create(
                project=data["project"],
                name=data["name"],
                description=data["description"],
                segment_type=data["type"],
                condition=data.get("condition"),
                track_membership=data["track_membership"],
            )
        except (ServiceError, ValidationError) as exc:
            service_errors_to_form(self, exc, fields=SERVICE_FIELDS)
        return data


class SegmentChangeForm(forms.ModelForm):
    """An existing segment, changed by `segment_update` when the form is cleaned (as `SegmentAddForm` creates); the
    condition only when it changed, so that saving a name does not recount."""

    class Meta:
        model = Segment
        fields = ["name", "description", "track_membership"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        segment = self.instance
        if segment.type == SegmentType.DYNAMIC:
            self.fields["condition"] = ConditionField(
                project=segment.project, segment_id=segment.pk, initial=segment.condition
            )

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        condition = data["condition"] if "condition" in self.changed_data else UNSET
        try:
            segment_update(
                segment=self.instance,
                name=data["name"],
                description=data["description"],
                condition=condition,
                track_membership=data["track_membership"],
            )
        except (ServiceError, ValidationError) as exc:
            service_errors_to_form(self, exc, fields=SERVICE_FIELDS)
        return data


class MembershipInline(admin.TabularInline):
    model = SegmentMembership
    fields = ["contact", "entered_at", "exited_at"]
    readonly_fields = ["contact", "entered_at", "exited_at"]
    raw_id_fields = ["contact"]
    extra = 0
    max_num = 0  # members are added through the API (emails, createMissing), not here
    can_delete = False
    show_change_link = False

    def get_queryset(self, request):
        return super().get_queryset(request).filter(exited_at=None).select_related("contact").order_by("-entered_at")


def _uuid(value) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _project(value) -> Project | None:
    pk = _uuid(value)
    return Project.objects.filter(pk=pk).first() if pk else None


def _refused(field: str, message: str, status: int) -> JsonResponse:
    return JsonResponse({"errors": [{"field": field, "message": message}]}, status=status)


@admin.register(Segment)
class SegmentAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "type", "member_count", "track_membership", "refreshed_at", "created_at"]
    list_filter = ["type", "track_membership"]
    search_fields = ["name", "=id", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]
    readonly_fields = [
        "id", "project", "type", "condition_readable", "member_count", "counted_at", "refreshed_at", "created_at",
        "updated_at",
    ]  # fmt: skip
    ordering = ["-created_at"]
    actions = ["recompute_now"]

    @admin.display(description="condition in words")
    def condition_readable(self, segment: Segment) -> str:
        return format_html("<code>{}</code>", condition_text(segment.condition)) if segment.condition else "-"

    def get_form(self, request, obj=None, change=False, **kwargs):
        # The condition is the forms' own field (not a model field the admin lists): fields=None keeps it.
        kwargs["fields"] = None
        return super().get_form(request, obj, change, form=SegmentChangeForm if obj else SegmentAddForm, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["project", "name", "description", "type", "condition", "track_membership"]
        condition = ["condition", "condition_readable"] if obj.type == SegmentType.DYNAMIC else []
        return [
            "id", "project", "name", "description", "type", *condition, "track_membership", "member_count",
            "counted_at", "refreshed_at", "created_at", "updated_at",
        ]  # fmt: skip

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def get_inlines(self, request, obj):
        return [MembershipInline] if obj is not None and obj.type == SegmentType.STATIC else []

    def save_model(self, request, obj, form, change):
        pass  # the form's clean() saved it through segment_create / segment_update

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        # The form writes when it is cleaned; a page shown again with errors (an inline's, say) must leave the
        # segment as it was.
        with transaction.atomic():
            response = super().changeform_view(request, object_id, form_url, extra_context)
            if (getattr(response, "context_data", None) or {}).get("errors"):
                transaction.set_rollback(True)
        return response

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("condition/preview/", view(self.condition_preview_view), name="segments_segment_condition_preview"),
            path("condition/fields/", view(self.condition_fields_view), name="segments_segment_condition_fields"),
            *super().get_urls(),
        ]

    def condition_preview_view(self, request):
        """POST `{project, condition, segment?}` (JSON): `{count, sample: [{id, email}]}` of the contacts of
        `project` the condition selects now, or 422 `{errors: [{field, message}]}` from the API's validation."""
        if not self.has_view_permission(request):
            return _refused("", "You may not view segments.", 403)
        if request.method != "POST":
            return _refused("", "POST a JSON object {project, condition}.", 405)
        try:
            body = json.loads(request.body)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return _refused("", "Expected a JSON object {project, condition, segment?}.", 400)
        project = _project(body.get("project"))
        if project is None:
            return _refused("project", "Choose a project to see who matches.", 400)
        # The segment being changed, for the cycle check; only ever one of this project.
        segment_id = (
            Segment.objects.filter(pk=_uuid(body.get("segment")), project=project).values_list("pk", flat=True).first()
        )
        try:
            # A live count over the project's contacts, which may be seconds behind (docs/scaling.md).
            with replica_reads():
                preview = condition_preview(project=project, condition=body.get("condition"), segment_id=segment_id)
        except ValidationFailed as exc:
            return JsonResponse({"errors": exc.errors}, status=422)
        sample = [{"id": str(c.id), "email": c.email} for c in preview.sample]
        return JsonResponse({"count": preview.count, "sample": sample})

    def condition_fields_view(self, request):
        """GET `?project=`: `{fields: [{field, label, group, type?}]}`, what the builder offers in that project."""
        if not self.has_view_permission(request):
            return _refused("", "You may not view segments.", 403)
        project = _project(request.GET.get("project"))
        if project is None:
            return _refused("project", "Unknown project.", 400)
        return JsonResponse({"fields": builder_fields(project=project)})

    @admin.action(description="Recompute now (tracked: entries and exits; others: count)", permissions=("change",))
    def recompute_now(self, request, queryset):
        ids = queryset.values_list("id", flat=True)
        done = sum(segment_recompute(segment_id=segment_id) is not None for segment_id in ids)
        self.message_user(request, f"Recomputed {done} segment(s); others were busy.", messages.SUCCESS)

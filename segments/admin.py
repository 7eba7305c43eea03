"""Admin for segments: type, cached count, the condition in words, static members inline, and a "recompute now"
action that calls the same service as the periodic task."""

from django.contrib import admin, messages
from django.utils.html import format_html

from segments.conditions.spec import condition_text
from segments.models import Segment, SegmentMembership, SegmentType
from segments.services import segment_recompute, segment_update


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


@admin.register(Segment)
class SegmentAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "type", "member_count", "track_membership", "refreshed_at", "created_at"]
    list_filter = ["type", "track_membership"]
    search_fields = ["name", "=id", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]
    fields = [
        "id", "project", "name", "description", "type", "condition_readable", "track_membership", "member_count",
        "counted_at", "refreshed_at", "created_at", "updated_at",
    ]  # fmt: skip
    readonly_fields = [
        "id", "project", "type", "condition_readable", "member_count", "counted_at", "refreshed_at", "created_at",
        "updated_at",
    ]  # fmt: skip
    ordering = ["-created_at"]
    actions = ["recompute_now"]

    @admin.display(description="condition")
    def condition_readable(self, segment: Segment) -> str:
        return format_html("<code>{}</code>", condition_text(segment.condition)) if segment.condition else "-"

    def get_inlines(self, request, obj):
        return [MembershipInline] if obj is not None and obj.type == SegmentType.STATIC else []

    def save_model(self, request, obj, form, change):
        segment_update(
            segment=obj,
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
            track_membership=form.cleaned_data["track_membership"],
        )

    def has_add_permission(self, request):
        return False  # conditions are validated against the project by the API's service

    @admin.action(description="Recompute now (tracked: entries and exits; others: count)", permissions=("change",))
    def recompute_now(self, request, queryset):
        ids = queryset.values_list("id", flat=True)
        done = sum(segment_recompute(segment_id=segment_id) is not None for segment_id in ids)
        self.message_user(request, f"Recomputed {done} segment(s); others were busy.", messages.SUCCESS)

"""Admin for workflows: the graph as an ordered list of steps and where each leads, executions filtered by status
and workflow with their step executions inline, and a "cancel" action that calls the same service as the API; the
starts refused to workflows that start each other, read-only."""

from django import forms
from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join

from core.admin import RecordAdmin
from core.counts import EstimatedCountPaginator
from core.errors import Conflict
from workflows.models import ACTIVE_STATUSES, RefusedStart, Workflow, WorkflowExecution, WorkflowStepExecution
from workflows.selectors import workflow_with_graph
from workflows.services import execution_cancel, workflow_missing, workflow_update


class WorkflowAdminForm(forms.ModelForm):
    """Enabling here meets the API's rule: an incomplete workflow stays disabled, with what it lacks shown."""

    class Meta:
        model = Workflow
        fields = ["name", "description", "enabled", "allow_reentry"]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("enabled") and not self.instance.enabled:
            for missing in workflow_missing(workflow=self.instance):
                self.add_error("enabled", missing["message"])
        return cleaned


@admin.register(Workflow)
class WorkflowAdmin(admin.ModelAdmin):
    form = WorkflowAdminForm
    list_display = ["name", "project", "enabled", "trigger_type", "event_name", "allow_reentry", "created_at"]
    list_filter = ["enabled", "trigger_type"]
    search_fields = ["name", "event_name", "=id", "project__name"]
    list_select_related = ["project"]
    fields = [
        "id", "project", "name", "description", "enabled", "trigger_type", "event_name", "allow_reentry", "graph",
        "created_at", "updated_at",
    ]  # fmt: skip
    readonly_fields = ["id", "project", "trigger_type", "event_name", "graph", "created_at", "updated_at"]
    ordering = ["-created_at"]

    @admin.display(description="steps")
    def graph(self, workflow: Workflow) -> str:
        """The steps in creation order, each with where it leads."""
        workflow = workflow_with_graph(workflow=workflow)
        steps = list(workflow.steps.all())
        names = {step.id: step.name for step in steps}
        leads: dict = {}
        for transition in workflow.transitions.all():
            label = transition.branch or transition.wait_outcome
            target = names.get(transition.to_step_id, "?")
            leads.setdefault(transition.from_step_id, []).append(f"{label}: {target}" if label else target)
        rows = format_html_join(
            "",
            "<li><strong>{}</strong> ({}) &rarr; {}</li>",
            ((step.name, step.type, ", ".join(leads.get(step.id, [])) or "end") for step in steps),
        )
        return format_html("<ol>{}</ol>", rows)

    def save_model(self, request, obj, form, change):
        workflow_update(
            workflow=Workflow.objects.get(pk=obj.pk),
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
            enabled=form.cleaned_data["enabled"],
            allow_reentry=form.cleaned_data["allow_reentry"],
        )

    def has_add_permission(self, request):
        return False  # a workflow starts with its TRIGGER step, which the API's service creates


class StepExecutionInline(admin.TabularInline):
    model = WorkflowStepExecution
    fields = ["step", "status", "scheduled_for", "started_at", "completed_at", "output", "error"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("step").order_by("created_at", "id")


@admin.register(WorkflowExecution)
class WorkflowExecutionAdmin(RecordAdmin):
    list_display = ["id", "workflow", "contact", "status", "current_step", "resume_at", "started_at", "completed_at"]
    # Every workflow, not only those with executions: listing those would read the whole executions table.
    list_filter = ["status", "workflow"]
    search_fields = ["=id", "contact__email", "workflow__name"]
    list_select_related = ["workflow", "contact", "current_step"]
    fields = [
        "id", "project", "workflow", "contact", "entry", "status", "current_step", "exit_reason", "context",
        "trigger_event_id", "chain", "resume_at", "started_at", "completed_at", "created_at", "updated_at",
    ]  # fmt: skip
    readonly_fields = fields
    inlines = [StepExecutionInline]
    ordering = ["-created_at"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ["cancel"]

    @admin.action(description="Cancel (running or waiting executions)", permissions=("act",))
    def cancel(self, request, queryset):
        cancelled = 0
        for execution in queryset.filter(status__in=ACTIVE_STATUSES):
            try:
                execution_cancel(execution=execution)
            except Conflict:
                continue  # finished meanwhile
            cancelled += 1
        self.message_user(request, f"Cancelled {cancelled} execution(s).", messages.SUCCESS)


@admin.register(RefusedStart)
class RefusedStartAdmin(RecordAdmin):
    list_display = ["created_at", "workflow", "contact", "reason", "event_name"]
    list_filter = ["reason", "workflow"]
    search_fields = ["contact__email", "workflow__name", "=trigger_event_id"]
    list_select_related = ["workflow", "contact"]
    fields = ["id", "project", "workflow", "contact", "reason", "event_name", "trigger_event_id", "chain", "created_at"]
    readonly_fields = fields
    ordering = ["-created_at"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False

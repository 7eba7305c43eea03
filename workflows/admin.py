"""Admin for workflows: a workflow's page draws its graph with each step's counts (`workflows.drawing`), edits
the graph through forms that call the API's services (`workflows.admin_forms`), and lists the workflow's latest
executions with where each is now; executions filtered by status and workflow with their step executions inline,
and a "cancel" action that calls the same service as the API; the starts refused to workflows that start each
other, read-only."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from core.admin import RecordAdmin
from core.counts import EstimatedCountPaginator
from core.errors import Conflict
from workflows import drawing
from workflows.admin_forms import StepAddForm, StepChangeForm, StepDeleteForm, TransitionAddForm, TransitionDeleteForm
from workflows.models import ACTIVE_STATUSES, RefusedStart, Workflow, WorkflowExecution, WorkflowStepExecution
from workflows.selectors import execution_positions, step_counts, workflow_with_graph
from workflows.services import execution_cancel, workflow_create, workflow_missing, workflow_update

# The workflow page's list of executions: this many a page, newest first.
EXECUTIONS_PER_PAGE = 20


def _posted(request):
    """The form data of a POST (an empty one included, as a bare confirmation is), None for a GET."""
    return request.POST if request.method == "POST" else None


class WorkflowAddForm(forms.ModelForm):
    """A new workflow, disabled, with its TRIGGER step (`workflow_create`, as `POST /workflows`)."""

    class Meta:
        model = Workflow
        fields = ["project", "name", "description", "event_name"]
        help_texts = {"event_name": "The event that starts an execution for its contact (it can be set later)."}


class WorkflowAdminForm(forms.ModelForm):
    """Enabling here meets the API's rule: an incomplete workflow stays disabled, with what it lacks shown."""

    class Meta:
        model = Workflow
        fields = ["name", "description", "event_name", "enabled", "allow_reentry"]
        help_texts = {"event_name": "The event that starts an execution for its contact."}

    def clean(self):
        cleaned = super().clean()
        # The service's rule (`workflow_update`), checked here so that it is shown at the field: a workflow enabled
        # by this change, or whose trigger changes while it stays enabled, must be complete, with its new trigger.
        if cleaned.get("enabled") and (not self.instance.enabled or "event_name" in self.changed_data):
            self.instance.event_name = cleaned.get("event_name", "")
            for missing in workflow_missing(workflow=self.instance):
                field = "event_name" if missing["field"] == "triggerConfig.eventName" else "enabled"
                self.add_error(field, missing["message"])
        return cleaned


@admin.register(Workflow)
class WorkflowAdmin(admin.ModelAdmin):
    form = WorkflowAdminForm
    list_display = ["name", "project", "enabled", "trigger_type", "event_name", "allow_reentry", "created_at"]
    list_filter = ["enabled", "trigger_type"]
    search_fields = ["name", "event_name", "=id", "project__name"]
    list_select_related = ["project"]
    fields = [
        "id", "project", "name", "description", "enabled", "trigger_type", "event_name", "allow_reentry",
        "created_at", "updated_at",
    ]  # fmt: skip
    readonly_fields = ["id", "project", "trigger_type", "created_at", "updated_at"]
    add_fields = ["project", "name", "description", "event_name"]
    ordering = ["-created_at"]
    raw_id_fields = ["project"]

    change_form_template = "admin/workflows/workflow/change_form.html"

    def change_view(self, request, object_id, form_url="", extra_context=None):
        workflow = self.get_object(request, unquote(object_id))
        if workflow is not None:
            extra_context = {**(extra_context or {}), **self._graph_context(request, workflow)}
        return super().change_view(request, object_id, form_url, extra_context)

    def _graph_context(self, request, workflow: Workflow) -> dict:
        """The drawing, the steps and transitions with their edit links, and a page of executions: a fixed number
        of queries however many steps the workflow has."""
        workflow = workflow_with_graph(workflow=workflow)
        steps, transitions = list(workflow.steps.all()), list(workflow.transitions.all())
        counts = step_counts(workflow=workflow)
        names = {step.id: step.name or step.type for step in steps}
        leads: dict = {}
        for transition in transitions:
            label = transition.branch or transition.wait_outcome
            target = names.get(transition.to_step_id, "?")
            leads.setdefault(transition.from_step_id, []).append(f"{label}: {target}" if label else target)
        try:
            page = max(int(request.GET.get("executions_page", 1)), 1)
        except ValueError:
            page = 1
        start = (page - 1) * EXECUTIONS_PER_PAGE
        executions = list(execution_positions(workflow=workflow)[start : start + EXECUTIONS_PER_PAGE + 1])
        return {
            "graph_svg": drawing.svg(steps, transitions, counts),
            "graph_steps": [
                {
                    "step": step,
                    "summary": drawing.summary(step),
                    "counts": drawing.counts_line(counts.get(step.id, drawing.NO_COUNTS)),
                    "leads": ", ".join(leads.get(step.id, [])) or "end",
                }
                for step in steps
            ],
            "graph_transitions": [
                {
                    "transition": transition,
                    "source": names.get(transition.from_step_id, "?"),
                    "target": names.get(transition.to_step_id, "?"),
                    "label": transition.branch or transition.wait_outcome,
                }
                for transition in transitions
            ],
            "graph_can_edit": self.has_change_permission(request, workflow),
            "executions": executions[:EXECUTIONS_PER_PAGE],
            "executions_page": page,
            "executions_older": len(executions) > EXECUTIONS_PER_PAGE,
            "executions_url": reverse("admin:workflows_workflowexecution_changelist")
            + f"?workflow__id__exact={workflow.pk}",
        }

    # The graph's edit pages --------------------------------------------------------------------------------------

    def get_urls(self):
        def view(function, route: str, name: str):
            return path(
                f"<path:object_id>/{route}", self.admin_site.admin_view(function), name=f"workflows_workflow_{name}"
            )

        return [
            view(self.step_add_view, "steps/add/", "step_add"),
            view(self.step_change_view, "steps/<uuid:step_id>/change/", "step_change"),
            view(self.step_delete_view, "steps/<uuid:step_id>/delete/", "step_delete"),
            view(self.transition_add_view, "transitions/add/", "transition_add"),
            view(self.transition_delete_view, "transitions/<uuid:transition_id>/delete/", "transition_delete"),
            *super().get_urls(),
        ]

    def _editable(self, request, object_id) -> Workflow:
        """The workflow, for a user who may change it: 404 for an unknown one, 403 without the permission."""
        workflow = self.get_object(request, unquote(object_id))
        if workflow is None:
            raise Http404("No such workflow")
        if not self.has_change_permission(request, workflow):
            raise PermissionDenied
        return workflow

    def _graph_form(self, request, workflow: Workflow, form, *, title: str, button: str, done: str):
        """On a valid POST whose service call went through, back to the workflow's page with `done`; otherwise the
        form, with what was refused at its fields."""
        if form.is_bound and form.is_valid() and form.save():
            self.message_user(request, done, messages.SUCCESS)
            change = reverse("admin:workflows_workflow_change", args=[workflow.pk])
            return HttpResponseRedirect(f"{change}#workflow-graph")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": workflow,
            "title": title,
            "subtitle": workflow.name,
            "form": form,
            "button": button,
        }
        return TemplateResponse(request, "admin/workflows/workflow/graph_form.html", context)

    def step_add_view(self, request, object_id):
        workflow = self._editable(request, object_id)
        form = StepAddForm(_posted(request), workflow=workflow)
        return self._graph_form(
            request, workflow, form, title="Add a step", button="Add the step", done="The step was added."
        )

    def _step(self, workflow: Workflow, step_id):
        step = workflow.steps.filter(id=step_id).first()
        if step is None:
            raise Http404("No such step in this workflow")
        return step

    def step_change_view(self, request, object_id, step_id):
        workflow = self._editable(request, object_id)
        form = StepChangeForm(_posted(request), step=self._step(workflow, step_id))
        return self._graph_form(
            request, workflow, form, title=f"Change the step {form.step}", button="Save the step",
            done="The step was saved.",
        )  # fmt: skip

    def step_delete_view(self, request, object_id, step_id):
        workflow = self._editable(request, object_id)
        step = self._step(workflow, step_id)
        return self._graph_form(
            request, workflow, StepDeleteForm(_posted(request), step=step), title=f"Remove the step {step}",
            button="Remove the step", done="The step was removed.",
        )  # fmt: skip

    def transition_add_view(self, request, object_id):
        workflow = self._editable(request, object_id)
        form = TransitionAddForm(_posted(request), workflow=workflow)
        return self._graph_form(
            request, workflow, form, title="Add a transition", button="Add the transition",
            done="The transition was added.",
        )  # fmt: skip

    def transition_delete_view(self, request, object_id, transition_id):
        workflow = self._editable(request, object_id)
        transition = workflow.transitions.select_related("from_step", "to_step").filter(id=transition_id).first()
        if transition is None:
            raise Http404("No such transition in this workflow")
        exit_label = transition.branch or transition.wait_outcome
        label = f" ({exit_label})" if exit_label else ""
        return self._graph_form(
            request, workflow, TransitionDeleteForm(_posted(request), transition=transition),
            title=f"Remove the transition {transition.from_step} → {transition.to_step}{label}",
            button="Remove the transition", done="The transition was removed.",
        )  # fmt: skip

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = WorkflowAddForm
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request, obj=None):
        return self.add_fields if obj is None else self.fields

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def save_form(self, request, form, change):
        if change:
            return super().save_form(request, form, change)
        # A workflow starts with its TRIGGER step: the API's service creates both.
        data = form.cleaned_data
        return workflow_create(
            project=data["project"], name=data["name"], description=data["description"], event_name=data["event_name"]
        )

    def save_model(self, request, obj, form, change):
        if not change:
            return  # written by save_form, through the service
        workflow_update(
            workflow=Workflow.objects.get(pk=obj.pk),
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
            event_name=form.cleaned_data["event_name"],
            enabled=form.cleaned_data["enabled"],
            allow_reentry=form.cleaned_data["allow_reentry"],
        )

    def save_related(self, request, form, formsets, change):
        if change:  # a new workflow has no relations to save beyond what the service wrote
            super().save_related(request, form, formsets, change)


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

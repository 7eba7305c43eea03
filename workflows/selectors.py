"""Reads of workflows: lists with their counts, a workflow's graph, executions, and the fields a CONDITION step can
test."""

from django.db.models import Count, IntegerField, OuterRef, Prefetch, Q, QuerySet, Subquery, prefetch_related_objects
from django.db.models.functions import Coalesce

from accounts.models import Project
from contacts.selectors import contact_fields, event_list
from core.json import json_type
from workflows.models import (
    StepExecutionStatus,
    StepType,
    Workflow,
    WorkflowExecution,
    WorkflowStep,
    WorkflowStepExecution,
    WorkflowTransition,
)

# How many recent events of the trigger's name `workflow_fields` reads for the keys of their data.
FIELD_SAMPLE_EVENTS = 100


def _count_of(model, **filters) -> Coalesce:
    rows = model.objects.filter(workflow=OuterRef("pk"), **filters).order_by().values("workflow")
    return Coalesce(Subquery(rows.annotate(n=Count("pk")).values("n")), 0, output_field=IntegerField())


def workflow_list(*, project: Project, search: str = "", enabled: bool | None = None) -> QuerySet:
    """The project's workflows with `step_count` and `execution_count` (one subquery each, not a join that would
    multiply rows)."""
    queryset = Workflow.objects.filter(project=project)
    if search:
        queryset = queryset.filter(Q(name__icontains=search) | Q(description__icontains=search))
    if enabled is not None:
        queryset = queryset.filter(enabled=enabled)
    return queryset.annotate(step_count=_count_of(WorkflowStep), execution_count=_count_of(WorkflowExecution))


def workflow_with_graph(*, workflow: Workflow) -> Workflow:
    """The workflow with `steps` (and their templates) and `transitions` loaded in creation order (two queries)."""
    prefetch_related_objects(
        [workflow],
        Prefetch("steps", queryset=WorkflowStep.objects.select_related("template").order_by("created_at", "id")),
        Prefetch("transitions", queryset=WorkflowTransition.objects.order_by("created_at", "id")),
    )
    return workflow


# What the console counts on each step, from the status of its step executions.
WAITING_STEP_STATUSES = (StepExecutionStatus.SCHEDULED, StepExecutionStatus.WAITING)


def step_counts(*, workflow: Workflow) -> dict:
    """Step id -> {entered, waiting, completed, failed} of the workflow's steps that were ever reached: how many
    executions reached the step, are paused on it (a DELAY, a wait for an event), got past it, failed on it. One
    query, grouped by step and status."""
    counts: dict = {}
    rows = (
        WorkflowStepExecution.objects.filter(step__workflow=workflow)
        .order_by()
        .values_list("step_id", "status")
        .annotate(n=Count("id"))
    )
    for step_id, status, n in rows:
        found = counts.setdefault(step_id, {"entered": 0, "waiting": 0, "completed": 0, "failed": 0})
        found["entered"] += n
        if status in WAITING_STEP_STATUSES:
            found["waiting"] += n
        elif status == StepExecutionStatus.COMPLETED:
            found["completed"] += n
        elif status == StepExecutionStatus.FAILED:
            found["failed"] += n
    return counts


def execution_positions(*, workflow: Workflow) -> QuerySet:
    """The workflow's executions, newest first, each with its contact and current step and `at_step_since`: when
    its step execution of the current step was created (none before the engine first claims it)."""
    since = WorkflowStepExecution.objects.filter(execution=OuterRef("pk"), step=OuterRef("current_step")).values(
        "created_at"
    )[:1]
    return (
        workflow.executions.select_related("contact", "current_step")
        .annotate(at_step_since=Subquery(since))
        .order_by("-created_at", "-id")
    )


def execution_list(*, workflow: Workflow, status: str | None = None) -> QuerySet:
    queryset = workflow.executions.select_related("contact", "current_step")
    if status:
        queryset = queryset.filter(status=status)
    return queryset


def execution_details(*, workflow: Workflow) -> QuerySet:
    """The workflow's executions, each with its step executions loaded in order."""
    return workflow.executions.select_related("contact", "current_step").prefetch_related(
        Prefetch(
            "step_executions",
            queryset=WorkflowStepExecution.objects.select_related("step").order_by("created_at", "id"),
        )
    )


def workflow_fields(*, project: Project, event_name: str = "") -> list[dict]:
    """`{field, type, category}`: the contact fields (as `GET /contacts/fields` lists them), then `context.<key>`
    for each top-level key of the data of the last `FIELD_SAMPLE_EVENTS` events named `event_name`, typed by the
    most recent value."""
    fields = [{"field": f["field"], "type": f["type"], "category": "contact"} for f in contact_fields(project=project)]
    if not event_name:
        return fields
    recent = event_list(project=project, name=event_name).order_by("-created_at", "-id")[:FIELD_SAMPLE_EVENTS]
    seen: dict[str, str] = {}
    for data in recent.values_list("data", flat=True):
        for key, value in (data or {}).items():
            if value is not None:
                seen.setdefault(key, json_type(value))
    return fields + [
        {"field": f"context.{key}", "type": kind, "category": "event"} for key, kind in sorted(seen.items())
    ]


def steps_using_template(project: Project, template) -> list[dict]:
    """Usage finder of templates (`core.usage`): the SEND_EMAIL steps sending it."""
    steps = WorkflowStep.objects.filter(template=template).select_related("workflow").order_by("created_at")
    return [{"workflowId": str(s.workflow_id), "workflowName": s.workflow.name, "stepId": str(s.id)} for s in steps]


def _workflows_where(project: Project, uses) -> list[dict]:
    """`{id, name}` of the project's workflows with a step for which `uses(step)` holds (a project has tens of
    workflows, so their steps are read whole rather than searched inside JSON, which differs by database)."""
    steps = WorkflowStep.objects.filter(workflow__project=project).select_related("workflow")
    found = {}
    for step in steps.order_by("workflow__created_at", "created_at"):
        if uses(step):
            found.setdefault(step.workflow_id, {"id": str(step.workflow_id), "name": step.workflow.name})
    return list(found.values())


def workflows_using_event(project: Project, name: str) -> list[dict]:
    """Usage finder of event names (`core.usage`): a trigger on it, a WAIT_FOR_EVENT for it, or a CONDITION
    testing `event.<name>`."""

    def uses(step: WorkflowStep) -> bool:
        config = step.config or {}
        if step.type in (StepType.TRIGGER, StepType.WAIT_FOR_EVENT):
            return config.get("eventName") == name
        return step.type == StepType.CONDITION and config.get("field") == f"event.{name}"

    return _workflows_where(project, uses)


def workflows_using_field(project: Project, field: str) -> list[dict]:
    """Usage finder of contact fields (`core.usage`): a CONDITION testing the field or below it, or an
    UPDATE_CONTACT writing its key."""

    def uses(step: WorkflowStep) -> bool:
        config = step.config or {}
        if step.type == StepType.CONDITION:
            tested = config.get("field") or ""
            return tested == field or tested.startswith(field + ".")
        if step.type == StepType.UPDATE_CONTACT:
            return field.startswith("data.") and field.removeprefix("data.") in (config.get("updates") or {})
        return False

    return _workflows_where(project, uses)


def project_has_enabled_workflow(project) -> bool:
    return Workflow.objects.filter(project=project, enabled=True).exists()

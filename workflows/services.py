"""Writes of workflows: the workflow, its graph (steps and transitions, with the graph rules), and executions as far
as the API starts and cancels them. Running the steps is the engine's (`workflows.engine`, docs/workflows.md); every
change of a workflow or its steps marks the project's triggers changed (`workflows.triggers`)."""

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from accounts.models import Project
from contacts.models import Contact
from core.errors import Conflict, ErrorCode, ServiceError, ValidationFailed
from domains.services import sender_domain_for
from workflows import graph
from workflows.configs import step_config_clean
from workflows.dispatch import executions_publish_after_commit, publish_grace
from workflows.models import (
    ACTIVE_STATUSES,
    UNFINISHED_STEP_STATUSES,
    ExecutionStatus,
    StepExecutionStatus,
    StepType,
    TriggerType,
    WaitOutcome,
    Workflow,
    WorkflowExecution,
    WorkflowStep,
    WorkflowStepExecution,
    WorkflowTransition,
)
from workflows.triggers import triggers_changed

UNSET = object()
LOOP_MESSAGE = "This connection would create a loop in the workflow"
CANCELLED_BY_USER = "Cancelled by user"
TRIGGER_POSITION = {"x": 100, "y": 100}


def _trigger_name(event_name: str) -> str:
    # Cut to the column: an event name may take all 255 characters itself.
    return f"Trigger: {event_name}"[:255] if event_name else "Trigger"


def _error(field: str, message: str, code: str = "custom") -> dict:
    return {"field": field, "message": message, "code": code}


def _default_name(step_type: str) -> str:
    return step_type.replace("_", " ").capitalize()


# Workflows --------------------------------------------------------------------------------------------------------


@transaction.atomic
def workflow_create(*, project: Project, name: str, description: str = "", event_name: str = "") -> Workflow:
    """A disabled EVENT workflow with its TRIGGER step."""
    workflow = Workflow(project=project, name=name, description=description, event_name=event_name)
    workflow.full_clean()
    workflow.save()
    WorkflowStep.objects.create(
        workflow=workflow,
        type=StepType.TRIGGER,
        name=_trigger_name(event_name),
        position=TRIGGER_POSITION,
        config={"eventName": event_name} if event_name else {},
    )
    return workflow


def workflow_update(
    *,
    workflow: Workflow,
    name=UNSET,
    description=UNSET,
    trigger_type=UNSET,
    event_name=UNSET,
    enabled=UNSET,
    allow_reentry=UNSET,
) -> Workflow:
    """Change what is given. A workflow that is enabled by this change, or whose trigger changes while it is
    enabled, must be complete (`workflow_missing`): 422 naming each missing piece."""
    values = {
        "name": name,
        "description": description,
        "trigger_type": trigger_type,
        "event_name": event_name,
        "enabled": enabled,
        "allow_reentry": allow_reentry,
    }
    changed = [attr for attr, value in values.items() if value is not UNSET and getattr(workflow, attr) != value]
    for attr in changed:
        setattr(workflow, attr, values[attr])
    if workflow.enabled and {"enabled", "trigger_type", "event_name"} & set(changed):
        missing = workflow_missing(workflow=workflow)
        if missing:
            raise ValidationFailed(missing, message=f"The workflow cannot be enabled: {missing[0]['message']}")
    if not changed:
        return workflow
    workflow.full_clean()
    workflow.updated_at = timezone.now()
    workflow.save(update_fields=[*changed, "updated_at"])
    triggers_changed(project_id=workflow.project_id)
    if "event_name" in changed:
        workflow.steps.filter(type=StepType.TRIGGER).update(
            name=_trigger_name(workflow.event_name),
            config={"eventName": workflow.event_name} if workflow.event_name else {},
            updated_at=workflow.updated_at,
        )
    return workflow


def workflow_missing(*, workflow: Workflow) -> list[dict]:
    """What an enabled workflow needs and this one lacks, as validation errors: an event name for an EVENT
    trigger, a transition out of the TRIGGER, and a sender on a verified domain for every SEND_EMAIL template."""
    missing = []
    if workflow.trigger_type == TriggerType.EVENT and not workflow.event_name:
        missing.append(_error("triggerConfig.eventName", "An EVENT trigger needs an event name"))
    if not WorkflowTransition.objects.filter(workflow=workflow, from_step__type=StepType.TRIGGER).exists():
        missing.append(_error("steps", "The trigger is not connected to a first step"))
    sends = workflow.steps.filter(type=StepType.SEND_EMAIL).select_related("template").order_by("created_at")
    for step in sends:
        try:
            sender_domain_for(project=workflow.project, address=step.template.from_email)
        except ServiceError as refused:
            message = f'Step "{step.name}": template "{step.template.name}" cannot send: {refused.message}'
            missing.append(_error(f"steps.{step.id}.config.templateId", message))
    return missing


def workflow_delete(*, workflow: Workflow) -> None:
    active = workflow.executions.filter(status__in=ACTIVE_STATUSES).count()
    if active:
        raise Conflict(
            f"The workflow has {active} running or waiting execution(s); cancel them or let them finish first",
            code=ErrorCode.WORKFLOW_ACTIVE,
            details={"activeExecutions": active},
        )
    workflow.delete()
    triggers_changed(project_id=workflow.project_id)


# Steps ------------------------------------------------------------------------------------------------------------


@transaction.atomic
def step_add(
    *,
    workflow: Workflow,
    step_type: str,
    config,
    name: str = "",
    position: dict | None = None,
    auto_connect: bool = True,
) -> WorkflowStep:
    """Add a step; with `auto_connect`, link it after the last step that has no outgoing transition (not after an
    EXIT, which has none, nor after a CONDITION, whose branch must be chosen)."""
    cleaned = step_config_clean(project=workflow.project, step_type=step_type, config=config)
    _lock_graph(workflow)
    leaf = _last_leaf(workflow) if auto_connect else None
    step = WorkflowStep(
        workflow=workflow,
        type=step_type,
        name=name or _default_name(step_type),
        position=position or {"x": 0, "y": 0},
        config=cleaned,
        template_id=cleaned.get("templateId"),
    )
    step.full_clean()
    step.save()
    if leaf is not None and leaf.type not in (StepType.EXIT, StepType.CONDITION):
        outcome = WaitOutcome.EVENT if leaf.type == StepType.WAIT_FOR_EVENT else ""
        WorkflowTransition.objects.create(workflow=workflow, from_step=leaf, to_step=step, wait_outcome=outcome)
    _touch(workflow)
    return step


def _last_leaf(workflow: Workflow) -> WorkflowStep | None:
    return workflow.steps.filter(outgoing__isnull=True).order_by("created_at", "id").last()


def _lock_graph(workflow: Workflow) -> None:
    """Take the workflow's row lock for a graph edit: the loop check reads the whole graph, so two edits of one
    workflow at once could each pass it and together close a loop; with the lock, the second reads the first's
    result. (No-op on SQLite, whose writers are serialised anyway.)"""
    list(Workflow.objects.select_for_update().filter(pk=workflow.pk).values_list("pk", flat=True))


def _touch(workflow: Workflow) -> None:
    """Every graph edit ends here: the workflow's `updatedAt`, and the project's triggers and waited-for events
    (a WAIT_FOR_EVENT step may have come, gone or changed) marked changed."""
    workflow.updated_at = timezone.now()
    workflow.save(update_fields=["updated_at"])
    triggers_changed(project_id=workflow.project_id)


@transaction.atomic
def step_update(*, step: WorkflowStep, name=UNSET, position=UNSET, config=UNSET) -> WorkflowStep:
    """Rename, move or reconfigure a step (its type stays). A new config is checked whole, and a WAIT_FOR_EVENT
    keeps its timeout while a TIMEOUT transition leaves it."""
    fields = []
    if config is not UNSET:
        if step.type == StepType.TRIGGER:
            raise ValidationFailed.field(
                "config", "The trigger's event is set on the workflow (triggerConfig.eventName)", "custom"
            )
        _lock_graph(step.workflow)
        step.config = step_config_clean(project=step.workflow.project, step_type=step.type, config=config)
        step.template_id = step.config.get("templateId")
        fields += ["config", "template"]
        no_timeout = step.type == StepType.WAIT_FOR_EVENT and "timeout" not in step.config
        if no_timeout and step.outgoing.filter(wait_outcome=WaitOutcome.TIMEOUT).exists():
            raise ValidationFailed.field(
                "config.timeout", "The step has a TIMEOUT transition: delete it before removing the timeout"
            )
    if name is not UNSET:
        step.name = name or _default_name(step.type)
        fields.append("name")
    if position is not UNSET:
        step.position = position
        fields.append("position")
    if fields:
        step.full_clean()
        step.updated_at = timezone.now()
        step.save(update_fields=[*fields, "updated_at"])
        _touch(step.workflow)
    return step


def _edges(workflow: Workflow) -> list[tuple]:
    return list(WorkflowTransition.objects.filter(workflow=workflow).values_list("from_step_id", "to_step_id"))


@transaction.atomic
def step_delete(*, step: WorkflowStep, splice: bool = False) -> None:
    """Delete a step and every step reachable only through it; with `splice`, delete only the step and point its
    incoming transitions at its successor instead. The TRIGGER cannot be deleted (409), nor a step an active
    execution is on (409)."""
    workflow = step.workflow
    if step.type == StepType.TRIGGER:
        raise Conflict("The trigger step cannot be deleted: every workflow starts with it")
    _lock_graph(workflow)
    if splice:
        doomed = {step.id}
        outgoing = list(step.outgoing.all())
        if step.type == StepType.CONDITION or len(outgoing) > 1:
            raise ValidationFailed.field(
                "splice", "A step with more than one way out (a CONDITION, a WAIT_FOR_EVENT with a TIMEOUT) cannot be "
                "spliced out: there is no single step to reconnect to", "custom",
            )  # fmt: skip
    else:
        steps = workflow.steps.values_list("id", flat=True)
        doomed = graph.only_through(_edges(workflow), steps, step.id)
    busy = workflow.executions.filter(status__in=ACTIVE_STATUSES, current_step_id__in=doomed).count()
    if busy:
        raise Conflict(
            f"{busy} running or waiting execution(s) are on the step(s) this would delete; cancel them first",
            details={"activeExecutions": busy},
        )
    if splice and outgoing:
        step.incoming.update(to_step_id=outgoing[0].to_step_id)
    workflow.steps.filter(id__in=doomed).delete()
    _touch(workflow)


# Transitions ------------------------------------------------------------------------------------------------------


@transaction.atomic
def transition_add(
    *, workflow: Workflow, from_step_id, to_step_id, branch: str | None = None, wait_outcome: str | None = None
) -> WorkflowTransition:
    """Link two steps of the workflow, under the graph rules (docs/api/workflows.md): no loop, nothing into the
    TRIGGER, nothing out of an EXIT, one transition per CONDITION branch (required), one per WAIT_FOR_EVENT
    outcome (EVENT by default; TIMEOUT only with a timeout), at most one out of any other step."""
    _lock_graph(workflow)
    steps = {step.id: step for step in workflow.steps.filter(id__in=[from_step_id, to_step_id])}
    source, target = steps.get(from_step_id), steps.get(to_step_id)
    errors = []
    if source is None:
        errors.append(_error("fromStepId", f'Step "{from_step_id}" was not found in this workflow'))
    if target is None:
        errors.append(_error("toStepId", f'Step "{to_step_id}" was not found in this workflow'))
    if errors:
        raise ValidationFailed(errors)
    if target.type == StepType.TRIGGER:
        raise ValidationFailed.field("toStepId", "Nothing may lead into the trigger step")
    if source.type == StepType.EXIT:
        raise ValidationFailed.field("fromStepId", "An EXIT step ends the workflow: it has no outgoing transitions")
    branch, wait_outcome = _exit_label(source, branch, wait_outcome)
    if graph.closes_loop(_edges(workflow), source.id, target.id):
        raise ValidationFailed.field("toStepId", LOOP_MESSAGE)
    transition = WorkflowTransition(
        workflow=workflow, from_step=source, to_step=target, branch=branch, wait_outcome=wait_outcome
    )
    # The database's unique constraints settle "one transition per way out", concurrent requests included.
    try:
        with transaction.atomic():
            transition.save()
    except IntegrityError:
        raise _exit_taken(source, branch, wait_outcome) from None
    _touch(workflow)
    return transition


def _exit_label(source: WorkflowStep, branch: str | None, wait_outcome: str | None) -> tuple[str, str]:
    """The (branch, wait outcome) of a transition out of `source`, as stored ("" for none), or 422."""
    if source.type == StepType.CONDITION:
        if wait_outcome:
            raise ValidationFailed.field("waitOutcome", "Only a WAIT_FOR_EVENT step has wait outcomes")
        if not branch:
            raise ValidationFailed.field(
                "branch", "A transition out of a CONDITION step needs a branch: yes or no", "invalid_type", "undefined"
            )
        return branch, ""
    if branch:
        raise ValidationFailed.field("branch", "Only a CONDITION step has branches")
    if source.type == StepType.WAIT_FOR_EVENT:
        wait_outcome = wait_outcome or WaitOutcome.EVENT
        if wait_outcome == WaitOutcome.TIMEOUT and "timeout" not in source.config:
            raise ValidationFailed.field(
                "waitOutcome", "A TIMEOUT transition needs a step with a timeout (config.timeout)"
            )
        return "", wait_outcome
    if wait_outcome:
        raise ValidationFailed.field("waitOutcome", "Only a WAIT_FOR_EVENT step has wait outcomes")
    return "", ""


def _exit_taken(source: WorkflowStep, branch: str, wait_outcome: str) -> ValidationFailed:
    if branch:
        return ValidationFailed.field("branch", f'The "{branch}" branch of this step is already connected')
    if wait_outcome:
        return ValidationFailed.field("waitOutcome", f"The {wait_outcome} outcome of this step is already connected")
    return ValidationFailed.field("fromStepId", "This step already has an outgoing transition")


def transition_delete(*, transition: WorkflowTransition) -> None:
    transition.delete()
    _touch(transition.workflow)


# Executions -------------------------------------------------------------------------------------------------------


def execution_start(*, workflow: Workflow, contact: Contact, context: dict | None = None) -> WorkflowExecution:
    """Start a RUNNING execution at the TRIGGER for `contact`, handed to the engine after the commit. Refused when
    the workflow is disabled (409 WORKFLOW_DISABLED) and by the re-entry rules, which the database enforces: without
    re-entry a contact enters once ever, with it one RUNNING or WAITING execution at a time (409 CONFLICT)."""
    if not workflow.enabled:
        raise Conflict(
            "The workflow is disabled: enable it before starting executions", code=ErrorCode.WORKFLOW_DISABLED
        )
    trigger = workflow.steps.get(type=StepType.TRIGGER)
    entry = 1
    if workflow.allow_reentry:
        last = workflow.executions.filter(contact=contact).aggregate(last=Max("entry"))["last"]
        entry = (last or 0) + 1
    execution = WorkflowExecution(
        project_id=workflow.project_id,
        workflow=workflow,
        contact=contact,
        entry=entry,
        current_step=trigger,
        context=context or {},
        resume_at=publish_grace(timezone.now()),
    )
    try:
        with transaction.atomic():
            execution.save()
    except IntegrityError:
        if workflow.allow_reentry:
            message = "The contact already has a running or waiting execution of this workflow"
        else:
            message = "The contact has already entered this workflow, which does not allow re-entry"
        raise Conflict(message, details={"contactId": str(contact.id)}) from None
    executions_publish_after_commit([execution.id])
    return execution


def execution_cancel(*, execution: WorkflowExecution) -> WorkflowExecution:
    """Cancel a RUNNING or WAITING execution (409 otherwise). A conditional update: an execution that finishes at
    the same moment is either finished or cancelled, never both."""
    now = timezone.now()
    cancelled = _cancel(WorkflowExecution.objects.filter(id=execution.id), now)
    if not cancelled:
        execution.refresh_from_db(fields=["status"])
        raise Conflict(
            f"The execution is {execution.status}: only RUNNING or WAITING executions can be cancelled",
            details={"status": execution.status},
        )
    execution.refresh_from_db()
    return execution


def executions_cancel_all(*, workflow: Workflow) -> int:
    """Cancel every RUNNING or WAITING execution of the workflow; how many were."""
    return _cancel(WorkflowExecution.objects.filter(workflow=workflow), timezone.now())


def _cancel(executions, now) -> int:
    """Cancel the RUNNING or WAITING ones of `executions`, then skip the unfinished steps of exactly those (they
    are the ones cancelled at `now`), so an execution that finishes meanwhile keeps its steps as they are."""
    cancelled = executions.filter(status__in=ACTIVE_STATUSES).update(
        status=ExecutionStatus.CANCELLED,
        exit_reason=CANCELLED_BY_USER,
        completed_at=now,
        updated_at=now,
        resume_at=None,
    )
    if cancelled:
        WorkflowStepExecution.objects.filter(
            execution__in=executions.filter(status=ExecutionStatus.CANCELLED, completed_at=now),
            status__in=UNFINISHED_STEP_STATUSES,
        ).update(status=StepExecutionStatus.SKIPPED, completed_at=now)
    return cancelled


def project_workflows_delete(project: Project) -> int:
    """A project reset's step (accounts.tenancy.registry): executions go with their workflows."""
    deleted, _ = Workflow.objects.filter(project=project).delete()
    return deleted

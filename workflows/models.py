"""Workflows: a graph of steps joined by transitions, started for a contact as an execution whose steps are
recorded as step executions. The rules that the engine relies on (one trigger per workflow, re-entry, one
execution per triggering event, a step run at most once per execution) are database constraints, not checks."""

import uuid

import uuid6
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Project
from contacts.models import Contact
from messaging.models import Template


class TriggerType(models.TextChoices):
    EVENT = "EVENT"
    MANUAL = "MANUAL"


class StepType(models.TextChoices):
    TRIGGER = "TRIGGER"
    SEND_EMAIL = "SEND_EMAIL"
    DELAY = "DELAY"
    WAIT_FOR_EVENT = "WAIT_FOR_EVENT"
    CONDITION = "CONDITION"
    WEBHOOK = "WEBHOOK"
    UPDATE_CONTACT = "UPDATE_CONTACT"
    EXIT = "EXIT"


class Branch(models.TextChoices):
    YES = "yes"
    NO = "no"


class WaitOutcome(models.TextChoices):
    EVENT = "EVENT"
    TIMEOUT = "TIMEOUT"


class ExecutionStatus(models.TextChoices):
    RUNNING = "RUNNING"
    WAITING = "WAITING"
    COMPLETED = "COMPLETED"
    EXITED = "EXITED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


ACTIVE_STATUSES = (ExecutionStatus.RUNNING, ExecutionStatus.WAITING)


class StepExecutionStatus(models.TextChoices):
    PENDING = "PENDING"
    SCHEDULED = "SCHEDULED"
    WAITING = "WAITING"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    SKIPPED = "SKIPPED"
    FAILED = "FAILED"


UNFINISHED_STEP_STATUSES = (StepExecutionStatus.PENDING, StepExecutionStatus.SCHEDULED, StepExecutionStatus.WAITING)


class Workflow(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="workflows", db_index=False)
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    enabled = models.BooleanField(default=False)
    trigger_type = models.CharField(max_length=6, choices=TriggerType.choices, default=TriggerType.EVENT)
    # `triggerConfig.eventName` in the API; a column of its own so that matching an event to the project's enabled
    # triggers is an index lookup.
    event_name = models.CharField(max_length=255, blank=True)
    allow_reentry = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["project", "created_at", "id"], name="workflow_project_created"),
            # The triggers an event can start: enabled EVENT workflows of the project with that event name.
            models.Index(
                fields=["project", "event_name"],
                condition=Q(enabled=True, trigger_type=TriggerType.EVENT),
                name="workflow_enabled_trigger",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def trigger_config(self) -> dict:
        return {"eventName": self.event_name or None}


class WorkflowStep(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="steps", db_index=False)
    type = models.CharField(max_length=14, choices=StepType.choices)
    name = models.CharField(max_length=255, blank=True)
    position = models.JSONField(default=dict, blank=True)
    # Validated per type by `workflows.configs` before it is stored.
    config = models.JSONField(default=dict, blank=True)
    # SEND_EMAIL's `config.templateId` as a key, so that a used template cannot be deleted and its usage is a lookup.
    # RESTRICT, not PROTECT: deleting a whole project removes both sides at once.
    template = models.ForeignKey(Template, on_delete=models.RESTRICT, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workflow"], condition=Q(type=StepType.TRIGGER), name="step_one_trigger_per_workflow"
            ),
        ]
        indexes = [models.Index(fields=["workflow", "created_at", "id"], name="step_workflow_created")]

    def __str__(self) -> str:
        return self.name or self.type


class WorkflowTransition(models.Model):
    """An edge of the graph. A CONDITION step leaves by one transition per `branch`, a WAIT_FOR_EVENT step by one
    per `wait_outcome`, any other step by at most one transition with neither."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="transitions", db_index=False)
    from_step = models.ForeignKey(WorkflowStep, on_delete=models.CASCADE, related_name="outgoing", db_index=False)
    to_step = models.ForeignKey(WorkflowStep, on_delete=models.CASCADE, related_name="incoming")
    # Empty when the transition has no branch or outcome (written as null by the API).
    branch = models.CharField(max_length=3, choices=Branch.choices, blank=True)
    wait_outcome = models.CharField(max_length=7, choices=WaitOutcome.choices, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=~Q(from_step=models.F("to_step")), name="transition_no_self_link"),
            models.CheckConstraint(condition=Q(branch="") | Q(wait_outcome=""), name="transition_branch_or_outcome"),
            models.UniqueConstraint(
                fields=["from_step", "branch"], condition=~Q(branch=""), name="transition_one_per_branch"
            ),
            models.UniqueConstraint(
                fields=["from_step", "wait_outcome"],
                condition=~Q(wait_outcome=""),
                name="transition_one_per_outcome",
            ),
            models.UniqueConstraint(
                fields=["from_step"],
                condition=Q(branch="", wait_outcome=""),
                name="transition_one_plain_exit",
            ),
        ]
        indexes = [models.Index(fields=["workflow", "created_at"], name="transition_workflow_created")]

    def __str__(self) -> str:
        label = self.branch or self.wait_outcome
        return f"{self.from_step_id} -> {self.to_step_id}" + (f" [{label}]" if label else "")

    # The API writes "none" as null.
    @property
    def branch_or_none(self) -> str | None:
        return self.branch or None

    @property
    def wait_outcome_or_none(self) -> str | None:
        return self.wait_outcome or None


def chain_onward(chain: list, workflow_id) -> list[str]:
    """The chain of causes of what an execution's steps make happen: the execution's own chain, and its workflow
    last."""
    return [*chain, str(workflow_id)]


class WorkflowExecution(models.Model):
    """One run of a workflow for one contact.

    `entry` numbers a contact's executions of the workflow from 1, and (workflow, contact, entry) is unique: a
    workflow without re-entry always inserts entry 1, so a contact that ever had an execution is refused by the
    database; with re-entry the next number is taken, and a partial unique index allows one RUNNING or WAITING
    execution per contact and workflow. `trigger_event_id` is unique per workflow: one event never starts two."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="executions", db_index=False)
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="+", db_index=False)
    entry = models.PositiveIntegerField(default=1)
    trigger_event_id = models.UUIDField(null=True, blank=True)
    status = models.CharField(max_length=9, choices=ExecutionStatus.choices, default=ExecutionStatus.RUNNING)
    current_step = models.ForeignKey(
        WorkflowStep, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_index=False
    )
    exit_reason = models.TextField(blank=True)
    context = models.JSONField(default=dict, blank=True)
    # The chain of causes (docs/workflows.md, "Chains of causes"): the workflow ids of the executions whose effects
    # led to the event that started this one, oldest first; empty when nothing automated caused it (a tracked
    # event, an API call). What this execution's own effects carry on is `chain_onward`.
    chain = models.JSONField(default=list, blank=True)
    # When the engine's sweep should next look at the execution: while WAITING, the end of its DELAY, timeout or
    # webhook retry wait (none: it waits for an event); while RUNNING, the end of its step's lease or of the grace
    # given its task to arrive.
    resume_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workflow", "contact", "entry"], name="execution_unique_entry"),
            models.UniqueConstraint(
                fields=["workflow", "contact"],
                condition=Q(status__in=ACTIVE_STATUSES),
                name="execution_one_active_per_contact",
            ),
            models.UniqueConstraint(
                fields=["workflow", "trigger_event_id"],
                condition=Q(trigger_event_id__isnull=False),
                name="execution_one_per_event",
            ),
        ]
        indexes = [
            # The list of a workflow's executions, newest first, with or without a status filter.
            models.Index(fields=["workflow", "created_at", "id"], name="execution_workflow_created"),
            models.Index(fields=["workflow", "status", "created_at"], name="execution_workflow_status"),
            # What the engine's sweep takes, across projects: pauses that are over, leases that ran out, tasks
            # that never came (docs/workflows.md "The engine").
            models.Index(
                fields=["resume_at"],
                condition=Q(status__in=ACTIVE_STATUSES, resume_at__isnull=False),
                name="execution_active_resume",
            ),
            # A contact's event resumes the executions waiting for it.
            models.Index(
                fields=["contact"], condition=Q(status=ExecutionStatus.WAITING), name="execution_waiting_contact"
            ),
            models.Index(fields=["project", "created_at"], name="execution_project_created"),
            # The daily cap: a contact's executions of a workflow started since a moment, read from the index alone.
            models.Index(fields=["workflow", "contact", "started_at"], name="execution_contact_started"),
            # The activity feed's workflow.started and workflow.completed items, newest first (workflows/activity.py).
            models.Index(fields=["project", "started_at", "id"], name="execution_project_started"),
            # A contact's executions, newest first: its timeline in the console reads a window of them.
            models.Index(fields=["contact", "started_at", "id"], name="execution_contact_timeline"),
            models.Index(
                fields=["project", "completed_at", "id"],
                condition=Q(status__in=(ExecutionStatus.COMPLETED, ExecutionStatus.EXITED)),
                name="execution_project_finished",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.workflow_id} for {self.contact_id} ({self.status})"

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def chain_onward(self) -> list[str]:
        return chain_onward(self.chain, self.workflow_id)

    @property
    def exit_reason_or_none(self) -> str | None:
        return self.exit_reason or None


class WorkflowStepExecution(models.Model):
    """One step of one execution. (execution, step) is unique: without cycles a step is reached at most once per
    execution, so the engine claims a step by inserting or updating this row and never runs it twice. Each claim
    writes a new `claim_token`; only the holder of the current token records the step's outcome, so a worker whose
    lease was taken over cannot overwrite what the newer claim records."""

    # Time-ordered (UUIDv7): a SEND_EMAIL step keys its email by this id, and the email's `created_at` is the id's
    # time, so a step run twice writes the same (id, created_at), the partitioned emails table's primary key.
    id = models.UUIDField(primary_key=True, default=uuid6.uuid7, editable=False)
    execution = models.ForeignKey(
        WorkflowExecution, on_delete=models.CASCADE, related_name="step_executions", db_index=False
    )
    step = models.ForeignKey(WorkflowStep, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    status = models.CharField(max_length=9, choices=StepExecutionStatus.choices, default=StepExecutionStatus.PENDING)
    scheduled_for = models.DateTimeField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    claim_token = models.UUIDField(null=True, blank=True, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["execution", "step"], name="step_execution_once_per_step"),
        ]
        indexes = [models.Index(fields=["execution", "created_at"], name="step_execution_created")]

    def __str__(self) -> str:
        return f"{self.step_id} of {self.execution_id} ({self.status})"

    @property
    def error_or_none(self) -> str | None:
        return self.error or None


class RefusedReason(models.TextChoices):
    CHAIN_DEPTH = "CHAIN_DEPTH"
    DAILY_CAP = "DAILY_CAP"


class RefusedStart(models.Model):
    """An event that would have started a workflow for a contact and did not (docs/workflows.md, "Chains of
    causes"): its chain of causes had already run the workflow `WORKFLOW_MAX_CHAIN_DEPTH` times (CHAIN_DEPTH), or
    the contact had `WORKFLOW_DAILY_EXECUTIONS_PER_CONTACT` executions of it in the last 24 hours (DAILY_CAP). Each
    is a `workflow.refused` item of the activity feed."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    # Indexed by the unique constraint below.
    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="+", db_index=False)
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=11, choices=RefusedReason.choices)
    trigger_event_id = models.UUIDField()
    event_name = models.CharField(max_length=255)
    # The refused event's chain of causes (workflow ids, oldest first).
    chain = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # An event announced twice is refused once, as it starts a workflow once (`execution_one_per_event`).
            models.UniqueConstraint(fields=["workflow", "trigger_event_id"], name="refused_start_one_per_event"),
        ]
        indexes = [
            # The activity feed's workflow.refused items, newest first (workflows/activity.py).
            models.Index(fields=["project", "created_at", "id"], name="refused_start_project_created"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow_id} for {self.contact_id} refused ({self.reason})"

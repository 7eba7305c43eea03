"""The engine: runs executions step by step (docs/workflows.md "The engine").

An execution is worked on by whoever claims it: an engine task (`advance_executions_task`), published when it
starts, when its wait ends (an ETA task), when an event resumes it, or by the periodic sweep. Every one of them
only calls `execution_advance`, so a duplicate is harmless:

1. Claim: under the execution's row lock, the step execution of its current step is created RUNNING, or moved to
   RUNNING from PENDING, or from SCHEDULED/WAITING when its time has come (a conditional UPDATE; a loser does
   nothing). The execution becomes RUNNING with `resume_at` = now + the lease: a worker that dies mid-step leaves it
   to the sweep, which finds the lease expired, puts the step back to PENDING and publishes it again.
2. Run the step outside any transaction (`workflows.steps`): sending, calling and waiting are decided there.
3. Record, under the row lock: the step's outcome (only if the step is still RUNNING), and the execution's next
   state: on to the next step (claimed at once, in the same task), WAITING with its resume time, or finished.

`resume_at` is the one column the sweep reads: for a WAITING execution the end of its DELAY or timeout (none: it
waits for an event only), for a RUNNING one the end of its lease, for a just published one the time after which its
task counts as lost. It lives in the database, so restarting the broker or every worker loses nothing.
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from core.commit import after_commit
from core.errors import ServiceError
from workflows.models import (
    ACTIVE_STATUSES,
    ExecutionStatus,
    StepExecutionStatus,
    StepType,
    WorkflowExecution,
    WorkflowStep,
    WorkflowStepExecution,
    WorkflowTransition,
)

logger = logging.getLogger(__name__)
STEP_DELETED = "The step this execution was on no longer exists"


@dataclass(frozen=True)
class Outcome:
    """What a step came to. `follow` is the transition's label to take: "" for a plain one, a CONDITION's branch,
    a WAIT_FOR_EVENT's outcome. A `pause` status (SCHEDULED or WAITING) stops the execution until `until` (None:
    until an event comes); `exit_reason` ends it EXITED, `error` FAILED; otherwise it goes on."""

    output: dict | None = None
    follow: str = ""
    context: dict | None = None
    pause: str | None = None
    until: datetime | None = None
    exit_reason: str | None = None
    error: str | None = None


@dataclass
class Claim:
    """A step execution this worker holds. `resume` says why it runs: None (first run), "due" (its DELAY, timeout
    or retry time came, or the worker that held it died), "event" (a WAIT_FOR_EVENT's event arrived; the output
    holds it)."""

    execution: WorkflowExecution
    step: WorkflowStep
    step_execution: WorkflowStepExecution
    resume: str | None
    now: datetime


def _lease(now: datetime) -> datetime:
    return now + timedelta(seconds=settings.WORKFLOW_STEP_LEASE_SECONDS)


def publish_grace(now: datetime) -> datetime:
    """The `resume_at` of an execution just handed to the broker: if its task has not claimed it by then, the sweep
    publishes it again."""
    return now + timedelta(seconds=settings.WORKFLOW_PUBLISH_GRACE_SECONDS)


# Publishing -------------------------------------------------------------------------------------------------------


def executions_publish(execution_ids: list, *, countdown: float | None = None) -> None:
    """Hand executions to engine tasks, `WORKFLOW_TASK_BATCH` per task. A broker failure is logged: the executions'
    `resume_at` is already set, so the sweep publishes them later."""
    from workflows.tasks import advance_executions_task

    size = settings.WORKFLOW_TASK_BATCH
    ids = [str(execution_id) for execution_id in execution_ids]
    options = {} if countdown is None else {"countdown": max(0.0, countdown)}
    for start in range(0, len(ids), size):
        try:
            advance_executions_task.apply_async(args=[ids[start : start + size]], **options)
        except Exception:
            logger.exception(
                "Could not publish %d workflow execution(s); the sweep will", len(ids[start : start + size])
            )


def executions_publish_after_commit(execution_ids: list, *, countdown: float | None = None) -> None:
    if execution_ids:
        after_commit(
            lambda: executions_publish(execution_ids, countdown=countdown),
            what=f"publish {len(execution_ids)} workflow execution(s) (the sweep publishes them later)",
        )


# Running ----------------------------------------------------------------------------------------------------------


def executions_advance(*, execution_ids: list) -> int:
    """Advance each execution as far as it goes now; returns how many steps ran. One execution's infrastructure
    failure (the database gone) is logged and does not stop the others: its lease runs out and the sweep retries
    it."""
    ran = 0
    for execution_id in execution_ids:
        try:
            ran += execution_advance(execution_id=execution_id)
        except Exception:
            logger.exception("Workflow execution %s stopped; the sweep will take it up again", execution_id)
    return ran


def execution_advance(*, execution_id) -> int:
    """Run the execution's steps until it pauses, finishes, or is not ours to run; returns how many steps ran.
    Without cycles (docs/workflows.md) every step is reached once, so this ends."""
    ran = 0
    claim = _claim(execution_id)
    while claim is not None:
        ran += 1
        claim = _record(claim, _run(claim))
    return ran


def _claim(execution_id) -> Claim | None:
    """Claim the execution's current step (module docstring, step 1), or None when there is nothing to do now."""
    now = timezone.now()
    with transaction.atomic():
        execution = (
            _locked()
            .select_related("project", "current_step__template")
            .filter(id=execution_id, status__in=ACTIVE_STATUSES)
            .first()
        )
        if execution is None:
            return None
        step = execution.current_step
        if step is None:  # the API deletes no step an active execution is on; an operator's raw delete might
            _finish(execution, ExecutionStatus.FAILED, STEP_DELETED, now)
            return None
        step_execution = WorkflowStepExecution.objects.filter(execution_id=execution.id, step_id=step.id).first()
        resume = None
        if step_execution is None:
            if step.type == StepType.TRIGGER:
                # The trigger does nothing but start: recorded done here, and the first step claimed with it.
                step_execution = WorkflowStepExecution(
                    execution=execution, step=step, status=StepExecutionStatus.COMPLETED, started_at=now,
                    completed_at=now, created_at=now,
                )  # fmt: skip
                if not _insert(step_execution):
                    return None
                return _claim_next(execution, step, "", now)
            step_execution = WorkflowStepExecution(
                execution=execution, step=step, status=StepExecutionStatus.RUNNING, started_at=now, created_at=now
            )
            if not _insert(step_execution):
                return None
        else:
            resume = _resume_reason(execution, step_execution, now)
            if resume is None:
                return None
            claimed = WorkflowStepExecution.objects.filter(id=step_execution.id, status=step_execution.status).update(
                status=StepExecutionStatus.RUNNING, started_at=Coalesce(F("started_at"), now)
            )
            if not claimed:
                return None
            step_execution.status = StepExecutionStatus.RUNNING
            step_execution.started_at = step_execution.started_at or now
        execution.status, execution.resume_at, execution.updated_at = ExecutionStatus.RUNNING, _lease(now), now
        execution.save(update_fields=["status", "resume_at", "updated_at"])
    return Claim(execution, step, step_execution, resume, now)


def _locked():
    """Executions under their row lock (PostgreSQL), with the contact as it is now: a step reads it (SEND_EMAIL
    renders with it, UPDATE_CONTACT writes it). Only the execution's row is locked, not those it joins."""
    return WorkflowExecution.objects.select_for_update(of=("self",)).select_related("contact")


def _insert(step_execution: WorkflowStepExecution) -> bool:
    """Write a new step execution of the locked execution. On PostgreSQL the row lock already excludes a second
    writer; SQLite takes no row lock, so there the unique (execution, step) settles it, in a savepoint."""
    if connection.vendor == "postgresql":
        step_execution.save(force_insert=True)
        return True
    try:
        with transaction.atomic():
            step_execution.save(force_insert=True)
    except IntegrityError:
        return False
    return True


def _claim_next(execution: WorkflowExecution, step: WorkflowStep, label: str, now) -> "Claim | None":
    """Inside the locked transaction that finished `step`: claim the step its `label` transition leads to (its
    step execution written RUNNING, the execution RUNNING on it under a new lease), or complete the execution when
    there is none. Without cycles the next step has no step execution yet."""
    following = next_step(step_id=step.id, label=label)
    if following is None:
        _finish(execution, ExecutionStatus.COMPLETED, "", now)
        return None
    # Step executions are listed in creation order: the next one is written strictly after the one it follows,
    # which the TRIGGER's claim wrote at `now`.
    now = max(timezone.now(), now + timedelta(microseconds=1))
    step_execution = WorkflowStepExecution(
        execution=execution, step=following, status=StepExecutionStatus.RUNNING, started_at=now, created_at=now
    )
    step_execution.save(force_insert=True)
    execution.status, execution.current_step = ExecutionStatus.RUNNING, following
    execution.resume_at, execution.updated_at = _lease(now), now
    execution.save(update_fields=["status", "current_step", "resume_at", "context", "updated_at"])
    return Claim(execution, following, step_execution, None, now)


def _resume_reason(execution: WorkflowExecution, step_execution: WorkflowStepExecution, now) -> str | None:
    """Why an existing step execution may run now, or None. A paused one that is not due yet puts the execution
    back to WAITING until its time (a task came early, or the sweep found it)."""
    status = step_execution.status
    if status == StepExecutionStatus.PENDING:
        output = step_execution.output or {}
        return "event" if output.get("waitOutcome") == "EVENT" else "due"
    if status in (StepExecutionStatus.SCHEDULED, StepExecutionStatus.WAITING):
        due = step_execution.scheduled_for
        if due is not None and due <= now:
            return "due"
        WorkflowExecution.objects.filter(id=execution.id).update(
            status=ExecutionStatus.WAITING, resume_at=due, updated_at=now
        )
        return None
    return None


def _run(claim: Claim) -> Outcome:
    """Run the step; a step's own failure becomes a FAILED outcome. A lost database is not the step's failure: it
    is raised, and the lease brings the step back."""
    from workflows.steps import step_run

    try:
        return step_run(claim)
    except (OperationalError, InterfaceError):
        raise
    except ServiceError as refused:
        return Outcome(error=_service_error_text(refused))
    except Exception as exc:
        logger.exception("Workflow step %s of execution %s failed", claim.step.id, claim.execution.id)
        return Outcome(error=f"{type(exc).__name__}: {exc}")


def _service_error_text(refused: ServiceError) -> str:
    errors = getattr(refused, "errors", None) or []
    if errors:
        first = errors[0]
        return (
            f"{refused.message} ({first.get('field')}: {first.get('message')})"
            if first.get("field")
            else refused.message
        )
    return refused.message


def _record(claim: Claim, outcome: Outcome) -> Claim | None:
    """Record the outcome (module docstring, step 3). When the execution goes on, the next step is claimed in the
    same transaction (its step execution written RUNNING) and returned, to be run at once."""
    now = timezone.now()
    with transaction.atomic():
        execution = _locked().filter(id=claim.execution.id).first()
        fields: dict = {"output": outcome.output}
        if outcome.pause:
            fields.update(status=outcome.pause, scheduled_for=outcome.until)
        elif outcome.error:
            fields.update(status=StepExecutionStatus.FAILED, error=outcome.error[:10000], completed_at=now)
        else:
            fields.update(status=StepExecutionStatus.COMPLETED, completed_at=now)
        step_executions = WorkflowStepExecution.objects.filter(
            id=claim.step_execution.id, status=StepExecutionStatus.RUNNING
        )
        if not step_executions.update(**fields):
            return None  # recorded by a worker that re-ran it after this one's lease ran out
        if execution is None or execution.status != ExecutionStatus.RUNNING:
            return None  # cancelled while the step ran: the step's result stands, nothing follows
        execution.project = claim.execution.project
        if outcome.context:
            execution.context = {**execution.context, **outcome.context}
        if outcome.pause:
            execution.status, execution.resume_at, execution.updated_at = ExecutionStatus.WAITING, outcome.until, now
            execution.save(update_fields=["status", "resume_at", "context", "updated_at"])
            _publish_at(execution.id, outcome.until, now)
            return None
        if outcome.error:
            _finish(execution, ExecutionStatus.FAILED, outcome.error[:10000], now)
            return None
        if outcome.exit_reason is not None:
            _finish(execution, ExecutionStatus.EXITED, outcome.exit_reason, now)
            return None
        return _claim_next(execution, claim.step, outcome.follow, now)


def next_step(*, step_id, label: str) -> WorkflowStep | None:
    """The step the transition out of `step_id` with `label` leads to (a branch or an outcome, "" for none)."""
    transitions = WorkflowTransition.objects.filter(from_step_id=step_id)
    if label in ("yes", "no"):
        transitions = transitions.filter(branch=label)
    elif label:
        transitions = transitions.filter(wait_outcome=label)
    else:
        transitions = transitions.filter(branch="", wait_outcome="")
    transition = transitions.select_related("to_step__template").first()
    return transition.to_step if transition else None


def _finish(execution: WorkflowExecution, status: str, reason: str, now) -> None:
    execution.status, execution.exit_reason = status, reason
    execution.completed_at = execution.updated_at = now
    execution.resume_at = None
    execution.save(update_fields=["status", "exit_reason", "completed_at", "updated_at", "resume_at", "context"])


def _publish_at(execution_id, until: datetime | None, now: datetime) -> None:
    """An ETA task for a pause that ends soon; a later end (or a lost task) is left to the sweep."""
    if until is None:
        return
    countdown = (until - now).total_seconds()
    if countdown <= settings.WORKFLOW_ETA_MAX_SECONDS:
        executions_publish_after_commit([execution_id], countdown=countdown)


# The sweep --------------------------------------------------------------------------------------------------------


SWEEP_CHUNK = 1000


def executions_due_claim(*, now: datetime | None = None, limit: int | None = None) -> list:
    """Take the executions whose `resume_at` has come (a pause over, a lease run out, a task lost), up to `limit`,
    and hand them back for publishing:

    1. A step still RUNNING there belongs to a worker that died (a live one's lease is in the future): it goes back
       to PENDING, to be claimed and run again (its side effect is keyed, `workflows.steps`).
    2. Each one's `resume_at` is pushed out by the publish grace: a second sweep does not take it again, and if
       its task is lost too, a later one does.

    On PostgreSQL the rows are taken with SKIP LOCKED, so overlapping sweeps and running steps never wait on each
    other."""
    now = now or timezone.now()
    limit = limit or settings.WORKFLOW_SWEEP_LIMIT
    taken: list = []
    while len(taken) < limit:
        with transaction.atomic():
            chunk = list(
                WorkflowExecution.objects.select_for_update(skip_locked=True)
                .filter(status__in=ACTIVE_STATUSES, resume_at__lte=now)
                .order_by("resume_at")
                .values_list("id", flat=True)[: min(SWEEP_CHUNK, limit - len(taken))]
            )
            if not chunk:
                break
            WorkflowStepExecution.objects.filter(execution_id__in=chunk, status=StepExecutionStatus.RUNNING).update(
                status=StepExecutionStatus.PENDING
            )
            WorkflowExecution.objects.filter(id__in=chunk).update(resume_at=publish_grace(now))
        taken += chunk
    return taken

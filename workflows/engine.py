"""The engine: runs executions step by step, a batch of executions at a time (docs/workflows.md "The engine").

An execution is worked on by whoever claims it: an engine task (`advance_executions_task`, a batch of ids),
published when it starts, when its wait ends (an ETA task), when an event resumes it, or by the periodic sweep
(`workflows.dispatch`). Every one of them only calls `executions_advance`, so a duplicate is harmless. For a batch:

1. Claim, in one transaction under the executions' row locks: the step execution of each one's current step is
   created RUNNING, or moved to RUNNING from PENDING, or from SCHEDULED/WAITING when its time has come (a conditional
   UPDATE), each stamped with this claim's token; a row that does not end up holding the token is not ours (a loser
   does nothing with it). The executions become RUNNING with `resume_at` = now + the lease: a worker that dies
   mid-step leaves them to the sweep, which finds the lease over, puts the step back to PENDING and publishes it.
2. Run the steps outside any transaction (`workflows.steps`; the SEND_EMAIL steps of the batch as one bulk send).
3. Record, in one transaction under the row locks: the outcome of each step whose row is still RUNNING under this
   claim's token (a worker that outlived its lease and was taken over records nothing: the newer claim does), and
   each execution's next state: on to the next step (claimed at once, under the same token, and run in the same
   task), WAITING with its resume time, or finished.

`resume_at` is the one column the sweep reads: for a WAITING execution the end of its DELAY or timeout (none: it
waits for an event only), for a RUNNING one the end of its lease, for a just published one the time after which its
task counts as lost. It lives in the database, so restarting the broker or every worker loses nothing.
"""

import logging
import uuid
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from core.db import close_if_stuck, locked
from core.tasks import time_limit_reached
from workflows.dispatch import executions_publish_after_commit
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
from workflows.runs import Claim, Outcome
from workflows.steps import steps_run
from workflows.webhooks import webhook_call_limit

logger = logging.getLogger(__name__)
STEP_DELETED = "The step this execution was on no longer exists"
_EXECUTION_FIELDS = ["status", "current_step", "resume_at", "context", "exit_reason", "completed_at", "updated_at"]
_OUTCOME_FIELDS = ["status", "output", "scheduled_for", "error", "completed_at"]


def lease_seconds() -> float:
    """A step's lease: WORKFLOW_STEP_LEASE_SECONDS, and never less than three times the longest webhook call. A task
    renews its lease before a step once a third of it has passed, so every step begins with at least two thirds of
    it left, twice the longest call: the sweep never takes a step whose call is still within its deadline."""
    return max(settings.WORKFLOW_STEP_LEASE_SECONDS, 3 * webhook_call_limit())


def _lease(now: datetime) -> datetime:
    return now + timedelta(seconds=lease_seconds())


def executions_advance(*, execution_ids: list) -> int:
    """Advance the executions as far as each goes now; returns how many steps ran. An infrastructure failure (the
    database gone) is logged and ends the batch: the leases run out and the sweep takes the executions up again.
    The task's soft time limit ends the batch too, and ends its leases at once (`_leases_end`)."""
    token = uuid.uuid4()
    ran = 0
    try:
        claims = executions_claim(execution_ids=execution_ids, token=token)
        while claims:
            ran += len(claims)
            outcomes = steps_run(claims, keep_alive=_lease_renewal(claims))
            claims = outcomes_record(claims=claims, outcomes=outcomes, token=token)
    except Exception as exc:
        if time_limit_reached(exc):
            logger.warning("Workflow executions out of time; %d handed to the next sweep", _leases_end(token))
        else:
            logger.exception("Workflow executions %s stopped; the sweep will take them up again", execution_ids)
    return ran


def _leases_end(token: uuid.UUID) -> int:
    """End now the lease of every execution whose step this claim still holds (a batch out of time): the next sweep,
    seconds away rather than a lease, puts the step back to PENDING and publishes it (`executions_due_claim`). A step
    that ran but whose outcome was not recorded runs again, as after a lost worker (`workflows.steps`)."""
    close_if_stuck()
    held = WorkflowStepExecution.objects.filter(claim_token=token, status=StepExecutionStatus.RUNNING)
    return WorkflowExecution.objects.filter(id__in=held.values("execution_id"), status=ExecutionStatus.RUNNING).update(
        resume_at=timezone.now()
    )


def _lease_renewal(claims: list[Claim]):
    """What the steps of a batch call between one step and the next: the batch's steps run one after another under
    one lease, so once a third of it has passed the lease is renewed for the executions still RUNNING, and a batch of
    slow steps (webhooks to a slow receiver) is not taken for dead while it works."""
    renewed = [claims[0].now]

    def renew() -> None:
        now = timezone.now()
        if (now - renewed[0]).total_seconds() < lease_seconds() / 3:
            return
        renewed[0] = now
        WorkflowExecution.objects.filter(
            id__in=[claim.execution.id for claim in claims], status=ExecutionStatus.RUNNING
        ).update(resume_at=_lease(now))

    return renew


def _locked(execution_ids, *related, **filters) -> list[WorkflowExecution]:
    """The executions among `execution_ids` (and `filters`) under their row locks, taken in one order so that two
    batches never wait on each other in a circle, with the contact as it is now: a step reads it (SEND_EMAIL
    renders with it, UPDATE_CONTACT writes it), and with the step they are on as committed (`core.db.locked`)."""
    executions = WorkflowExecution.objects.select_related("contact", *related)
    return locked(executions.filter(id__in=execution_ids, **filters).order_by("id"))


class _Following:
    """The step each transition out of a step leads to, read once per step for a batch."""

    def __init__(self) -> None:
        self._out: dict = {}

    def step(self, step_id, label: str) -> WorkflowStep | None:
        """The step the transition out of `step_id` with `label` leads to (a branch or an outcome, "" for none)."""
        if step_id not in self._out:
            self._out[step_id] = list(
                WorkflowTransition.objects.filter(from_step_id=step_id)
                .select_related("to_step__template")
                .order_by("id")
            )
        for transition in self._out[step_id]:
            if label in ("yes", "no"):
                taken = transition.branch == label
            elif label:
                taken = transition.wait_outcome == label
            else:
                taken = transition.branch == "" and transition.wait_outcome == ""
            if taken:
                return transition.to_step
        return None


def _running(execution: WorkflowExecution, step: WorkflowStep, token: uuid.UUID, now) -> WorkflowStepExecution:
    return WorkflowStepExecution(
        execution=execution,
        step=step,
        status=StepExecutionStatus.RUNNING,
        started_at=now,
        created_at=now,
        claim_token=token,
    )


def _resume_reason(step_execution: WorkflowStepExecution, now) -> str | None:
    """Why an existing step execution may run now, or None."""
    status = step_execution.status
    if status == StepExecutionStatus.PENDING:
        output = step_execution.output or {}
        return "event" if output.get("waitOutcome") == "EVENT" else "due"
    due = step_execution.scheduled_for
    if status in (StepExecutionStatus.SCHEDULED, StepExecutionStatus.WAITING) and due is not None and due <= now:
        return "due"
    return None


def executions_claim(*, execution_ids: list, token: uuid.UUID) -> list[Claim]:
    """Claim the current step of each execution that has one to run now (module docstring, step 1), in a few
    statements for the whole batch; returns the claims."""
    now = timezone.now()
    following = _Following()
    with transaction.atomic():
        executions = _locked(execution_ids, "project", "current_step__template", status__in=ACTIVE_STATUSES)
        if not executions:
            return []
        existing = {
            (row.execution_id, row.step_id): row
            for row in WorkflowStepExecution.objects.filter(
                execution_id__in=[execution.id for execution in executions],
                step_id__in={execution.current_step_id for execution in executions},
            )
        }
        changed, new_rows, candidates = [], [], []
        resumed: dict[str, list] = defaultdict(list)
        for execution in executions:
            step = execution.current_step
            if step is None:  # the API deletes no step an active execution is on; an operator's raw delete might
                _finish(execution, ExecutionStatus.FAILED, STEP_DELETED, now)
                changed.append(execution)
                continue
            step_execution = existing.get((execution.id, step.id))
            if step_execution is None:
                if step.type == StepType.TRIGGER:
                    # The trigger does nothing but start: recorded done here, and the step after it claimed with it,
                    # written strictly later (step executions are listed in creation order).
                    trigger = WorkflowStepExecution(
                        execution=execution, step=step, status=StepExecutionStatus.COMPLETED, started_at=now,
                        completed_at=now, created_at=now, claim_token=token,
                    )  # fmt: skip
                    new_rows.append(trigger)
                    step = following.step(step.id, "")
                    if step is None:
                        candidates.append((execution, None, trigger, None))
                        continue
                    step_execution = _running(execution, step, token, now + timedelta(microseconds=1))
                else:
                    step_execution = _running(execution, step, token, now)
                new_rows.append(step_execution)
                candidates.append((execution, step, step_execution, None))
                continue
            resume = _resume_reason(step_execution, now)
            if resume is not None:
                resumed[step_execution.status].append(step_execution.id)
                candidates.append((execution, step, step_execution, resume))
            elif step_execution.status in (StepExecutionStatus.SCHEDULED, StepExecutionStatus.WAITING):
                # Paused and not due yet (a task came early, or the sweep found it): back to WAITING until its time.
                execution.status, execution.resume_at = ExecutionStatus.WAITING, step_execution.scheduled_for
                execution.updated_at = now
                changed.append(execution)
        # SQLite takes no row lock: there the unique (execution, step) leaves out a second writer's row.
        WorkflowStepExecution.objects.bulk_create(new_rows, ignore_conflicts=True)
        for status, ids in resumed.items():
            WorkflowStepExecution.objects.filter(id__in=ids, status=status).update(
                status=StepExecutionStatus.RUNNING, claim_token=token, started_at=Coalesce(F("started_at"), now)
            )
        mine = set(
            WorkflowStepExecution.objects.filter(
                id__in=[candidate[2].id for candidate in candidates], claim_token=token
            ).values_list("id", flat=True)
        )
        claims = []
        for execution, step, step_execution, resume in candidates:
            if step_execution.id not in mine:
                continue
            if step is None:
                _finish(execution, ExecutionStatus.COMPLETED, "", now)
            else:
                step_execution.status, step_execution.claim_token = StepExecutionStatus.RUNNING, token
                step_execution.started_at = step_execution.started_at or now
                execution.status, execution.current_step = ExecutionStatus.RUNNING, step
                execution.resume_at, execution.updated_at = _lease(now), now
                claims.append(Claim(execution, step, step_execution, resume, now))
            changed.append(execution)
        _save(changed)
    return claims


def outcomes_record(*, claims: list[Claim], outcomes: list[Outcome], token: uuid.UUID) -> list[Claim]:
    """Record each claim's outcome (module docstring, step 3), in a few statements for the whole batch. The
    executions that go on have their next step claimed in the same transaction (written RUNNING under `token`);
    those claims are returned, to be run at once."""
    now = timezone.now()
    following = _Following()
    with transaction.atomic():
        current = {execution.id: execution for execution in _locked([claim.execution.id for claim in claims])}
        held = set(
            WorkflowStepExecution.objects.filter(
                id__in=[claim.step_execution.id for claim in claims],
                status=StepExecutionStatus.RUNNING,
                claim_token=token,
            ).values_list("id", flat=True)
        )
        recorded, changed, new_rows, next_claims = [], [], [], []
        paused: dict = defaultdict(list)
        for claim, outcome in zip(claims, outcomes, strict=True):
            step_execution = claim.step_execution
            if step_execution.id not in held:
                continue  # its lease ran out and another worker claimed it again: that claim records it
            step_execution.output = outcome.output
            if outcome.pause:
                step_execution.status, step_execution.scheduled_for = outcome.pause, outcome.until
            elif outcome.error:
                step_execution.status, step_execution.error = StepExecutionStatus.FAILED, outcome.error[:10000]
                step_execution.completed_at = now
            else:
                step_execution.status, step_execution.completed_at = StepExecutionStatus.COMPLETED, now
            recorded.append(step_execution)
            execution = current.get(claim.execution.id)
            if execution is None or execution.status != ExecutionStatus.RUNNING:
                continue  # cancelled while the step ran: the step's result stands, nothing follows
            execution.project = claim.execution.project
            if outcome.context:
                execution.context = {**execution.context, **outcome.context}
            changed.append(execution)
            if outcome.pause:
                execution.status, execution.resume_at, execution.updated_at = (
                    ExecutionStatus.WAITING,
                    outcome.until,
                    now,
                )
                if outcome.until is not None:
                    paused[outcome.until].append(execution.id)
                continue
            if outcome.error:
                _finish(execution, ExecutionStatus.FAILED, outcome.error[:10000], now)
                continue
            if outcome.exit_reason is not None:
                _finish(execution, ExecutionStatus.EXITED, outcome.exit_reason, now)
                continue
            step = following.step(claim.step.id, outcome.follow)
            if step is None:
                _finish(execution, ExecutionStatus.COMPLETED, "", now)
                continue
            # Step executions are listed in creation order: the next one is written strictly after this one.
            following_execution = _running(
                execution, step, token, max(now, step_execution.created_at + timedelta(microseconds=1))
            )
            new_rows.append(following_execution)
            execution.status, execution.current_step = ExecutionStatus.RUNNING, step
            execution.resume_at, execution.updated_at = _lease(now), now
            next_claims.append(Claim(execution, step, following_execution, None, now))
        WorkflowStepExecution.objects.bulk_update(recorded, _OUTCOME_FIELDS)
        WorkflowStepExecution.objects.bulk_create(new_rows)
        _save(changed)
        for until, execution_ids in paused.items():
            _publish_at(execution_ids, until, now)
    return next_claims


def _finish(execution: WorkflowExecution, status: str, reason: str, now) -> None:
    execution.status, execution.exit_reason = status, reason
    execution.completed_at = execution.updated_at = now
    execution.resume_at = None


def _save(executions: list[WorkflowExecution]) -> None:
    """Write the executions' new states, one statement for all."""
    WorkflowExecution.objects.bulk_update(executions, _EXECUTION_FIELDS)


def _publish_at(execution_ids: list, until: datetime, now: datetime) -> None:
    """An ETA task for a pause that ends soon; a later end (or a lost task) is left to the sweep."""
    countdown = (until - now).total_seconds()
    if countdown <= settings.WORKFLOW_ETA_MAX_SECONDS:
        executions_publish_after_commit(execution_ids, countdown=countdown)

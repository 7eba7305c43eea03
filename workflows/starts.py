"""Events meet workflows: an event starts the project's enabled EVENT workflows whose trigger is its name (unless
`workflows.limits` refuses it), and resumes the executions of its contact waiting for it in a WAIT_FOR_EVENT step.
Both are set-based (one recording call, however many events, costs a few statements) and durable: what they write
carries a `resume_at`, so a task the broker loses is published again by the sweep (`workflows.engine`)."""

from collections import defaultdict

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from accounts.models import Project
from contacts.models import Event
from core.time import iso
from workflows.dispatch import executions_publish_after_commit, publish_grace
from workflows.limits import events_chains, refusals_log, starts_sift
from workflows.models import (
    ExecutionStatus,
    RefusedStart,
    StepExecutionStatus,
    StepType,
    WaitOutcome,
    WorkflowExecution,
    WorkflowStepExecution,
)
from workflows.triggers import Trigger, project_triggers


def events_concern_workflows(*, project: Project, events: list[Event]) -> None:
    """Start and resume what `events` start and resume (module docstring). Most events concern no workflow: that
    answer comes from this process's copy of the project's triggers, without a query (`workflows.triggers`)."""
    known = project_triggers(project.id)
    if not known.triggers and not known.waited:
        return
    waited = [event for event in events if event.name in known.waited]
    if waited:
        executions_resume_for_events(project=project, events=waited)
    by_trigger: dict[Trigger, list[Event]] = defaultdict(list)
    for event in events:
        for trigger in known.triggers.get(event.name, ()):
            by_trigger[trigger].append(event)
    if by_trigger:
        chains = events_chains(project=project, events=[event for matched in by_trigger.values() for event in matched])
        for trigger, matched in by_trigger.items():
            executions_start_for_events(project=project, trigger=trigger, events=matched, chains=chains)


def executions_start_for_events(*, project: Project, trigger: Trigger, events: list[Event], chains: dict) -> list:
    """Start an execution of the trigger's workflow per event, with the event's data as `context` and its chain of
    causes (`chains`, from `workflows.limits.events_chains`); returns the ids started. `workflows.limits` refuses
    the starts past the chain depth or the daily cap, recorded with the starts. The database decides the rest, in
    one INSERT that skips conflicts: a second start for one event (`execution_one_per_event`), a contact's second
    entry without re-entry (`execution_unique_entry`, entry 1), a second active execution with re-entry
    (`execution_one_active_per_contact`)."""
    now = timezone.now()
    events, refusals = starts_sift(project=project, trigger=trigger, events=events, chains=chains, now=now)
    contact_ids = {event.contact_id for event in events}
    last_entry: dict = {}
    if trigger.allow_reentry:
        last_entry = dict(
            WorkflowExecution.objects.filter(workflow_id=trigger.workflow_id, contact_id__in=contact_ids)
            .values("contact_id")
            .annotate(last=Max("entry"))
            .values_list("contact_id", "last")
        )
    executions = [
        WorkflowExecution(
            project_id=project.id,
            workflow_id=trigger.workflow_id,
            contact_id=event.contact_id,
            entry=last_entry.get(event.contact_id, 0) + 1,
            trigger_event_id=event.id,
            current_step_id=trigger.trigger_step_id,
            context=event.data if isinstance(event.data, dict) else {},
            chain=chains.get(event.id, []),
            resume_at=publish_grace(now),
            started_at=now,
            created_at=now,
            updated_at=now,
        )
        for event in events
    ]
    with transaction.atomic():
        RefusedStart.objects.bulk_create(refusals, ignore_conflicts=True)
        WorkflowExecution.objects.bulk_create(executions, ignore_conflicts=True)
        started = list(WorkflowExecution.objects.filter(id__in=[e.id for e in executions]).values_list("id", flat=True))
        executions_publish_after_commit(started)
    refusals_log(refusals)
    return started


def executions_resume_for_events(*, project: Project, events: list[Event]) -> list:
    """Hand each event to the executions of its contact waiting for that name in a WAIT_FOR_EVENT step: the step
    goes from WAITING to PENDING with the event as its output (a conditional UPDATE: of a timeout and an event, or
    two events, the first wins), and the engine follows the EVENT transition. Returns the execution ids resumed."""
    now = timezone.now()
    names = {event.name for event in events}
    waiting = WorkflowExecution.objects.filter(
        project_id=project.id,
        status=ExecutionStatus.WAITING,
        contact_id__in={event.contact_id for event in events},
        current_step__type=StepType.WAIT_FOR_EVENT,
        current_step__config__eventName__in=names,
    ).values_list("id", "contact_id", "current_step_id", "current_step__config__eventName")
    by_contact: dict = defaultdict(list)
    for row in waiting:
        by_contact[row[1]].append(row)
    resumed = []
    with transaction.atomic():
        for event in sorted(events, key=lambda e: e.created_at or now):
            for execution_id, _, step_id, event_name in by_contact.get(event.contact_id, ()):
                if event_name != event.name or execution_id in resumed:
                    continue
                output = {
                    "waitOutcome": WaitOutcome.EVENT,
                    "eventName": event.name,
                    "eventData": event.data,
                    "receivedAt": iso(event.created_at or now),
                }
                handed = WorkflowStepExecution.objects.filter(
                    execution_id=execution_id, step_id=step_id, status=StepExecutionStatus.WAITING
                ).update(status=StepExecutionStatus.PENDING, output=output)
                if handed:
                    WorkflowExecution.objects.filter(id=execution_id).update(resume_at=publish_grace(now))
                    resumed.append(execution_id)
        executions_publish_after_commit(resumed)
    return resumed

"""What workflows add to messaging's insights (`messaging.insights.registry`): `workflow.started` and
`workflow.completed` items in the activity feed (one of each per execution, from the execution's own row, with its
current step for a contact's timeline in the console), `workflow.refused` items (one per refused start,
`workflows.limits`), executions waiting for a resume time in `/activity/upcoming`, and `totalWorkflowsStarted` in
`/activity/stats`."""

from datetime import datetime

from django.db.models import QuerySet

from accounts.models import Project
from core.time import iso
from messaging.insights.registry import ActivityFilters, ActivityItem, ActivitySource, Upcoming
from workflows.models import ExecutionStatus, RefusedStart, WorkflowExecution, WorkflowStep

STARTED, COMPLETED, REFUSED = "workflow.started", "workflow.completed", "workflow.refused"
# An execution that reached its end or an EXIT step finished as designed; FAILED and CANCELLED ones did not.
FINISHED = (ExecutionStatus.COMPLETED, ExecutionStatus.EXITED)


def _wanted(
    rows: QuerySet, filters: ActivityFilters, kind: str, moment: str, fields: tuple, related: tuple = ()
) -> QuerySet | None:
    """The project's `rows` of `kind` that the filters keep (by contact, and by `moment` in the range), read with
    `fields` (and the `related` rows they name), or None when the filters exclude the kind: none of these items is
    about an email."""
    if (filters.types is not None and kind not in filters.types) or filters.email_id:
        return None
    if filters.contact_id:
        rows = rows.filter(contact_id=filters.contact_id)
    if filters.start:
        rows = rows.filter(**{f"{moment}__gte": filters.start})
    if filters.end:
        rows = rows.filter(**{f"{moment}__lte": filters.end})
    return rows.select_related("workflow", "contact", *related).only(*fields, "workflow__name", "contact__email")


def _executions(project: Project, filters: ActivityFilters, kind: str, moment: str) -> QuerySet | None:
    executions = WorkflowExecution.objects.filter(project=project)
    if kind == COMPLETED:
        executions = executions.filter(status__in=FINISHED)
    fields = ("id", "status", "started_at", "completed_at", "exit_reason", "current_step__name", "current_step__type")
    return _wanted(executions, filters, kind, moment, fields, related=("current_step",))


def _item(kind: str, execution: WorkflowExecution) -> ActivityItem:
    return ActivityItem(
        id=execution.id,
        type=kind,
        timestamp=execution.started_at if kind == STARTED else execution.completed_at,
        contact_id=execution.contact_id,
        contact_email=execution.contact.email,
        metadata={
            "executionId": str(execution.id),
            "workflowId": str(execution.workflow_id),
            "workflowName": execution.workflow.name,
            "status": execution.status,
            **({"exitReason": execution.exit_reason} if kind == COMPLETED and execution.exit_reason else {}),
        },
        detail={"currentStep": _step_label(execution.current_step)},
    )


def _step_label(step: WorkflowStep | None) -> str | None:
    """A step as the workflow's editor names it: its name, else its type (steps need no name)."""
    if step is None:
        return None
    return f"{step.name} ({step.type})" if step.name else step.type


def _present(kind: str):
    def present(project: Project) -> list[str]:
        executions = WorkflowExecution.objects.filter(project=project)
        if kind == COMPLETED:
            executions = executions.filter(status__in=FINISHED)
        return [kind] if executions.exists() else []

    return present


def _refusals(project: Project, filters: ActivityFilters) -> QuerySet | None:
    fields = ("id", "reason", "trigger_event_id", "event_name", "chain", "created_at")
    return _wanted(RefusedStart.objects.filter(project=project), filters, REFUSED, "created_at", fields)


def _refused_item(refusal: RefusedStart) -> ActivityItem:
    return ActivityItem(
        id=refusal.id,
        type=REFUSED,
        timestamp=refusal.created_at,
        contact_id=refusal.contact_id,
        contact_email=refusal.contact.email,
        metadata={
            "workflowId": str(refusal.workflow_id),
            "workflowName": refusal.workflow.name,
            "reason": refusal.reason,
            "eventId": str(refusal.trigger_event_id),
            "eventName": refusal.event_name,
            "chain": refusal.chain,
        },
    )


SOURCES = [
    *(
        ActivitySource(
            name=f"workflows.{moment}",
            types=(kind,),
            queryset=lambda project, filters, kind=kind, moment=moment: _executions(project, filters, kind, moment),
            timestamp_field=moment,
            item=lambda execution, kind=kind: _item(kind, execution),
            present_types=_present(kind),
        )
        for kind, moment in ((STARTED, "started_at"), (COMPLETED, "completed_at"))
    ),
    ActivitySource(
        name="workflows.refused",
        types=(REFUSED,),
        queryset=_refusals,
        timestamp_field="created_at",
        item=_refused_item,
        present_types=lambda project: [REFUSED] if RefusedStart.objects.filter(project=project).exists() else [],
    ),
]


def workflows_upcoming(*, project: Project, until: datetime, limit: int) -> list[Upcoming]:
    """Executions WAITING for a resume time (a DELAY, a WAIT_FOR_EVENT timeout, a webhook retry) due by `until`,
    soonest first; one waiting for an event without a timeout has no time to show."""
    waiting = WorkflowExecution.objects.filter(
        project=project, status=ExecutionStatus.WAITING, resume_at__isnull=False, resume_at__lte=until
    ).values_list("id", "workflow_id", "contact_id", "resume_at")
    return [
        Upcoming(
            id=execution_id,
            at=resume_at,
            item={
                "type": "workflow",
                "id": str(execution_id),
                "workflowId": str(workflow_id),
                "contactId": str(contact_id),
                "resumeAt": iso(resume_at),
            },
        )
        for execution_id, workflow_id, contact_id, resume_at in waiting.order_by("resume_at", "id")[:limit]
    ]


def workflows_started_count(*, project: Project, since: datetime) -> int:
    return WorkflowExecution.objects.filter(project=project, started_at__gte=since).count()

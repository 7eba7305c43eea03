"""Handing executions to the engine's tasks (docs/workflows.md "The engine").

An execution to run now (started, resumed by an event) has its id appended to a work queue in Redis, and the
append that finds the queue empty schedules `dispatch_executions_task`, which publishes engine tasks of
`WORKFLOW_TASK_BATCH` ids each (`core.cache.list_push`, as delivery hands over its emails). While the workers are
busy the queue fills, so the ids of many single-event requests travel in one task, which claims, runs and records
them together (`workflows.engine`). Without Redis (the embedded default), or when it cannot be reached, the tasks
are published at once.

Nothing is lost on the way: whatever is handed over has a `resume_at` in the database, and the periodic sweep
(`executions_due_claim`) publishes again what no task took up by then.
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import caches
from django.db import transaction
from django.utils import timezone

from core.cache import list_drain, list_hand_over
from core.commit import after_commit
from core.tasks import publish_in_batches
from workflows.models import ACTIVE_STATUSES, StepExecutionStatus, WorkflowExecution, WorkflowStepExecution

logger = logging.getLogger(__name__)
_QUEUE = "workflows:waiting"
SWEEP_CHUNK = 1000


def publish_grace(now: datetime) -> datetime:
    """The `resume_at` of an execution just handed over: if no task has claimed it by then, the sweep publishes it
    again."""
    return now + timedelta(seconds=settings.WORKFLOW_PUBLISH_GRACE_SECONDS)


def executions_publish(execution_ids: list, *, countdown: float | None = None) -> None:
    """Publish engine tasks of `WORKFLOW_TASK_BATCH` executions each. A broker failure is logged: the executions'
    `resume_at` is already set, so the sweep publishes them later."""
    from workflows.tasks import advance_executions_task

    options = {} if countdown is None else {"countdown": max(0.0, countdown)}
    publish_in_batches(
        advance_executions_task,
        [str(execution_id) for execution_id in execution_ids],
        size=settings.WORKFLOW_TASK_BATCH,
        what="the sweep will publish them",
        **options,
    )


def _schedule_dispatch() -> None:
    from workflows.tasks import dispatch_executions_task

    try:
        dispatch_executions_task.delay()
    except Exception:  # the sweep publishes them once their grace is over
        logger.exception("Could not schedule the dispatch of waiting workflow executions")


def _hand_over(execution_ids: list) -> None:
    ids = [str(execution_id) for execution_id in execution_ids]
    list_hand_over(caches["default"], _QUEUE, ids, publish=executions_publish, drain=_schedule_dispatch)


def executions_publish_after_commit(execution_ids: list, *, countdown: float | None = None) -> None:
    """After the commit: hand the executions over to run now (module docstring), or with `countdown` publish their
    tasks for later (a pause that ends soon)."""
    if not execution_ids:
        return

    def publish() -> None:
        if countdown is None:
            _hand_over(execution_ids)
        else:
            executions_publish(execution_ids, countdown=countdown)

    after_commit(publish, what=f"publish {len(execution_ids)} workflow execution(s) (the sweep publishes them later)")


def executions_dispatch() -> int:
    """Publish engine tasks for the ids waiting in the queue (oldest first); returns how many were taken."""
    return list_drain(caches["default"], _QUEUE, executions_publish)


def executions_due_claim(*, now: datetime | None = None, limit: int | None = None) -> list:
    """Take the executions whose `resume_at` has come (a pause over, a lease run out, a task lost), up to `limit`,
    and hand them back for publishing:

    1. A step still RUNNING there belongs to a worker that died (a live one's lease is in the future): it goes back
       to PENDING, to be claimed and run again (its side effect is keyed, `workflows.steps`). A worker that was
       only slow finds its claim taken over when it records, and records nothing (`workflows.engine`).
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

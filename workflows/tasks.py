"""Celery tasks of the workflows app: each calls one service (docs/workflows.md "The engine")."""

from celery import shared_task

from workflows.dispatch import executions_dispatch, executions_due_claim, executions_publish
from workflows.engine import executions_advance

# acks_late + reject_on_worker_lost: a worker killed mid-step leaves the message for another; the claim makes a
# redelivery harmless, and the lease brings back a step whose message is gone too.
ENGINE_TASK_OPTIONS = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}


@shared_task(**ENGINE_TASK_OPTIONS)
def advance_executions_task(execution_ids: list[str]) -> int:
    return executions_advance(execution_ids=execution_ids)


@shared_task(ignore_result=True)
def dispatch_executions_task() -> int:
    return executions_dispatch()


@shared_task(ignore_result=True)
def sweep_executions_task() -> int:
    executions_dispatch()  # what a lost dispatch task left waiting goes first
    due = executions_due_claim()
    executions_publish(due)
    return len(due)

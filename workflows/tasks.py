"""Celery tasks of the workflows app: each calls one service (docs/workflows.md "The engine")."""

from celery import shared_task
from django.conf import settings

from workflows.dispatch import executions_dispatch, executions_due_claim, executions_publish
from workflows.engine import executions_advance

# acks_late + reject_on_worker_lost: a worker killed mid-step leaves the message for another; the claim makes a
# redelivery harmless, and the lease brings back a step whose message is gone too.
ENGINE_TASK_OPTIONS = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}


# A batch runs its steps one after another, a webhook call taking up to WEBHOOK_TIMEOUT_SECONDS. At the soft limit the
# executions the batch still holds are handed to the next sweep (`engine.executions_advance`), so a batch of slow
# steps goes on in other tasks within seconds. The limit leaves room for four calls at least: a step always fits in
# one task, where one cut short every time would run again for ever.
BATCH_SECONDS = max(240, 4 * settings.WEBHOOK_TIMEOUT_SECONDS)


@shared_task(soft_time_limit=BATCH_SECONDS, time_limit=BATCH_SECONDS + 30, **ENGINE_TASK_OPTIONS)
def advance_executions_task(execution_ids: list[str]) -> int:
    return executions_advance(execution_ids=execution_ids)


# Ids taken from the handover list but not yet published when a limit strikes have their `resume_at`: a sweep
# publishes them.
@shared_task(soft_time_limit=60, time_limit=90, ignore_result=True)
def dispatch_executions_task() -> int:
    return executions_dispatch()


# What a sweep cut short had claimed but not published is taken again by a later one after the publish grace.
@shared_task(soft_time_limit=60, time_limit=90, ignore_result=True)
def sweep_executions_task() -> int:
    executions_dispatch()  # what a lost dispatch task left waiting goes first
    due = executions_due_claim()
    executions_publish(due)
    return len(due)

"""Queued bulk work with progress: each kind of job implements only `run(job, report)`.

`job_run` claims the job, calls `run`, and records COMPLETED with its result or FAILED with the error, so every
job shows its state the same way in the API (`jobId` polling) and in the admin.

A job survives the loss of its worker (SIGKILL, a lost host) and of its broker message:
1. The worker holds a lease (`heartbeat_at`), renewed by every `report`; `run` reports at least once per step of
   bounded length (an import's batch).
2. `jobs_requeue_stalled` (celery-beat, every minute) publishes again every job whose lease expired and every job
   still PENDING after `JOB_PUBLISH_GRACE_SECONDS` (its message was lost, or its publish failed after the commit).
3. The next worker to claim it resumes from the checkpoint that `run` reported in the same transaction as the work
   it describes, so no step is done twice and none is skipped. After `JOB_MAX_ATTEMPTS` claims the job fails.
4. A task that reaches its soft time limit hands the job back (`_job_yield`): PENDING at its last checkpoint and
   published again at once, so a long job runs as several tasks.
"""

import logging
from collections.abc import Callable, Iterable
from datetime import timedelta

from django.conf import settings
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import Job, Project
from accounts.tenancy.selectors import project_ids_in_scope
from core.batches import purge_by_project
from core.db import close_if_stuck
from core.errors import NotFound
from core.hooks import Hook
from core.ids import uuid_or_none
from core.tasks import time_limit_reached

logger = logging.getLogger(__name__)
# report(progress, result, checkpoint=None): progress 0-100, the partial result, and where to resume.
Report = Callable[..., None]
job_tasks: Hook[Callable[[str], None]] = Hook(
    "accounts.jobs.services.job_tasks",
    """`publish(job_id)`, registered under a job type by the app that owns the type: queues the job's task, so that
    `jobs_requeue_stalled` can publish again a job whose worker or message was lost.""",
)


def job_create(*, project: Project, type: str, params: dict | None = None) -> Job:
    return Job.objects.create(project=project, type=type, params=params or {})


def job_report(job: Job, progress: int, result: dict, checkpoint: dict | None = None) -> None:
    """Record progress and renew the lease; with a checkpoint, call it inside the transaction of the work done."""
    job.progress = max(0, min(100, progress))
    job.result = result
    job.heartbeat_at = timezone.now()
    fields = ["progress", "result", "heartbeat_at"]
    if checkpoint is not None:
        job.checkpoint = checkpoint
        fields.append("checkpoint")
    job.save(update_fields=fields)


def _lease_expired_before():
    return timezone.now() - timedelta(seconds=settings.JOB_LEASE_SECONDS)


def _finish(job: Job, **values) -> Job:
    for name, value in values.items():
        setattr(job, name, value)
    job.finished_at = timezone.now()
    job.save(update_fields=[*values, "finished_at"])
    return job


def job_run(job_id, run: Callable[[Job, Report], dict]) -> Job | None:
    """Run a job: claim it if it is PENDING or its worker's lease expired, and leave it alone if another worker
    holds it (a redelivered task) or it has finished."""
    now = timezone.now()
    claimed = (
        Job.objects.filter(pk=job_id)
        .filter(
            Q(status=Job.Status.PENDING) | Q(status=Job.Status.PROCESSING, heartbeat_at__lt=_lease_expired_before())
        )
        .update(
            status=Job.Status.PROCESSING,
            started_at=Coalesce("started_at", now),
            heartbeat_at=now,
            attempts=F("attempts") + 1,
        )
    )
    if not claimed:
        return None
    job = Job.objects.get(pk=job_id)
    if job.attempts > settings.JOB_MAX_ATTEMPTS:
        logger.error("Job %s (%s) stopped %s times; failing it", job.id, job.type, job.attempts - 1)
        return _finish(
            job,
            status=Job.Status.FAILED,
            error=f"Stopped after {job.attempts - 1} attempts: its worker was lost or ran out of time each time",
        )
    if job.attempts > 1:
        logger.warning(
            "Job %s (%s) taken over (attempt %s), resuming at %s", job.id, job.type, job.attempts, job.checkpoint
        )
    resumed_from = job.checkpoint
    try:
        result = run(job, lambda progress, partial, checkpoint=None: job_report(job, progress, partial, checkpoint))
    except Exception as exc:
        if time_limit_reached(exc):
            _job_yield(job, resumed_from=resumed_from)
            return None
        logger.exception("Job %s (%s) failed", job.id, job.type)
        _finish(job, status=Job.Status.FAILED, error=str(exc)[:2000])
        raise
    return _finish(job, status=Job.Status.COMPLETED, progress=100, result=result)


def _job_yield(job: Job, *, resumed_from: dict) -> None:
    """The task running `job` reached its soft time limit (the batch it was in is rolled back): the job goes back to
    PENDING at its last committed checkpoint and is published again. Attempts count lost workers, so a claim that
    moved the checkpoint on counts none; one that did not still counts, and a step longer than the limit ends the
    job FAILED after JOB_MAX_ATTEMPTS instead of coming back for ever. Nothing is released when another worker took
    the job over meanwhile; a failed publish is left to `jobs_requeue_stalled`."""
    close_if_stuck()
    checkpoint = Job.objects.filter(pk=job.pk).values_list("checkpoint", flat=True).first()
    moved = checkpoint != resumed_from
    held = Job.objects.filter(pk=job.pk, status=Job.Status.PROCESSING, attempts=job.attempts)
    if not held.update(status=Job.Status.PENDING, attempts=F("attempts") - int(moved)):
        return
    logger.warning("Job %s (%s) out of time at %s; published again to resume there", job.id, job.type, checkpoint)
    try:
        _publish(job.id, job.type)
    except Exception:
        logger.exception("Could not publish job %s again; the stalled-jobs sweeper will", job.id)


def _publish(job_id, job_type: str) -> bool:
    """Queue the task of the job's type (`job_tasks`); False when no app registered one."""
    publish = job_tasks.implementations.get(job_type)
    if publish is None:
        logger.error("Job %s has type %s, which no app registered a task for", job_id, job_type)
        return False
    publish(str(job_id))
    return True


def jobs_stalled(*, now=None):
    """Jobs whose worker was lost (lease expired) or whose message never arrived (PENDING past the grace period),
    as of `now` (default: this moment)."""
    now = now or timezone.now()
    return Job.objects.filter(
        Q(status=Job.Status.PENDING, created_at__lt=now - timedelta(seconds=settings.JOB_PUBLISH_GRACE_SECONDS))
        | Q(status=Job.Status.PROCESSING, heartbeat_at__lt=now - timedelta(seconds=settings.JOB_LEASE_SECONDS))
    )


def jobs_requeue_stalled(*, limit: int = 100) -> int:
    """Publish again the jobs whose worker was lost (lease expired) or whose message never arrived (PENDING past
    the grace period). A job already running elsewhere ignores the extra message (the claim)."""
    stalled = jobs_stalled().values_list("id", "type")[:limit]
    published = sum(_publish(job_id, job_type) for job_id, job_type in stalled)
    if published:
        logger.warning("Re-queued %s stalled jobs", published)
    return published


def job_get(*, project: Project, job_id: str, types: Iterable[str]) -> Job:
    """The project's job of one of `types`: another project's job, or one of another type, is not found."""
    job = Job.objects.filter(project=project, type__in=types, pk=uuid_or_none(job_id)).first()
    if job is None:
        raise NotFound("Job", job_id)
    return job


def jobs_purge_finished(
    *, project_id=None, batch_size: int = 1000, max_batches: int | None = None, dry_run: bool = False
) -> int:
    """Delete jobs that finished more than JOB_RETENTION_DAYS ago (0 keeps them), with what they hold (an
    import's upload); unfinished jobs stay whatever their age. Each project's jobs are read oldest first from the
    (project, created_at) index, and a job finishes after it was created, so its creation bounds the scan."""
    if settings.JOB_RETENTION_DAYS <= 0:
        return 0
    cutoff = timezone.now() - timedelta(days=settings.JOB_RETENTION_DAYS)
    finished = Job.objects.filter(
        status__in=[Job.Status.COMPLETED, Job.Status.FAILED], created_at__lt=cutoff, finished_at__lt=cutoff
    )
    return purge_by_project(
        finished,
        project_ids=project_ids_in_scope(project_id=project_id),
        order_by=("created_at",),
        batch_size=batch_size,
        max_batches=max_batches,
        dry_run=dry_run,
    )

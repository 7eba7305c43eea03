"""Queued bulk work with progress: each kind of job implements only `run(job, report)`.

`job_run` marks the job PROCESSING, calls `run`, and records COMPLETED with its result or FAILED with the error,
so every job shows its state the same way in the API (`jobId` polling) and in the admin.
"""

import logging
from collections.abc import Callable

from django.utils import timezone

from accounts.models import Job, Project
from core.time import iso

logger = logging.getLogger(__name__)
Report = Callable[[int, dict], None]


def job_create(*, project: Project, type: str, params: dict | None = None) -> Job:
    return Job.objects.create(project=project, type=type, params=params or {})


def job_report(job: Job, progress: int, result: dict) -> None:
    job.progress = max(0, min(100, progress))
    job.result = result
    job.save(update_fields=["progress", "result"])


def job_run(job_id, run: Callable[[Job, Report], dict]) -> Job | None:
    """Run one job once: a job already past PENDING (a redelivered task) is left alone."""
    claimed = Job.objects.filter(pk=job_id, status=Job.Status.PENDING).update(
        status=Job.Status.PROCESSING, started_at=timezone.now()
    )
    if not claimed:
        return None
    job = Job.objects.get(pk=job_id)
    try:
        result = run(job, lambda progress, partial: job_report(job, progress, partial))
    except Exception as exc:
        logger.exception("Job %s (%s) failed", job.id, job.type)
        job.status = Job.Status.FAILED
        job.error = str(exc)[:2000]
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "error", "finished_at"])
        raise
    job.status = Job.Status.COMPLETED
    job.progress = 100
    job.result = result
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "progress", "result", "finished_at"])
    return job


def job_json(job: Job) -> dict:
    return {
        "id": str(job.id),
        "type": job.type,
        "status": job.status,
        "progress": job.progress,
        "result": job.result,
        "error": job.error or None,
        "createdAt": iso(job.created_at),
        "startedAt": iso(job.started_at),
        "finishedAt": iso(job.finished_at),
    }

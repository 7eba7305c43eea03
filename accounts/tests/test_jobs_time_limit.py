"""A job whose task reaches its soft time limit is handed back, not failed: PENDING at its last committed
checkpoint, published again, and its attempt not counted when it moved on; a job that cannot move on within the
limit still fails after its attempts."""

import time

import pytest
from django.db import transaction

from accounts.jobs.services import job_create, job_run
from accounts.models import Job

pytestmark = pytest.mark.django_db

# No app registers a task for it: the hand-back's publish finds none and leaves the job to the sweeper.
TYPE = "SLICED"


def _committed_step(report, step: int) -> None:
    with transaction.atomic():
        report(step * 10, {"steps": step}, checkpoint={"step": step})


def test_a_job_out_of_time_goes_back_to_pending_at_its_last_checkpoint(project, soft_time_limit, caplog):
    job = job_create(project=project.project, type=TYPE)

    def run(job: Job, report) -> dict:
        _committed_step(report, 1)
        with transaction.atomic():
            report(20, {"steps": 2}, checkpoint={"step": 2})
            soft_time_limit(0.1)
            time.sleep(5)  # the rest of a step longer than the time left
        return {}

    assert job_run(job.id, run) is None
    job.refresh_from_db()
    # The step in hand rolled back with its checkpoint; the claim counts no attempt, as the job moved on.
    assert (job.status, job.checkpoint, job.progress, job.attempts) == ("PENDING", {"step": 1}, 10, 0)
    assert "out of time at {'step': 1}" in caplog.text

    assert job_run(job.id, lambda job, report: {"resumedAt": job.checkpoint}).result == {"resumedAt": {"step": 1}}
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("COMPLETED", 1)


def test_a_job_that_cannot_move_on_within_the_limit_fails_after_its_attempts(project, soft_time_limit, settings):
    job = job_create(project=project.project, type=TYPE)

    def run(job: Job, report) -> dict:
        soft_time_limit(0.05)
        time.sleep(5)
        return {}

    for attempt in range(1, settings.JOB_MAX_ATTEMPTS + 1):
        assert job_run(job.id, run) is None
        job.refresh_from_db()
        assert (job.status, job.attempts) == ("PENDING", attempt)
    job_run(job.id, run)
    job.refresh_from_db()
    assert job.status == "FAILED" and "ran out of time" in job.error

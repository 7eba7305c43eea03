"""A real worker killed (SIGKILL) in the middle of an import: the job completes on another worker, every row
once."""

import signal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.jobs.services import jobs_requeue_stalled
from accounts.models import Job
from config.celery import app
from config.tests.processes import celery_worker, wait_until
from contacts.models import Contact

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
ROWS = 20_000


def test_an_import_survives_its_worker_being_killed(secret_client, project, settings):
    settings.JOB_LEASE_SECONDS = 2
    worker_env = {"JOB_LEASE_SECONDS": "2", "CONTACT_IMPORT_BATCH_SIZE": "250"}
    content = ("email,n\n" + "\n".join(f"user{i}@example.com,{i}" for i in range(ROWS))).encode()
    app.conf.task_always_eager = False
    try:
        response = secret_client.post(
            "/contacts/import", {"file": SimpleUploadedFile("c.csv", content, "text/csv")}, format="multipart"
        )
        job_id = response.json()["jobId"]
        with celery_worker(pool="solo", **worker_env) as worker:
            # Let it commit a few batches, then kill it where it stands.
            wait_until(
                lambda: Job.objects.get(pk=job_id).checkpoint.get("record", 0) > 1000,
                timeout=60,
                what="the first batches",
                interval=0.02,
            )
            worker.send_signal(signal.SIGKILL)
            worker.wait()
        killed = Job.objects.get(pk=job_id)
        assert killed.status == "PROCESSING" and killed.progress < 100
        done_before = Contact.objects.filter(project=project.project).count()
        assert 1000 <= done_before < ROWS
        # The sweeper finds the lease expired and publishes the job again; a new worker resumes it.
        wait_until(lambda: jobs_requeue_stalled() == 1, timeout=10, what="the lease to expire")
        with celery_worker(pool="solo", **worker_env):
            wait_until(lambda: Job.objects.get(pk=job_id).status == "COMPLETED", timeout=120, what="the import")
    finally:
        app.conf.task_always_eager = True
    job = Job.objects.get(pk=job_id)
    assert job.attempts == 2
    assert job.result["createdCount"] == ROWS and job.result["totalRows"] == ROWS
    assert job.result["updatedCount"] == 0 and job.result["unchangedCount"] == 0
    assert Contact.objects.filter(project=project.project).count() == ROWS

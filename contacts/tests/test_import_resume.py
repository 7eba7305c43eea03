"""Imports and bulk jobs survive the loss of their worker or their message: a lease, a sweeper that publishes
stalled jobs again, and a resume from the last committed batch (no row twice, none skipped)."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models.signals import post_save
from django.utils import timezone

from accounts.jobs.services import jobs_requeue_stalled
from accounts.models import Job
from contacts import imports
from contacts.models import Contact, ImportUpload

pytestmark = pytest.mark.django_db


class WorkerKilled(BaseException):
    """What a SIGKILL looks like from inside: nothing after it runs, no `except Exception` sees it."""


def csv_of(count: int, start: int = 0) -> bytes:
    return ("email,n\n" + "\n".join(f"user{i}@example.com,{i}" for i in range(start, start + count))).encode()


@pytest.fixture
def queued_import(secret_client, settings):
    """An accepted import whose task has not run (its message is in the broker, or lost)."""
    settings.CONTACT_IMPORT_BATCH_SIZE = 10

    def start(content: bytes) -> Job:
        response = secret_client.post(
            "/contacts/import", {"file": SimpleUploadedFile("c.csv", content, "text/csv")}, format="multipart"
        )
        assert response.status_code == 202
        return Job.objects.get(pk=response.json()["jobId"])

    return start


def crash_on_batch(monkeypatch, number: int) -> None:
    original, calls = imports._upsert_rows, []

    def upsert(project, rows):
        calls.append(len(rows))
        if len(calls) == number:
            raise WorkerKilled
        return original(project, rows)

    monkeypatch.setattr(imports, "_upsert_rows", upsert)


def expire_lease(job: Job) -> None:
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))


def test_an_import_whose_worker_died_resumes_after_its_last_committed_batch(queued_import, monkeypatch, project):
    job = queued_import(csv_of(35) + b"\nnot-an-email,1\nuser3@example.com,dup\n")
    crash_on_batch(monkeypatch, 3)
    with pytest.raises(WorkerKilled):
        imports.contact_import_run(job_id=job.id)
    job.refresh_from_db()
    # Two batches committed with their checkpoint; the third rolled back with the worker.
    assert job.status == "PROCESSING" and job.checkpoint["record"] == 21
    assert Contact.objects.filter(project=project.project).count() == 20
    assert ImportUpload.objects.filter(job=job).exists()

    monkeypatch.undo()
    # A redelivered task while the lease is live leaves the job to its (presumed) worker, and keeps the file.
    assert imports.contact_import_run(job_id=job.id) is None
    assert ImportUpload.objects.filter(job=job).exists()

    expire_lease(job)
    assert jobs_requeue_stalled() == 1  # published again; the eager test broker runs it here
    job.refresh_from_db()
    assert job.status == "COMPLETED" and job.attempts == 2
    assert job.result["createdCount"] == 35 and job.result["updatedCount"] == 0
    assert job.result["totalRows"] == 37 and job.result["failureCount"] == 2
    assert [error["row"] for error in job.result["errors"]] == [37, 38]
    assert Contact.objects.filter(project=project.project).count() == 35
    assert not ImportUpload.objects.filter(job=job).exists()


def test_a_job_whose_message_was_lost_is_published_again(queued_import, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # the publish happens and the message goes nowhere we read
    from config.celery import app

    app.conf.task_always_eager = False
    try:
        job = queued_import(csv_of(5))
    finally:
        app.conf.task_always_eager = True
    assert Job.objects.get(pk=job.pk).status == "PENDING"
    assert jobs_requeue_stalled() == 0  # within the grace period it may still be on its way
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert jobs_requeue_stalled() == 1
    assert Job.objects.get(pk=job.pk).status == "COMPLETED"


def test_a_job_that_keeps_losing_its_worker_fails(queued_import, monkeypatch, settings):
    job = queued_import(csv_of(30))
    crash_on_batch(monkeypatch, 1)
    for _ in range(settings.JOB_MAX_ATTEMPTS):
        with pytest.raises(WorkerKilled):
            imports.contact_import_run(job_id=job.id)
        expire_lease(job)
        crash_on_batch(monkeypatch, 1)
    imports.contact_import_run(job_id=job.id)
    job.refresh_from_db()
    assert job.status == "FAILED" and "worker was lost" in job.error
    assert not ImportUpload.objects.filter(job=job).exists()


def test_a_running_job_is_not_taken_over_while_its_lease_is_renewed(queued_import, monkeypatch):
    job = queued_import(csv_of(30))
    crash_on_batch(monkeypatch, 2)
    with pytest.raises(WorkerKilled):
        imports.contact_import_run(job_id=job.id)
    # The lease was renewed by the committed batch: the sweeper leaves the job alone.
    assert jobs_requeue_stalled() == 0


@pytest.mark.django_db(transaction=True)
def test_an_import_out_of_time_goes_on_in_a_new_task_from_its_last_committed_batch(
    queued_import, project, soft_time_limit, caplog
):
    """Committed as a worker commits (the limit may strike in the middle of any statement), with the task run below
    rather than at the upload."""
    from config.celery import app

    app.conf.task_always_eager = False  # the upload's message goes to a broker no worker of this test reads
    try:
        job = queued_import(csv_of(500))
    finally:
        app.conf.task_always_eager = True
    struck = []

    def fourth_batch_committed(sender, instance, **kwargs):
        if instance.pk == job.pk and instance.checkpoint.get("record", 0) > 40 and not struck:
            struck.append(instance.checkpoint["record"])
            soft_time_limit()  # within the next batch

    post_save.connect(fourth_batch_committed, sender=Job, weak=False)
    try:
        # The task out of time hands the job back; its publish runs the next task here (the eager test broker).
        assert imports.contact_import_run(job_id=job.id) is None
    finally:
        post_save.disconnect(fourth_batch_committed, sender=Job)
    assert struck and "out of time" in caplog.text
    job.refresh_from_db()
    assert job.status == "COMPLETED" and job.attempts == 1  # the task cut short counted no attempt
    assert job.result["createdCount"] == 500 and job.result["failureCount"] == 0
    assert Contact.objects.filter(project=project.project).count() == 500
    assert not ImportUpload.objects.filter(job=job).exists()

import contextlib
import time
from pathlib import Path

from django.core.files import File
from django.db import transaction

from accounts.commands import FOUND_PROBLEMS, OperatorCommand
from accounts.models import Job
from contacts.imports import contact_import_preview, contact_import_run, contact_import_start
from core.csv import csv_writer
from core.errors import ServiceError

_FINISHED = (Job.Status.COMPLETED, Job.Status.FAILED)


def _message(error: ServiceError) -> str:
    fields = "; ".join(item.get("message", "") for item in error.errors or [])
    return fields or error.message


class Command(OperatorCommand):
    help = (
        "Import contacts from a CSV file into a project: the API's import (same rules, same job record, visible at "
        "GET /contacts/import/<jobId>), run here unless a worker took the job first, then waited for. Prints the "
        "totals and each failed row (row, email, error); exit status 2 when a row failed."
    )
    project_option = "required"
    json_option = dry_run_option = progress_option = True

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE.csv")
        parser.add_argument("--poll-seconds", type=float, default=0.5, help="How often to look at a worker's job")
        super().add_arguments(parser)

    def handle(self, *args, file, poll_seconds, json, dry_run, **options):
        project = self.project()
        path = Path(file)
        if not path.is_file():
            raise self.fail(f"{file}: no such file")
        try:
            if dry_run:
                result, job_id = contact_import_preview(content=path.read_bytes()), None
            else:
                with path.open("rb") as handle, transaction.atomic():
                    job = contact_import_start(project=project, upload=File(handle, name=path.name))
                job_id = job.id
                result = self._finished(job_id, poll_seconds).result
        except ServiceError as refused:
            raise self.fail(f"{file}: {_message(refused)}") from None
        self._report(result, job_id, json, dry_run)
        if result.get("failureCount"):
            raise self.fail(f"{result['failureCount']} row(s) failed", FOUND_PROBLEMS)

    def _finished(self, job_id, poll_seconds: float) -> Job:
        """Run the job here; when a worker claimed it first (or has run it), wait for it to finish."""
        # A run that raised has recorded the job FAILED with the error, reported below.
        with contextlib.suppress(Exception):
            contact_import_run(job_id=job_id)
        with self.progress(total=100, desc="import") as bar:
            while True:
                job = Job.objects.get(pk=job_id)
                bar.update(job.progress - bar.n)
                if job.status in _FINISHED:
                    break
                time.sleep(poll_seconds)
        if job.status == Job.Status.FAILED:
            raise self.fail(f"Import job {job_id} failed: {job.error}")
        return job

    def _report(self, result: dict, job_id, json: bool, dry_run: bool) -> None:
        if json:
            self.write_json({"jobId": str(job_id) if job_id else None, "dryRun": dry_run, **result})
            return
        if dry_run:
            self.stdout.write(
                f"Dry run: {result['totalRows']} row(s), {result['validCount']} valid, "
                f"{result['failureCount']} failed; nothing imported"
            )
        else:
            self.stdout.write(
                f"Job {job_id}: {result['totalRows']} row(s), {result['createdCount']} created, "
                f"{result['updatedCount']} updated, {result['unchangedCount']} unchanged, "
                f"{result['failureCount']} failed"
            )
        if not result["failureCount"]:
            return
        writer = csv_writer(self.stdout._out)
        writer.writerow(["row", "email", "error"])
        for error in result["errors"]:
            writer.writerow([error["row"], error["email"] or "", error["error"]])
        if result["failureCount"] > len(result["errors"]):
            self.stdout.write(f"... and {result['failureCount'] - len(result['errors'])} more failed row(s) not listed")

"""CSV import of contacts: checked at upload, run by a Celery task in batches of bulk SQL.

Rules (docs/api/contacts.md): header row required, `email` column required and `subscribed` optional (both matched
case-insensitively), every other column a data key (header trimmed, case kept) whose cells are typed: `true`/`false`
booleans, integers without leading zeros and plain decimals numbers, anything else a string; empty cells ignored.
UTF-8 with or without BOM; comma or semicolon, whichever the header uses more. A bad row is reported with its row
number (the header is row 1) and never aborts the import.

An import survives the loss of its worker: each batch commits together with the job's checkpoint (the last record
it covers and the totals so far), and a worker that takes the job over (accounts.jobs) reads the file again from
the start, skipping what the checkpoint covers. Parsing is deterministic, so the rows it skips are the ones done.
"""

import csv
import io
import re
from dataclasses import asdict, dataclass, field, replace

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.jobs.services import job_create, job_run
from accounts.models import Job, Project
from contacts.data_rules import MAX_DATA_BYTES, data_rules, data_size
from contacts.models import Contact, ImportUpload
from contacts.services import contacts_subscription_bulk_set, normalize_email
from core.commit import after_commit
from core.errors import ErrorCode, ServiceError, ValidationFailed

JOB_TYPE = "CONTACT_IMPORT"
MAX_ERRORS = 100
_NUMBER = re.compile(r"^-?(0|[1-9]\d*)(\.\d+)?$")
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def typed_cell(value: str):
    """`true`/`false` → bool, `42`/`-3.5` → number, everything else (`02134`, `+1 555`, `1e5`) stays a string."""
    lowered = value.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    if _NUMBER.match(value):
        return float(value) if "." in value else int(value)
    return value


@dataclass(frozen=True)
class CsvLayout:
    delimiter: str
    email_index: int
    subscribed_index: int | None
    data_columns: tuple[tuple[int, str], ...]


def _file_error(message: str, code: str = "custom") -> ValidationFailed:
    return ValidationFailed.field("file", message, code)


def _layout(header: list[str], delimiter: str) -> CsvLayout:
    email_index = subscribed_index = None
    data_columns = []
    for index, raw in enumerate(header):
        name = raw.strip()
        if name.lower() == "email" and email_index is None:
            email_index = index
        elif name.lower() == "subscribed" and subscribed_index is None:
            subscribed_index = index
        elif name:
            data_columns.append((index, name))
    if email_index is None:
        raise _file_error("The CSV file needs an email column")
    return CsvLayout(delimiter, email_index, subscribed_index, tuple(data_columns))


def inspect_csv(content: bytes) -> CsvLayout:
    """Check an upload before accepting it: UTF-8 text, a header with an email column, at least one data row."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _file_error("The file is not a UTF-8 CSV file", "invalid_string") from None
    if "\x00" in text:
        raise _file_error("The file is not a CSV file", "invalid_string")
    lines = text.lstrip("\r\n").splitlines()
    if not lines or not text.strip():
        raise _file_error("The file is empty", "too_small")
    first = lines[0]
    delimiter = ";" if first.count(";") > first.count(",") else ","
    try:
        header = next(csv.reader([first], delimiter=delimiter))
    except csv.Error:
        raise _file_error("The file is not a CSV file", "invalid_string") from None
    layout = _layout(header, delimiter)
    if not any(line.strip() for line in lines[1:]):
        raise _file_error("The CSV file has no rows after the header", "too_small")
    return layout


def contact_import_start(*, project: Project, upload) -> Job:
    """Accept an upload: size (413), shape (422), then a job whose task runs after commit."""
    from contacts.tasks import contact_import_task

    max_bytes = settings.CONTACT_IMPORT_MAX_BYTES
    if upload.size > max_bytes:
        raise ServiceError(
            f"The CSV file is larger than {max_bytes // (1024 * 1024)} MB",
            code=ErrorCode.PAYLOAD_TOO_LARGE,
            status=413,
            details={"maxBytes": max_bytes, "size": upload.size},
        )
    content = upload.read()
    inspect_csv(content)
    job = job_create(project=project, type=JOB_TYPE, params={"filename": upload.name[:255], "size": len(content)})
    ImportUpload.objects.create(job=job, content=content, filename=upload.name[:255])
    after_commit(
        lambda: contact_import_task.delay(str(job.id)),
        what=f"publish import job {job.id} (the stalled-jobs sweeper publishes it)",
    )
    return job


@dataclass
class _Row:
    number: int
    email: str
    subscribed: bool | None
    data: dict


@dataclass(frozen=True)
class _Failure:
    number: int
    email: str | None
    error: str


@dataclass
class _Totals:
    total: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    failed: int = 0
    errors: list = field(default_factory=list)

    def fail(self, failure: _Failure) -> None:
        self.failed += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append({"row": failure.number, "email": failure.email or None, "error": failure.error})

    def plus(self, created: int, updated: int, unchanged: int) -> "_Totals":
        return replace(
            self,
            created=self.created + created,
            updated=self.updated + updated,
            unchanged=self.unchanged + unchanged,
            errors=list(self.errors),
        )

    def result(self) -> dict:
        return {
            "totalRows": self.total,
            "successCount": self.created + self.updated + self.unchanged,
            "createdCount": self.created,
            "updatedCount": self.updated,
            "unchangedCount": self.unchanged,
            "failureCount": self.failed,
            "errors": self.errors,
        }


def _apply_batch(project: Project, rows: list[_Row], totals: _Totals, checkpoint) -> _Totals:
    """Upsert one batch (one SELECT, one INSERT, one UPDATE, and one UPDATE + INSERT per subscription direction) and
    record the checkpoint after it in the same transaction; returns the totals including it."""
    for attempt in range(2):
        try:
            with transaction.atomic():
                created, updated, unchanged, failures = _upsert_rows(project, rows)
                after = totals.plus(created, updated, unchanged)
                for failure in failures:
                    after.fail(failure)
                checkpoint(after)
            return after
        except IntegrityError:
            # A contact of this batch was created concurrently (by /v1/track): run the batch again as updates.
            if attempt:
                raise
    raise AssertionError("unreachable")


def _upsert_rows(project: Project, rows: list[_Row]) -> tuple[int, int, int, list[_Failure]]:
    now = timezone.now()
    existing = {
        c.email: c
        for c in Contact.objects.select_for_update().filter(project=project, email__in=[r.email for r in rows])
    }
    new, data_changed, subscribe, unsubscribe, failures = [], [], [], [], []
    for row in rows:
        changes = data_rules(row.data)
        contact = existing.get(row.email)
        if contact is None:
            subscribed = True if row.subscribed is None else row.subscribed
            new.append(
                Contact(
                    project=project,
                    email=row.email,
                    subscribed=subscribed,
                    data=changes.apply({}),
                    created_at=now,
                    updated_at=now,
                )
            )
            continue
        try:
            new_data = changes.apply(contact.data)
        except ValidationFailed as refused:
            failures.append(_Failure(row.number, row.email, refused.errors[0]["message"]))
            continue
        if new_data != contact.data:
            contact.data, contact.updated_at = new_data, now
            data_changed.append(contact)
        if row.subscribed is not None and row.subscribed != contact.subscribed:
            (subscribe if row.subscribed else unsubscribe).append(contact)
    Contact.objects.bulk_create(new)
    Contact.objects.bulk_update(data_changed, ["data", "updated_at"])
    contacts_subscription_bulk_set(project=project, contacts=subscribe, subscribed=True, source="import")
    contacts_subscription_bulk_set(project=project, contacts=unsubscribe, subscribed=False, source="import")
    updated = len({c.id for c in [*data_changed, *subscribe, *unsubscribe]})
    return len(new), updated, len(existing) - updated - len(failures), failures


def _parse_subscribed(value: str) -> tuple[bool | None, bool]:
    lowered = value.strip().lower()
    if not lowered:
        return None, True
    if lowered in _TRUE:
        return True, True
    if lowered in _FALSE:
        return False, True
    return None, False


def _records(reader):
    """(record number, cells) with the header as record 1; (number, None) for a record the parser rejects, so
    that one broken row does not abort the import."""
    number = 1
    while True:
        number += 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error:
            cells = None
        yield number, cells


def _parsed(content: bytes, layout: CsvLayout):
    """Every non-blank record of the file in order, as a `_Row` to upsert or a `_Failure` to report."""
    stream = io.TextIOWrapper(io.BytesIO(content), encoding="utf-8-sig", newline="")
    reader = csv.reader(stream, delimiter=layout.delimiter)
    next(reader)  # the header, already inspected
    seen = set()
    for number, cells in _records(reader):
        if cells is None:
            yield _Failure(number, None, "Malformed row (a cell is larger than 128 KB or quoting is broken)")
            continue
        if not any(cell.strip() for cell in cells):
            continue
        raw_email = cells[layout.email_index].strip() if layout.email_index < len(cells) else ""
        email = normalize_email(raw_email)
        try:
            validate_email(email)
        except DjangoValidationError:
            yield _Failure(number, raw_email, "Invalid email" if raw_email else "Missing email")
            continue
        if email in seen:
            yield _Failure(number, email, "Duplicate email in file")
            continue
        subscribed, ok = None, True
        if layout.subscribed_index is not None and layout.subscribed_index < len(cells):
            subscribed, ok = _parse_subscribed(cells[layout.subscribed_index])
        if not ok:
            yield _Failure(number, email, "Invalid subscribed value (use true/false, 1/0 or yes/no)")
            continue
        seen.add(email)
        data = {}
        for index, key in layout.data_columns:
            if index < len(cells) and (value := cells[index].strip()):
                data[key] = typed_cell(value)
        if data_size(data) > MAX_DATA_BYTES:
            yield _Failure(number, email, f"Row data is larger than {MAX_DATA_BYTES // 1024} KB")
            continue
        yield _Row(number, email, subscribed, data)


def _run_import(job: Job, report) -> dict:
    upload = ImportUpload.objects.get(job=job)
    content = bytes(upload.content)
    project = job.project
    layout = inspect_csv(content)
    estimated_rows = max(1, content.count(b"\n"))
    batch_size = settings.CONTACT_IMPORT_BATCH_SIZE
    # A job taken over from a lost worker resumes after the last record its committed batches covered.
    done = job.checkpoint.get("record", 1)
    totals = _Totals(**job.checkpoint["totals"]) if "totals" in job.checkpoint else _Totals()
    batch = []

    def commit(rows: list[_Row]) -> _Totals:
        last = rows[-1].number
        return _apply_batch(
            project,
            rows,
            totals,
            lambda after: report(
                min(99, after.total * 100 // estimated_rows),
                after.result(),
                checkpoint={"record": last, "totals": asdict(after)},
            ),
        )

    for item in _parsed(content, layout):
        if item.number <= done:
            continue
        totals.total += 1
        if isinstance(item, _Failure):
            totals.fail(item)
            continue
        batch.append(item)
        if len(batch) >= batch_size:
            totals, batch = commit(batch), []
    if batch:
        totals = commit(batch)
    return totals.result()


def contact_import_run(*, job_id) -> Job | None:
    try:
        job = job_run(job_id, _run_import)
    except Exception:
        ImportUpload.objects.filter(job_id=job_id).delete()  # the job failed
        raise
    # Kept while the job may still be resumed: a task that found the job running elsewhere (None) leaves it.
    if job is not None:
        ImportUpload.objects.filter(job_id=job_id).delete()
    return job


def contact_import_preview(*, content: bytes) -> dict:
    """What the file itself would give an import, writing nothing (`import_contacts --dry-run`): its checks at
    upload (raised as at upload), then every row parsed by the import's own rules. Rows refused only by what is
    stored (data that would grow past the limit on an existing contact) show up in the real run alone."""
    layout = inspect_csv(content)
    totals = _Totals()
    valid = 0
    for item in _parsed(content, layout):
        totals.total += 1
        if isinstance(item, _Failure):
            totals.fail(item)
        else:
            valid += 1
    return {"totalRows": totals.total, "validCount": valid, "failureCount": totals.failed, "errors": totals.errors}

"""Retention: each rule on real rows, the hourly beat task, and `manage.py purge` (dry run, a second run that
finds nothing, a project's scope)."""

import json
import uuid
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from accounts.models import IdempotencyRecord, Job
from config.retention import RULES, retention_apply
from config.schedule import BEAT_SCHEDULE
from config.tasks import apply_retention_task
from contacts.models import Contact, Event, ImportUpload
from messaging.models import Email, WebhookReceipt

DAY = timedelta(days=1)


def ago(delta: timedelta):
    return timezone.now() - delta


def purge(*args) -> dict:
    out = StringIO()
    call_command("purge", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def email(persona, *, created: timedelta, status=Email.Status.SENT, html="<p>hi</p>") -> Email:
    return Email.objects.create(
        project=persona.project,
        to_email="x@example.test",
        from_email="a@alice.test",
        subject="S",
        html=html,
        status=status,
        created_at=ago(created),
    )


def event(persona, *, created: timedelta) -> Event:
    contact, _ = Contact.objects.get_or_create(project=persona.project, email="ev@example.test")
    return Event.objects.create(project=persona.project, contact=contact, name="visited", created_at=ago(created))


def job(persona, *, status=Job.Status.COMPLETED, finished: timedelta | None = None, upload=False) -> Job:
    row = Job.objects.create(project=persona.project, type="CONTACT_IMPORT", status=status)
    when = ago(finished) if finished is not None else None
    Job.objects.filter(pk=row.pk).update(created_at=when or timezone.now(), finished_at=when)
    if upload:
        ImportUpload.objects.create(job=row, content=b"email\na@example.test\n", filename="a.csv")
    return row


def receipt(*, received: timedelta, project=None) -> WebhookReceipt:
    return WebhookReceipt.objects.create(
        provider="generic",
        event_id=str(uuid.uuid4()),
        event_type="delivered",
        received_at=ago(received),
        project=project,
    )


def key(persona, *, expires: timedelta) -> IdempotencyRecord:
    return IdempotencyRecord.objects.create(
        project=persona.project, key=str(uuid.uuid4()), method="POST", path="/v1/send", expires_at=ago(expires)
    )


@pytest.fixture
def aged(project):
    """Rows of every kind, some past their retention and some not."""
    return {
        "old_body": email(project, created=91 * DAY),
        "old_queued": email(project, created=91 * DAY, status=Email.Status.QUEUED),
        "new_body": email(project, created=89 * DAY),
        "old_receipt": receipt(received=8 * DAY, project=project.project),
        "new_receipt": receipt(received=6 * DAY, project=project.project),
        "expired_key": key(project, expires=timedelta(minutes=1)),
        "live_key": key(project, expires=-timedelta(hours=1)),
        "old_job": job(project, finished=31 * DAY, upload=True),
        "new_job": job(project, finished=29 * DAY),
        "old_running": job(project, status=Job.Status.PROCESSING, finished=None),
        "failed_with_upload": job(project, status=Job.Status.FAILED, finished=timedelta(hours=1), upload=True),
        "old_event": event(project, created=400 * DAY),
    }


def test_each_rule_removes_only_what_is_past_its_age(aged):
    assert purge() == {
        "dryRun": False,
        "removed": {
            "email-bodies": 1,
            "webhook-receipts": 1,
            "idempotency-keys": 1,
            "jobs": 1,
            "import-uploads": 1,
            "events": None,
            "emails": None,
        },
    }
    bodies = dict(Email.objects.values_list("id", "html"))
    assert bodies[aged["old_body"].id] == ""
    assert bodies[aged["old_queued"].id] == bodies[aged["new_body"].id] == "<p>hi</p>"
    assert list(WebhookReceipt.objects.values_list("id", flat=True)) == [aged["new_receipt"].id]
    assert list(IdempotencyRecord.objects.values_list("id", flat=True)) == [aged["live_key"].id]
    assert set(Job.objects.values_list("id", flat=True)) == {
        aged["new_job"].id,
        aged["old_running"].id,
        aged["failed_with_upload"].id,
    }
    assert not ImportUpload.objects.exists()  # the old job's went with it, the failed job's on its own
    assert Event.objects.filter(pk=aged["old_event"].pk).exists()  # events are kept unless turned on
    assert purge()["removed"] == {rule.name: 0 for rule in RULES} | {"events": None, "emails": None}


def test_a_dry_run_counts_and_changes_nothing(aged):
    assert purge("--dry-run")["removed"]["email-bodies"] == 1
    assert purge("--dry-run")["removed"] == purge("--dry-run")["removed"]
    assert Email.objects.get(pk=aged["old_body"].pk).html == "<p>hi</p>"
    assert WebhookReceipt.objects.count() == 2 and IdempotencyRecord.objects.count() == 2
    assert Job.objects.count() == 4 and ImportUpload.objects.count() == 2


def test_events_and_email_rows_go_when_turned_on(project, settings):
    settings.EVENT_RETENTION_DAYS = settings.EMAIL_RETENTION_DAYS = 365
    old_event, new_event = event(project, created=366 * DAY), event(project, created=364 * DAY)
    old_email, new_email = email(project, created=366 * DAY), email(project, created=364 * DAY)
    old_queued = email(project, created=366 * DAY, status=Email.Status.QUEUED)
    removed = purge()["removed"]
    assert (removed["events"], removed["emails"]) == (1, 1)
    assert list(Event.objects.values_list("id", flat=True)) == [new_event.id]
    assert set(Email.objects.values_list("id", flat=True)) == {new_email.id, old_queued.id}
    assert not Event.objects.filter(pk=old_event.pk).exists() and not Email.objects.filter(pk=old_email.pk).exists()


def test_a_project_scope_leaves_other_projects_alone(project, other_project, settings):
    settings.EVENT_RETENTION_DAYS = 1
    mine, theirs = email(project, created=91 * DAY), email(other_project, created=91 * DAY)
    my_event, their_event = event(project, created=2 * DAY), event(other_project, created=2 * DAY)
    removed = purge("--project", str(project.id))["removed"]
    assert (removed["email-bodies"], removed["events"]) == (1, 1)
    assert Email.objects.get(pk=mine.pk).html == "" and Email.objects.get(pk=theirs.pk).html == "<p>hi</p>"
    assert not Event.objects.filter(pk=my_event.pk).exists() and Event.objects.filter(pk=their_event.pk).exists()


def test_an_unknown_project_is_refused(db):
    with pytest.raises(CommandError, match=r'^Project "nope" not found$') as refused:
        call_command("purge", "--project", "nope")
    assert refused.value.returncode == 1


def test_the_beat_run_works_in_bounded_batches(project, settings):
    settings.RETENTION_BATCH_SIZE, settings.RETENTION_MAX_BATCHES = 2, 2
    for _ in range(5):
        email(project, created=91 * DAY)
    assert apply_retention_task.apply().get()["email-bodies"] == 4  # two batches of two
    assert retention_apply()["email-bodies"] == 1  # the command's run goes on until nothing is left
    entry = BEAT_SCHEDULE["apply-retention"]
    assert entry["task"] == "config.tasks.apply_retention_task" and entry["options"]["expires"] < 3600


def test_text_output_names_each_rule(aged):
    out = StringIO()
    call_command("purge", "--dry-run", stdout=out)
    text = out.getvalue()
    assert "email-bodies: 1 rendered email bodies emptied (older than 90 days) [dry run]" in text
    assert "events: off (EVENT_RETENTION_DAYS=0)" in text
    assert text.rstrip().endswith("row(s) would be removed or emptied")


def test_progress_goes_to_stderr_only_when_asked(db):
    out, err = StringIO(), StringIO()
    call_command("purge", "--json", stdout=out, stderr=err)
    assert err.getvalue() == ""  # not a terminal
    out, err = StringIO(), StringIO()
    call_command("purge", "--json", "--progress", stdout=out, stderr=err)
    assert "retention" in err.getvalue() and json.loads(out.getvalue())["dryRun"] is False

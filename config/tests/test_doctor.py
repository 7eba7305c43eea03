"""`doctor`: each component checked for real (database, Redis, broker, beat, an SMTP server and a DNS server on
loopback), components not configured reported without failing, and stuck work found."""

import json
import shutil
import sys
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.models import F
from django.db.models.functions import Now
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from accounts.models import Job
from campaigns.models import Campaign, CampaignStatus
from config.doctor import queue_depths
from config.leases import BEAT_LEASE, lease_release, lease_take
from config.models import Lease
from config.queues import TASK_ROUTES
from config.schedule import BEAT_SCHEDULE
from config.tests.processes import free_port, redis_server
from contacts.models import Contact
from domains.dns import clear_local_cache
from domains.tests.dnsserver import DnsServer, SilentServer
from messaging.models import Email
from messaging.smtp.tests.servers import running
from workflows.models import ExecutionStatus, Workflow, WorkflowExecution

pytestmark = pytest.mark.django_db


@pytest.fixture
def dns_server(settings):
    server = DnsServer()
    server.zone[("example.com", "A")] = ["192.0.2.1"]
    settings.DNS_NAMESERVERS = [server.address]
    clear_local_cache()
    yield server
    server.stop()
    clear_local_cache()


@pytest.fixture
def beat_ran():
    every = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.MINUTES)
    for name, entry in BEAT_SCHEDULE.items():
        PeriodicTask.objects.create(name=name, task=entry["task"], interval=every, last_run_at=timezone.now())


def doctor(*args) -> tuple[int, dict]:
    out = StringIO()
    try:
        call_command("doctor", "--json", *args, stdout=out)
        status = 0
    except CommandError as exc:
        status = exc.returncode
    report = json.loads(out.getvalue())
    return status, {check["name"]: check for check in report["checks"]}


def states(checks: dict) -> dict:
    return {name: check["state"] for name, check in checks.items()}


def test_a_healthy_installation(project, beat_ran, smtp_sink, dns_server, settings):
    status, checks = doctor()
    assert status == 0, checks
    assert states(checks) == {
        "database": "ok",
        "migrations": "ok",
        "redis": "not configured" if "locmem" in settings.CACHES["default"]["BACKEND"] else "ok",
        "broker": "not configured" if settings.CELERY_BROKER_URL.startswith("filesystem") else "ok",
        "beat": "ok",
        "smtp": "ok",
        "smtp submission": "not configured",
        "smtp inbound": "not configured",
        "dns": "ok",
        "queues": "info",
        "stuck emails": "ok",
        "stuck jobs": "ok",
        "overdue campaigns": "ok",
        "overdue workflow resumes": "ok",
        **{
            f"partitions {table}": "ok" if connection.vendor == "postgresql" else "not configured"
            for table in ("contacts_event", "messaging_email")
        },
    }
    assert "answers EHLO" in checks["smtp"]["detail"]
    assert dns_server.queries  # through the configured resolver


def test_not_configured_components_never_fail(project, beat_ran, dns_server, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    status, checks = doctor()
    assert status == 0
    assert checks["smtp"]["state"] == checks["redis"]["state"] == "not configured"


def test_each_configured_smtp_listener_must_answer_ehlo(project, beat_ran, smtp_sink, dns_server, settings):
    settings.SMTP_INBOUND_LISTEN = f"127.0.0.1:{free_port()}"  # nothing listens there
    with running(SMTP_ALLOW_PLAINTEXT_AUTH=True) as server:
        settings.SMTP_SUBMISSION_LISTEN = f"0.0.0.0:{server.port}"
        status, checks = doctor()
    assert status == 2
    assert checks["smtp submission"] == {
        "name": "smtp submission",
        "state": "ok",
        "detail": f"0.0.0.0:{server.port} answers EHLO",
        "advice": "",
    }
    assert checks["smtp inbound"]["state"] == "problem"
    assert "ConnectionRefusedError" in checks["smtp inbound"]["detail"]


def test_redis_is_checked_when_it_is_the_cache(project, beat_ran, smtp_sink, dns_server, redis_cache):
    status, checks = doctor()
    assert status == 0 and checks["redis"]["state"] == "ok"
    assert "delivery handover list" in checks["queues"]["detail"]


@pytest.fixture
def broker_url():
    """Point the Celery app at a Redis broker URL for one test (its configuration is read once, not from settings)."""
    from config.celery import app

    original = app.conf.broker_url, app.conf.broker_write_url
    yield lambda url: setattr(app.conf, "broker_url", url) or setattr(app.conf, "broker_write_url", url)
    app.conf.broker_url, app.conf.broker_write_url = original


def test_a_broker_that_does_not_answer_is_a_problem(project, beat_ran, smtp_sink, dns_server, settings, broker_url):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    broker_url(settings.CELERY_BROKER_URL)
    status, checks = doctor()
    assert status == 2 and checks["broker"]["state"] == "problem"
    assert "CELERY_BROKER_URL" in checks["broker"]["advice"]


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs the redis-server program")
def test_the_broker_depth_counts_the_tasks_waiting_in_every_queue(settings, broker_url, real_broker):
    from config.celery import app

    with redis_server() as redis:
        settings.CELERY_BROKER_URL = redis.url(1)
        broker_url(settings.CELERY_BROKER_URL)
        # One task of each queue, and a campaign's delivery at its lower priority (a list of its own on Redis).
        one_per_queue = {route["queue"]: name for name, route in TASK_ROUTES.items()}
        with app.connection_for_write(settings.CELERY_BROKER_URL) as connection:
            for name in one_per_queue.values():
                app.send_task(name, args=[[]], connection=connection)
            app.send_task("messaging.tasks.deliver_emails_task", args=[[]], priority=9, connection=connection)
        assert queue_depths()["broker"] == len(one_per_queue) + 1 == 5


def test_a_broker_transport_missing_a_library_says_to_install_the_requirements(
    project, beat_ran, smtp_sink, dns_server, settings, broker_url, monkeypatch
):
    """An install without a library the Redis transport imports (kombu's imports `packaging`) is told apart from a
    broker that does not answer: the fix is the install, not the broker."""
    import kombu.transport

    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"
    broker_url(settings.CELERY_BROKER_URL)
    monkeypatch.setattr(kombu.transport, "_transport_cache", {})
    monkeypatch.delitem(sys.modules, "kombu.transport.redis", raising=False)
    monkeypatch.setitem(sys.modules, "packaging.version", None)  # as if packaging were not installed
    status, checks = doctor()
    assert status == 2 and checks["broker"]["state"] == "problem"
    assert checks["broker"]["detail"].startswith("its transport cannot be imported: ModuleNotFoundError")
    assert "packaging.version" in checks["broker"]["detail"]
    assert "pip install -r requirements.txt" in checks["broker"]["advice"]


def test_stuck_work_and_dead_components_are_problems(project, smtp_sink, settings):
    silent = SilentServer()
    settings.DNS_NAMESERVERS, settings.DNS_TIMEOUT_SECONDS = [silent.address], 0.3
    settings.EMAIL_PORT = 1  # nothing listens there
    long_ago = timezone.now() - timedelta(hours=1)
    contact = Contact.objects.create(project=project.project, email="ann@example.test")
    Email.objects.create(
        project=project.project,
        to_email="a@example.test",
        from_email="a@alice.test",
        subject="S",
        status=Email.Status.SENDING,
        claimed_at=long_ago,
    )
    Job.objects.create(
        project=project.project, type="CONTACT_IMPORT", status=Job.Status.PROCESSING, heartbeat_at=long_ago
    )
    Campaign.objects.create(
        project=project.project,
        name="C",
        subject="S",
        body="B",
        from_email="a@alice.test",
        status=CampaignStatus.SCHEDULED,
        scheduled_for=long_ago,
    )
    workflow = Workflow.objects.create(project=project.project, name="W")
    WorkflowExecution.objects.create(
        project=project.project, workflow=workflow, contact=contact, status=ExecutionStatus.WAITING, resume_at=long_ago
    )
    try:
        status, checks = doctor()
    finally:
        silent.stop()
    assert status == 2
    problems = {name for name, check in checks.items() if check["state"] == "problem"}
    assert problems == {
        "beat",
        "smtp",
        "dns",
        "stuck emails",
        "stuck jobs",
        "overdue campaigns",
        "overdue workflow resumes",
    }
    assert checks["beat"]["detail"] == "celery-beat has never run against this database"
    assert all(checks[name]["advice"] for name in problems)
    assert checks["stuck emails"]["detail"] == "1 email(s) SENDING past their lease"


def test_a_late_beat_entry_is_named(project, beat_ran, smtp_sink, dns_server):
    PeriodicTask.objects.filter(name="sweep-emails").update(last_run_at=timezone.now() - timedelta(minutes=30))
    PeriodicTask.objects.filter(name="apply-retention").update(enabled=False, last_run_at=None)  # paused: not late
    status, checks = doctor()
    assert status == 2 and checks["beat"]["detail"].startswith("late: sweep-emails (last ")


def test_entries_beat_has_just_written_are_not_late_before_their_first_interval(project, smtp_sink, dns_server):
    # As a beat started a minute ago leaves them: every entry written, none of its first runs recorded yet.
    every = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.MINUTES)
    for name, entry in BEAT_SCHEDULE.items():
        PeriodicTask.objects.create(name=name, task=entry["task"], interval=every)
    PeriodicTask.objects.update(date_changed=timezone.now() - timedelta(minutes=1))
    status, checks = doctor()
    assert (status, checks["beat"]["state"]) == (0, "ok")
    # Written long ago and still never run: late, and named so.
    PeriodicTask.objects.filter(name="sweep-emails").update(date_changed=timezone.now() - timedelta(hours=2))
    status, checks = doctor()
    assert status == 2 and checks["beat"]["detail"] == "late: sweep-emails (never)"


def test_text_output_gives_advice(project, smtp_sink, dns_server):
    out = StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("doctor", stdout=out)
    assert failed.value.returncode == 2
    text = out.getvalue()
    assert "beat" in text and "PROBLEM" in text and "-> Start `celery -A config beat`" in text
    assert text.rstrip().endswith("1 problem(s)")


def test_the_beat_holding_the_lease_is_named(project, beat_ran, smtp_sink, dns_server):
    Lease.objects.create(name=BEAT_LEASE)  # as a first take leaves it when its process dies at once
    status, checks = doctor()
    assert (status, checks["beat"]["detail"]) == (
        0,
        f"{len(BEAT_SCHEDULE)} periodic entries ran on time; no beat has taken the lease yet",
    )
    lease_take(name=BEAT_LEASE, holder="beat-host-1:4321:abcd", seconds=30)
    status, checks = doctor()
    assert (status, checks["beat"]["state"]) == (0, "ok")
    assert "the lease is held by beat-host-1 (pid 4321) since " in checks["beat"]["detail"]


def expired(ago: timedelta) -> None:
    """The lease as its holder's death leaves it: last renewed a lease's time (30 s) before it expired, `ago`."""
    Lease.objects.update(expires_at=Now() - ago, renewed_at=Now() - ago - timedelta(seconds=30))


def test_a_lease_expired_with_no_beat_taking_it_is_a_problem(project, beat_ran, smtp_sink, dns_server, settings):
    lease_take(name=BEAT_LEASE, holder="beat-host-1:4321:abcd", seconds=30)
    # Expired a moment ago: a standby takes it within its retry interval, nothing to report yet.
    expired(timedelta(seconds=settings.BEAT_LEASE_RETRY_SECONDS))
    status, checks = doctor()
    assert (status, checks["beat"]["state"]) == (0, "ok")
    # Expired for longer than any standby would take to take it: no beat runs, though the entries are not late yet.
    expired(timedelta(minutes=3))
    status, checks = doctor()
    assert (status, checks["beat"]["state"]) == (2, "problem")
    assert checks["beat"]["detail"] == (
        "the lease expired 0:03:00 ago and no beat took it (last held by beat-host-1 (pid 4321))"
    )
    assert "celery -A config beat" in checks["beat"]["advice"]


def test_a_lease_released_by_a_stopped_beat_is_told_from_one_that_expired(project, beat_ran, smtp_sink, dns_server):
    lease_take(name=BEAT_LEASE, holder="beat-host-1:4321:abcd", seconds=30)
    assert lease_release(name=BEAT_LEASE, holder="beat-host-1:4321:abcd")
    status, checks = doctor()
    assert (status, checks["beat"]["state"]) == (0, "ok")
    assert checks["beat"]["detail"].endswith(
        "the lease of beat-host-1 (pid 4321) was released 0 s ago: another beat, if one runs, takes it within seconds"
    )
    Lease.objects.update(
        expires_at=F("expires_at") - timedelta(minutes=3), renewed_at=F("renewed_at") - timedelta(minutes=3)
    )
    status, checks = doctor()
    assert (status, checks["beat"]["detail"]) == (
        2,
        "the lease was released 0:03:00 ago and no beat took it (last held by beat-host-1 (pid 4321))",
    )

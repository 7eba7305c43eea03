"""`manage.py doctor`: every component and every kind of stuck work, each judged with what to do about it
(docs/operations.md "Runbook").

A check returns a `Finding`: `ok`, `problem` (the command then exits 2), `not configured` (a component the
installation does not use, such as Redis on the embedded defaults: never a failure) or `info` (figures only).
"""

import os
import smtplib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.cache import caches
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.db.models import QuerySet
from django.utils import timezone

from accounts.jobs.services import jobs_stalled
from accounts.models import Job
from campaigns.models import Campaign, CampaignStatus
from config import probes
from config.leases import BEAT_LEASE, lease_get
from config.queues import QUEUES as BROKER_QUEUES
from config.retention import PARTITIONED_TABLES
from config.schedule import BEAT_SCHEDULE
from config.views import email_provider_name
from core.cache import redis_client
from core.counts import capped_count
from core.partitions import is_partitioned, month_start, partitions
from domains import dns
from messaging.models import Email
from messaging.sending.transport import Transport
from workflows.models import ExecutionStatus, WorkflowExecution

OK, PROBLEM, NOT_CONFIGURED, INFO = "ok", "problem", "not configured", "info"
# The broker lists kombu keeps for a queue on Redis: one per priority step in use (0, 3, 6, 9).
_PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")
# A periodic entry is late once it missed two of its runs, and never before 5 minutes (a beat restarting or taking
# over, or a queue that waits, delays a run without anything being wrong).
_BEAT_SLACK = timedelta(minutes=5)
# Scheduled campaigns start within a minute of their time: five minutes late means nothing is starting them.
_CAMPAIGN_GRACE = timedelta(minutes=5)
_RESUME_GRACE = timedelta(minutes=5)


@dataclass
class Finding:
    name: str
    state: str
    detail: str
    advice: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def _probe(name: str, probe: Callable[[], None], advice: str, detail: str) -> Finding:
    try:
        probe()
    except Exception as exc:
        return Finding(name, PROBLEM, f"{type(exc).__name__}: {exc}"[:500], advice)
    return Finding(name, OK, detail)


def check_database() -> Finding:
    vendor = connections[DEFAULT_DB_ALIAS].vendor
    return _probe(
        "database",
        probes.database,
        "Check DATABASE_URL and that the server accepts connections from this host (pg_isready).",
        f"{vendor} answers",
    )


def check_redis() -> Finding:
    client = redis_client(caches["default"])
    if client is None:
        return Finding("redis", NOT_CONFIGURED, "the cache is local memory (no CACHE_URL): fine for one host")
    return _probe(
        "redis",
        client.ping,
        "Check CACHE_URL and that redis-server runs (redis-cli ping). Requests still pass (the rate limit fails "
        "open); opens, clicks and the delivery handover wait.",
        "the cache answers",
    )


def check_broker() -> Finding:
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
        if not os.access(folder, os.W_OK):
            return Finding("broker", PROBLEM, f"{folder} is not writable", "Give the service's user write access.")
        return Finding("broker", NOT_CONFIGURED, f"embedded filesystem broker in {folder} (one host only)")
    try:
        probes.broker_transport()
    except ImportError as exc:
        return Finding(
            "broker",
            PROBLEM,
            f"its transport cannot be imported: {type(exc).__name__}: {exc}"[:500],
            "Install the runtime requirements whole into the service's virtualenv: pip install -r requirements.txt.",
        )
    return _probe(
        "broker",
        probes.broker,
        "Check CELERY_BROKER_URL and that the broker runs. Accepted email stays QUEUED and is published by the "
        "sweeper once it is back.",
        "the broker accepts connections",
    )


def _beat_lease() -> tuple[bool, str]:
    """Whether the beat lease is as it should be, and who holds it. Judged on the database's clock, as the beats
    judge it; an expired lease is a problem only once a standby would have taken it (it tries every
    BEAT_LEASE_RETRY_SECONDS)."""
    lease = lease_get(name=BEAT_LEASE)
    if lease is None or lease.expires_at is None:
        return True, "no beat has taken the lease yet"
    who = f"{lease.host} (pid {lease.pid})"
    if not lease.expired:
        return True, f"the lease is held by {who} since {lease.acquired_at:%Y-%m-%d %H:%M:%S} UTC"
    ago = (lease.now - lease.expires_at).total_seconds()
    # A beat that stops releases its lease (config.leases.lease_release); one that dies lets it expire.
    ended = "was released" if lease.renewed_at is not None and lease.expires_at <= lease.renewed_at else "expired"
    if ago <= 2 * settings.BEAT_LEASE_RETRY_SECONDS:
        return True, f"the lease of {who} {ended} {ago:.0f} s ago: another beat, if one runs, takes it within seconds"
    return False, f"the lease {ended} {timedelta(seconds=round(ago))} ago and no beat took it (last held by {who})"


def check_beat(now=None) -> Finding:
    """The last run django-celery-beat recorded for each entry of the schedule, and the lease that makes one beat
    the scheduler."""
    from django_celery_beat.models import PeriodicTask

    now = now or timezone.now()
    known = {task.name: task for task in PeriodicTask.objects.filter(name__in=list(BEAT_SCHEDULE))}
    advice = (
        "Start `celery -A config beat` (deploy/systemd/herald-beat.service), one per host at will: the one holding "
        "the lease schedules. Without one no sweeper, retention, domain check or scheduled campaign runs."
    )
    if not known:
        return Finding("beat", PROBLEM, "celery-beat has never run against this database", advice)
    late = []
    for name, entry in BEAT_SCHEDULE.items():
        task = known.get(name)
        if task is not None and not task.enabled:
            continue  # paused by an operator in the admin
        interval = entry["schedule"]
        last = task.last_run_at if task else None
        # An entry that has not run yet is measured from when beat wrote it (at its start), not taken as late: its
        # first run comes an interval after that.
        since = last or (task.date_changed if task else None)
        if since is None or now - since > max(2 * interval, interval + _BEAT_SLACK):
            late.append(f"{name} ({'never' if last is None else f'last {last:%Y-%m-%d %H:%M} UTC'})")
    lease_fine, lease = _beat_lease()
    if late:
        late_entries = "late: " + ", ".join(late)
        return Finding("beat", PROBLEM, late_entries if lease_fine else f"{late_entries}; {lease}", advice)
    if not lease_fine:
        return Finding("beat", PROBLEM, lease, advice)
    return Finding("beat", OK, f"{len(known)} periodic entries ran on time; {lease}")


def check_smtp() -> Finding:
    provider = email_provider_name(settings.EMAIL_BACKEND)
    if provider != "smtp":
        what = f"mail goes to files in {settings.EMAIL_FILE_PATH}" if provider == "file" else f"mail goes to {provider}"
        return Finding("smtp", NOT_CONFIGURED, f"{what} (EMAIL_URL), no SMTP server to greet")

    def ehlo() -> None:
        with Transport() as transport:
            code, answer = transport.connection.connection.ehlo()
            if code != 250:
                raise smtplib.SMTPResponseException(code, answer)

    return _probe(
        "smtp",
        ehlo,
        "Check EMAIL_URL (host, port, TLS, credentials) and that the relay accepts this host. Mail waits QUEUED and "
        "is retried with backoff meanwhile.",
        f"{settings.EMAIL_HOST}:{settings.EMAIL_PORT} answers EHLO",
    )


def check_smtp_listeners() -> list[Finding]:
    """Each SMTP listener of `manage.py smtp_server` that the settings turn on answers an EHLO where it listens (a
    wildcard address is asked on loopback)."""
    findings = []
    for name, address in (("submission", settings.SMTP_SUBMISSION_LISTEN), ("inbound", settings.SMTP_INBOUND_LISTEN)):
        check = f"smtp {name}"
        if not address:
            findings.append(Finding(check, NOT_CONFIGURED, f"SMTP_{name.upper()}_LISTEN is empty: the listener is off"))
            continue
        host, _, port = address.rpartition(":")
        host = {"0.0.0.0": "127.0.0.1", "[::]": "::1", "": "127.0.0.1"}.get(host, host.strip("[]"))

        def ehlo(host=host, port=port) -> None:
            with smtplib.SMTP(host, int(port), timeout=5) as client:
                code, answer = client.ehlo()
                if code != 250:
                    raise smtplib.SMTPResponseException(code, answer)

        findings.append(
            _probe(
                check,
                ehlo,
                "Start `manage.py smtp_server` (deploy/systemd/herald-smtp.service) or empty the setting; its log "
                "says what it listens on.",
                f"{address} answers EHLO",
            )
        )
    return findings


def check_dns(name: str) -> Finding:
    servers = ", ".join(settings.DNS_NAMESERVERS) or "the system's resolver"
    result = dns.resolve(name, "A", use_cache=False)
    if result.status in dns.TEMPORARY:
        return Finding(
            "dns",
            PROBLEM,
            f"{name} through {servers}: {result.reason}",
            "Check DNS_NAMESERVERS (or /etc/resolv.conf) and that outbound DNS is allowed: domain checks and "
            "/v1/verify depend on it.",
        )
    return Finding("dns", OK, f"{servers} answered for {name} ({result.status})")


def check_migrations() -> Finding:
    connection = connections[DEFAULT_DB_ALIAS]
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        names = ", ".join(f"{migration.app_label}.{migration.name}" for migration, _ in plan[:10])
        return Finding("migrations", PROBLEM, f"{len(plan)} not applied: {names}", "Run `manage.py migrate`.")
    return Finding("migrations", OK, "all applied")


def check_partitions(now=None) -> list[Finding]:
    """Each partitioned table (PostgreSQL, docs/scaling.md "Partitioned history") has this month's partition and
    next month's: without one, the inserts of that month fail."""
    now = now or timezone.now()
    if connections[DEFAULT_DB_ALIAS].vendor != "postgresql":
        return [
            Finding(f"partitions {table}", NOT_CONFIGURED, "a plain table (SQLite)") for table in PARTITIONED_TABLES
        ]
    findings = []
    for table in PARTITIONED_TABLES:
        name = f"partitions {table}"
        if not is_partitioned(table):
            findings.append(Finding(name, PROBLEM, "not partitioned", "Run `manage.py migrate`."))
            continue
        found = partitions(table)
        missing = [m for m in (month_start(now), month_start(now, add=1)) if not any(p.covers(m) for p in found)]
        if missing:
            months = ", ".join(f"{m:%Y-%m}" for m in missing)
            advice = "Is the beat entry `ensure-partitions` running? Run `manage.py doctor` after it has."
            findings.append(Finding(name, PROBLEM, f"no partition for {months}", advice))
            continue
        ahead = max(p.upper for p in found if p.upper is not None)
        oldest = found[0].lower
        since = "from the oldest rows" if oldest is None else f"from {oldest:%Y-%m}"
        findings.append(Finding(name, OK, f"{len(found)} partitions, {since} to {ahead:%Y-%m-%d}"))
    return findings


# What waits, as `queue_depths` names it: (key, how the doctor words a count of it).
QUEUES = {
    "emails_queued": "email(s) queued",
    "jobs_pending": "job(s) pending",
    "delivery_handover": "id(s) in the delivery handover list",
    "bulk_handover": "campaign email id(s) in the bulk handover list",
    "broker": "task(s) waiting in the broker",
}


def queue_depths() -> dict[str, int | str]:
    """How much work waits in each queue the installation has (see QUEUES): a count (capped at COUNT_CAP for the
    tables), or why it could not be read. Shared by the doctor, the admin dashboard and /metrics."""
    depths: dict[str, int | str] = {
        "emails_queued": capped_count(Email.objects.filter(status=Email.Status.QUEUED)),
        "jobs_pending": capped_count(Job.objects.filter(status=Job.Status.PENDING)),
    }
    client = redis_client(caches["default"])
    if client is not None:
        for depth, name in (("delivery_handover", "delivery:waiting"), ("bulk_handover", "delivery:bulk")):
            try:
                depths[depth] = client.llen(caches["default"].make_and_validate_key(name))
            except Exception as exc:
                depths[depth] = f"unreadable ({type(exc).__name__})"
    if settings.CELERY_BROKER_URL.startswith("redis"):
        try:
            from redis import Redis

            lists = Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2).pipeline(transaction=False)
            for queue in BROKER_QUEUES:
                for suffix in _PRIORITY_SUFFIXES:
                    lists.llen(f"{queue}{suffix}")
            depths["broker"] = sum(lists.execute())
        except Exception as exc:
            depths["broker"] = f"unreadable ({type(exc).__name__})"
    elif settings.CELERY_BROKER_URL.startswith("filesystem://"):
        folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
        depths["broker"] = sum(1 for path in folder.glob("*.msg"))
    return depths


def check_queues() -> Finding:
    """How much work waits: emails QUEUED, jobs PENDING, and the broker's and the delivery handover's lists."""
    parts = [
        f"{depth} {QUEUES[name]}" if isinstance(depth, int) else f"{QUEUES[name]}: {depth}"
        for name, depth in queue_depths().items()
    ]
    return Finding("queues", INFO, "; ".join(parts))


# Work the sweepers should have picked up, as `overdue_work` names it: the doctor's name for the check, and what
# a count of it is.
OVERDUE = {
    "stuck_emails": ("stuck emails", "email(s) SENDING past their lease"),
    "stuck_jobs": ("stuck jobs", "job(s) past their lease or never started"),
    "overdue_campaigns": ("overdue campaigns", "scheduled campaign(s) past their time"),
    "overdue_resumes": ("overdue workflow resumes", "workflow execution(s) waiting past their resume time"),
}


def overdue_work(now=None) -> dict[str, QuerySet]:
    """The rows of each kind of overdue work (see OVERDUE), each an indexed range past its grace. Shared by the
    doctor, the admin dashboard and /metrics."""
    now = now or timezone.now()
    lease = timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)
    return {
        # The sweeper runs every minute: a row a minute past its lease is one it missed.
        "stuck_emails": Email.objects.filter(
            status=Email.Status.SENDING, claimed_at__lt=now - lease - timedelta(minutes=1)
        ),
        "stuck_jobs": jobs_stalled(now=now - timedelta(minutes=1)),
        "overdue_campaigns": Campaign.objects.filter(
            status=CampaignStatus.SCHEDULED, scheduled_for__lt=now - _CAMPAIGN_GRACE
        ),
        "overdue_resumes": WorkflowExecution.objects.filter(
            status=ExecutionStatus.WAITING, resume_at__lt=now - _RESUME_GRACE
        ),
    }


def check_stuck(now=None) -> list[Finding]:
    """Work that the sweepers should have picked up: each kind is a problem when any row waits past its grace."""
    workers = (
        "Check that Celery workers consume every queue (deploy/systemd/herald-delivery.service and "
        'herald-worker.service; docs/operations.md "Queues") and that celery-beat runs too.'
    )
    findings = []
    for kind, rows in overdue_work(now).items():
        (name, what), count = OVERDUE[kind], capped_count(rows)
        findings.append(
            Finding(name, PROBLEM, f"{count} {what}", workers) if count else Finding(name, OK, f"no {what}")
        )
    return findings


def _guarded(name: str, check: Callable[[], Finding | list[Finding]]) -> list[Finding]:
    """A check that raised (a database without the tables, a server gone mid-check) is that check's problem: the
    doctor goes on with the others."""
    try:
        found = check()
    except Exception as exc:
        return [
            Finding(name, PROBLEM, f"the check failed: {type(exc).__name__}: {exc}"[:500], "See the other findings.")
        ]
    return found if isinstance(found, list) else [found]


def doctor_run(*, dns_name: str) -> list[Finding]:
    checks = [
        ("database", check_database),
        ("migrations", check_migrations),
        ("redis", check_redis),
        ("broker", check_broker),
        ("beat", check_beat),
        ("smtp", check_smtp),
        ("smtp listeners", check_smtp_listeners),
        ("dns", lambda: check_dns(dns_name)),
        ("queues", check_queues),
        ("stuck work", check_stuck),
        ("partitions", check_partitions),
    ]
    return [finding for name, check in checks for finding in _guarded(name, check)]

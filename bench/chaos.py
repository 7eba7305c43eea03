"""A chaos run: sends, tracks and a contacts import against a served instance while its processes fail, then the
books; then messages submitted over SMTP while `manage.py smtp_server` is killed in the middle of DATA, and their
books (`bench/chaos_smtp.py`); then transactional mail while workflows call webhook receivers that trickle, hang and
redirect, and its delivery latency before and during (`bench/chaos_webhooks.py`).

    python bench/chaos.py [--seconds 40] [--rows 20000] [--phases http,smtp,slow-receivers] [--smtp-seconds 30]
                          [--slow-seconds 30] [--send-rate 10] [--webhook-rate 1]

Everything runs on this machine: PostgreSQL (a fresh database, `herald_chaos`), a redis-server of the run's own (its
own port, no persistence: started again it has lost every queued task and cached entry) as cache and broker,
gunicorn (`config/gunicorn.py`, 2 workers), the Celery workers of the one-host default as `deploy/systemd` starts
them (one for the `delivery` queue, one for the others), each started again whenever it exits, as a process
supervisor would, and an SMTP server on loopback that records every message.

While clients call `/v1/send` and `/v1/track` (4 threads, every third request with an Idempotency-Key) and a CSV
import runs, the script SIGKILLs the workers with their pool processes, kills Redis and starts it again empty, SIGKILLs
a gunicorn worker (its master starts another), and SIGKILLs the Celery workers again. In place of celery-beat it
publishes the sweepers (delivery, stalled jobs, workflow executions) every 5 seconds, with their grace periods and
leases shortened (`CHAOS_ENV`), so a run takes minutes instead of the tens of minutes the production timings would.

Then the books, once nothing is left to do (or after 5 minutes): every accepted (2xx) send stored once and
delivered once (but for the message a killed worker had just handed over, see `books`), every accepted track
recorded once, the import completed with every row once, no email left
QUEUED or SENDING and no job unfinished. A request that got no answer (its connection was cut) may have been
stored, at most once. Exits 1 when a check fails.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.chaos_smtp import smtp_books, smtp_phase
from bench.chaos_webhooks import slow_receivers_phase
from bench.serve import BIN, ROOT, bench_env, database_name, fresh_database, machine, setup_project
from config.tests.load import Load
from config.tests.processes import RedisServer, children, free_port, wait_until

DATABASE = database_name("herald_chaos")  # BENCH_DATABASE: a run beside another one
IMPORT_DOMAIN = "import.chaos.test"
SWEEPERS = (
    "messaging.tasks.sweep_emails_task",
    "accounts.tasks.requeue_stalled_jobs_task",
    "workflows.tasks.sweep_executions_task",
)
CHAOS_ENV = {
    "API_RATE_LIMIT_PER_MINUTE": "1000000",  # the clients' pace, not the limit, is the load
    "DELIVERY_PUBLISH_GRACE_SECONDS": "5",
    "DELIVERY_LEASE_SECONDS": "20",
    "JOB_LEASE_SECONDS": "10",
    "JOB_PUBLISH_GRACE_SECONDS": "10",
    "CONTACT_IMPORT_BATCH_SIZE": "250",
    # The slow-receivers phase: its receivers are on loopback, and a lease set shorter than a webhook call (the
    # engine raises it to three calls' bound) with the sweep every 5 s would take any step whose lease ran out.
    "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
    "WORKFLOW_STEP_LEASE_SECONDS": "5",
}


class Service:
    """gunicorn and the supervised Celery workers of the one-host default on the run's database and Redis."""

    def __init__(self, env: dict, processes: ExitStack):
        from config.tests.processes import unit_workers, worker_process

        self.env, self.processes, self.worker_process = env, processes, worker_process
        self.commands = unit_workers()
        self.workers: list = [None] * len(self.commands)
        self.worker_starts = 0
        self.pool_processes_killed = 0
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        command = [str(BIN / "gunicorn"), "-c", "config/gunicorn.py", "config.wsgi", "--bind", f"127.0.0.1:{port}"]
        self.web = subprocess.Popen([*command, "--workers", "2", "--log-level", "warning"], cwd=ROOT, env=env)
        processes.callback(self._stop_web)
        wait_until(self._web_answers, timeout=30, what="gunicorn")
        self.supervise()

    def _web_answers(self) -> bool:
        try:
            return httpx.get(f"{self.base}/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def _stop_web(self) -> None:
        self.web.terminate()
        self.web.wait(timeout=20)

    def supervise(self) -> None:
        """Start a worker again if it exited (a supervisor's `Restart=always`)."""
        for index, command in enumerate(self.commands):
            worker = self.workers[index]
            if worker is None or worker.poll() is not None:
                self.workers[index] = self.processes.enter_context(self.worker_process(command, **self.env))
                self.worker_starts += 1

    def kill_worker(self) -> None:
        """SIGKILL every Celery worker with its pool processes."""
        for worker in self.workers:
            pool = children(worker.pid)
            for pid in [*pool, worker.pid]:
                os.kill(pid, signal.SIGKILL)
            self.pool_processes_killed += len(pool)
            worker.wait()

    def kill_web_worker(self) -> None:
        os.kill(children(self.web.pid)[0], signal.SIGKILL)


def publish_sweepers(broker: str) -> None:
    from config.celery import app

    try:
        with app.connection_for_write(broker) as connection:
            for name in SWEEPERS:
                app.send_task(name, connection=connection)
    except Exception as exc:  # Redis is down: the next round publishes them
        print(f"  sweepers not published: {exc}", flush=True)


def start_import(base: str, secret_key: str, rows: int) -> str:
    content = "email,n\n" + "\n".join(f"person{i}@{IMPORT_DOMAIN},{i}" for i in range(rows))
    response = httpx.post(
        f"{base}/contacts/import",
        headers={"Authorization": f"Bearer {secret_key}"},
        files={"file": ("chaos.csv", content.encode(), "text/csv")},
        timeout=60,
    )
    response.raise_for_status()
    return response.json()["jobId"]


def deliveries(sink, *, pool_processes_killed: int) -> tuple[Counter, set[str], bool]:
    """The copies of a message each recipient got, the recipients who got two, and whether each repeat is allowed.

    A message can be delivered twice when a worker is killed after the SMTP server took it and before its row was
    marked SENT: the row's lease runs out and it is sent again (a relay's acceptance and a database write cannot be
    one step). Such a repeat is allowed only for a row claimed more than once, with its one Message-ID in both
    copies (receivers dedupe on it), and at most one per pool process killed."""
    from messaging.models import Email

    delivered = Counter(received.rcpt_tos[0] for received in sink.received)
    repeated = {email for email, copies in delivered.items() if copies > 1}
    reclaimed = set(Email.objects.filter(to_email__in=repeated, attempts__gt=1).values_list("to_email", flat=True))
    message_ids = Counter(
        received.rcpt_tos[0]
        for received in {(r.rcpt_tos[0], r.message["Message-ID"]): r for r in sink.received}.values()
    )
    allowed = (
        repeated <= reclaimed
        and all(message_ids[email] == 1 for email in repeated)
        and len(repeated) <= pool_processes_killed
    )
    return delivered, repeated, allowed


def books(load: Load, sink, job_id: str, rows: int, service: Service) -> dict:
    """What was accepted, stored and delivered, and each check (a repeated delivery: `deliveries`)."""
    from accounts.models import Job
    from contacts.models import Contact, Event
    from messaging.models import Email

    sends, tracks = load.answered("send"), load.answered("track")
    unanswered = load.answered("send", accepted=False) | load.answered("track", accepted=False)
    stored = Counter(Email.objects.values_list("to_email", flat=True))
    recorded = Counter(Event.objects.filter(name="visit").values_list("contact__email", flat=True))
    delivered, repeated, repeats_allowed = deliveries(sink, pool_processes_killed=service.pool_processes_killed)
    job = Job.objects.get(pk=job_id)
    imported = Contact.objects.filter(email__endswith=f"@{IMPORT_DOMAIN}").count()
    pending = Email.objects.filter(status__in=[Email.Status.QUEUED, Email.Status.SENDING]).count()
    unfinished = Job.objects.exclude(status__in=[Job.Status.COMPLETED, Job.Status.FAILED]).count()
    failed_emails = Email.objects.filter(status=Email.Status.FAILED).count()
    checks = {
        "every accepted send stored once": all(stored[email] == 1 for email in sends),
        "every accepted send delivered": all(delivered[email] >= 1 for email in sends),
        "every accepted track recorded once": all(recorded[email] == 1 for email in tracks),
        "nothing stored twice": max([1, *stored.values(), *recorded.values()]) == 1,
        "a repeat only of a killed worker's message, with its Message-ID": repeats_allowed,
        "nothing stored that was refused": set(stored) <= sends | unanswered and set(recorded) <= tracks | unanswered,
        "every stored email delivered": set(delivered) == set(stored) and failed_emails == 0,
        "the import completed, every row once": job.status == Job.Status.COMPLETED
        and imported == rows
        and job.result.get("createdCount") == rows,
        "no email or job left unfinished": pending == 0 and unfinished == 0,
    }
    return {
        "answers": dict(Counter(load.answers.values())),
        "sends accepted": len(sends),
        "tracks accepted": len(tracks),
        "requests unanswered": len(unanswered),
        "emails stored": sum(stored.values()),
        "emails delivered": sum(delivered.values()),
        "emails delivered twice": len(repeated),
        "track events stored": sum(recorded.values()),
        "import": {"status": job.status, "attempts": job.attempts, "rows": rows, "contacts": imported},
        "checks": checks,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds", type=int, default=40, help="how long the clients call (the failures are spread over it)"
    )
    parser.add_argument("--rows", type=int, default=20000, help="rows of the imported CSV")
    parser.add_argument(
        "--phases",
        default="http,smtp,slow-receivers",
        help="which phases run, in this order: http (the API), smtp (submission), slow-receivers (webhooks)",
    )
    parser.add_argument("--smtp-seconds", type=int, default=30, help="how long the SMTP clients submit")
    parser.add_argument("--smtp-clients", type=int, default=4, help="concurrent SMTP clients")
    parser.add_argument("--smtp-kills", type=int, default=3, help="SIGKILLs of smtp_server, each in mid-DATA")
    parser.add_argument(
        "--slow-seconds", type=float, default=30, help="slow receivers: seconds before the webhooks, and with them"
    )
    parser.add_argument("--send-rate", type=float, default=10, help="slow receivers: /v1/send calls per second")
    parser.add_argument("--webhook-rate", type=float, default=1, help="slow receivers: events per second")
    args = parser.parse_args()
    phases = args.phases.split(",")
    redis = RedisServer()
    redis.start()
    report = {}
    with ExitStack() as processes:
        processes.callback(lambda: redis.process.poll() is None and redis.stop())
        from messaging.sending.tests.smtp import start_sink

        sink, controller = start_sink()
        processes.callback(controller.stop)
        env = bench_env(
            DATABASE,
            CACHE_URL=redis.url(0),
            CELERY_BROKER_URL=redis.url(1),
            EMAIL_URL=f"smtp://{sink.host}:{sink.port}",
            **CHAOS_ENV,
        )
        fresh_database(DATABASE)
        project = setup_project(env)
        os.environ.update(env)  # this process reads the books from the same database
        import django

        django.setup()
        service = Service(env, processes)

        def wait(seconds: float) -> None:
            deadline = time.monotonic() + seconds
            next_sweep = 0.0
            while time.monotonic() < deadline:
                service.supervise()
                if time.monotonic() >= next_sweep and redis.process.poll() is None:
                    publish_sweepers(redis.url(1))
                    next_sweep = time.monotonic() + 5
                time.sleep(0.5)

        def settle(started: float) -> None:
            """Wait until nothing is left to do (or 5 minutes), then for a duplicate task's time."""
            from accounts.models import Job
            from messaging.models import Email

            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                wait(5)
                busy = Email.objects.filter(status__in=[Email.Status.QUEUED, Email.Status.SENDING]).exists()
                if not busy and not Job.objects.exclude(status__in=[Job.Status.COMPLETED, Job.Status.FAILED]).exists():
                    break
            wait(3)  # a duplicate delivery task would have sent by now

        if "http" in phases:
            report.update(http_phase(args, project, service, sink, redis, wait, settle))
        if "smtp" in phases:
            started = time.monotonic()
            numbers, (submissions, mid_data) = smtp_phase(
                env,
                project["secretKey"],
                wait,
                seconds=args.smtp_seconds,
                clients=args.smtp_clients,
                kills=args.smtp_kills,
            )
            settle(started)
            counts, checks = smtp_books(submissions, mid_data, sink)
            report["smtp"] = {
                **numbers,
                **counts,
                "recovered after": f"{time.monotonic() - started:.0f} s",
                "checks": checks,
            }
            report.setdefault("checks", {}).update({f"smtp: {name}": ok for name, ok in checks.items()})
        if "slow-receivers" in phases:
            report["slow receivers"], checks = slow_receivers_phase(
                service.base,
                project,
                wait,
                seconds=args.slow_seconds,
                send_rate=args.send_rate,
                webhook_rate=args.webhook_rate,
            )
            report.setdefault("checks", {}).update({f"slow receivers: {name}": ok for name, ok in checks.items()})
    report["machine"] = machine()
    print(json.dumps(report, indent=2))
    return 0 if all(report.get("checks", {}).values()) else 1


def http_phase(args, project: dict, service: Service, sink, redis: RedisServer, wait, settle) -> dict:
    """Sends, tracks and an import while the worker, Redis and a gunicorn worker are killed; the books."""
    load = Load(service.base, secret_key=project["secretKey"], public_key=project["publicKey"], sender="hi@bench.test")

    def restart_redis() -> None:
        redis.stop()
        wait(4)
        redis.start()

    failures = [
        ("SIGKILL the Celery workers and their pools", service.kill_worker),
        ("kill Redis; start it again, empty, 4 s later", restart_redis),
        ("SIGKILL a gunicorn worker", service.kill_web_worker),
        ("SIGKILL the Celery workers again", service.kill_worker),
    ]
    step = args.seconds / (len(failures) + 1)
    started = time.monotonic()
    with load:
        job_id = start_import(service.base, project["secretKey"], args.rows)
        wait(step)
        for what, fail in failures:
            print(what, flush=True)
            fail()
            wait(step)
    print(f"clients stopped after {time.monotonic() - started:.0f} s; waiting for the service to catch up", flush=True)
    settle(started)
    report = books(load, sink, job_id, args.rows, service)
    report["recovered after"] = f"{time.monotonic() - started:.0f} s"
    report["worker starts"] = service.worker_starts
    return report


if __name__ == "__main__":
    sys.exit(main())

"""Delivery throughput: N queued emails of a 5 KB HTML template into Postfix's smtp-sink, one Celery worker
(prefork, concurrency 4) on PostgreSQL + Redis, and django-post_office's `send_queued_mail` on the same
messages in the same run for comparison.

    apt-get install postfix   # for /usr/sbin/smtp-sink; the postfix daemon itself is never started
    pip install -r bench/requirements.txt
    python bench/delivery.py [--emails 20000] [--concurrency 4] [--skip-post-office]

The emails are seeded as accepted rows (QUEUED, rendered, with their contacts), so the figure is delivery
alone: claim, MIME build, DKIM signature, SMTP, marking SENT and recording `email.sent` events.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.serve import BROKER_DB, PG, PYTHON, ROOT, bench_env, database_name, fresh_database, machine, manage

SINK_PORT = 2526
PARAGRAPH = (
    '<p style="font-family:Arial,sans-serif;font-size:15px;line-height:1.5;color:#333">Lorem ipsum dolor sit '
    "amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</p>"
)


def five_kb_html(name: str) -> str:
    body = PARAGRAPH * 24
    return (
        f"<html><body><h1>Hello {name}</h1>{body}"
        f'<p><a href="https://example.test/offer?u={name}">See the offer</a></p></body></html>'
    )[:5200]


def start_sink(port: int = SINK_PORT) -> subprocess.Popen:
    return subprocess.Popen(
        ["/usr/sbin/smtp-sink", "-u", "nobody", f"127.0.0.1:{port}", "1024"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def tree_cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) used so far by process `pid` and its children (a worker's pool)."""
    from config.tests.processes import children

    total = 0.0
    for process in (pid, *children(pid)):
        fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def seed_herald(env: dict, count: int) -> None:
    os.environ.update(env)
    import django

    django.setup()
    from accounts.models import Project
    from contacts.models import Contact
    from messaging.models import Email

    project = Project.objects.get()
    contacts = [Contact(project=project, email=f"r{i}@sink.test", subscribed=True) for i in range(count)]
    Contact.objects.bulk_create(contacts, batch_size=2000)
    emails = []
    for contact in contacts:
        email_id = uuid.uuid4()
        emails.append(
            Email(
                id=email_id,
                project=project,
                contact=contact,
                to_email=contact.email,
                from_email="news@bench.test",
                from_name="Bench",
                subject=f"Offer for {contact.email}",
                html=five_kb_html(contact.email),
                type="TRANSACTIONAL",
                message_id=f"<{email_id}@bench.test>",
            )
        )
    Email.objects.bulk_create(emails, batch_size=2000)


def run_herald(count: int, concurrency: int) -> dict:
    database = database_name("herald_bench_delivery")
    fresh_database(database)
    env = bench_env(database, EMAIL_URL=f"smtp://127.0.0.1:{SINK_PORT}")
    manage(env, "migrate", "--no-input", "-v", "0")
    manage(env, "create_project", "--name", "Bench", "--owner-email", "b@bench.test", "--verified-domain", "bench.test")
    seed_herald(env, count)
    from django.conf import settings

    from config.celery import app
    from messaging.models import Email

    subprocess.run(["redis-cli", "-n", BROKER_DB, "FLUSHDB"], check=True, capture_output=True)
    ids = [str(i) for i in Email.objects.order_by("created_at").values_list("id", flat=True)]
    # The integration tests' worker launcher: same options, pointed at this database and the sink.
    from config.tests.processes import celery_worker

    with celery_worker(concurrency=concurrency, EMAIL_URL=env["EMAIL_URL"], CACHE_URL=env["CACHE_URL"]) as worker:
        time.sleep(4)  # worker start-up is not delivery
        size = settings.DELIVERY_BATCH_SIZE
        worker_cpu = tree_cpu_seconds(worker.pid)
        started = time.perf_counter()
        with app.producer_or_acquire() as producer:
            for start in range(0, len(ids), size):
                app.send_task(
                    "messaging.tasks.deliver_emails_task", args=[ids[start : start + size]], producer=producer
                )
        while True:
            sent = Email.objects.filter(status="SENT").count()
            if sent >= count or time.perf_counter() - started > 600:
                break
            time.sleep(0.25)
        elapsed = time.perf_counter() - started
        worker_cpu = tree_cpu_seconds(worker.pid) - worker_cpu
    statuses = dict(Email.objects.values_list("status").annotate(n=__import__("django").db.models.Count("id")))
    return {
        "sent": sent,
        "seconds": round(elapsed, 2),
        "emails_per_second": round(sent / elapsed, 1),
        "worker_cpu_ms_per_email": round(worker_cpu / max(sent, 1) * 1000, 3),
        "statuses": statuses,
    }


POST_OFFICE_SEED = """
import django, sys
django.setup()
from post_office.models import Email, STATUS, PRIORITY
from bench.delivery import five_kb_html
count = int(sys.argv[1])
Email.objects.bulk_create([Email(from_email='Bench <news@bench.test>', to=[f'r{i}@sink.test'],
    subject=f'Offer for r{i}@sink.test', message='', html_message=five_kb_html(f'r{i}@sink.test'),
    status=STATUS.queued, priority=PRIORITY.medium) for i in range(count)], batch_size=2000)
"""


def run_post_office(count: int, processes: int) -> dict:
    # Its own tables: it may share the database of Herald's run, which is over by then.
    database = database_name("herald_bench_post_office")
    fresh_database(database)
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="bench.post_office_settings",
        DATABASE_URL=f"{PG}/{database}",
        SINK_PORT=str(SINK_PORT),
        PYTHONPATH=str(ROOT),
    )
    subprocess.run([PYTHON, "-m", "django", "migrate", "--no-input", "-v", "0"], cwd=ROOT, env=env, check=True)
    subprocess.run([PYTHON, "-c", POST_OFFICE_SEED, str(count)], cwd=ROOT, env=env, check=True)
    started = time.perf_counter()
    subprocess.run(
        [PYTHON, "-m", "django", "send_queued_mail", "--processes", str(processes)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    elapsed = time.perf_counter() - started
    sent = subprocess.run(
        [
            PYTHON,
            "-c",
            "import django; django.setup(); from post_office.models import Email; "
            "print(Email.objects.filter(status=0).count())",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "sent": int(sent),
        "seconds": round(elapsed, 2),
        "emails_per_second": round(int(sent) / elapsed, 1),
        "processes": processes,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--emails", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--skip-post-office", action="store_true")
    args = parser.parse_args()
    sink = start_sink()
    try:
        time.sleep(0.5)
        result = {
            "benchmark": "delivery",
            "emails": args.emails,
            "machine": machine(),
            "herald": run_herald(args.emails, args.concurrency),
        }
        if not args.skip_post_office:
            result["django_post_office"] = run_post_office(args.emails, processes=2)
    finally:
        sink.terminate()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

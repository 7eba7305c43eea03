"""Open-pixel and click-redirect endpoints: gunicorn on PostgreSQL + Redis, 50 connections, every hit on one of
1,000 sent emails, with a Celery worker writing the queued hits (each updates the email row and records an
`email.open` / `email.click` event). After the runs it waits until every answered hit is written and reports how
long that took.

    python bench/tracking.py [--seconds 15] [--runs 3] [--workers 2 --threads 4]
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
from bench.serve import bench_env, fresh_database, gunicorn, machine, setup_project, wrk, wrk_medians

REQUEST_LUA = """
paths = {PATHS}
request = function()
  counter = counter + 1
  return wrk.format(nil, paths[(counter % #paths) + 1])
end
"""


def seed(env: dict, count: int) -> tuple[list[str], list[str]]:
    os.environ.update(env)
    import django

    django.setup()
    from django.utils import timezone

    from accounts.models import Project
    from contacts.models import Contact
    from messaging.engagement.tracking import click_token, open_token
    from messaging.models import Email

    project = Project.objects.get()
    contacts = Contact.objects.bulk_create([Contact(project=project, email=f"t{i}@bench.test") for i in range(count)])
    now = timezone.now()
    emails = Email.objects.bulk_create(
        [
            Email(
                id=uuid.uuid4(),
                project=project,
                contact=c,
                to_email=c.email,
                from_email="news@bench.test",
                subject="S",
                html="<p>x</p>",
                status="SENT",
                sent_at=now,
                message_id=f"<{i}@bench.test>",
            )
            for i, c in enumerate(contacts)
        ]
    )
    opens = [f"/o/{open_token(e.id)}" for e in emails]
    clicks = [f"/c/{click_token(e.id, 'https://example.test/offer?id=1')}" for e in emails]
    return opens, clicks


def run(base: str, key: str, paths: list[str], seconds: int, runs: int, connections: int) -> dict:
    lua = REQUEST_LUA.replace("{PATHS}", "{" + ",".join(f'"{p}"' for p in paths) + "}")
    warm_up = wrk(base + "/", key=key, connections=connections, seconds=3, request_lua=lua)
    results = [wrk(base + "/", key=key, connections=connections, seconds=seconds, request_lua=lua) for _ in range(runs)]
    return {
        "answered": warm_up["requests"] + sum(r["requests"] for r in results),
        **wrk_medians(results),
        "runs": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4, help="> 1: gthread workers (keep-alive), as `make run`")
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--port", type=int, default=18003)
    args = parser.parse_args()
    fresh_database("herald_bench_tracking")
    # wrk is one client address: a limit it cannot reach keeps every hit recorded, and the counting still costs.
    env = bench_env("herald_bench_tracking", TRACKING_RATE_LIMIT_PER_MINUTE="1000000000")
    for url in (env["CACHE_URL"], env["CELERY_BROKER_URL"]):  # hits and tasks left by an earlier run
        subprocess.run(["redis-cli", "-u", url, "FLUSHDB"], check=True, capture_output=True)
    project = setup_project(env)
    opens, clicks = seed(env, 1000)
    from django.db.models import Sum

    from config.tests.processes import celery_worker
    from messaging.models import Email

    with (
        celery_worker(concurrency=1, CACHE_URL=env["CACHE_URL"]),
        gunicorn(env, port=args.port, workers=args.workers, threads=args.threads) as base,
    ):
        result = {
            "benchmark": "tracking",
            "gunicorn": f"{args.workers} workers x {args.threads} threads; 1 Celery worker (concurrency 1) writing the hits",
            "machine": machine(),
            "connections": args.connections,
            "open_pixel": run(base, project["secretKey"], opens, args.seconds, args.runs, args.connections),
            "click_redirect": run(base, project["secretKey"], clicks, args.seconds, args.runs, args.connections),
        }
        answered = result["open_pixel"]["answered"] + result["click_redirect"]["answered"]
        started = time.perf_counter()
        while True:
            totals = Email.objects.aggregate(opens=Sum("opens"), clicks=Sum("clicks"))
            written = (totals["opens"] or 0) + (totals["clicks"] or 0)
            if written >= answered or time.perf_counter() - started > 300:
                break
            time.sleep(0.5)
        result["hits_written"] = written
        result["hits_answered"] = answered
        result["seconds_to_write_the_backlog_after_the_last_run"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

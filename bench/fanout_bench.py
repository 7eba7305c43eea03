"""A campaign's fan-out alone, in this process, on PostgreSQL and Redis: from a started campaign to every email row
queued and its delivery tasks published (no worker consumes them), so that the fan-out's own cost is measured
without the delivery that shares the machine in `bench/campaign_bench.py`.

    python bench/fanout_bench.py [--contacts 20000] [--runs 3]

Seeds the contacts of `bench/campaign_bench.py` once, then per run starts a new campaign to ALL and runs its fan-out
job (`campaigns.sending._fan_out`) in this process; prints the median rate. Set BENCH_DATABASE, BENCH_CACHE_DB and
BENCH_BROKER_DB to run beside other benchmarks (bench/serve.py).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.campaign_bench import CAMPAIGN, SEED_CONTACTS
from bench.serve import BROKER_DB, CACHE_DB, bench_env, database_name, fresh_database, machine, setup_project


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contacts", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    database = database_name("herald_bench_fanout")
    fresh_database(database)
    env = bench_env(database, PUBLIC_URL="http://127.0.0.1")
    for db in {CACHE_DB, BROKER_DB}:
        subprocess.run(["redis-cli", "-n", db, "FLUSHDB"], check=True, capture_output=True)
    project = setup_project(env)
    os.environ.update(env)
    import django

    django.setup()
    from django.db import connection, transaction
    from django.utils import timezone

    from accounts.models import Project
    from campaigns import sending
    from campaigns.models import Campaign
    from messaging.models import Email

    with connection.cursor() as cursor:
        cursor.execute(SEED_CONTACTS, {"project": project["id"], "count": args.contacts})
        cursor.execute("ANALYZE contacts_contact")
    owner = Project.objects.get(pk=project["id"])
    sending._publish = lambda job_id: None  # the job runs here, not in a worker
    seconds = []
    for run in range(args.runs):
        campaign = Campaign.objects.create(
            project=owner,
            name=f"Fan-out {run}",
            subject=CAMPAIGN["subject"],
            body=CAMPAIGN["body"],
            from_email=CAMPAIGN["from"],
            from_name=CAMPAIGN["fromName"],
            type=CAMPAIGN["type"],
            audience_type=CAMPAIGN["audienceType"],
        )
        with transaction.atomic():
            held = Campaign.objects.select_for_update(of=("self",)).get(pk=campaign.pk)
            sending._start(held, now=timezone.now(), audience=args.contacts)
        campaign.refresh_from_db()
        started = time.perf_counter()
        sending._fan_out(campaign.job, lambda percent, progress, checkpoint: None)
        seconds.append(time.perf_counter() - started)
        assert Email.objects.filter(campaign_id=campaign.id).count() == args.contacts
        subprocess.run(["redis-cli", "-n", BROKER_DB, "FLUSHDB"], check=True, capture_output=True)
    median = statistics.median(seconds)
    print(
        json.dumps(
            {
                "benchmark": "fan-out",
                "contacts": args.contacts,
                "machine": machine(),
                "seconds": [round(value, 2) for value in seconds],
                "median_seconds": round(median, 2),
                "median_emails_per_second": round(args.contacts / median),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

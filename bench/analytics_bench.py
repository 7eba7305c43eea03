"""`GET /analytics/timeseries` over 5,000,000 emails on PostgreSQL (target: under 300 ms for a 30-day daily series).

1. Seeds a fresh database: one project, 5,000,000 email rows over the last 90 days (sent, delivered, opened,
   clicked, bounced, complained, failed in realistic shares; 30 % from 50 campaigns), by `generate_series`.
2. Builds the hourly rollup from those rows with `manage.py rebuild_email_stats` (timed).
3. Times the real view in-process with Django's test client (middleware, key authentication, rate limit, DRF,
   JSON rendering): a 30-day daily series, 5 warm-up requests then 50 measured; also a 7-day hourly and a 366-day
   daily series, and for scale the same 30-day aggregation counted from the email rows instead of the rollup.
4. Times the incremental path: the rollup UPSERT for one first-open event and for a delivery batch of 50 sends.

    python bench/analytics_bench.py [--emails 5000000] [--reuse]

`--reuse` skips the seeding and the rebuild and measures on the database of an earlier run.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.serve import PG, bench_env, fresh_database, machine, manage, setup_project

DATABASE = "herald_bench_analytics"
CHUNK = 500_000
# Row g of n: created (n - g) * 90 days / n ago, so g = n is the newest. Shares by residues of g: 1 % failed
# (never sent), of the rest 95 % delivered, 35 % opened (8 % also clicked), 2 % hard-bounced, 0.1 % complained.
SEED_EMAILS = """
INSERT INTO messaging_email (
    id, project_id, to_email, to_name, campaign_id, source, type, from_email, from_name, reply_to, subject, html,
    headers, message_id, provider_message_id, status, attempts, last_error, sent_at, delivered_at, opened_at,
    clicked_at, bounced_at, complained_at, opens, clicks, created_at, updated_at)
SELECT gen_random_uuid(), %(project)s::uuid, 'r' || g || '@example.test', '',
       CASE WHEN g %% 10 < 3 THEN ('00000000-0000-4000-8000-' || lpad((g %% 50)::text, 12, '0'))::uuid END,
       CASE WHEN g %% 10 < 3 THEN 'campaign' ELSE 'api' END, 'MARKETING', 'news@bench.test', '', '',
       'Subject ' || (g %% 50), '<p>Hello</p>', '{}'::jsonb, '', '',
       CASE WHEN f THEN 'FAILED' WHEN c THEN 'COMPLAINED' WHEN b THEN 'BOUNCED' WHEN k THEN 'CLICKED'
            WHEN o THEN 'OPENED' WHEN d THEN 'DELIVERED' ELSE 'SENT' END,
       1, '', CASE WHEN NOT f THEN t + interval '2 seconds' END,
       CASE WHEN d THEN t + interval '5 seconds' END,
       CASE WHEN o THEN t + make_interval(secs => (g * 7919) %% 7200) END,
       CASE WHEN k THEN t + make_interval(secs => (g * 7919) %% 7200 + 60) END,
       CASE WHEN b THEN t + interval '10 seconds' END,
       CASE WHEN c THEN t + interval '1 hour' END,
       CASE WHEN o THEN 1 + g %% 3 ELSE 0 END, CASE WHEN k THEN 1 ELSE 0 END, t, t + interval '2 seconds'
FROM (
    SELECT g, now() - make_interval(secs => (%(count)s::bigint - g) * 7776000.0 / %(count)s) AS t,
           g %% 100 = 0 AS f,
           g %% 100 <> 0 AND (g * 31) %% 100 < 95 AS d,
           g %% 100 <> 0 AND (g * 17) %% 100 < 35 AS o,
           g %% 100 <> 0 AND (g * 17) %% 100 < 8 AS k,
           g %% 100 <> 0 AND (g * 31) %% 100 >= 98 AS b,
           g %% 100 <> 0 AND (g * 13) %% 1000 = 7 AS c
    FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS g
) AS rows
"""
# What the series would cost without the rollup: the same 30 days grouped straight from the email rows.
DIRECT_SQL = """
SELECT date_trunc('day', sent_at) AS day, count(*), count(delivered_at), count(opened_at), count(clicked_at),
       count(bounced_at), count(complained_at)
FROM messaging_email WHERE project_id = %s AND sent_at >= %s AND sent_at < %s GROUP BY 1
"""


def load() -> float:
    return round(os.getloadavg()[0], 2)


def seed(env: dict, emails: int) -> tuple[dict, float, float]:
    fresh_database(DATABASE)
    project = setup_project(env)
    import psycopg

    with psycopg.connect(f"{PG}/{DATABASE}", autocommit=True) as conn:
        started = time.perf_counter()
        for first in range(1, emails + 1, CHUNK):
            last = min(first + CHUNK - 1, emails)
            params = {"project": project["id"], "count": emails, "first": first, "last": last}
            conn.execute(SEED_EMAILS, params, prepare=False)
        conn.execute("VACUUM ANALYZE messaging_email")
        seeded = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    manage(env, "rebuild_email_stats", "--project", project["id"])
    return project, seeded, round(time.perf_counter() - started, 1)


def percentiles(times: list[float]) -> dict:
    ordered = sorted(times)
    return {
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 1),
        "max_ms": round(ordered[-1], 1),
        "runs": len(ordered),
    }


def timed(fn, *, runs: int, warmup: int = 0) -> dict:
    for _ in range(warmup):
        fn()
    loads, times = [load()], []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    loads.append(load())
    return {**percentiles(times), "load": loads}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--emails", type=int, default=5_000_000)
    parser.add_argument("--reuse", action="store_true", help="measure on the database seeded by an earlier run")
    args = parser.parse_args()
    env = bench_env(DATABASE)
    seeded = rebuilt = None
    if args.reuse:
        project = None
    else:
        project, seeded, rebuilt = seed(env, args.emails)
    os.environ.update(env)
    import django

    django.setup()
    from datetime import timedelta

    from django.db import connection
    from django.db.models import Sum
    from django.test import Client
    from django.utils import timezone

    from accounts.models import Project
    from contacts.models import Event
    from messaging.insights.rollup import on_events_recorded
    from messaging.models import Email, EmailStatsHour

    if project is None:
        # The secret key is shown once: a reused database gets a fresh pair through the same command's service.
        from accounts.tenancy.services import project_regenerate_keys

        bench_project = Project.objects.get(name="Bench")
        keys = project_regenerate_keys(project=bench_project)
        project = {"id": str(bench_project.id), "secretKey": keys.secret_key}
    instance = Project.objects.get(pk=project["id"])
    client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {project['secretKey']}")

    def get(path: str) -> list:
        response = client.get(path)
        assert response.status_code == 200, response.content
        return response.json()

    now = timezone.now()
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    series = get("/analytics/timeseries")
    # The series must be what the rows say: sends per day from the emails table for the same whole days.
    with connection.cursor() as cursor:
        cursor.execute(DIRECT_SQL, [instance.id, day - timedelta(days=30), day + timedelta(days=1)])
        direct = {row[0]: row[1] for row in cursor.fetchall()}
    assert [p["emails"] for p in series] == [direct.get(day - timedelta(days=30 - i), 0) for i in range(31)]

    daily = timed(lambda: get("/analytics/timeseries"), runs=50, warmup=5)
    start_7 = (now - timedelta(days=7)).isoformat()
    hourly = timed(lambda: get(f"/analytics/timeseries?interval=hour&startDate={start_7.replace('+', '%2B')}"), runs=20)
    yearly = timed(
        lambda: get("/analytics/timeseries?startDate=" + (now - timedelta(days=365)).date().isoformat()), runs=20
    )

    def direct_count():
        with connection.cursor() as cursor:
            cursor.execute(DIRECT_SQL, [instance.id, day - timedelta(days=30), day + timedelta(days=1)])
            return cursor.fetchall()

    direct_timing = timed(direct_count, runs=3, warmup=1)

    # Incremental: the receiver as the delivery worker and the pixel call it (events need not be saved for it), on a
    # project of its own so that the measured series stays what the rows say.
    from accounts.identity.users import user_get_or_create
    from accounts.tenancy.services import project_create

    owner, _ = user_get_or_create(email="bench@bench.test", password=None)
    scratch, _ = project_create(name=f"Increments {uuid.uuid4().hex[:6]}", owner=owner)
    contact_id = uuid.uuid4()
    stamp = now.isoformat()

    def events(name: str, count: int, **data) -> list:
        return [
            Event(project=scratch, contact_id=contact_id, name=name, data={"sentAt": stamp, **data}, created_at=now)
            for _ in range(count)
        ]

    one_open = events("email.open", 1, openedAt=stamp, isFirstOpen=True)
    batch = events("email.sent", 50)
    open_timing = timed(lambda: on_events_recorded(Event, project=scratch, events=one_open), runs=200, warmup=10)
    batch_timing = timed(lambda: on_events_recorded(Event, project=scratch, events=batch), runs=200, warmup=10)
    counted = EmailStatsHour.objects.filter(project=scratch).aggregate(sent=Sum("sent"), opened=Sum("opened"))
    assert counted == {"sent": 50 * 210, "opened": 210}, counted  # the receiver logs failures: check it counted

    print(
        json.dumps(
            {
                "benchmark": "analytics",
                "machine": machine(),
                "postgres": subprocess.run(
                    ["psql", f"{PG}/{DATABASE}", "-tAc", "SHOW server_version"], capture_output=True, text=True
                ).stdout.strip(),
                "emails": Email.objects.filter(project=instance).count(),
                "emails_in_30_days": sum(p["emails"] for p in series),
                "rollup_rows": EmailStatsHour.objects.filter(project=instance).count(),
                "seed_seconds": seeded,
                "rebuild_seconds": rebuilt,
                "timeseries_30d_daily": {**daily, "target_ms": 300},
                "timeseries_7d_hourly": hourly,
                "timeseries_366d_daily": yearly,
                "same_30d_counted_from_emails": direct_timing,
                "increment_one_first_open": open_timing,
                "increment_batch_of_50_sends": batch_timing,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

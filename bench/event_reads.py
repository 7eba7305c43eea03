"""The reads of event history that name no time window, on a partitioned events table (docs/scaling.md "Partitioned
history"): what each costs in the database, from `EXPLAIN (ANALYZE, BUFFERS)` of the statements it runs.

1. Seeds a fresh database: 13 monthly partitions (this month and the twelve before), one project with --events
   events over the last 365 days from 20,000 contacts (two thirds email events, the rest under 10 tracked names, a few
   segment and subscription events), and a second project with a tenth as many, email events only (a project that
   sends but tracks nothing: the worst case of "is any tracked event present").
2. Calls each endpoint in-process (Django's test client, key authentication) for both projects, captures the
   statements on the events table, and runs each again under `EXPLAIN (ANALYZE, BUFFERS)`: execution time and
   shared buffers (hit + read), summed per endpoint, median of --runs.

    BENCH_DATABASE=<scratch> python bench/event_reads.py [--events 3000000] [--reuse] [--runs 3]

`--reuse` measures on the database of an earlier run (the seed is the slow part).
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.serve import bench_env, database_name, fresh_database, machine, setup_project

DATABASE = database_name("herald_bench_event_reads")
CONTACTS = 20_000
CHUNK = 500_000
# Event g of n of a project: created (n - g) * 365 days / n ago; g % 3 < 2 is an email event, else one of 10 tracked
# names (1 in 50 of those a segment or subscription event).
SEED_EVENTS = """
INSERT INTO contacts_event (id, project_id, contact_id, name, email_id, data, created_at)
SELECT gen_random_uuid(), %(project)s::uuid, contacts.ids[1 + (g * 7919) %% %(contacts)s],
       CASE WHEN %(only_email)s OR g %% 3 < 2
                THEN (ARRAY['email.sent', 'email.delivery', 'email.open', 'email.click', 'email.bounce'])[1 + g %% 5]
            WHEN g %% 150 = 2 THEN (ARRAY['segment.vip.entry', 'segment.vip.exit', 'contact.unsubscribed'])[1 + g %% 3]
            ELSE 'tracked.' || (g %% 30) END,
       NULL, '{}'::jsonb, now() - make_interval(secs => (%(count)s::bigint - g) * 31536000.0 / %(count)s)
FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS g,
     (SELECT array_agg(id) AS ids FROM contacts_contact WHERE project_id = %(project)s::uuid) AS contacts
"""
SEED_CONTACTS = """
INSERT INTO contacts_contact (id, project_id, email, subscribed, data, created_at, updated_at)
SELECT gen_random_uuid(), %(project)s::uuid, 'c' || i || '@' || %(domain)s, true, '{}'::jsonb, now(), now()
FROM generate_series(1, %(contacts)s) AS i
"""
PATHS = ("/events/names", "/activity/types", "/events?limit=20", "/activity?limit=20", "/events/tracked.8/usage")


def seed(events: int) -> None:
    from django.db import connection
    from django.utils import timezone

    from accounts.identity.users import user_get_or_create
    from accounts.models import Project
    from accounts.tenancy.services import project_create
    from core.partitions import month_start, partition_drop, partitions, partitions_ensure

    now = timezone.now()
    for partition in partitions("contacts_event"):
        if partition.lower is None:
            partition_drop(partition)
    partitions_ensure(table="contacts_event", now=month_start(now, add=-12), ahead=15)
    owner, _ = user_get_or_create(email="bench@bench.test", password=None)
    sending, _ = project_create(name="Sending", owner=owner)
    for project, count, only_email in (
        (Project.objects.get(name="Bench"), events, False),
        (sending, events // 10, True),
    ):
        params = {"project": str(project.id), "contacts": CONTACTS, "domain": f"{project.id.hex[:8]}.test"}
        with connection.cursor() as cursor:
            cursor.execute(SEED_CONTACTS, params)
            for first in range(1, count + 1, CHUNK):
                last = min(first + CHUNK - 1, count)
                cursor.execute(
                    SEED_EVENTS, {**params, "count": count, "first": first, "last": last, "only_email": only_email}
                )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE contacts_event")
        cursor.execute("VACUUM ANALYZE contacts_contact")


def explained(sql: str) -> tuple[float, int]:
    """Execution time (ms) and shared buffers touched of one statement, run again under EXPLAIN ANALYZE."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}")
        (plan,) = cursor.fetchone()[0]
    top = plan["Plan"]
    return plan["Execution Time"], top["Shared Hit Blocks"] + top["Shared Read Blocks"]


def measure(client, path: str, runs: int) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200, response.content
    statements = [q["sql"] for q in queries if "contacts_event" in q["sql"]]
    times, buffers = [], []
    for _ in range(runs):
        costs = [explained(sql) for sql in statements]
        times.append(sum(ms for ms, _ in costs))
        buffers.append(sum(b for _, b in costs))
    return {"statements": len(statements), "ms": round(statistics.median(times), 2), "buffers": min(buffers)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=3_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reuse", action="store_true", help="measure on the database seeded by an earlier run")
    args = parser.parse_args()
    env = bench_env(DATABASE)
    started = time.perf_counter()
    if not args.reuse:
        fresh_database(DATABASE)
        setup_project(env)
    os.environ.update(env)
    import django

    django.setup()
    from django.test import Client

    from accounts.models import Project
    from accounts.tenancy.services import project_regenerate_keys

    if not args.reuse:
        seed(args.events)
    seeded = round(time.perf_counter() - started, 1)
    result = {"events": args.events, "seconds_seeding": seeded if not args.reuse else None}
    for name in ("Bench", "Sending"):
        keys = project_regenerate_keys(project=Project.objects.get(name=name))
        client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {keys.secret_key}")
        for path in PATHS:
            figures = measure(client, path, args.runs)
            result[f"{name} {path}"] = figures
            result[f"ms {name} {path}"] = figures["ms"]
    result["machine"] = machine()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

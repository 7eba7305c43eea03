"""Segments at scale on PostgreSQL: 1,000,000 contacts with realistic data and 5,000,000 events.

Measures (in-process, the same selectors and services the API calls):
- the member count of a 3-filter dynamic segment mixing `data.*` and `event.*` (target < 500 ms),
- the first members page, `GET /segments/:id/contacts` (target < 100 ms),
- a `compute` that moves 100,000 contacts into a tracked segment, event inserts included (target < 20 s).

    python bench/segments_bench.py [--contacts 1000000] [--no-reseed]
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.serve import PG, bench_env, fresh_database, machine, setup_project

DATABASE = "herald_bench_segments"
SEED_CONTACTS = """
INSERT INTO contacts_contact (id, project_id, email, subscribed, data, created_at, updated_at)
SELECT gen_random_uuid(), %(project)s::uuid, 'c' || g || '@' || (ARRAY['gmail.com','acme.io','mail.test'])[1 + g %% 3],
       g %% 10 <> 0,
       jsonb_build_object('plan', (ARRAY['free','pro','team','enterprise'])[1 + g %% 4],
                          'age', 18 + g %% 60,
                          'country', (ARRAY['DE','FR','US','GB','IT','ES','NL'])[1 + g %% 7],
                          'score', (g::bigint * 7919) %% 1000),
       now() - make_interval(days => g %% 700), now()
FROM generate_series(1, %(count)s) AS g
"""
SEED_EVENTS = """
INSERT INTO contacts_event (id, project_id, contact_id, name, data, created_at)
SELECT gen_random_uuid(), c.project_id, c.id,
       (ARRAY['signup','login','purchase','view','cart','search','share','logout'])[1 + (hashtext(c.id::text || k) & 7)],
       '{}'::jsonb, now() - make_interval(hours => (hashtext(c.email || k) & 2047))
FROM contacts_contact c, generate_series(1, 5) AS k
"""
# 3 filters, data and events: pro-plan adults who purchased in the last 30 days.
CONDITION = {
    "logic": "AND",
    "groups": [
        {
            "filters": [
                {"field": "data.plan", "operator": "equals", "value": "pro"},
                {"field": "data.age", "operator": "greaterThan", "value": 30},
                {"field": "event.purchase", "operator": "triggeredWithin", "value": 30, "unit": "days"},
            ]
        }
    ],
}
# About 100,000 of 1,000,000 contacts: a score band.
MOVE_CONDITION = {
    "logic": "AND",
    "groups": [{"filters": [{"field": "data.score", "operator": "lessThan", "value": 100}]}],
}


def timed(fn, runs: int = 5) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contacts", type=int, default=1_000_000)
    parser.add_argument("--no-reseed", dest="reseed", action="store_false")
    args = parser.parse_args()
    env = bench_env(DATABASE)
    seeded = None
    if args.reseed:
        fresh_database(DATABASE)
        project = setup_project(env)
        import psycopg

        with psycopg.connect(f"{PG}/{DATABASE}", autocommit=True) as conn:
            started = time.perf_counter()
            conn.execute(SEED_CONTACTS, {"project": project["id"], "count": args.contacts}, prepare=False)
            conn.execute(SEED_EVENTS, prepare=False)
            conn.execute("VACUUM ANALYZE contacts_contact")
            conn.execute("VACUUM ANALYZE contacts_event")
            seeded = round(time.perf_counter() - started, 1)
    os.environ.update(env)
    import django

    django.setup()
    from accounts.models import Project
    from contacts.models import Event
    from segments.selectors import segment_members
    from segments.services import segment_compute, segment_create

    project = Project.objects.get()
    segment = segment_create(project=project, name="Active pro adults", condition=CONDITION)
    count_ms, count = timed(lambda: segment_members(segment=segment).count())
    page_ms, _ = timed(
        lambda: (
            segment_members(segment=segment).count(),
            list(segment_members(segment=segment).order_by("-created_at", "-id")[:20]),
        )
    )
    tracked = segment_create(project=project, name="Score band", condition=MOVE_CONDITION, track_membership=True)
    started = time.perf_counter()
    moved = segment_compute(segment=tracked)
    compute_s = time.perf_counter() - started
    entries = Event.objects.filter(project=project, name="segment.score-band.entry").count()
    print(
        json.dumps(
            {
                "benchmark": "segments",
                "machine": machine(),
                "contacts": args.contacts,
                "events": Event.objects.filter(project=project).count(),
                "seed_seconds": seeded,
                "three_filter_count": {"members": count, "median_ms": round(count_ms, 1), "target_ms": 500},
                "first_members_page": {"median_ms": round(page_ms, 1), "target_ms": 100},
                "compute_100k": {
                    "added": moved.added,
                    "entry_events": entries,
                    "seconds": round(compute_s, 2),
                    "target_seconds": 20,
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

"""Segments at scale on PostgreSQL: 1,000,000 contacts with realistic data and 5,000,000 tracked events, seeded by
bench/seed.py (its contacts' `data.plan`, `data.age` and `data.score`, its Zipf-like event names over a year).

Measures (in-process, the same selectors and services the API calls):
- the member count of a 3-filter dynamic segment mixing `data.*` and `event.*` (target < 500 ms),
- the first members page, `GET /segments/:id/contacts` (target < 100 ms),
- a `compute` that moves 100,000 contacts into a tracked segment, and one that moves them out again, event inserts
  included (target < 20 s each).

    python bench/segments_bench.py [--contacts 1000000] [--seed-only]   # seeds a fresh database (about 5 min)
    python bench/segments_bench.py --reuse                               # measures again on the seeded database

With `--reuse` the seeded database is kept (and migrated): the segments of earlier runs and their `segment.*`
events are deleted first (then vacuumed and checkpointed), so every run starts from the same rows.
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
from bench.seed import seed_command
from bench.serve import PG, bench_env, database_name, fresh_database, machine, manage, setup_project

DATABASE = database_name("herald_bench_segments")
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
# About 100,000 of 1,000,000 contacts: a band of the uniform score; then a condition nobody matches, so they all leave.
MOVE_CONDITION = {
    "logic": "AND",
    "groups": [{"filters": [{"field": "data.score", "operator": "lessThan", "value": 100}]}],
}
EMPTY_CONDITION = {
    "logic": "AND",
    "groups": [{"filters": [{"field": "data.score", "operator": "lessThan", "value": -1}]}],
}


def psql(sql: str) -> None:
    subprocess.run(["psql", f"{PG}/{DATABASE}", "-qc", sql], check=True, capture_output=True)


def seed(env: dict, contacts: int) -> float:
    fresh_database(DATABASE)
    project = setup_project(env)
    started = time.perf_counter()
    seed_command(DATABASE, project=project["id"], contacts=contacts, events=5 * contacts, emails=0)
    psql("CHECKPOINT")
    return round(time.perf_counter() - started, 1)


def forget_earlier_runs(env: dict) -> None:
    manage(env, "migrate", "--no-input", "-v", "0")
    psql(
        "DELETE FROM contacts_event WHERE name LIKE 'segment.%';"
        " DELETE FROM segments_segmentmembership; DELETE FROM segments_segment;"
    )
    psql("VACUUM ANALYZE contacts_event")
    psql("VACUUM ANALYZE segments_segmentmembership")
    # Flush the clean-up's dirty pages now, or the first measurements pay for writing them out.
    psql("CHECKPOINT")


def load() -> float:
    return round(os.getloadavg()[0], 2)


def timed(fn, runs: int = 5) -> dict:
    """Median of `runs` after one untimed warm-up run (the clean-up of --reuse leaves cold, dirty buffers)."""
    fn()
    times, loads = [], []
    for _ in range(runs):
        loads.append(load())
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return {"median_ms": round(statistics.median(times), 1), "runs_ms": [round(t, 1) for t in times], "load": loads}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contacts", type=int, default=1_000_000)
    parser.add_argument("--reuse", action="store_true", help="measure on the database seeded by an earlier run")
    parser.add_argument("--seed-only", action="store_true")
    args = parser.parse_args()
    env = bench_env(DATABASE)
    seeded = None
    if args.reuse:
        forget_earlier_runs(env)
    else:
        seeded = seed(env, args.contacts)
        if args.seed_only:
            print(json.dumps({"seed_seconds": seeded}))
            return
    os.environ.update(env)
    import django

    django.setup()
    from accounts.models import Project
    from contacts.models import Event
    from segments.models import Segment
    from segments.selectors import segment_members, segment_members_page
    from segments.services import segment_compute, segment_create, segment_update

    project = Project.objects.get()
    segment = segment_create(project=project, name="Active pro adults", condition=CONDITION)
    count = timed(lambda: segment_members(segment=segment).count())
    count["members"] = segment.member_count
    # As `GET /segments/:id/contacts?page=1`: the page with the count taken on create (fresh), and the same page
    # when the cached count is stale and the selector counts again.
    page = timed(lambda: segment_members_page(segment=segment, page=1, page_size=20))

    def stale_page():
        Segment.objects.filter(pk=segment.pk).update(counted_at=None)
        segment.refresh_from_db()
        return segment_members_page(segment=segment, page=1, page_size=20)

    page_stale = timed(stale_page, runs=3)
    tracked = segment_create(project=project, name="Score band", condition=MOVE_CONDITION, track_membership=True)
    moves = {}
    # 100,000 enter; a second compute finds nothing to move (the periodic case); then all 100,000 leave.
    for run, kind, condition in (
        ("entry", "entry", None),
        ("unchanged", "entry", None),
        ("exit", "exit", EMPTY_CONDITION),
    ):
        if condition:
            segment_update(segment=tracked, condition=condition)
        started_load = load()
        started = time.perf_counter()
        moved = segment_compute(segment=tracked)
        moves[run] = {
            "added": moved.added,
            "removed": moved.removed,
            "events": Event.objects.filter(project=project, name=f"segment.score-band.{kind}").count(),
            "seconds": round(time.perf_counter() - started, 2),
            "load": started_load,
        }
    print(
        json.dumps(
            {
                "benchmark": "segments",
                "machine": machine(),
                "contacts": project.contacts.count(),
                "events": Event.objects.filter(project=project).count(),
                "seed_seconds": seeded,
                "three_filter_count": {**count, "target_ms": 500},
                "first_members_page": {**page, "target_ms": 100},
                "first_members_page_recount": page_stale,
                "compute_100k": {**moves, "target_seconds": 20},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
